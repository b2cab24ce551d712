"""The wire records, each defined once: a judgment line and a chunk (spec/formats.md).

Every reader and model of a judgment line is made from ``JUDGMENT_ROW``: the pydantic model
``Judgment`` (the API and the JSON Schema), core's block validator (pydantic-core, over a
block of lines at once) and io's msgspec decoder, which only try first; core's line reader,
which decides and words every refusal, takes its field lists from here too. A chunk's fields
(``CHUNK``) make the pydantic ``Chunk``, core's ``LiveChunk`` and io's ``LiveChunkStruct``,
and corpus.json's (``CORPUS_FINGERPRINTS`` and its chunks) the three readers of a snapshot. This module
imports nothing but the standard library, so the fast readers load no pydantic for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["CHUNK", "CORPUS_FINGERPRINTS", "JUDGMENT_FIELDS", "JUDGMENT_ROW", "LIVE_CHUNK", "MAX_RELEVANCE",
           "QUEUE_ANSWER", "SPAN", "FieldSpec", "canonical_judgment"]

#: Relevance grades are small integers; 1024 and above is a unit mistake, not a grade.
MAX_RELEVANCE = 1023


@dataclass(frozen=True)
class FieldSpec:
    """One field of a record. ``kind``: ``id``, a required non-empty string; ``text``, an
    optional string; ``grade``, a required integer from 0 to ``MAX_RELEVANCE``; ``count``,
    an optional integer of at least 0; ``hash``, an optional string that the fast readers
    take only non-empty (an empty one stores nothing); ``labeler``, a required ``human:<name>``
    or ``synthetic:<model>``;
    ``time``, a required ISO 8601 date-time; ``span``, an optional span object (``SPAN``). ``nfc``: an identifier compared by code point
    against runs and corpora, which must be in NFC. ``live``: kept on the chunks drift reads
    (``LIVE_CHUNK``). ``must``: what a refusal says the value must be, where the kind's own
    words say too little."""

    name: str
    kind: Literal["id", "text", "grade", "count", "hash", "labeler", "time", "span"]
    description: str | None = None
    nfc: bool = False
    live: bool = True
    must: str | None = None


#: A judgment line's known fields, in the canonical write order.
JUDGMENT_ROW: tuple[FieldSpec, ...] = (
    FieldSpec("query_id", "id", "Stable id for the query.", nfc=True),
    FieldSpec("query", "text", "Query text; on at least one row per query."),
    FieldSpec("doc_uri", "id", "Canonical source document uri.", nfc=True),
    FieldSpec("doc_revision", "text", "The document's revision that span offsets count characters of."),
    FieldSpec("chunk_id", "text", "Content-addressed chunk id (c1:...); absent for document-level labels."),
    FieldSpec("text_sha", "text", "t1: hash of the normalized labeled text."),
    FieldSpec("chunk_text", "text", "The labeled text; enables SPLIT detection."),
    FieldSpec("span", "span", "The passage that answers: offsets into the document and its quote (spec/spans.md)."),
    FieldSpec("relevance", "grade", "Graded relevance, 0 = not relevant."),
    FieldSpec("corpus_fingerprint", "text", "State of corpus+chunker this label was made against."),
    FieldSpec("labeled_by", "text", "Provenance: 'human:<name>' or 'synthetic:<model>'."),
    FieldSpec("labeled_at", "text", "ISO 8601 date-time of the label."),
    FieldSpec("stratum", "text", "Query category, for per-stratum reporting.", nfc=True),
    FieldSpec("notes", "text"),
)

#: A span's fields (spec/spans.md), W3C Web Annotation's TextPositionSelector (start, end)
#: and TextQuoteSelector (exact, prefix, suffix): (name, required, is an offset).
SPAN: tuple[tuple[str, bool, bool], ...] = (
    ("start", True, True), ("end", True, True), ("exact", True, False), ("prefix", False, False),
    ("suffix", False, False), ("proposed_by", False, False),
)

JUDGMENT_FIELDS: tuple[str, ...] = tuple(spec.name for spec in JUDGMENT_ROW)
_KNOWN_JUDGMENT_FIELDS = frozenset(JUDGMENT_FIELDS)


def canonical_judgment(known: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A judgment line's fields in the canonical write order: known fields in schema order,
    unset ones omitted, then unknown ones in their original order. ``known`` may hold the
    unknown ones too (a decoded row), or they come as ``extra`` (a model's)."""
    out = {name: known[name] for name in JUDGMENT_FIELDS if known.get(name) is not None}
    out.update((name, value) for name, value in known.items() if name not in _KNOWN_JUDGMENT_FIELDS)
    if extra:
        out.update(extra)
    return out

#: A chunk of a snapshot (corpus.json's ``chunks``, a shard's lines), in the canonical order.
CHUNK: tuple[FieldSpec, ...] = (
    FieldSpec("chunk_id", "id"),
    FieldSpec("doc_uri", "id"),
    FieldSpec("doc_revision", "text", live=False),
    FieldSpec("ordinal", "count"),
    FieldSpec("text", "text"),
    FieldSpec("text_sha", "hash"),
    FieldSpec("start_index", "count", "Where the chunker says the text starts in its document (optional)."),
    FieldSpec("store_id", "text", "The chunk's own id in the vector store it was read from (optional).", live=False),
)

#: The fields drift keeps of a chunk, in order: the positional fields of ``LiveChunk``.
LIVE_CHUNK: tuple[FieldSpec, ...] = tuple(spec for spec in CHUNK if spec.live)

#: corpus.json (spec/formats.md): these optional strings, then ``chunks``, every live chunk.
CORPUS_FINGERPRINTS: tuple[str, ...] = ("corpus_fingerprint", "chunker_fingerprint")

#: One answer to a re-judgment queue item: a line of ``goldkeeper queue apply``'s answers, what
#: the rejudge form's switches become (a person's), what ``goldkeeper judge`` writes (a judge's,
#: with its prompt's ``prompt_sha``), what the flows keep under answers/. The schema model
#: (``models.corpus.QueueAnswer``) and core's check of every answer (``core.rejudge``) are
#: made from it; core then checks what no schema can (the item is queued, the chunk is live).
QUEUE_ANSWER: tuple[FieldSpec, ...] = (
    FieldSpec("item_id", "id", "An item of the queue.", must="name an item of the queue"),
    FieldSpec("chunk_id", "id", 'A live chunk, or "none" when no live chunk carries it.',
              must='be given: a live chunk id, or "none"'),
    FieldSpec("relevance", "grade", "The grade given (0: not relevant)."),
    FieldSpec("labeled_by", "labeler", "Who answered: human:<name>, or synthetic:<model> (an LLM judge's).",
              must="be human:<name> or synthetic:<model>"),
    FieldSpec("labeled_at", "time", "ISO 8601 date-time."),
)
