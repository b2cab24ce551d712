"""summarize: Student-t intervals of repeated samples, against scipy's own interval."""

from __future__ import annotations

import math

import pytest
from scipy import stats

import goldkeeper


@pytest.mark.parametrize("samples", [[0.8, 1.0, 0.6, 0.9, 0.7], [0.1] * 3 + [0.9] * 2, list(range(200))])
def test_interval_equals_scipys_t_interval(samples):
    got = goldkeeper.summarize(samples)
    n = len(samples)
    mean = sum(samples) / n
    lo, hi = stats.t.interval(0.95, n - 1, loc=mean, scale=stats.sem(samples))
    assert got.ci == pytest.approx((lo, hi), abs=1e-11)
    assert got.n == n and got.deterministic is False


@pytest.mark.parametrize("bad", [[], [0.5, math.nan], [math.inf], [1.0, -math.inf]])
def test_nan_infinite_and_empty_input_are_refused(bad):
    with pytest.raises(ValueError, match="summarize"):
        goldkeeper.summarize(bad)


def test_one_sample_has_no_interval_and_the_interval_is_not_clamped():
    assert goldkeeper.summarize([0.82]).ci is None
    assert goldkeeper.summarize([0.0, 0.0, 1.0]).ci[0] < 0
