"""The one task every evaluation's report goes through (the evaluate flow, partitioned
scoring): ``core.evaluation.evaluate``."""

from __future__ import annotations

from typing import Any

from goldkeeper.core.evaluation import Retrieval, Settings, evaluate
from goldkeeper.flows.faults import step

__all__ = ["evaluation"]


@step(name="evaluate_run", timeout_seconds=1800)
def evaluation(labels, run, validation, settings: Settings, generated_at: str, inputs: dict[str, Any], drift=None,
               retrieval: dict[str, Any] | None = None, audit=None) -> dict[str, Any]:
    """The report of one run (``labels``: rows or a grouping; ``run``: heads or per-query
    values), with the drift counts and corpus (``check_corpus``'s) and a retrieval's figures
    (the eval flow's parameter), and people's ``audit`` of a judge (``core.evaluation.Audit``)."""
    counts, corpus = drift if drift is not None else (None, None)
    return evaluate(labels, run, validation, settings, generated_at=generated_at, inputs=inputs, drift=counts,
                    corpus=corpus, retrieval=None if retrieval is None else Retrieval.from_dict(retrieval), audit=audit)
