"""A report from a scoring's result: the one task every evaluation's report goes through (the
evaluate flow, partitioned scoring), over ``core.reporting``."""

from __future__ import annotations

from typing import Any

from goldkeeper.core.reporting import apply_error_budget, build_report
from goldkeeper.flows.faults import step

__all__ = ["assemble_report"]


@step(timeout_seconds=300)
def assemble_report(result, validation, generated_at: str, gates: list[str], inputs: dict[str, Any], drift=None,
                    retrieval: dict[str, Any] | None = None):
    counts, corpus = drift if drift is not None else (None, None)
    report = build_report(result, validation, generated_at=generated_at, gates=gates, inputs=inputs,
                          drift=counts, corpus=corpus)
    if retrieval is not None:
        report = apply_error_budget(report, retrieval["queries"], retrieval["errors"], retrieval.get("budget", 0.0))
        if "sequential" in retrieval:
            report.retrieval["sequential"] = retrieval["sequential"]  # type: ignore[attr-defined]
    return report
