"""rag-eval-gate's own tests/test_audit.py (0.2.1, from its sdist), restated against
goldkeeper's ``audit`` (``goldkeeper.stats.audit`` and the CLI); each test names the peer
test it restates. (RenderTest::test_a_narrow_interval_is_not_editorialised is in test_audit.py.)"""

from __future__ import annotations

import math

import pytest
from scipy import stats

from goldkeeper.core.intervals import clopper_pearson
from goldkeeper.stats import audit
from tests.conftest import run_cli


def test_a_perfect_score_is_not_certainty():
    """BinaryMetricTest::test_a_perfect_score_is_not_certainty."""
    found = audit(10, "Recall@5", 1.00)
    assert found["bound"] == "binary" and found["successes"] == 10 and "exact" in found["interval_method"]
    assert found["interval"][0] == pytest.approx(0.025 ** 0.1, abs=1e-9) and found["interval"][1] == 1.0
    assert found["width"] > 0.30


def test_recall_is_inferred_binary_and_the_inference_is_stated():
    """BinaryMetricTest::test_recall_is_inferred_binary_and_the_inference_is_stated."""
    found = audit(10, "recall@5", 0.70)
    assert found["bound"] == "binary" and found["bound_chosen"] == "inferred" and "0/1" in found["notes"][0]


def test_a_mean_that_is_not_a_success_count_is_not_treated_as_one():
    """BinaryMetricTest::test_a_mean_that_is_not_a_success_count_is_not_treated_as_one."""
    found = audit(10, "recall@5", 0.95)
    assert found["bound"] == "graded" and "widest" in found["interval_method"]


def test_forcing_binary_on_an_impossible_mean_is_refused():
    """BinaryMetricTest::test_forcing_binary_on_an_impossible_mean_is_refused."""
    with pytest.raises(ValueError, match="is not k/10"):
        audit(10, "recall@5", 0.95, bound="binary")


@pytest.mark.parametrize(("value", "n"), [(0.7, 10), (0.9, 10), (0.3, 1000)])
def test_matches_the_library_used_everywhere_else(value, n):
    """BinaryMetricTest::test_matches_the_library_used_everywhere_else."""
    found = audit(n, "recall@5", value, bound="binary")
    assert found["interval"] == pytest.approx(list(clopper_pearson(round(value * n), n)), abs=1e-12)


def test_uses_the_widest_interval_the_mean_allows():
    """GradedMetricTest::test_uses_the_widest_interval_the_mean_allows."""
    found = audit(100, "nDCG@10", 0.5)
    assert found["interval"][1] - 0.5 == pytest.approx(stats.norm.ppf(0.975) * math.sqrt(0.25 / 100), abs=1e-9)
    assert "widest" in found["notes"][0]


@pytest.mark.parametrize("metric", ["MRR@10", "nDCG@10", "map"])
def test_mrr_and_ndcg_are_never_inferred_binary(metric):
    """GradedMetricTest::test_mrr_and_ndcg_are_never_inferred_binary."""
    assert audit(10, metric, 0.8)["bound"] == "graded"


def test_the_interval_stays_inside_the_unit_range_and_a_larger_sample_narrows_it():
    """GradedMetricTest::test_the_interval_stays_inside_the_unit_range and ::test_a_larger_sample_narrows_it."""
    low, high = audit(5, "nDCG@10", 0.98)["interval"]
    assert 0.0 <= low and high <= 1.0
    assert audit(1000, "MRR@10", 0.6)["width"] < audit(50, "MRR@10", 0.6)["width"]


@pytest.mark.parametrize(("n", "value"), [(10, -0.1), (10, 1.2), (1, 0.5)])
def test_out_of_range_input_is_refused(n, value):
    """GradedMetricTest::test_out_of_range_input_is_refused (one query too, as issue 42 asks)."""
    with pytest.raises(ValueError):
        audit(n, "MRR@10", value)


def _bounds(value, baseline, n, metric="recall@5"):
    lift = audit(n, metric, value, baseline=baseline)["lift"]
    return lift["differing_least"], lift["differing_most"], lift["determined"]


def test_a_perfect_score_determines_the_count():
    """DifferingQueryBoundsTest::test_a_perfect_score_determines_the_count."""
    assert _bounds(1.0, 0.7, 10) == (3, 3, True)


def test_otherwise_the_count_is_only_bounded():
    """DifferingQueryBoundsTest::test_otherwise_the_count_is_only_bounded."""
    assert _bounds(0.8, 0.7, 10) == (1, 5, False)


def test_equal_means_still_allow_total_disagreement():
    """DifferingQueryBoundsTest::test_equal_means_still_allow_total_disagreement."""
    assert _bounds(0.5, 0.5, 10)[:2] == (0, 10)


def test_the_bounds_do_not_depend_on_which_system_is_named_first():
    """DifferingQueryBoundsTest::test_the_bounds_do_not_depend_on_which_system_is_named_first."""
    assert _bounds(0.9, 0.6, 20)[:2] == _bounds(0.6, 0.9, 20)[:2]


def test_a_graded_metric_is_bounded_by_the_delta():
    """DifferingQueryBoundsTest::test_a_graded_metric_is_bounded_by_the_delta."""
    assert _bounds(0.523, 0.498, 300, "ndcg@10") == (math.ceil(0.025 * 300), 300, False)


def test_the_headline_audit_is_unresolvable():
    """ComparisonTest::test_the_headline_audit_is_unresolvable."""
    lift = audit(10, "Recall@5", 1.00, baseline=0.70)["lift"]
    assert lift["determined"] and lift["differing_least"] == 3
    assert lift["min_attainable_p_worst"] == pytest.approx(0.25, abs=1e-12) and lift["verdict"] == "unresolvable"


def test_a_lift_over_enough_queries_is_resolvable_in_principle():
    """ComparisonTest::test_a_lift_over_enough_queries_is_resolvable_in_principle."""
    lift = audit(1000, "recall@5", 0.94, baseline=0.92)["lift"]
    assert lift["verdict"] == "resolvable" and lift["min_attainable_p"] < 0.05


def test_an_undetermined_comparison_reports_both_ends():
    """ComparisonTest::test_an_undetermined_comparison_reports_both_ends."""
    lift = audit(10, "recall@5", 0.8, baseline=0.7)["lift"]
    assert not lift["determined"] and lift["min_attainable_p"] < lift["min_attainable_p_worst"]
    assert lift["min_attainable_p_worst"] == pytest.approx(1.0, abs=1e-12)


def test_the_paired_spread_uses_the_difference_variance_not_the_score_variance():
    """ComparisonTest::test_the_paired_spread_uses_the_difference_variance_not_the_score_variance."""
    lift = audit(10, "recall@5", 1.00, baseline=0.70)["lift"]
    sd = math.sqrt(3 / 10 - 0.3 ** 2)
    assert lift["assumed_sd"] == pytest.approx(sd, abs=1e-12)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert lift["queries_to_resolve"] >= math.ceil((z * sd / 0.3) ** 2)  # the paired t's count, at least the normal's


def test_a_smaller_lift_needs_more_queries_and_out_of_range_baselines_are_refused():
    """ComparisonTest::test_a_smaller_lift_needs_more_queries and ::test_out_of_range_baselines_are_refused."""
    assert (audit(300, "nDCG@10", 0.60, baseline=0.50)["lift"]["queries_to_resolve"]
            < audit(300, "nDCG@10", 0.51, baseline=0.50)["lift"]["queries_to_resolve"])
    with pytest.raises(ValueError, match="baseline must be from 0 to 1"):
        audit(10, "recall@5", 0.9, baseline=1.4)


def test_an_unresolvable_comparison_says_so_unambiguously():
    """RenderTest::test_an_unresolvable_comparison_says_so_unambiguously."""
    text = run_cli("audit", "-n", "10", "-m", "Recall@5", "-v", "1.00", "-b", "0.70").stdout
    assert "UNRESOLVABLE" in text and "10/10 successes" in text and "31 points wide" in text


def test_a_resolvable_one_does_not_overclaim():
    """RenderTest::test_a_resolvable_one_does_not_overclaim."""
    text = run_cli("audit", "-n", "1000", "-m", "Recall@100", "-v", "0.94", "-b", "0.92").stdout
    assert "resolvable in principle" in text and "needs the paired test" in text and "UNRESOLVABLE" not in text


def test_a_metric_alone_renders_without_a_comparison():
    """RenderTest::test_a_metric_alone_renders_without_a_comparison."""
    text = run_cli("audit", "-n", "50", "-m", "MRR@10", "-v", "0.95").stdout
    assert "mrr@10" in text and "Claimed lift" not in text
