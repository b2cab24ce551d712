"""Assemble a report from a score, a validation and gates, and decide the verdict.

The verdict starts from what the inputs say before any gate: INDETERMINATE when nothing
was scored or the judgment set is unsound, FAIL when the run covers none of the judged
queries (an empty or missing run can never pass). Gates can only make it worse.

``report_document`` builds the report as JSON values, the form it is written in, without
pydantic (``goldkeeper score`` writes it as it is, and need not import pydantic or build
models for it);
``build_report`` validates that document into the ``Report``
model, whose ``to_json_dict`` gives the same document back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goldkeeper._version import __version__
from goldkeeper.core.gates import Gate, gate_results, worse_status
from goldkeeper.core.scoring import ScoreResult
from goldkeeper.core.validation import ValidationResult

if TYPE_CHECKING:
    from goldkeeper.models.report import CorpusInfo, DriftCounts, Report, Status

__all__ = ["Retrieval", "build_report", "report_document"]

_INTERVAL_METHODS = {
    "clopper-pearson": "exact binomial interval, for metrics whose per-query values are 0 or 1 "
                       "(Clopper and Pearson 1934; scipy.stats.beta)",
    "bca": "bias-corrected and accelerated bootstrap of the mean over queries (Efron 1987; "
           "as scipy.stats.bootstrap method='BCa')",
    "bca-saddlepoint": "BCa with the bootstrap distribution of the mean computed by the saddlepoint, not "
                       "drawn, from 500 queries on (Lugannani and Rice 1980; Davison and Hinkley 1988)",
}


@dataclass(frozen=True)
class Retrieval:
    """What a live retrieval spent: ``queries`` asked, the ``errors`` (``{query_id, error}``,
    scored as missing from the run, never as an empty ranking), the error ``budget`` (a share
    of the queries), and with sequential gates the queries asked before they settled
    (``sequential``: ``query_ids`` and what was saved), on which alone it is scored."""

    queries: int
    errors: list[dict[str, Any]] = field(default_factory=list)
    budget: float = 0.0
    sequential: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, figures: Mapping[str, Any]) -> Retrieval:
        """From the eval flow's parameter (``queries``, ``errors``, ``budget``, ``sequential``)."""
        return cls(figures["queries"], list(figures["errors"]), figures.get("budget", 0.0), figures.get("sequential"))

    @property
    def asked(self) -> frozenset[str] | None:
        """The queries asked, when a sequential retrieval stopped before asking them all."""
        ids = (self.sequential or {}).get("query_ids")
        return None if ids is None else frozenset(ids)


def _n(count: int, one: str, many: str) -> str:
    """``count`` and the words for it: ``one`` when it is 1, else ``many``."""
    return f"{count} {one if count == 1 else many}"


def _base_verdict(result: ScoreResult, validation: ValidationResult,
                  drift: dict[str, Any] | None) -> tuple[Status, list[str]]:
    reasons: list[str] = []
    status: Status = "PASS"
    threshold = result.threshold
    if drift is not None and drift["invalid_ratio"] > 0:
        reasons.append(f"{round(drift['invalid_ratio'] * 100)}% of judgments no longer match the live corpus")
    scored_missing = [q for q in result.missing_queries if q in result.per_query]
    if result.queries and result.run_queries == 0:
        status = "FAIL"
        reasons.append("the run is empty, so no judged query was answered")
    elif result.queries and len(result.missing_queries) == result.queries:
        status = "FAIL"
        reasons.append("the run has no entry for any judged query")
    elif scored_missing:
        reasons.append(_n(len(scored_missing), "judged query", "judged queries") + " had no run entry and scored zero")
    deepest = f"hit_rate@{max(result.ks)}"
    if (result.run_queries and len(result.missing_queries) < result.queries and deepest in result.metrics
            and result.metrics[deepest]["value"] == 0):
        # Every metric is 0: most often the run ranks other ids than the labels name (documents
        # against chunk labels, or the reverse), and the numbers mean nothing.
        reasons.append(f"no ranking holds a relevant key in its top {max(result.ks)}: check that the run "
                       "ranks the ids the labels name (a label's chunk_id when it has one, else its doc_uri)")
    if result.queries_without_positives and result.queries_scored > 0:
        reasons.append(
            _n(len(result.queries_without_positives), f"judged query has no label at relevance >= {threshold}"
               " and was excluded", f"judged queries have no label at relevance >= {threshold} and were excluded")
            + " from the averages"
        )
    if result.queries_scored == 0:
        status = worse_status(status, "INDETERMINATE")
        if result.queries == 0:
            reasons.append("no judged queries, so no metric was computed")
        else:
            reasons.append(f"no query had a label at relevance >= {threshold}, so no metric was computed")
    if result.queries_with_duplicates:
        reasons.append(
            _n(len(result.queries_with_duplicates), "query repeated a key in its ranking;",
               "queries repeated a key in their ranking;")
            + " only the first occurrence of each was counted"
        )
    if result.run_only_queries:
        reasons.append(_n(len(result.run_only_queries), "run entry is for a query without labels and was ignored",
                          "run entries are for queries without labels and were ignored"))
    if result.stratum_conflicts:
        reasons.append(
            _n(len(result.stratum_conflicts), "query carries labels of more than one stratum; it is",
               "queries carry labels of more than one stratum; each is")
            + " counted in the stratum of its first label (see stratum_conflicts)"
        )
    if validation.error_codes:
        status = worse_status(status, "INDETERMINATE")
        reasons.append(
            f"the judgment set is unsound ({', '.join(validation.error_codes)}); run 'goldkeeper "
            "validate' for detail. No metric computed from it can be trusted"
        )
    return status, reasons


def _plain(value: Any) -> dict[str, Any] | None:
    """A model given for a part of the report, as JSON values (unset fields omitted)."""
    if value is None or isinstance(value, dict):
        return value
    return value.model_dump(mode="json", exclude_none=True)


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def report_document(
    result: ScoreResult,
    validation: ValidationResult,
    *,
    generated_at: str,
    gates: list[Gate | str] | None = None,
    baseline: Report | dict[str, Any] | None = None,
    drift: DriftCounts | dict[str, Any] | None = None,
    corpus: CorpusInfo | dict[str, Any] | None = None,
    inputs: dict[str, Any] | None = None,
    measurements: dict[str, dict[str, Any]] | None = None,
    retrieval: Retrieval | None = None,
    audit: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The full report as JSON values, in the order it is written (the reference schema's
    fields, then goldkeeper's). ``generated_at`` is given, not read from a clock: the core is
    pure. ``baseline``, ``drift`` and ``corpus`` are models or their JSON documents;
    ``measurements`` are summarized metrics by name (``summarize``'s, as JSON), which
    ``NAME:ci-lower:F`` gates read; ``retrieval`` (a live evaluation's figures) adds the error
    budget's gate; ``audit`` (``core.evaluation``'s: PPI++ estimates from people's labels on a
    sample) makes each metric its estimate, which the gates read, unless the judge was set aside
    (its kappa below the floor: INDETERMINATE)."""
    drift = _plain(drift)
    status, reasons = _base_verdict(result, validation, drift)
    document: dict[str, Any] = {
        "spec_version": "1",
        "tool": {"name": "goldkeeper", "version": __version__},
        "generated_at": generated_at,
        "corpus": _plain(corpus) or {},
        "judgments": _without_none({
            "queries": result.queries,
            "labels": validation.labels,
            "queries_scored": result.queries_scored,
            "fingerprint": validation.fingerprint,
            "human_labels": validation.human_labels,
            "synthetic_labels": validation.synthetic_labels,
            "drift": drift,
        }),
        "metrics": result.metrics,
    }
    if measurements:
        document["measurements"] = measurements
    if result.per_stratum is not None:
        document["per_stratum"] = result.per_stratum
    verdict: dict[str, Any] = {"status": status, "reasons": reasons}
    document["verdict"] = verdict
    document.update({
        "k": result.ks,
        "threshold": result.threshold,
        "coverage": round(result.coverage, 12),
        "per_query": result.per_query,
        "missing_queries": result.missing_queries,
        "queries_without_positives": result.queries_without_positives,
        "queries_with_duplicates": result.queries_with_duplicates,
        "run_only_queries": result.run_only_queries,
    })
    if result.worst_stratum is not None:
        document["worst_stratum"] = result.worst_stratum
    document.update({
        "stratum_conflicts": result.stratum_conflicts,
        "validation": {"ok": validation.ok, "issues": [issue.to_dict() for issue in validation.issues]},
        "inputs": inputs or {},
    })
    if audit is not None:
        _apply_audit(document, audit, status, reasons)
        status = document["verdict"]["status"]
    intervals = result.intervals
    if intervals is not None:
        document["intervals"] = {"confidence": intervals.confidence, "methods": dict(_INTERVAL_METHODS),
                                 "resamples": intervals.resamples, "seed": intervals.seed}
    if gates:
        previous = baseline if baseline is None or isinstance(baseline, dict) else baseline.to_json_dict()
        worst, results, gate_reasons = gate_results(document, gates, previous)
        if audit is not None and (audit.get("pending") or audit["set_aside"]) and worst == "FAIL":
            worst = "INDETERMINATE"  # on labels no audit vouches for, a gate decides nothing
        verdict["status"] = worse_status(status, worst)
        verdict["gates"] = results
        reasons.extend(gate_reasons)
    if retrieval is not None:
        _error_budget(document, retrieval)
    return document


def build_report(result: ScoreResult, validation: ValidationResult, **settings: Any) -> Report:
    """The report as a ``Report`` model: ``report_document``'s, validated (its typed view, for
    Python callers). ``settings`` are ``report_document``'s keywords."""
    from goldkeeper.models.report import Report

    return Report.model_validate(report_document(result, validation, **settings))


def _apply_audit(document: dict[str, Any], audit: dict[str, Any], status: Status, reasons: list[str]) -> None:
    """The audit's estimates in place of the metrics (``judge_value`` keeps the mean on the
    judge's labels), and its section; a judge below the kappa floor changes no metric and
    makes the verdict INDETERMINATE."""
    kappa, floor = audit["kappa"], audit["floor"]
    if audit.get("pending"):
        document["verdict"]["status"] = worse_status(status, "INDETERMINATE")
        reasons.append(f"the judge's labels are not audited yet: {audit['pending']} sampled queries wait for people "
                       "(the rejudge flow's form asks them first)")
    elif audit["set_aside"]:
        document["verdict"]["status"] = worse_status(status, "INDETERMINATE")
        said = "undefined" if kappa is None else f"{kappa:.3f}"
        reasons.append(f"the judge agrees with people at kappa {said} on the audited pairs, below the floor of "
                       f"{floor:g}: its labels are set aside, and every queued label waits for a person")
    else:
        metrics = document["metrics"]
        for metric, estimate in audit["estimates"].items():
            if metric in metrics:
                low, high = estimate["interval"]
                metrics[metric] = {**metrics[metric], "value": round(estimate["estimate"], 12),
                                   "ci": [round(low, 12), round(high, 12)], "ci_method": "ppi++",
                                   "judge_value": metrics[metric]["value"], "deterministic": False}
                metrics[metric].pop("ci_note", None)
    document["audit"] = audit


def _error_budget(document: dict[str, Any], retrieval: Retrieval) -> None:
    """Record a live evaluation's retrieval errors and fail closed past the budget: the gate
    ``errors:<budget>`` passes while the share of queries that errored is at most the budget;
    no answered query at all can never pass."""
    queries, errors, budget = retrieval.queries, retrieval.errors, retrieval.budget
    share = round(len(errors) / queries if queries else 1.0, 12)
    document["retrieval"] = {"queries": queries, "errors": len(errors), "error_share": share, "budget": budget,
                             "failed": errors}
    if retrieval.sequential is not None:
        document["retrieval"]["sequential"] = retrieval.sequential
    verdict = document["verdict"]
    ok = queries > 0 and len(errors) < queries and share <= budget
    verdict["gates"] = [*(verdict.get("gates") or []),
                        {"expression": f"errors:{budget:g}", "status": "PASS" if ok else "FAIL", "observed": share}]
    if not ok:
        verdict["status"] = worse_status(verdict["status"], "FAIL")
        verdict["reasons"].append(
            f"{len(errors)} of {queries} retriever calls failed ({share:.1%}), over "
            f"the error budget of {budget:.1%}" if len(errors) < queries or not queries else "every retriever call failed")
