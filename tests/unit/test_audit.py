"""goldkeeper audit reproduces the seed's worked example and refuses impossible figures."""

from __future__ import annotations

import json
import math

import pytest

from goldkeeper.core.audit import audit
from tests.conftest import run_cli


def test_the_seeds_worked_example_through_the_cli():
    result = run_cli("audit", "-n", "10", "-m", "recall@5", "-v", "1.00", "-b", "0.70")
    assert result.code == 1  # unresolvable is a failed check
    assert "that is 10/10 successes" in result.stdout
    assert "[0.692, 1.000]" in result.stdout
    assert "the two means determine it exactly: 3 of 10 queries differ" in result.stdout
    assert "smallest attainable p   0.2500" in result.stdout
    assert "UNRESOLVABLE" in result.stdout


def test_json_and_a_resolvable_lift():
    result = run_cli("audit", "-n", "100", "-m", "hit_rate@10", "-v", "0.80", "-b", "0.70", "--format", "json")
    assert result.code == 0
    found = json.loads(result.stdout)
    assert found["lift"]["differing_least"] == 10
    assert found["lift"]["differing_most"] == 50  # min(80 + 70, 200 - 150)
    assert found["lift"]["verdict"] == "resolvable"


def test_a_graded_metric_gets_the_widest_interval_the_mean_allows():
    found = audit(100, "ndcg@10", 0.5)
    low, high = found["interval"]
    assert high - low == pytest.approx(2 * 1.959963984540054 * 0.05)
    assert "widest" in found["interval_method"]


@pytest.mark.parametrize("args", [["-n", "10", "-v", "0.55", "--binary"], ["-n", "0", "-v", "0.5"], ["-n", "10", "-v", "1.5"],
                                  ["-n", "10", "-v", "0.5", "-m", "recal@5"]])
def test_impossible_figures_are_usage_errors(args):
    result = run_cli("audit", *args)
    assert result.code == 2
    assert result.stderr.startswith("error: ")


def test_an_audit_warns_when_even_the_first_decimal_is_unsettled_and_leaves_a_narrow_one_alone():
    """Restates rag-eval-gate's tests/test_audit.py RenderTest::test_a_narrow_interval_is_not_editorialised."""
    narrow = run_cli("audit", "-n", "10000", "-m", "hit_rate@10", "-v", "0.50")
    assert "points wide" not in narrow.stdout and "width 0.020" in narrow.stdout
    wide = audit(10, "recall@5", 1.0)
    assert (wide["width_points"], wide["wide"]) == (31, True)


def test_a_graded_lift_bounds_the_differing_queries_from_the_means_and_n():
    found = audit(10, "ndcg@10", 1.0, 0.7)
    lift = found["lift"]
    assert found["bound"] == "graded"
    assert (lift["differing_least"], lift["differing_most"], lift["determined"]) == (3, 10, False)
    assert lift["min_attainable_p"] == 2 / 2**10  # best case: all ten differ
    assert lift["min_attainable_p_worst"] == 0.25  # worst case: only three do
    assert lift["verdict"] == "possibly-unresolvable"


def test_possibly_unresolvable_is_not_a_failed_check_but_unresolvable_is():
    possibly = run_cli("audit", "-n", "10", "-m", "ndcg@10", "-v", "1.0", "-b", "0.7")
    assert possibly.code == 0
    assert "POSSIBLY UNRESOLVABLE" in possibly.stdout
    assert "at least 3 of 10 queries differ" in possibly.stdout
    never = run_cli("audit", "-n", "4", "-m", "ndcg@10", "-v", "0.9", "-b", "0.4")
    assert never.code == 1  # four queries: 2/2^4 = 0.125 even if all differ
    assert "UNRESOLVABLE: even with 4 differing queries" in never.stdout


@pytest.mark.parametrize(("args", "bound", "chosen"), [
    (["-m", "recall@5", "-v", "0.70"], "binary", "inferred"),
    (["-m", "recall@5", "-v", "0.70", "--graded"], "graded", "forced"),
    (["-m", "ndcg@10", "-v", "0.70"], "graded", "inferred"),
    (["-m", "ndcg@10", "-v", "0.70", "--binary"], "binary", "forced"),
    (["-m", "hit_rate@5", "-v", "0.73"], "graded", "inferred"),  # 0.73 is not k/10
], ids=["recall-k-over-n", "recall-forced-graded", "ndcg", "ndcg-forced-binary", "not-k-over-n"])
def test_the_bound_is_stated_and_can_be_forced(args, bound, chosen):
    result = run_cli("audit", "-n", "10", *args, "--format", "json")
    found = json.loads(result.stdout)
    assert (found["bound"], found["bound_chosen"]) == (bound, chosen)
    assert ("successes" in found) == (bound == "binary")
    text = run_cli("audit", "-n", "10", *args)
    assert f"bound: {bound} ({chosen})" in text.stdout


def test_binary_and_graded_together_and_binary_on_a_figure_that_is_not_k_over_n_are_refused():
    both = run_cli("audit", "-n", "10", "-v", "0.7", "--binary", "--graded")
    assert both.code == 2 and "exclude each other" in both.stderr
    odd = run_cli("audit", "-n", "10", "-v", "0.73", "--binary")
    assert odd.code == 2
    assert odd.stderr == "error: audit: --binary: value 0.73 is not k/10 (to two decimals) for any whole number k of queries\n"


@pytest.mark.parametrize(("n", "metric", "value", "baseline"), [
    (10, "recall@5", 1.0, 0.7), (100, "hit_rate@10", 0.8, 0.7), (50, "ndcg@10", 0.62, 0.55), (1000, "mrr@10", 0.45, 0.43),
])
def test_queries_to_resolve_is_the_normal_paired_formula_at_the_widest_spread(n, metric, value, baseline):
    from scipy.stats import norm

    lift = audit(n, metric, value, baseline)["lift"]
    z = norm.ppf(0.975) + norm.ppf(0.8)
    effect = abs(value - baseline) if lift["differing_most"] == n and not lift["determined"] else lift["differing_least"] / n
    assert lift["queries_to_resolve"] == max(6, math.ceil((z * lift["assumed_sd"] / effect) ** 2 - 1e-9))
    # No per-query difference of a [0, 1] metric can spread wider than the sd assumed.
    assert lift["assumed_sd"] <= math.sqrt(1 - effect**2) + 1e-12


def test_a_lift_with_no_spread_still_needs_the_differing_pairs_a_sign_test_must_see():
    lift = audit(10, "hit_rate@5", 1.0, 0.0)["lift"]  # every query flips the same way: sd 0
    assert lift["assumed_sd"] == 0
    assert lift["queries_to_resolve"] == 6  # 2 / 2^6 < 0.05 <= 2 / 2^5


@pytest.mark.parametrize(("n", "value", "baseline", "binary"), [
    (10, 1.0, 0.7, True), (100, 0.8, 0.7, True), (40, 0.6, 0.45, True), (12, 0.75, 0.5, True),
    (50, 0.62, 0.55, False), (10, 1.0, 0.7, False), (1000, 0.452, 0.448, False),
])
def test_parity_with_rag_eval_gates_audit(n, value, baseline, binary):
    """retrieval-eval-gate 0.2.1 (the seed's package): the same interval, differing-query bounds
    and floors. Queries to resolve a graded lift differ on purpose (spec/audit.md): the seed
    takes the larger of the two means' variances, which does not bound the variance of their
    difference; goldkeeper's assumption is the true ceiling, so it never asks for fewer."""
    reference = pytest.importorskip("rag_eval_gate.audit")
    ours = audit(n, "recall@5", value, baseline, bound="binary" if binary else "graded")
    theirs_metric = reference.audit_metric("recall@5", value, n, binary=binary)
    theirs = reference.audit_comparison("recall@5", value, baseline, n, binary=binary)
    assert ours["interval"] == pytest.approx([theirs_metric.lo, theirs_metric.hi], abs=1e-9)
    lift = ours["lift"]
    assert (lift["differing_most"], lift["determined"]) == (theirs.k_max, theirs.determined)
    assert lift["min_attainable_p"] == pytest.approx(theirs.floor_p_best)
    if binary or theirs.k_min == math.ceil(round(abs(value - baseline) * n, 9)):
        assert lift["differing_least"] == theirs.k_min
        assert lift["min_attainable_p_worst"] == pytest.approx(theirs.floor_p_worst)
    else:  # the seed's ceil(|1.0 - 0.7| * 10) is ceil(3.0000000000000004) = 4: a float's last bit
        assert lift["differing_least"] == theirs.k_min - 1 == math.ceil(round(abs(value - baseline) * n, 9))
    assert (lift["verdict"] != "unresolvable") == theirs.resolvable
    if binary:
        assert lift["queries_to_resolve"] == max(6, theirs.queries_for_delta or 0)
    else:
        assert lift["queries_to_resolve"] >= theirs.queries_for_delta
