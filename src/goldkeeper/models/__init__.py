"""Pydantic v2 models of goldkeeper's wire formats.

The JSON Schemas in spec/schemas/ are exported from these models (``export_schemas``) and a
test fails when the two drift apart. Models import nothing from the rest of goldkeeper.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .corpus import Chunk, CorpusSnapshot, QueueAnswer, QueueItem, ShardManifest
    from .judgment import JUDGMENT_FIELDS, Judgment
    from .report import GateResult, Measurement, Report, StratumScore, Verdict
    from .run import RunEntry
    from .suite import SuiteConfig

# Each model's module loads on first use: reading labels needs only ``judgment``, and the
# report and corpus models are large to build.
_MODULES = {
    **dict.fromkeys(("Chunk", "CorpusSnapshot", "QueueAnswer", "QueueItem", "ShardManifest"), "corpus"),
    **dict.fromkeys(("JUDGMENT_FIELDS", "Judgment"), "judgment"),
    **dict.fromkeys(("GateResult", "Measurement", "Report", "StratumScore", "Verdict"), "report"),
    "RunEntry": "run",
    "SuiteConfig": "suite",
}


def __getattr__(name: str):
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'goldkeeper.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

__all__ = [
    "JUDGMENT_FIELDS",
    "Chunk",
    "CorpusSnapshot",
    "GateResult",
    "Judgment",
    "Measurement",
    "QueueAnswer",
    "QueueItem",
    "Report",
    "RunEntry",
    "ShardManifest",
    "StratumScore",
    "SuiteConfig",
    "Verdict",
    "export_schemas",
]


def export_schemas() -> dict[str, dict]:
    """Every committed schema by file name, generated from the models."""
    from .corpus import (
        AuditRecord,
        Chunk,
        CorpusSnapshot,
        JudgeStep,
        QueueAnswer,
        QueueItem,
        ReindexRecord,
        ShardManifest,
    )
    from .judgment import Judgment
    from .report import Report
    from .run import RunEntry
    from .suite import SuiteConfig

    return {
        "judgment.schema.json": Judgment.model_json_schema(),
        "chunk.schema.json": Chunk.model_json_schema(),
        "corpus-snapshot.schema.json": CorpusSnapshot.model_json_schema(),
        "run-entry.schema.json": RunEntry.model_json_schema(),
        "report.schema.json": Report.model_json_schema(),
        "snapshot-manifest.schema.json": ShardManifest.model_json_schema(),
        "queue-item.schema.json": QueueItem.model_json_schema(),
        "queue-answer.schema.json": QueueAnswer.model_json_schema(),
        "suite.schema.json": SuiteConfig.model_json_schema(),
        "audit.schema.json": AuditRecord.model_json_schema(),
        "reindex.schema.json": ReindexRecord.model_json_schema(),
        "judge-step.schema.json": JudgeStep.model_json_schema(),
    }
