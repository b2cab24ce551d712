"""One query's ranked result list, a line of a run JSONL file."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunEntry"]


class RunEntry(BaseModel):
    """Ranked keys (chunk ids, or doc uris for document-level evaluation), best first."""

    model_config = ConfigDict(extra="forbid", title="goldkeeper run entry")

    query_id: str = Field(min_length=1)
    ranking: list[str]
    scores: list[float] | None = Field(
        None, description="Retriever scores aligned with ranking, when the source had them."
    )
