"""Pydantic v2 models of goldkeeper's wire formats.

The JSON Schemas in spec/schemas/ are exported from these models (``export_schemas``) and a
test fails when the two drift apart. Models import nothing from the rest of goldkeeper.
"""

from __future__ import annotations

from .corpus import Chunk, CorpusSnapshot, QueueAnswer, QueueItem, ShardManifest
from .judgment import JUDGMENT_FIELDS, Judgment
from .report import Measurement, Report, Verdict, GateResult, StratumScore
from .run import RunEntry

__all__ = [
    "JUDGMENT_FIELDS",
    "Chunk",
    "CorpusSnapshot",
    "GateResult",
    "Judgment",
    "Measurement",
    "Report",
    "RunEntry",
    "StratumScore",
    "Verdict",
    "export_schemas",
]


def export_schemas() -> dict[str, dict]:
    """Every committed schema by file name, generated from the models."""
    return {
        "judgment.schema.json": Judgment.model_json_schema(),
        "chunk.schema.json": Chunk.model_json_schema(),
        "corpus-snapshot.schema.json": CorpusSnapshot.model_json_schema(),
        "run-entry.schema.json": RunEntry.model_json_schema(),
        "report.schema.json": Report.model_json_schema(),
        "snapshot-manifest.schema.json": ShardManifest.model_json_schema(),
        "queue-item.schema.json": QueueItem.model_json_schema(),
        "queue-answer.schema.json": QueueAnswer.model_json_schema(),
    }
