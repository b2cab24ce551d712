"""Gates: parsing, range checks, exact tolerances, fail-closed verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest

import goldkeeper
from goldkeeper.core.gates import parse_gate
from goldkeeper.core.reporting import build_report
from goldkeeper.core.scoring import score
from goldkeeper.core.validation import validate

JUDGMENTS = goldkeeper.parse_judgments(
    "".join(json.dumps({"query_id": f"q{i}", "query": f"query {i}", "doc_uri": f"d{i}", "relevance": 1,
                        "labeled_by": "human:a", "stratum": "a" if i < 5 else "b"}) + "\n" for i in range(10))
)


def _run(hits: int, present: int = 10):
    return [goldkeeper.RunEntry(query_id=f"q{i}", ranking=[f"d{i}" if i < hits else "x"]) for i in range(present)]


def _report(run, gates=(), baseline=None, intervals=None):
    return build_report(score(JUDGMENTS, run, k=[1, 5], intervals=intervals), validate(JUDGMENTS),
                        generated_at="2026-11-29T00:00:00Z", gates=list(gates), baseline=baseline)


@pytest.mark.parametrize(("expression", "message"), [
    ("recal@5:0.8", "did you mean 'recall'"),
    ("ndgc@10:0.5", "did you mean 'ndcg'"),
    ("recall:0.8", "needs a cutoff"),
    ("recall@0:0.8", "from 1 to 1,000,000, got 0"),
        ("recall@1000001:0.8", "from 1 to 1,000,000, got 1000001"),
    ("recall@5:1.5", "from 0 to 1"),
    ("recall@5:-1.5", "from -1 to 1"),
    ("recall@5:nan", "finite number"),
    ("recall@5:0.5abc", "finite number"),
    ("recall@5", "expected <metric>@<k>:<threshold>"),
    ("worst-stratum:recall@5", "expected worst-stratum"),
    ("coverage:2", "from 0 to 1"),
    ("covrage:0.9", "did you mean 'coverage'"),
])
def test_bad_gates_are_refused_with_words(expression, message):
    with pytest.raises(ValueError, match=message) as caught:
        parse_gate(expression)
    assert str(caught.value).startswith(f"gate '{expression}': ")


def test_a_drop_of_exactly_the_tolerance_passes():
    baseline = _report(_run(7))
    current = _report(_run(5), ["recall@1:-0.2", "recall@1:-0.19"], baseline=baseline)
    # 0.5 - 0.7 is -0.19999999999999996 in binary floating point; the tolerance is exact.
    assert [g.status for g in current.verdict.gates] == ["PASS", "FAIL"]
    assert "recall@1 fell 0.2000, from 0.7000 to 0.5000, outside -0.19" in current.verdict.reasons


def test_absolute_floor_equal_to_the_value_passes():
    report = _report(_run(3), ["recall@1:0.3", "precision@5:0.06"])
    assert report.verdict.status == "PASS"


def test_worst_stratum_and_the_worst_verdict_wins():
    report = _report(_run(5), ["recall@5:0.5", "worst-stratum:recall@5:0.1"])
    assert [g.status for g in report.verdict.gates] == ["PASS", "FAIL"]
    assert report.verdict.status == "FAIL"
    assert "worst stratum recall@5 is 0.0000 (b), below 0.1" in report.verdict.reasons


def test_the_reasons_count_one_query_in_the_singular():
    def reasons(run):
        return build_report(score(JUDGMENTS + goldkeeper.parse_judgments(
            '{"query_id": "q0", "doc_uri": "e", "relevance": 1, "stratum": "b"}\n'
            '{"query_id": "z", "doc_uri": "d", "relevance": 0}\n'), run, k=[2]),
            validate(JUDGMENTS), generated_at="2026-11-29T00:00:00Z").verdict.reasons

    one = reasons([goldkeeper.RunEntry(query_id=f"q{i}", ranking=[f"d{i}"] * (2 if i == 1 else 1))
                   for i in range(1, 10)] + [goldkeeper.RunEntry(query_id="w", ranking=["d0"])])
    assert one == [
        "1 judged query had no run entry and scored zero",
        "1 judged query has no label at relevance >= 1 and was excluded from the averages",
        "1 query repeated a key in its ranking; only the first occurrence of each was counted",
        "1 run entry is for a query without labels and was ignored",
        "1 query carries labels of more than one stratum; it is counted in the stratum of its first label"
        " (see stratum_conflicts)",
    ]
    two = reasons([goldkeeper.RunEntry(query_id=q, ranking=["d0", "d0"]) for q in ("q0", "q1")]
                  + [goldkeeper.RunEntry(query_id=q, ranking=["d0"]) for q in ("w", "v")])
    assert "2 queries repeated a key in their ranking; only the first occurrence of each was counted" in two
    assert "2 run entries are for queries without labels and were ignored" in two
    assert "8 judged queries had no run entry and scored zero" in two


def test_a_run_whose_rankings_hold_no_relevant_key_says_to_check_its_ids():
    misses = "no ranking holds a relevant key in its top 5: check that the run ranks the ids the labels name"
    assert any(reason.startswith(misses) for reason in _report(_run(0)).verdict.reasons)
    assert not any(reason.startswith("no ranking holds") for reason in _report(_run(1)).verdict.reasons)
    # A run with no entry for any judged query says that instead.
    assert not any(reason.startswith("no ranking holds") for reason in _report(_run(0, present=0)).verdict.reasons)


def test_an_empty_run_never_passes_even_with_no_gate():
    report = _report([], ["recall@5:0"])
    assert report.verdict.status == "FAIL"
    assert "the run is empty, so no judged query was answered" in report.verdict.reasons


def test_a_run_that_answers_no_judged_query_fails():
    run = [goldkeeper.RunEntry(query_id="other", ranking=["d1"])]
    report = _report(run)
    assert report.verdict.status == "FAIL"
    assert report.model_extra["run_only_queries"] == ["other"]


def test_coverage_gate():
    report = _report(_run(10, present=8), ["coverage:0.8", "coverage:0.81"])
    assert [g.status for g in report.verdict.gates] == ["PASS", "FAIL"]
    assert report.model_extra["coverage"] == 0.8
    assert report.model_extra["missing_queries"] == ["q8", "q9"]


def test_delta_without_baseline_and_ci_lower_without_interval_are_indeterminate():
    report = _report(_run(10), ["recall@5:-0.01", "recall@5:ci-lower:0.5"])
    assert [g.status for g in report.verdict.gates] == ["INDETERMINATE", "INDETERMINATE"]
    assert report.verdict.status == "INDETERMINATE"


def test_score_puts_the_clis_intervals_on_by_default():
    """The Python ``score`` and the CLI agree: 95% intervals unless asked not to."""
    report = _report(_run(10), ["recall@5:ci-lower:0.5"], intervals=True)
    assert report.metrics["recall@5"].ci is not None and report.metrics["recall@5"].ci_method
    assert [g.status for g in report.verdict.gates] == ["PASS"]
    assert tuple(score(JUDGMENTS, _run(10), k=[5]).metrics["recall@5"]["ci"]) == report.metrics["recall@5"].ci


def test_drift_gate_without_a_corpus_is_indeterminate():
    report = _report(_run(10), ["drift:0.1"])
    assert report.verdict.status == "INDETERMINATE"
    assert "pass --corpus" in report.verdict.reasons[-1]


def test_report_validates_against_the_reference_schema():
    from importlib import resources

    import jsonschema
    schema = json.loads((resources.files("retrieval_eval") / "spec" / "report.schema.json").read_text())
    report = _report(_run(5), ["recall@5:0.5"])
    jsonschema.validate(report.to_json_dict(), schema, format_checker=jsonschema.FormatChecker())


def _many(hits: int, n: int = 60):
    labels = goldkeeper.parse_judgments("".join(
        json.dumps({"query_id": f"q{i}", "query": "x", "doc_uri": f"d{i}", "relevance": 1}) + "\n" for i in range(n)))
    run = [goldkeeper.RunEntry(query_id=f"q{i}", ranking=[f"d{i}" if i < hits else "x"]) for i in range(n)]
    return labels, run


def _report_of(labels, run, gates=(), baseline=None):
    return build_report(score(labels, run, k=[1]), validate(labels), generated_at="2026-11-29T00:00:00Z",
                        gates=list(gates), baseline=baseline)


def test_regression_gate_fails_a_significant_drop_and_passes_noise():
    labels, good = _many(50)
    base = _report_of(labels, good)
    _, worse = _many(35)  # 15 queries lost, none gained
    failed = _report_of(labels, worse, ["recall@1:regression"], baseline=base)
    assert failed.verdict.gates[0].status == "FAIL"
    assert "recall@1 regressed by 0.2500" in failed.verdict.reasons[-1]
    _, same = _many(50)
    assert _report_of(labels, same, ["recall@1:regression"], baseline=base).verdict.gates[0].status == "PASS"


def test_regression_gate_with_too_few_differences_is_unresolvable():
    labels, good = _many(50)
    base = _report_of(labels, good)
    _, slightly = _many(48)
    result = _report_of(labels, slightly, ["recall@1:regression"], baseline=base)
    assert result.verdict.gates[0].status == "INDETERMINATE"
    assert "unresolvable" in result.verdict.reasons[-1]


def test_sequential_gate_settles_or_fails_undecided():
    labels, run = _many(58)
    assert _report_of(labels, run, ["recall@1:sequential:0.7"]).verdict.gates[0].status == "PASS"
    undecided = _report_of(labels, run, ["recall@1:sequential:0.95"])
    assert undecided.verdict.gates[0].status == "FAIL"
    assert "undecided" in undecided.verdict.reasons[-1]


def test_sequential_gate_stops_at_the_first_settled_look_and_keeps_to_its_budget():
    from goldkeeper.core.gates import _sequential, parse_gate, sequential_order
    from goldkeeper.core.sequential import betting_cs

    rng = np.random.default_rng(4)
    values = {f"q{i:04d}": float(v) for i, v in enumerate(rng.random(2000) < 0.9)}
    result, reason = _sequential(parse_gate("recall@5:sequential:0.8"), values)
    assert result["status"] == "PASS" and reason is None
    looked = result["looked"]
    assert 30 < looked < 2000 and result["of"] == 2000
    # It stopped at the first look whose lower bound clears the floor, not later.
    lower, _ = betting_cs([values[q] for q in sequential_order(values)])
    assert lower[looked - 1] >= 0.8 > lower[looked - 2]
    # A budget too small to settle it leaves it undecided, which fails.
    result, reason = _sequential(parse_gate(f"recall@5:sequential:0.8:{looked // 2}"), values)
    assert result["status"] == "FAIL" and "after the budget of" in reason and result["looked"] == looked // 2
    low, reason = _sequential(parse_gate("recall@5:sequential:0.97"), values)
    assert low["status"] == "FAIL" and "settled below" in reason
    with pytest.raises(ValueError, match="budget must be a whole number"):
        parse_gate("recall@5:sequential:0.8:0")


@pytest.mark.parametrize("intervals", [False, True])
def test_the_report_document_is_the_models_wire_form_and_takes_models_or_documents(intervals):
    """``report_document`` (what score writes, no pydantic) equals ``build_report``'s model
    written out, field for field and in order, with every optional part present; gates read
    a baseline given as a model or as its document alike."""
    from goldkeeper.core.intervals import BootstrapSpec
    from goldkeeper.core.reporting import report_document
    from goldkeeper.models.report import CorpusInfo, DriftCounts

    labels, good = _many(50)
    spec = BootstrapSpec(0.95, 200, 0) if intervals else None
    result = score(labels, _many(40)[1], k=[1, 5], intervals=spec)
    baseline = _report_of(labels, good)
    drift = {"valid": 58, "re_anchorable": 1, "merged": 0, "split": 0, "orphaned": 1, "invalid_ratio": 0.033333333333}
    corpus = {"fingerprint": "sha256:abc", "documents": 3, "chunks": 9}
    gates = ["recall@1:-0.1", "recall@1:regression", "recall@1:sequential:0.5", "coverage:0.9", "drift:0.01",
             "ndcg@5:ci-lower:0.1", "worst-stratum:recall@1:0.1", "mrr@5:0.2"]
    settings = {"generated_at": "2026-11-29T00:00:00Z", "gates": gates, "inputs": {"run": {"url": "r", "sha256": None}}}
    document = report_document(result, validate(labels), baseline=baseline.to_json_dict(), drift=drift,
                               corpus=corpus, **settings)
    model = build_report(result, validate(labels), baseline=baseline, drift=DriftCounts(**drift),
                         corpus=CorpusInfo(**corpus), **settings)
    assert json.dumps(document) == json.dumps(model.to_json_dict())
    assert [g["status"] for g in document["verdict"]["gates"]] == [
        "FAIL", "FAIL", "FAIL", "PASS", "FAIL", "INDETERMINATE" if not intervals else "PASS", "INDETERMINATE", "PASS"]
    assert ("ci" in document["metrics"]["ndcg@5"]) is intervals and ("intervals" in document) is intervals
    assert document["judgments"]["drift"] == drift and document["corpus"] == corpus
