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


SHAPES = {
    "skewed": lambda rng, n: rng.beta(0.5, 2.0, size=n),
    "mostly zero": lambda rng, n: np.where(rng.random(n) < 0.6, 0.0, rng.beta(2.0, 2.0, size=n)),
    "bimodal": lambda rng, n: np.concatenate([rng.beta(1, 9, n // 2), rng.beta(9, 1, n - n // 2)]),
    "precision@10": lambda rng, n: rng.binomial(10, 0.15, size=n) / 10,
    "rare hits": lambda rng, n: np.where(rng.random(n) < 0.97, 0.0, rng.random(n)),
}


@pytest.mark.parametrize("n", [500, 3_000])
@pytest.mark.parametrize("shape", SHAPES)
def test_from_500_queries_the_computed_bootstrap_agrees_with_scipys_bca(shape, n):
    """From ANALYTIC_MIN_QUERIES on the bootstrap distribution is computed (saddlepoint), not
    drawn: its BCa bounds agree with scipy's drawn ones within scipy's own Monte Carlo error
    (two scipy runs with other seeds differ by as much), at any shape of per-query values."""
    from goldkeeper.core.intervals import ANALYTIC_MIN_QUERIES

    assert n >= ANALYTIC_MIN_QUERIES
    rng = np.random.default_rng(n)
    values = SHAPES[shape](rng, n)
    (ours,) = bca_intervals(values[:, None])
    assert ours.method == "bca-saddlepoint"
    runs = [stats.bootstrap((values,), np.mean, method="BCa", n_resamples=20_000, random_state=seed)
            .confidence_interval for seed in (1, 2)]
    width = runs[0].high - runs[0].low
    monte_carlo = max(abs(runs[0].low - runs[1].low), abs(runs[0].high - runs[1].high), 0.01 * width)
    for theirs in runs:
        assert abs(ours.low - theirs.low) <= 3 * monte_carlo
        assert abs(ours.high - theirs.high) <= 3 * monte_carlo


@pytest.mark.slow
def test_coverage_by_simulation_of_the_computed_bootstrap():
    """The computed (saddlepoint) BCa covers the true mean about 95% of the time at n = 600,
    for a skewed graded metric and for a rare-hit one."""
    rng = np.random.default_rng(7)
    trials, n = 400, 600
    hits = {"skewed": 0, "rare": 0}
    for _ in range(trials):
        (found,) = bca_intervals(rng.beta(0.5, 2.0, size=n)[:, None])  # true mean 0.2
        hits["skewed"] += found.low <= 0.2 <= found.high
        rare = np.where(rng.random(n) < 0.95, 0.0, rng.random(n))  # true mean 0.025
        (found,) = bca_intervals(rare[:, None])
        hits["rare"] += found.low <= 0.025 <= found.high
    for name, count in hits.items():
        assert 0.92 <= count / trials <= 0.98, (name, count)
