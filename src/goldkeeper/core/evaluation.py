"""The one evaluation: resolved inputs and settings in, the report out.

Every entry point that scores (``goldkeeper score`` and ``eval``, the ``evaluate`` flow,
partitioned scoring, sequential eval) calls ``evaluate`` and differs only in how it gets its
inputs: the labels (grouped, or checked rows), the run (entries, heads, or per-query values
already computed, as partitions merge them), the judgments' validation, the settings, and
whatever context it has (drift counts, a baseline, summarized measurements, a retrieval's
figures). The report is its JSON document, what is written and read
(``core.reporting.report_document``; ``models.report.Report`` is its schema and typed view).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goldkeeper.core.gates import Gate
from goldkeeper.core.grouped import Qrels, build_qrels
from goldkeeper.core.reporting import Retrieval, report_document
from goldkeeper.core.scoring import DEFAULT_THRESHOLD, QueryValues, aggregate, query_values
from goldkeeper.core.validation import ValidationResult

if TYPE_CHECKING:
    from goldkeeper.core.intervals import BootstrapSpec

__all__ = ["Audit", "Retrieval", "Settings", "audit_for", "audit_of", "audited_labels", "evaluate"]


def _spec(*settings: Any) -> BootstrapSpec:
    # (numpy, which core.intervals needs, is imported only when intervals are asked for)
    from goldkeeper.core.intervals import BootstrapSpec

    return BootstrapSpec(*settings)


@dataclass(frozen=True)
class Settings:
    """How an evaluation scores and decides: cutoffs, the relevance threshold, the gates and
    the intervals (None for none). The defaults are the CLI's."""

    k: tuple[int, ...] = (10,)
    threshold: int = DEFAULT_THRESHOLD
    gates: tuple[Gate | str, ...] = ()
    intervals: BootstrapSpec | None = field(default_factory=_spec)

    @classmethod
    def of(cls, k: Sequence[int], threshold: int, gates: Sequence[Gate | str], intervals: bool,
           confidence: float = 0.95, resamples: int = 10_000, seed: int = 0) -> Settings:
        """Settings from an entry point's plain options (a flow's parameters, a CLI's flags)."""
        return cls(tuple(k), threshold, tuple(gates), _spec(confidence, resamples, seed) if intervals else None)



@dataclass(frozen=True)
class Audit:
    """People's labels on a sample of the queries, beside a judge's on all of them (issue 41):
    ``people`` is every label of the audited queries as people gave them (``audited_labels``),
    ``kappa`` the judge's agreement with them on the pairs both labelled (``core.agreement``),
    ``floor`` the least kappa at which the judge's labels are used, ``rule`` how the sample was
    sized. The report's metrics become PPI++ estimates (the judge on every query, people on
    the sample), and gates read their intervals; below the floor the judge is set aside and
    the verdict is INDETERMINATE."""

    people: Qrels
    kappa: float | None = None
    floor: float | None = None
    rule: str | None = None
    pending: int = 0
    judged: frozenset[str] | None = None
    """The queries the judge labelled; on the others its labels are people's (None: all)."""
    """Queries sampled for people that they have not answered yet: while any are, the judge's
    labels are unaudited and the verdict is INDETERMINATE."""


def audited_labels(rows: Iterable[Mapping[str, Any]], audit_rows: Iterable[Mapping[str, Any]]) -> Qrels:
    """People's labels of the audited queries (those ``audit_rows`` name): the hand labels the
    judgments already had for them, then the audit's (a key people graded again takes their
    grade). A judge's label people did not grade is not theirs, and is left out."""
    audit_rows = list(audit_rows)
    audited = {row["query_id"] for row in audit_rows}
    kept = [row for row in rows if row["query_id"] in audited
            and not str(row.get("labeled_by") or "").startswith("synthetic:")]
    return build_qrels([*kept, *audit_rows])


def audit_of(rows: Sequence[Mapping[str, Any]], people: Sequence[Mapping[str, Any]], threshold: int = 1,
             floor: float | None = None, rule: str | None = None) -> Audit:
    """The ``Audit`` of a judge whose labels are among ``rows``, by ``people``'s hand labels on
    the queries they audited: their labels there, and kappa on the pairs both graded."""
    from goldkeeper.core.agreement import agreement

    audited = {row["query_id"] for row in people}
    agreed = agreement([*(row for row in rows if row["query_id"] in audited), *people], threshold)
    judged = frozenset(row["query_id"] for row in rows if str(row.get("labeled_by") or "").startswith("synthetic:"))
    return Audit(audited_labels(rows, people), agreed.get("kappa"), floor, rule, judged=judged)


def audit_for(rows: Sequence[Mapping[str, Any]], record: Mapping[str, Any], people: Sequence[Mapping[str, Any]] | None,
              threshold: int = 1):
    """The ``Audit`` an evaluation on ``rows`` applies for a lifecycle audit ``record`` (its
    people's labels ``people``, None while they have not answered; kappa is on the judge's
    labels the record keeps, which may have been set aside since): None when the judgments
    hold none of the judge's labels (a suite without a judge, or people answered them all)
    unless the judge was set aside and labels it answered still wait for people."""
    from goldkeeper.core.rejudge import label_origin
    from goldkeeper.core.sampling import replaced_item

    judge = f"synthetic:{record['model']}"
    in_use = any(row.get("labeled_by") == judge and row.get("prompt_sha") == record["prompt_sha"] for row in rows)
    judged = set(record["judged_items"])
    floor = record.get("kappa_floor")
    if people is None:
        return Audit(build_qrels([]), None, floor, record["rule"], pending=len(record["queries"])) if in_use else None
    found = audit_of([*rows, *(dict(row) for row in record["judge_labels"])], people, threshold, floor, record["rule"])
    waiting = any(label_origin(row) in judged and not replaced_item(row) for row in rows)
    below = floor is not None and (found.kappa is None or found.kappa < floor)
    return found if in_use or (below and waiting) else None


def evaluate(
    labels: Qrels | Iterable[Mapping[str, Any]],
    run: QueryValues | Iterable[Any],
    validation: ValidationResult,
    settings: Settings,
    *,
    generated_at: str,
    inputs: dict[str, Any] | None = None,
    baseline: Any = None,
    drift: Any = None,
    corpus: Any = None,
    measurements: dict[str, dict[str, Any]] | None = None,
    retrieval: Retrieval | None = None,
    audit: Audit | None = None,
) -> dict[str, Any]:
    """The report of one run: scored at ``settings`` (unless ``run`` is per-query values,
    already scored), gated, with the context given, as its JSON document. With an ``audit``
    (people's labels on a sample, ``Audit``), the metrics are PPI++ estimates.

    ``labels`` are a grouping (``build_qrels``) or checked label rows; a sequential
    ``retrieval`` scores only the queries it asked, which needs the rows."""
    asked = retrieval.asked if retrieval is not None else None
    if isinstance(labels, Qrels):
        if asked is not None:
            raise ValueError("evaluate: a sequential retrieval is scored on the queries it asked: pass the label rows")
        qrels = labels
    else:
        qrels = build_qrels(labels if asked is None else (row for row in labels if row["query_id"] in asked))
    if audit is not None and isinstance(run, QueryValues):
        raise ValueError("evaluate: an audit scores the run on people's labels too: pass the run, not its values")
    if audit is not None and iter(run) is run:
        run = list(run)  # read twice: on the labels, and on people's
    found = run if isinstance(run, QueryValues) else query_values(qrels, run, list(settings.k), settings.threshold)
    result = aggregate(qrels, found, intervals=settings.intervals)
    audited = None if audit is None else _audited(result, audit, run, settings)
    return report_document(result, validation, generated_at=generated_at, gates=list(settings.gates),
                           baseline=baseline, drift=drift, corpus=corpus, inputs=inputs,
                           measurements=measurements, retrieval=retrieval, audit=audited)


def _audited(result: Any, audit: Audit, run: Any, settings: Settings) -> dict[str, Any]:
    """What the report says of an audit: PPI++ estimates per metric, the sample, the kappa."""
    from goldkeeper.core.sampling import ppi_metrics

    if audit.pending:
        return {"queries": 0, "pending": audit.pending, "rule": audit.rule, "kappa": None, "floor": audit.floor,
                "set_aside": False, "estimates": {}}
    people = aggregate(audit.people, query_values(audit.people, run, list(settings.k), settings.threshold)).per_query
    confidence = settings.intervals.confidence if settings.intervals is not None else 0.95
    estimates = ppi_metrics(result.per_query, people, list(result.metrics), alpha=1 - confidence, judged=audit.judged)
    set_aside = audit.floor is not None and (audit.kappa is None or audit.kappa < audit.floor)
    return {"queries": len([q for q in result.per_query if q in people]), "rule": audit.rule, "kappa": audit.kappa,
            "floor": audit.floor, "set_aside": set_aside, "confidence": confidence,
            "estimates": {metric: estimate.to_dict() for metric, estimate in estimates.items()}}
