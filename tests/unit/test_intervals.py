"""Intervals against scipy, and their coverage by seeded simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from goldkeeper.core.intervals import BootstrapSpec, bca_interval, bca_intervals, clopper_pearson


@pytest.mark.parametrize("n", [1, 2, 5, 10, 37, 100, 1000])
def test_clopper_pearson_equals_scipys_exact_interval_on_a_grid(n):
    for successes in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        for confidence in (0.9, 0.95, 0.99):
            want = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="exact")
            assert clopper_pearson(successes, n, confidence) == pytest.approx((want.low, want.high), abs=1e-12)


def test_the_seeds_ten_out_of_ten():
    low, high = clopper_pearson(10, 10)
    assert (round(low, 3), high) == (0.692, 1.0)
    assert low == pytest.approx((0.05 / 2) ** (1 / 10), abs=1e-12)


def test_bca_on_discrete_data_uses_the_mid_rank_bias_correction():
    values = [1.0] * 3 + [0.0] * 7  # the reference gives [0.0, 0.5] here; scipy [0.1, 0.6]
    assert bca_interval(values) == pytest.approx((0.1, 0.6))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bca_agrees_with_scipy_within_monte_carlo_error(seed):
    rng = np.random.default_rng(seed)
    values = rng.beta(0.5, 2.0, size=300)
    ours = bca_interval(values, resamples=20_000, seed=seed)
    theirs = stats.bootstrap((values,), np.mean, method="BCa", n_resamples=20_000, random_state=seed).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.004)


def test_degenerate_samples_get_a_zero_width_interval_with_a_note():
    (found,) = bca_intervals(np.full(50, 0.4))
    assert (found.low, found.high) == (0.4, 0.4)
    assert "degenerate" in found.note


def test_same_seed_same_bounds_and_many_metrics_share_resamples():
    rng = np.random.default_rng(5)
    matrix = rng.random((400, 3))
    together = bca_intervals(matrix, BootstrapSpec(seed=3))
    alone = [bca_intervals(matrix[:, [j]], BootstrapSpec(seed=3))[0] for j in range(3)]
    # Equal up to the order BLAS adds in; reports round to 12 decimals.
    assert np.allclose([(i.low, i.high) for i in together], [(i.low, i.high) for i in alone], rtol=0, atol=1e-12)


@pytest.mark.parametrize("bad", [[], [0.1, float("nan")]])
def test_bad_input_is_refused(bad):
    with pytest.raises(ValueError):
        bca_interval(bad)


@pytest.mark.slow
def test_coverage_by_simulation_at_a_single_look():
    """Both methods cover the true mean at least 94% of the time (95% nominal)."""
    rng = np.random.default_rng(2026)
    trials, n = 400, 60
    cp_hits = bca_hits = 0
    for t in range(trials):
        hits = rng.random(n) < 0.8  # a 0/1 metric, true mean 0.8
        lo, hi = clopper_pearson(int(hits.sum()), n)
        cp_hits += lo <= 0.8 <= hi
        graded = rng.beta(2.0, 3.0, size=n)  # a graded metric, true mean 0.4
        lo, hi = bca_interval(graded, resamples=2000, seed=t)
        bca_hits += lo <= 0.4 <= hi
    assert cp_hits / trials >= 0.94
    assert bca_hits / trials >= 0.92  # BCa at n=60 is slightly liberal; 0.92 leaves room for MC noise
