"""A snapshot of the live index: enough to tell which labels are still true."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Chunk", "CorpusSnapshot"]


class Chunk(BaseModel):
    """One chunk as it exists in the live index."""

    model_config = ConfigDict(extra="allow", title="goldkeeper chunk")

    chunk_id: str = Field(min_length=1)
    doc_uri: str = Field(min_length=1)
    doc_revision: str | None = None
    ordinal: int | None = Field(None, ge=0)
    text: str | None = None
    text_sha: str | None = None


class CorpusSnapshot(BaseModel):
    """The spec's ``corpus.json``: fingerprints and every live chunk."""

    model_config = ConfigDict(extra="allow", title="goldkeeper corpus snapshot")

    corpus_fingerprint: str | None = None
    chunker_fingerprint: str | None = None
    chunks: list[Chunk]
