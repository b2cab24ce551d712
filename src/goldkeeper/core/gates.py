"""Gates: turn a report into PASS, FAIL or INDETERMINATE.

Three verdicts, because "cannot tell" is not "failed", and the worst one wins, so a passing
gate never clears a finding it did not look at (an unsound judgment set, an empty run).
Forms, as in the reference implementation, plus two gateable numbers of goldkeeper's own:

    recall@5:0.8                  absolute floor             value >= 0.8
    recall@5:-0.02                delta against a baseline   value - baseline >= -0.02
    worst-stratum:recall@5:0.7    floor on the weakest stratum
    ndcg@10:ci-lower:0.6          floor on the interval's lower bound
    faithfulness:ci-lower:0.8     the same on a summarized metric (score --measurement)
    coverage:0.95                 share of judged queries present in the run >= 0.95
    drift:0.05                    invalid label ratio (needs --corpus) <= 0.05
    ndcg@10:regression            no significant drop against the baseline's per-query values
                                  (paired randomization test, one-sided, alpha 0.05)
    recall@5:sequential:0.8       the betting confidence sequence over the per-query values
                                  settles above 0.8 (below: FAIL; undecided also fails)
    recall@5:sequential:0.8:500   the same, looking at no more than 500 queries (a budget)

Comparisons are made on values rounded to 12 decimals, so a drop of exactly the tolerance
passes instead of failing on the last bit of a float.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from goldkeeper.core.metric_ids import METRIC_NAMES, parse_metric_id, suggest
from goldkeeper.core.sequential import SEQUENTIAL_SEED, sequential_order
from goldkeeper.errors import is_file_name

if TYPE_CHECKING:
    from goldkeeper.models.report import GateResult, Report, Status

# Parsing a gate needs neither numpy nor pydantic: the CLI parses its gates (which may add
# cutoffs) before it starts reading. The evaluators read report documents (JSON values, no
# pydantic); only ``evaluate_gates``, for the Python API, builds the report models.

__all__ = ["Gate", "GateEvaluation", "evaluate_gates", "gate_results", "parse_gate", "sequential_order",
           "sequential_settled", "stops_early", "worse_status"]

GateKind = Literal["absolute", "delta", "worst-stratum", "ci-lower", "coverage", "drift", "regression",
                   "sequential"]
_ALPHA = 0.05

#: A summarized metric's name (``faithfulness``): no cutoff, so never a metric id.
_MEASUREMENT = re.compile(r"[a-z][a-z0-9_]*")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_ROUND = 12
_RANKING = {"PASS": 0, "INDETERMINATE": 1, "FAIL": 2}


@dataclass(frozen=True)
class Gate:
    raw: str
    kind: GateKind
    metric: str
    threshold: float
    budget: int | None = None
    #: A sequential gate's order seed (``eval --seed``), recorded in its result.
    seed: int = SEQUENTIAL_SEED


@dataclass
class GateEvaluation:
    status: Status
    results: list[GateResult]
    reasons: list[str]


def worse_status(a: Status, b: Status) -> Status:
    """FAIL beats INDETERMINATE beats PASS."""
    return a if _RANKING[a] >= _RANKING[b] else b


def _number(text: str, raw: str, low: float, high: float, what: str) -> float:
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"gate '{raw}': {what} must be a finite number, got '{text}'")
    value = float(text)
    if not low <= value <= high:
        raise ValueError(f"gate '{raw}': {what} must be from {low:g} to {high:g}, got {text}")
    return value


def _metric(text: str, raw: str) -> str:
    try:
        return str(parse_metric_id(text))
    except ValueError as error:
        raise ValueError(f"gate '{raw}': {error}") from None


def parse_gate(raw: str) -> Gate:
    """Parse one gate expression; ``ValueError`` with a message naming the expression."""
    parts = raw.split(":")
    head = parts[0]
    if head == "worst-stratum":
        if len(parts) != 3:
            raise ValueError(f"gate '{raw}': expected worst-stratum:<metric>@<k>:<floor>")
        return Gate(raw, "worst-stratum", _metric(parts[1], raw), _number(parts[2], raw, 0, 1, "the floor"))
    if head in ("coverage", "drift"):
        if len(parts) != 2:
            raise ValueError(f"gate '{raw}': expected {head}:<number from 0 to 1>")
        return Gate(raw, head, head, _number(parts[1], raw, 0, 1, "the threshold"))  # type: ignore[arg-type]
    if len(parts) == 3 and parts[1] == "ci-lower":
        # retrieval-eval's fourth form: a summarized metric (repeated samples, summarize) by its name
        metric = head if _MEASUREMENT.fullmatch(head) and head not in METRIC_NAMES else _metric(head, raw)
        return Gate(raw, "ci-lower", metric, _number(parts[2], raw, 0, 1, "the floor"))
    if len(parts) in (3, 4) and parts[1] == "sequential":
        budget = None
        if len(parts) == 4:
            if not parts[3].isdigit() or int(parts[3]) < 1:
                raise ValueError(f"gate '{raw}': the budget must be a whole number of queries >= 1, got '{parts[3]}'")
            budget = int(parts[3])
        return Gate(raw, "sequential", _metric(head, raw), _number(parts[2], raw, 0, 1, "the floor"), budget)
    if len(parts) == 2 and parts[1] == "regression":
        return Gate(raw, "regression", _metric(head, raw), _ALPHA)
    if len(parts) != 2:
        known = ", ".join((*METRIC_NAMES, "coverage", "drift", "worst-stratum"))
        hint = suggest(head.split("@")[0], [*METRIC_NAMES, "coverage", "drift", "worst-stratum"])
        raise ValueError(f"gate '{raw}': expected <metric>@<k>:<threshold>{hint} (names: {known})")
    if "@" not in head and head not in METRIC_NAMES:
        names = [*METRIC_NAMES, "coverage", "drift", "worst-stratum"]
        raise ValueError(f"gate '{raw}': unknown name '{head}'{suggest(head, names)} (names: {', '.join(names)})")
    metric = _metric(head, raw)
    if parts[1].startswith(("+", "-")):
        return Gate(raw, "delta", metric, _number(parts[1], raw, -1, 1, "the tolerance"))
    return Gate(raw, "absolute", metric, _number(parts[1], raw, 0, 1, "the threshold"))


def _at_least(value: float, floor: float) -> bool:
    return round(value, _ROUND) >= round(floor, _ROUND)


def _result(raw: str, status: Status, observed: float | None = None, baseline: float | None = None,
            **extra: Any) -> dict[str, Any]:
    """A gate's result as the report writes it (``GateResult`` in JSON form: unset omitted)."""
    out: dict[str, Any] = {"expression": raw, "status": status}
    if observed is not None:
        out["observed"] = float(observed)  # (as the model has it: a numpy float or an int made float)
    if baseline is not None:
        out["baseline"] = float(baseline)
    out.update(extra)
    return out


def _evaluate(gate: Gate, report: dict[str, Any], baseline: dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    from goldkeeper.core.scoring import worst_stratum

    raw = gate.raw
    if gate.kind == "coverage":
        coverage = report.get("coverage")
        if coverage is None:
            return _result(raw, "INDETERMINATE"), f"{raw}: the report has no coverage"
        ok = _at_least(coverage, gate.threshold)
        reason = None if ok else f"coverage is {coverage:.4f}, below {gate.threshold:g}"
        return _result(raw, "PASS" if ok else "FAIL", coverage), reason
    if gate.kind == "drift":
        drift = report["judgments"].get("drift")
        if drift is None:
            return (_result(raw, "INDETERMINATE"),
                    f"{raw}: drift was not checked; pass --corpus with a snapshot of the live corpus")
        ratio = drift["invalid_ratio"]
        ok = _at_least(gate.threshold, ratio)
        reason = None if ok else f"drift: {ratio:.4f} of labels no longer match the corpus, above {gate.threshold:g}"
        return _result(raw, "PASS" if ok else "FAIL", ratio), reason
    if gate.kind == "worst-stratum":
        strata = report.get("per_stratum") or {}
        found = worst_stratum(strata, gate.metric)
        if found is None:
            if strata and all(s["n"] == 0 for s in strata.values()):
                return _result(raw, "INDETERMINATE"), f"{raw}: no stratum was scored for '{gate.metric}'"
            return _result(raw, "INDETERMINATE"), f"{raw}: no per-stratum data for '{gate.metric}'"
        ok = _at_least(found["value"], gate.threshold)
        reason = None if ok else (
            f"worst stratum {gate.metric} is {found['value']:.4f} ({found['name']}), below {gate.threshold:g}")
        return _result(raw, "PASS" if ok else "FAIL", found["value"]), reason
    if gate.kind in ("regression", "sequential"):
        return _per_query_gate(gate, report, baseline)
    measurement = report["metrics"].get(gate.metric) or (report.get("measurements") or {}).get(gate.metric)
    if measurement is None:
        if report["judgments"].get("queries_scored") == 0:
            return _result(raw, "INDETERMINATE"), f"{raw}: no query was scored, so '{gate.metric}' was not computed"
        return _result(raw, "INDETERMINATE"), f"{raw}: metric '{gate.metric}' not present in the report"
    value = measurement["value"]
    if gate.kind == "ci-lower":
        ci = measurement.get("ci")
        if ci is None:
            return _result(raw, "INDETERMINATE", value), f"{raw}: no confidence interval on '{gate.metric}'"
        lower = ci[0]
        ok = _at_least(lower, gate.threshold)
        reason = None if ok else f"{gate.metric} lower bound is {lower:.4f}, below {gate.threshold:g}"
        return _result(raw, "PASS" if ok else "FAIL", lower), reason
    if gate.kind == "delta":
        previous = baseline["metrics"].get(gate.metric) if baseline is not None else None
        if previous is None:
            return _result(raw, "INDETERMINATE", value), f"{raw}: no baseline value for '{gate.metric}'"
        before = previous["value"]
        change = round(value - before, _ROUND)
        ok = _at_least(change, gate.threshold)
        direction = f"fell {-change:.4f}" if change < 0 else f"rose {change:.4f}"
        reason = None if ok else (
            f"{gate.metric} {direction}, from {before:.4f} to {value:.4f}, outside {gate.threshold:g}")
        return _result(raw, "PASS" if ok else "FAIL", value, before), reason
    ok = _at_least(value, gate.threshold)
    reason = None if ok else f"{gate.metric} is {value:.4f}, below {gate.threshold:g}"
    return _result(raw, "PASS" if ok else "FAIL", value), reason


def _values(report: dict[str, Any] | None, metric: str) -> dict[str, float]:
    per_query = report.get("per_query") if report is not None else None
    return {q: v[metric] for q, v in (per_query or {}).items() if metric in v}


def _per_query_gate(gate: Gate, report: dict[str, Any], baseline: dict[str, Any] | None,
                    ) -> tuple[dict[str, Any], str | None]:
    from goldkeeper.core.significance import paired_permutation_test

    raw, metric = gate.raw, gate.metric
    current = _values(report, metric)
    if not current:
        return _result(raw, "INDETERMINATE"), f"{raw}: no per-query values for '{metric}'"
    if gate.kind == "sequential":
        return _sequential(gate, current)
    before = _values(baseline, metric)
    shared = [q for q in current if q in before]
    if not shared:
        return (_result(raw, "INDETERMINATE"),
                f"{raw}: the baseline has no per-query values for '{metric}' on these queries")
    a = [before[q] for q in shared]
    b = [current[q] for q in shared]
    differing = sum(abs(x - y) > 1e-12 for x, y in zip(a, b))
    mismatch = len(current) + len(before) - 2 * len(shared)
    note = f" ({mismatch} queries not in both reports were left out)" if mismatch else ""
    if differing and 1 / 2**differing > _ALPHA:
        return (_result(raw, "INDETERMINATE"),
                f"{raw}: unresolvable, only {differing} queries differ from the baseline{note}")
    p = paired_permutation_test(a, b, alternative="less")
    if p <= _ALPHA:
        change = sum(b) / len(b) - sum(a) / len(a)
        return (_result(raw, "FAIL", sum(b) / len(b), sum(a) / len(a)),
                f"{metric} regressed by {-change:.4f} against the baseline (paired test, p = {p:.4f}){note}")
    return _result(raw, "PASS", sum(b) / len(b), sum(a) / len(a)), None


def _watch(gate: Gate, current: dict[str, float]) -> tuple[str | None, int, int, float, float]:
    """The first settled look: (PASS, FAIL or None when undecided, the look, the looks
    available, the lower and upper bounds then)."""
    from goldkeeper.core.sequential import betting_cs

    order = sequential_order(current, gate.seed)
    looked = order[: gate.budget] if gate.budget is not None else order
    lower, upper = betting_cs([current[q] for q in looked])
    for look, (low, high) in enumerate(zip(lower, upper), 1):
        if low >= gate.threshold - 1e-12:
            return "PASS", look, len(looked), low, high
        if high < gate.threshold:
            return "FAIL", look, len(looked), low, high
    return None, len(looked), len(looked), lower[-1], upper[-1]


def _sequential(gate: Gate, current: dict[str, float]) -> tuple[dict[str, Any], str | None]:
    """Watch the queries one at a time, in ``sequential_order``, and stop at the first look
    where the confidence sequence (valid at every look) is wholly above the floor (PASS) or
    below it (FAIL); undecided when the budget or the queries run out, which fails."""
    raw, metric, floor = gate.raw, gate.metric, gate.threshold
    status, look, available, low, high = _watch(gate, current)
    if status == "PASS":
        return _result(raw, "PASS", low, looked=look, of=len(current), seed=gate.seed), None
    if status == "FAIL":
        return (_result(raw, "FAIL", high, looked=look, of=len(current), seed=gate.seed),
                f"{metric}: the confidence sequence settled below {floor:g} after {look} queries "
                f"(upper bound {high:.4f})")
    limit = "the budget of" if gate.budget is not None and gate.budget < len(current) else "all"
    return (_result(raw, "FAIL", low, looked=available, of=len(current), seed=gate.seed),
            f"{metric}: the confidence sequence [{low:.4f}, {high:.4f}] is undecided about {floor:g} "
            f"after {limit} {available} queries (undecided fails)")


def stops_early(gates: Iterable[Gate]) -> bool:
    """Whether an evaluation may stop asking queries once the gates are settled: every gate is
    sequential (any other gate needs every query)."""
    gates = list(gates)
    return bool(gates) and all(gate.kind == "sequential" for gate in gates)


def sequential_settled(gates: Iterable[Gate], per_query: dict[str, dict[str, float]]) -> bool:
    """Whether every sequential gate has settled, or used its budget, on these queries' values:
    asking more queries could not change its verdict."""
    for gate in gates:
        if gate.kind != "sequential":
            continue
        current = {q: v[gate.metric] for q, v in per_query.items() if gate.metric in v}
        if not current:
            return False
        status, _, available, _, _ = _watch(gate, current)
        if status is None and (gate.budget is None or available < gate.budget):
            return False
    return True


def gate_results(report: dict[str, Any], gates: list[Gate | str], baseline: dict[str, Any] | None = None,
                 ) -> tuple[Status, list[dict[str, Any]], list[str]]:
    """Every gate evaluated on a report document (its JSON form; ``baseline`` too): the worst
    status (PASS when there are none), each gate's result as the report writes it, and the
    reasons of those that did not pass. What ``evaluate_gates`` and the reports run."""
    results: list[dict[str, Any]] = []
    reasons: list[str] = []
    status: Status = "PASS"
    for gate in gates:
        parsed = parse_gate(gate) if isinstance(gate, str) else gate
        result, reason = _evaluate(parsed, report, baseline)
        results.append(result)
        if reason is not None:
            reasons.append(reason)
        status = worse_status(status, result["status"])
    return status, results, reasons


def _document(report: Any, name: str) -> dict[str, Any]:
    """A report's JSON document, from the document or a ``Report``; a file name or anything
    else is a ``TypeError`` that says what to pass."""
    if isinstance(report, dict):
        return report
    if hasattr(report, "to_json_dict"):
        return report.to_json_dict()
    what = f"a file name {str(report)[:60]!r}: load it first" if is_file_name(report) else type(report).__name__
    raise TypeError(f"evaluate_gates: {name} must be a Report or its JSON document (a dict), not {what}")


def evaluate_gates(report: Report | dict[str, Any], gates: list[Gate | str],
                   baseline: Report | dict[str, Any] | None = None) -> GateEvaluation:
    """Evaluate every gate; the combined status is the worst one (PASS when there are none).
    ``report`` and ``baseline`` are ``Report`` models or their JSON documents; a document
    the gates cannot read is checked as a ``Report``, and pydantic's error names the field."""
    from goldkeeper.models.report import GateResult, Report

    if isinstance(gates, (str, Gate)):
        raise TypeError(f"evaluate_gates: gates is a list of gates, not one {type(gates).__name__}: "
                        f"pass [{gates!r}]")
    document = _document(report, "report")
    previous = None if baseline is None else _document(baseline, "baseline")
    try:
        status, results, reasons = gate_results(document, gates, previous)
    except (KeyError, TypeError, AttributeError):
        for given in (document, previous):
            if given is not None:
                Report.model_validate(given)
        raise
    return GateEvaluation(status=status, results=[GateResult.model_validate(r) for r in results], reasons=reasons)
