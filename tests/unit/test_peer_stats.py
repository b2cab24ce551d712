"""rag-eval-gate's own tests/test_stats.py (0.2.1, from its sdist), restated against
``goldkeeper.stats``; each test names the peer test it restates. Not restated:
IncompleteBetaTest (goldkeeper delegates the incomplete beta to SciPy, which those tests
check the peer against) and the peer's internal design_analysis object (goldkeeper's
power_analysis is restated in its place)."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats as scipy_stats

from goldkeeper.stats import (
    bca_interval,
    clopper_pearson,
    holm,
    min_attainable_p,
    paired_permutation_test,
    power_analysis,
)


def test_all_successes_matches_closed_form_and_no_successes_is_mirrored():
    """ClopperPearsonTest::test_all_successes_matches_closed_form and ::test_no_successes_is_mirrored."""
    low, high = clopper_pearson(10, 10)
    assert low == pytest.approx(0.025 ** 0.1, abs=1e-9) and high == 1.0 and low == pytest.approx(0.6915, abs=1e-4)
    low, high = clopper_pearson(0, 10)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** 0.1, abs=1e-9)


def test_interval_brackets_the_estimate_and_widens_with_smaller_n():
    """ClopperPearsonTest::test_interval_brackets_the_estimate_and_widens_with_smaller_n."""
    for n in (10, 100, 1000):
        low, high = clopper_pearson(int(0.7 * n), n)
        assert low < 0.7 < high
    narrow, wide = clopper_pearson(700, 1000), clopper_pearson(7, 10)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


def test_rejects_impossible_counts():
    """ClopperPearsonTest::test_rejects_impossible_counts."""
    with pytest.raises(ValueError):
        clopper_pearson(11, 10)


@pytest.mark.parametrize(("k", "n"), [(0, 5), (1, 5), (7, 10), (10, 10), (23, 40), (300, 1000)])
def test_matches_scipy_binomtest(k, n):
    """ClopperPearsonTest::test_matches_scipy_binomtest."""
    expected = scipy_stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert clopper_pearson(k, n) == pytest.approx((expected.low, expected.high), abs=1e-9)


def _brute_force_permutation_p(a, b):
    nonzero = [x - y for x, y in zip(a, b) if x != y]
    if not nonzero:
        return 1.0
    target = abs(sum(nonzero))
    extreme = sum(abs(sum(d if (bits >> i) & 1 else -d for i, d in enumerate(nonzero))) >= target - 1e-12
                  for bits in range(2 ** len(nonzero)))
    return extreme / 2 ** len(nonzero)


@pytest.mark.parametrize("k", [3, 5, 8])
def test_uniform_improvement_hits_the_analytic_floor(k):
    """PairedPermutationTest::test_uniform_improvement_hits_the_analytic_floor."""
    assert paired_permutation_test([1.0] * k, [0.0] * k) == pytest.approx(2.0 ** (1 - k), abs=1e-12)
    assert min_attainable_p(k) == pytest.approx(2.0 ** (1 - k), abs=1e-12)


def test_three_differing_queries_can_never_reach_significance():
    """PairedPermutationTest::test_three_differing_queries_can_never_reach_significance."""
    p = paired_permutation_test([1.0] * 3 + [0.5] * 7, [0.0] * 3 + [0.5] * 7)
    assert p == pytest.approx(0.25, abs=1e-12) and min_attainable_p(3) == pytest.approx(0.25) and p > 0.05


def test_identical_systems_give_p_one():
    """PairedPermutationTest::test_identical_systems_give_p_one."""
    assert paired_permutation_test([0.3, 0.9, 0.5], [0.3, 0.9, 0.5]) == 1.0


def test_matches_brute_force_on_random_inputs_and_is_symmetric():
    """PairedPermutationTest::test_matches_brute_force_on_random_inputs and ::test_symmetric_in_its_arguments."""
    rng = random.Random(7)
    for _ in range(40):
        n = rng.randint(2, 9)
        a = [rng.choice([0.0, 0.2, 0.5, 1.0]) for _ in range(n)]
        b = [rng.choice([0.0, 0.2, 0.5, 1.0]) for _ in range(n)]
        assert paired_permutation_test(a, b) == pytest.approx(_brute_force_permutation_p(a, b), abs=1e-12)
        assert paired_permutation_test(a, b) == pytest.approx(paired_permutation_test(b, a), abs=1e-12)


def test_monte_carlo_path_is_deterministic_and_close_to_exact():
    """PairedPermutationTest::test_monte_carlo_path_is_deterministic_and_close_to_exact (goldkeeper
    enumerates up to 20 differing pairs, and samples sign flips beyond)."""
    import numpy as np

    rng = random.Random(11)
    a = [rng.random() for _ in range(22)]
    b = [x - 0.25 + rng.random() * 0.5 for x in a]
    first, second = paired_permutation_test(a, b, resamples=4000), paired_permutation_test(a, b, resamples=4000)
    assert first == second and first > 0.0
    d = np.array(a) - np.array(b)  # every one of the 2^22 sign assignments, a block at a time
    extreme, block = 0, 1 << 16
    for start in range(0, 1 << d.size, block):
        signs = 1 - 2 * ((np.arange(start, start + block)[:, None] >> np.arange(d.size)) & 1)
        extreme += int((np.abs(signs @ d) >= abs(d.sum()) - 1e-12).sum())
    assert abs(first - extreme / (1 << d.size)) < 0.02


def test_rejects_unpaired_input():
    """PairedPermutationTest::test_rejects_unpaired_input."""
    with pytest.raises(ValueError, match="paired"):
        paired_permutation_test([1.0, 2.0], [1.0])


def test_holm_worked_example_order_bounds_single_and_empty():
    """HolmTest: ::test_worked_example (R's p.adjust), ::test_preserves_input_order_and_is_monotone_in_rank,
    ::test_never_loosens_a_p_value_and_stays_bounded, ::test_single_test_is_unchanged, ::test_empty."""
    assert [round(p, 10) for p in holm([0.01, 0.04, 0.03])] == [0.03, 0.06, 0.06]
    raw = [0.2, 0.001, 0.049, 0.6]
    adjusted = holm(raw)
    by_rank = [adjusted[i] for i in sorted(range(len(raw)), key=lambda i: raw[i])]
    assert len(adjusted) == len(raw) and by_rank == sorted(by_rank)
    assert all(original <= after <= 1.0 for original, after in zip([0.01, 0.02, 0.5, 0.9], holm([0.01, 0.02, 0.5, 0.9])))
    assert holm([0.031]) == [0.031] and holm([]) == []


def test_bootstrap_degenerate_brackets_deterministic_and_narrows():
    """BootstrapTest: ::test_degenerate_sample_collapses, ::test_brackets_the_observed_mean,
    ::test_deterministic_under_the_default_seed, ::test_interval_narrows_as_the_sample_grows."""
    assert bca_interval([1.0] * 10) == (1.0, 1.0)
    values = [0.1, 0.9, 0.5, 0.33, 1.0, 0.2, 0.66, 0.25]
    low, high = bca_interval(values, resamples=4000)
    assert low < sum(values) / len(values) < high
    assert bca_interval(values, resamples=2000) == bca_interval(values, resamples=2000)
    rng = random.Random(3)
    small, large = [rng.random() for _ in range(10)], [rng.random() for _ in range(400)]
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(bca_interval(large, resamples=2000)) < width(bca_interval(small, resamples=2000))


def test_bootstrap_empirical_coverage_is_near_nominal():
    """BootstrapTest::test_empirical_coverage_is_near_nominal (Beta(2, 5), skewed, 300 samples of 40)."""
    rng = random.Random(2024)
    covered = 0
    for i in range(300):
        sample = [rng.betavariate(2, 5) for _ in range(40)]
        low, high = bca_interval(sample, resamples=600, seed=1000 + i)
        covered += low <= 2 / 7 <= high
    assert 0.88 < covered / 300 < 0.995


def test_min_attainable_p_is_two_over_two_to_the_k():
    """DesignAnalysisTest::test_min_attainable_p_is_two_over_two_to_the_k and ::test_a_ten_query_gold_set_can_reach_significance_at_all."""
    assert (min_attainable_p(0), min_attainable_p(1)) == (1.0, 1.0)
    assert min_attainable_p(2) == pytest.approx(0.5) and min_attainable_p(10) == pytest.approx(2 / 1024)
    assert min_attainable_p(10) < 0.05 < min_attainable_p(5)


def test_required_queries_matches_the_closed_form_and_shrinks_as_the_effect_grows():
    """DesignAnalysisTest::test_required_queries_matches_the_closed_form, ::test_required_queries_shrinks_as_the_effect_grows."""
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.80)
    assert power_analysis(n=100, sd=0.3, target=0.05)["normal"]["queries_needed"] == math.ceil((z * 0.3 / 0.05) ** 2)
    assert (power_analysis(n=100, sd=0.3, target=0.20)["normal"]["queries_needed"]
            < power_analysis(n=100, sd=0.3, target=0.05)["normal"]["queries_needed"])


def test_required_queries_undefined_without_an_effect():
    """DesignAnalysisTest::test_required_queries_undefined_without_an_effect: refused, not None."""
    with pytest.raises(ValueError, match="target effect must be positive"):
        power_analysis(n=100, sd=0.3, target=0.0)
    with pytest.raises(ValueError, match="an sd > 0"):
        power_analysis(n=100, sd=0.0, target=0.1)


def test_mde_falls_with_sample_size_and_a_target_needs_its_queries():
    """DesignAnalysisTest::test_mde_falls_with_sample_size and ::test_reports_the_sample_size_a_target_effect_would_need."""
    rng = random.Random(5)
    pattern = [rng.gauss(0.1, 0.3) for _ in range(20)]
    assert power_analysis(pattern * 10)["normal"]["mde"] < power_analysis(pattern)["normal"]["mde"]
    rng = random.Random(9)
    a, b = [rng.random() for _ in range(10)], [rng.random() for _ in range(10)]
    found = power_analysis([x - y for x, y in zip(a, b)], target=0.02)
    assert found["n"] == 10 and found["normal"]["queries_needed"] > 10 and found["normal"]["mde"] > 0.02
