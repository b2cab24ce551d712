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

__all__ = ["Retrieval", "Settings", "evaluate"]


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
) -> dict[str, Any]:
    """The report of one run: scored at ``settings`` (unless ``run`` is per-query values,
    already scored), gated, with the context given, as its JSON document.

    ``labels`` are a grouping (``build_qrels``) or checked label rows; a sequential
    ``retrieval`` scores only the queries it asked, which needs the rows."""
    asked = retrieval.asked if retrieval is not None else None
    if isinstance(labels, Qrels):
        if asked is not None:
            raise ValueError("evaluate: a sequential retrieval is scored on the queries it asked: pass the label rows")
        qrels = labels
    else:
        qrels = build_qrels(labels if asked is None else (row for row in labels if row["query_id"] in asked))
    found = run if isinstance(run, QueryValues) else query_values(qrels, run, list(settings.k), settings.threshold)
    result = aggregate(qrels, found, intervals=settings.intervals)
    return report_document(result, validation, generated_at=generated_at, gates=list(settings.gates),
                           baseline=baseline, drift=drift, corpus=corpus, inputs=inputs,
                           measurements=measurements, retrieval=retrieval)
