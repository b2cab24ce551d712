"""Building a snapshot from chunker output: each chunk's identity computed, the rows of the
spec's corpus.json."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from goldkeeper.core.drift.corpus import _count
from goldkeeper.core.identity import FIELD_SEPARATOR, chunk_id, text_sha
from goldkeeper.errors import InputError, describe_value

if TYPE_CHECKING:

    pass


def snapshot_rows(
    chunks: Iterable[Any], chunker_fingerprint: str, source: str = "chunks", *, numbered: bool = False,
    unique: bool = False,
) -> Iterator[dict[str, Any]]:
    """Snapshot chunks from chunker output rows ``{doc_uri, doc_revision, ordinal, text}``, lazily.

    Ids follow spec/chunk-id.md; ``doc_revision`` defaults to the text's own hash, as the spec
    allows for sources without versions. Each row is checked, with its line on error (the
    rows' positions, or with ``numbered`` the line numbers given as ``(line, row)`` pairs).
    With ``unique``, a row that repeats an earlier one's id (the same document, revision,
    ordinal and text) is refused at its line (the ids are kept: an in-memory snapshot's cost).
    """
    seen: dict[str, int] = {}
    if not isinstance(chunker_fingerprint, str) or FIELD_SEPARATOR in chunker_fingerprint:
        # said of the fingerprint itself, not of the first row whose id it would be part of
        raise ValueError(f"chunker_fingerprint: must be a string without U+001F, got {chunker_fingerprint!r}")
    for index, item in enumerate(chunks):
        line, row = item if numbered else (index + 1, item)
        if not isinstance(row, Mapping):
            raise InputError(source, "must be an object", line=line, field="chunk", found=describe_value(row))
        for name in ("doc_uri", "text"):
            if not isinstance(row.get(name), str) or (name == "doc_uri" and not row[name]):
                raise InputError(source, "required, must be a string", line=line, field=name,
                                 found=describe_value(row.get(name)))
        ordinal = row.get("ordinal")
        if type(ordinal) is not int or ordinal < 0:
            raise InputError(source, "required, must be a non-negative integer", line=line, field="ordinal",
                             found=describe_value(ordinal))
        text = row["text"]
        sha = text_sha(text)
        revision = row.get("doc_revision")
        if revision is None:
            revision = sha
        elif not isinstance(revision, str):
            raise InputError(source, "must be a string", line=line, field="doc_revision",
                             found=describe_value(revision))
        try:
            identity = chunk_id(row["doc_uri"], revision, ordinal, text, chunker_fingerprint)
        except ValueError as error:  # "chunk_id: <field>: <problem>": a field of this row's
            _, field, problem = str(error).split(": ", 2)
            raise InputError(source, problem, line=line, field=field) from None
        if unique and seen.setdefault(identity, line) != line:
            raise InputError(source, f"repeats the chunk of line {seen[identity]} (the same document, revision, "
                                     "ordinal and text): its id would be in the snapshot twice",
                             line=line, field="text", found=describe_value(identity))
        out = {"chunk_id": identity, "doc_uri": row["doc_uri"], "doc_revision": revision,
               "ordinal": ordinal, "text": text, "text_sha": sha}
        start = _count(row, "start_index", source, line)
        if start is not None:
            out["start_index"] = start
        store_id = row.get("store_id")
        if store_id is not None:
            if not isinstance(store_id, str) or not store_id:
                raise InputError(source, "must be a non-empty string", line=line, field="store_id",
                                 found=describe_value(store_id))
            out["store_id"] = store_id
        yield out


def build_snapshot(
    chunks: Iterable[Any], chunker_fingerprint: str, corpus_fingerprint: str | None = None,
    source: str = "chunks", *, numbered: bool = False,
) -> dict[str, Any]:
    """A corpus.json (in memory) from chunker output rows; see ``snapshot_rows``."""
    return {"corpus_fingerprint": corpus_fingerprint or chunker_fingerprint,
            "chunker_fingerprint": chunker_fingerprint,
            "chunks": list(snapshot_rows(chunks, chunker_fingerprint, source, numbered=numbered, unique=True))}
