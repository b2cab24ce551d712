"""A snapshot of the live index: enough to tell which labels are still true."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from goldkeeper.models.records import CHUNK, CORPUS_FINGERPRINTS, MAX_RELEVANCE, QUEUE_ANSWER, FieldSpec

__all__ = ["Chunk", "CorpusSnapshot", "QueueAnswer", "QueueCandidate", "QueueItem", "ShardEntry", "ShardManifest"]


def _field(spec: FieldSpec) -> tuple[Any, Any]:
    described = {} if spec.description is None else {"description": spec.description}
    if spec.kind == "id":
        return str, Field(min_length=1, **described)
    if spec.kind == "count":
        return int | None, Field(None, ge=0, **described)
    return str | None, Field(None, **described)


Chunk = create_model(  # type: ignore[call-overload]
    "Chunk",
    __config__=ConfigDict(extra="allow", title="goldkeeper chunk"),
    __module__=__name__,
    __doc__="One chunk as it exists in the live index.",
    **{spec.name: _field(spec) for spec in CHUNK},
)


CorpusSnapshot = create_model(  # type: ignore[call-overload]
    "CorpusSnapshot",
    __config__=ConfigDict(extra="allow", title="goldkeeper corpus snapshot"),
    __module__=__name__,
    __doc__="The spec's ``corpus.json``: fingerprints and every live chunk.",
    **dict.fromkeys(CORPUS_FINGERPRINTS, (str | None, None)),
    chunks=(list[Chunk], ...),
)


class ShardEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", title="goldkeeper snapshot shard")

    path: str = Field(min_length=1, description="A file name beside manifest.json: chunks-00000.jsonl[.gz].")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="Of the file's bytes as stored (compressed).")
    chunks: int = Field(ge=0, description="Lines in the shard, one chunk (chunk.schema.json) each.")


class ShardManifest(BaseModel):
    """A sharded snapshot's ``manifest.json``: written last, so only whole snapshots exist."""

    model_config = ConfigDict(extra="allow", title="goldkeeper sharded snapshot manifest")

    format: str = Field(pattern=r"^goldkeeper-corpus-shards/1$")
    corpus_fingerprint: str | None = None
    chunker_fingerprint: str | None = None
    counts: dict[str, int] = Field(description="chunks, documents and shards.")
    shards: list[ShardEntry]


class QueueCandidate(BaseModel):
    model_config = ConfigDict(extra="allow", title="goldkeeper queue candidate")

    chunk_id: str
    doc_uri: str
    ordinal: int | None = None
    text: str | None = None
    coverage: float | None = Field(None, ge=0, le=1, description="Share of the label's words the chunk holds.")


class QueueItem(BaseModel):
    """One line of the re-judgment queue (``drift --queue``)."""

    model_config = ConfigDict(extra="allow", title="goldkeeper re-judgment queue item")

    item_id: str = Field(pattern=r"^rq1:[0-9a-f]{24}$", description="Stable: the same label gives the same id.")
    action: str = Field(pattern=r"^(rejudge|review)$")
    status: str = Field(pattern=r"^(SPLIT|ORPHANED|MERGED)$")
    query_id: str
    query: str | None = None
    doc_uri: str
    chunk_id: str | None = None
    chunk_text: str | None = None
    text_sha: str | None = None
    relevance: int
    labeled_by: str | None = None
    labeled_at: str | None = None
    reanchor_to: str | None = Field(None, description="MERGED: where fix moved the label.")
    found_in: list[str] | None = Field(
        None, description="ORPHANED: the other documents that each hold the judged text (never guessed between).")
    candidates: list[QueueCandidate]


def _answer_field(spec: FieldSpec) -> tuple[Any, Any]:
    described = {} if spec.description is None else {"description": spec.description}
    if spec.kind == "grade":
        return int, Field(ge=0, le=MAX_RELEVANCE, **described)
    if spec.kind == "labeler":
        return str, Field(pattern=r"^(human|synthetic):.+", **described)
    return str, Field(min_length=1, **described)


QueueAnswer = create_model(  # type: ignore[call-overload]
    "QueueAnswer",
    __config__=ConfigDict(extra="allow", title="goldkeeper re-judgment answer"),
    __module__=__name__,
    __doc__="One line of answers for ``goldkeeper queue apply`` (``records.QUEUE_ANSWER``).",
    **{spec.name: _answer_field(spec) for spec in QUEUE_ANSWER},
)
