"""Live chunks and the snapshots that hold them: ``LiveChunk``, the ``ChunkSource`` any reader
gives (an in-memory ``Corpus``, or a streamed sharded snapshot from ``goldkeeper.io``), and
``parse_corpus`` for the spec's corpus.json. Texts are compared as ``_comparable`` makes them
(spec/drift.md)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, make_dataclass
from itertools import islice
from operator import attrgetter
from typing import Any, Protocol

from typing_extensions import Required, TypedDict

from goldkeeper.core.identity import text_sha
from goldkeeper.core.jsonl import decode_document, keys_in_text
from goldkeeper.errors import InputError, describe_value
from goldkeeper.models.records import CHUNK, CORPUS_FINGERPRINTS, LIVE_CHUNK

PROGRESS_EVERY = 1 << 16


_TWO_SPACES = re.compile("  ")  # (sre's search for a literal beats str's ``in`` on prose)


def _plain(text: str) -> bool:
    """ASCII, single-spaced, no space at either end: already in comparable form."""
    return (text.isascii() and text[:1] != " " and text[-1:] != " " and _TWO_SPACES.search(text) is None
            and "\n" not in text
            and "\t" not in text and "\r" not in text and "\x0b" not in text and "\x0c" not in text
            and "\x1c" not in text and "\x1d" not in text and "\x1e" not in text and "\x1f" not in text)


def _comparable(text: str) -> str:
    """The form texts are compared in: ``normalize``d, then whitespace runs as one space and
    none at the ends. ``str.split`` splits on exactly the characters ``\\s`` matches, which
    folds line ends and covers every White_Space character ``normalize`` strips, so only its
    NFC step is left to do, and ASCII is already NFC."""
    if _plain(text):
        return text  # already single-spaced, nothing to strip: the common case
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return " ".join(text.split())


def _comparable_all(texts: list[str]) -> tuple[list[str], str | None]:
    """``_comparable`` of each text, and (when they were all plain) the texts joined by a
    space. The joined texts are checked at once: a text with a space at an end, or an empty
    one, puts two spaces in a row, so if the whole is plain, every text is. (Finding two
    spaces in a row is the slow part of the check, with spaces so frequent; a NUL separator
    would need two more such searches, for a space before or after it.)"""
    spaced = " ".join(texts)
    if _plain(spaced):
        return texts, spaced
    return [_comparable(text) for text in texts], None


class _LiveChunkMethods:
    """What a live chunk does, whichever type holds it (``LiveChunk``, io's ``LiveChunkStruct``)."""

    __slots__ = ()

    def order(self) -> tuple[int, str]:
        return (self.ordinal if self.ordinal is not None else 1 << 62, self.chunk_id)  # type: ignore[attr-defined]

    def sha(self) -> str | None:
        """The text hash: as stored (``text_sha``), else computed from the text (not kept:
        most chunks' hashes are never needed, and classify finds the wanted ones by their
        text)."""
        return self.text_sha or (text_sha(self.text) if self.text is not None else None)  # type: ignore[attr-defined]


#: Each field kind as pydantic reads it when it validates corpus.json straight into
#: ``LiveChunk`` (``Field`` is bound by ``_corpus_adapter``, where pydantic is imported).
_ANNOTATIONS = {"id": "Annotated[str, Field(min_length=1)]", "text": "str | None",
                "count": "Annotated[int, Field(ge=0)] | None", "hash": "Annotated[str, Field(min_length=1)] | None"}


def _reduce(chunk: Any) -> tuple[Any, tuple[Any, ...]]:
    # By position: the default for a slotted dataclass pickles a state dict per chunk.
    return (LiveChunk, tuple(getattr(chunk, spec.name) for spec in LIVE_CHUNK))


#: A chunk as drift reads it, made from ``records.LIVE_CHUNK``: a frozen, slotted dataclass
#: whose fields are positional in that order.
LiveChunk = make_dataclass(
    "LiveChunk",
    [(spec.name, _ANNOTATIONS[spec.kind]) if spec.kind == "id" else (spec.name, _ANNOTATIONS[spec.kind], None)
     for spec in LIVE_CHUNK],
    bases=(_LiveChunkMethods,),
    namespace={"__reduce__": _reduce},
    frozen=True,
    slots=True,
)
LiveChunk.__module__ = __name__


class ChunkSource(Protocol):
    """What classify reads: chunks, re-iterable, and the snapshot's fingerprints."""

    corpus_fingerprint: str | None
    chunker_fingerprint: str | None

    def __iter__(self) -> Iterator[LiveChunk]: ...


@dataclass
class Corpus:
    """An in-memory snapshot (the spec's corpus.json)."""

    chunks: list[LiveChunk]
    corpus_fingerprint: str | None = None
    chunker_fingerprint: str | None = None

    def __iter__(self) -> Iterator[LiveChunk]:
        return iter(self.chunks)


def chunk_from_dict(raw: Any, source: str, where: str = "", line: int | None = None) -> LiveChunk:
    """One snapshot chunk, checked: ``where`` prefixes field names (``chunks[3].``)."""
    if not isinstance(raw, dict):
        raise InputError(source, "must be an object", line=line, field=where.rstrip(".") or "chunk",
                         found=describe_value(raw))
    for name in ("chunk_id", "doc_uri"):
        value = raw.get(name)
        if not isinstance(value, str) or not value:
            raise InputError(source, "required, must be a non-empty string", line=line, field=f"{where}{name}",
                             found=describe_value(value))
    ordinal = _count(raw, "ordinal", source, line, where)
    text = raw.get("text")
    sha = raw.get("text_sha")
    for name, value in (("text", text), ("text_sha", sha)):
        if value is not None and not isinstance(value, str):
            raise InputError(source, "must be a string", line=line, field=f"{where}{name}",
                             found=describe_value(value))
    return LiveChunk(raw["chunk_id"], raw["doc_uri"], ordinal, text, sha or None,
                     _count(raw, "start_index", source, line, where))


def _count(raw: Mapping[str, Any], name: str, source: str, line: int | None, where: str = "") -> int | None:
    """An optional non-negative integer field, checked."""
    value = raw.get(name)
    if value is not None and (type(value) is not int or value < 0):
        raise InputError(source, "must be a non-negative integer", line=line, field=f"{where}{name}",
                         found=describe_value(value))
    return value


#: corpus.json as pydantic-core validates it, straight into ``LiveChunk``s.
_CorpusJson = TypedDict(  # type: ignore[misc]
    "_CorpusJson", {**dict.fromkeys(CORPUS_FINGERPRINTS, str | None), "chunks": Required[list[LiveChunk]]}, total=False)
_CorpusJson.__pydantic_config__ = {"strict": True}  # (pydantic reads a TypedDict's config from it)


_CORPUS_JSON: Any = None


def _corpus_adapter() -> Any:
    """pydantic's validator of ``_CorpusJson``, built on first use. (``LiveChunk``'s
    annotations name ``Field`` and ``Annotated``, bound here before pydantic reads them.)"""
    global _CORPUS_JSON
    if _CORPUS_JSON is None:
        from typing import Annotated

        from pydantic import Field, TypeAdapter

        globals().update(Field=Field, Annotated=Annotated)  # (the names _ANNOTATIONS spells)
        _CORPUS_JSON = TypeAdapter(_CorpusJson)
    return _CORPUS_JSON


_OPTIONAL_LIVE = tuple(spec.name for spec in LIVE_CHUNK if spec.kind != "id")
_NOT_LIVE = tuple(f'"{spec.name}":'.encode() for spec in CHUNK if not spec.live)


def live_keys(chunks: Sequence[Any]) -> int:
    """How many keys decoded live chunks hold (the fields that are not None)."""
    return len(chunks) * len(LIVE_CHUNK) - sum(list(map(attrgetter(name), chunks)).count(None) for name in _OPTIONAL_LIVE)


def keys_accounted_for(raw: bytes, payload: Mapping[str, Any], present: int | None = None) -> bool:
    """Whether a corpus.json decoded into live chunks (which keep no other field) shows every
    key its text names, so that none was named twice (a fast decoder keeps the last value:
    a second ``"chunks": []`` would orphan every label). The text's keys are the decoded
    ones plus the fields drift does not keep, which are counted by their plain spelling; a
    null, an extra key or an escaped spelling leaves the count short, and the file to the
    reader that decides key by key (``parse_corpus``). ``present``: the chunks' keys
    (``live_keys``), when a reader decoded them a block at a time."""
    if present is None:
        present = live_keys(payload["chunks"])
    expected = sum(name in payload for name in (*CORPUS_FINGERPRINTS, "chunks")) + present
    return keys_in_text(raw) == expected + sum(raw.count(key) for key in _NOT_LIVE)


def check_unique_ids(ids: Iterable[str], source: str, where: str = "chunks") -> None:
    """Refuse a snapshot whose chunk ids repeat: a label on a repeated id would match either
    chunk. ``where`` names the array (``chunks[3].chunk_id``)."""
    seen: dict[str, int] = {}
    for index, identity in enumerate(ids):
        first = seen.setdefault(identity, index)
        if first != index:
            raise InputError(source, f"repeats the id of {where}[{first}]", field=f"{where}[{index}].chunk_id",
                             found=describe_value(identity))


def parse_corpus(data: bytes | str, source: str = "corpus") -> Corpus:
    """The spec's corpus.json: ``{"corpus_fingerprint", "chunker_fingerprint", "chunks"}``.

    A well-formed snapshot is parsed and checked in one pass by pydantic-core, straight into
    ``LiveChunk``s. Anything it refuses, and any
    text that spells NaN or Infinity (which its parser would accept outside the checked
    fields), is read again field by field, which words the error or gives the same chunks."""
    from pydantic import ValidationError

    raw = data.encode("utf-8") if isinstance(data, str) else data
    if b"NaN" not in raw and b"Infinity" not in raw:
        try:
            payload = _corpus_adapter().validate_json(raw)
        except ValidationError:
            pass
        else:
            if keys_accounted_for(raw, payload):
                check_unique_ids((chunk.chunk_id for chunk in payload["chunks"]), source)
                return Corpus(payload["chunks"], payload.get("corpus_fingerprint"), payload.get("chunker_fingerprint"))
    corpus = _parse_corpus_fields(data, source)
    check_unique_ids((chunk.chunk_id for chunk in corpus.chunks), source)
    return corpus


def _parse_corpus_fields(data: bytes | str, source: str) -> Corpus:
    payload = decode_document(data, source)
    if not isinstance(payload, dict) or not isinstance(payload.get("chunks"), list):
        raise InputError(source, "a corpus snapshot is an object with a chunks array", field="chunks",
                         found=describe_value(payload.get("chunks") if isinstance(payload, dict) else payload))
    chunks = [chunk_from_dict(raw, source, f"chunks[{index}].") for index, raw in enumerate(payload["chunks"])]
    fingerprints = {name: payload.get(name) for name in ("corpus_fingerprint", "chunker_fingerprint")}
    return Corpus(chunks, **{k: v if isinstance(v, str) else None for k, v in fingerprints.items()})


def _batches(corpus: ChunkSource) -> Iterator[Sequence[LiveChunk]]:
    """The corpus's chunks a list at a time: an in-memory one whole, a streamed one in lists
    of ``PROGRESS_EVERY``."""
    if isinstance(corpus, Corpus):
        yield corpus.chunks
        return
    stream = iter(corpus)
    while batch := list(islice(stream, PROGRESS_EVERY)):
        yield batch
