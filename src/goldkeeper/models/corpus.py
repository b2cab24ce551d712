"""A snapshot of the live index: enough to tell which labels are still true."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from goldkeeper.models.judgment import Span
from goldkeeper.models.records import CHUNK, CORPUS_FINGERPRINTS, MAX_RELEVANCE, QUEUE_ANSWER, FieldSpec

__all__ = ["AuditRecord", "Chunk", "CorpusSnapshot", "QueueAnswer", "QueueCandidate", "QueueItem", "ShardEntry", "ShardManifest"]


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
    start_index: int | None = Field(None, ge=0, description="Where the chunk's text starts in its document, when known.")
    coverage: float | None = Field(None, ge=0, le=1, description="Share of the label's words the chunk holds.")


class QueueItem(BaseModel):
    """One line of the re-judgment queue (``drift --queue``)."""

    model_config = ConfigDict(extra="allow", title="goldkeeper re-judgment queue item")

    item_id: str = Field(pattern=r"^rq1:[0-9a-f]{24}$", description="Stable: the same label gives the same id.")
    action: str = Field(pattern=r"^(rejudge|review|judge)$",
                        description="judge: an unjudged chunk of a run's top k, for the judge (pool completion).")
    status: str = Field(pattern=r"^(SPLIT|ORPHANED|MERGED|UNJUDGED)$")
    query_id: str
    query: str | None = None
    doc_uri: str
    chunk_id: str | None = None
    chunk_text: str | None = None
    text_sha: str | None = None
    span: Span | None = Field(None, description="The label's passage (spec/spans.md), when it has one.")
    relevance: int
    labeled_by: str | None = None
    labeled_at: str | None = None
    reanchor_to: str | None = Field(None, description="MERGED: where fix moved the label.")
    found_in: list[str] | None = Field(
        None, description="ORPHANED: the other documents that each hold the judged text (never guessed between).")
    candidates: list[QueueCandidate]


class AuditRecord(BaseModel):
    """An audit of the judge the lifecycle opened (audit/<suite>/<time>.json, spec/judge.md):
    the sample people grade, the judge's labels on it, and what people's workload became."""

    model_config = ConfigDict(extra="forbid", title="goldkeeper audit of the judge")

    format: str = Field("goldkeeper-audit/1", pattern=r"^goldkeeper-audit/1$")
    suite: str = Field(min_length=1)
    opened_at: str
    model: str = Field(min_length=1, description="The judge's model (its labels: labeled_by synthetic:<model>).")
    prompt_sha: str = Field(pattern=r"^p1:[0-9a-f]{16,64}$", description="The prompt the judge answered.")
    rule: str = Field(description="How the sample was sized, in words.")
    seed: int
    kappa_floor: float | None = Field(None, ge=-1, le=1)
    queries: list[str] = Field(description="The audited queries.")
    items: list[QueueItem] = Field(description="The judge's items of those queries, which people grade.")
    judged_items: list[str] = Field(description="Every queue item the judge answered.")
    queue_url: str | None = Field(None, description="The queue the judge answered (its items return to it when set aside).")
    judge_labels: list[dict[str, Any]] = Field(description="The judge's labels of the audited items.")
    replaced_labels: list[dict[str, Any]] = Field(description="The labels the judge's answers replaced.")
    workload: dict[str, int] = Field(description="Items for people: queued, judged, audited, left to people.")


class ReindexRecord(BaseModel):
    """A re-index's record (reindex/<suite>/<corpus sha16>.json, spec/storage.md): created once
    by its first attempt, read back by every later one, which works from the same version at
    the same time."""

    model_config = ConfigDict(extra="forbid", title="goldkeeper re-index record")

    suite: str = Field(min_length=1)
    corpus_url: str = Field(min_length=1, description="The snapshot the re-index was onto.")
    corpus_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="Its content's sha256 (a sharded one's manifest's).")
    started_at: str = Field(description="When its first attempt began: the time everything it writes is stamped with.")
    judgments_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="The judgments version it read.")


class JudgeStep(BaseModel):
    """What a re-index's judge step made (reindex/<suite>/<corpus sha16>.judge.json), written
    before its version is made current: a rerun that finds that version current takes the
    step up from here (opens the audit if it was not, asks the judge nothing) instead of
    taking the judged version for another writer's."""

    model_config = ConfigDict(extra="forbid", title="goldkeeper judge step")

    from_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="The version the judge's answers were applied to.")
    judgments_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="The version they made.")
    audit: dict[str, Any] | None = Field(description="The audit opened on it (an AuditRecord), if any.")
    summary: dict[str, Any]
    failed: list[dict[str, Any]]
    workload: dict[str, int]
    plan: dict[str, Any]


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
    quote=(str | None, Field(None, min_length=1, description=(
        "The words of the answered chunk that answer the query: the label's span becomes them (spec/spans.md)."))),
)
