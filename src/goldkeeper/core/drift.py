"""Drift: which labels still point at the text a person judged, after a re-chunk.

Statuses and resolution order are in spec/drift.md. The corpus is any re-iterable source of
``LiveChunk`` (an in-memory ``Corpus``, or a streamed sharded snapshot from ``goldkeeper.io``)
and is read at most twice, so memory is bounded by the labels' index, not by the corpus text:

1. one pass with hash lookups only: live ids, and the best chunk for each labeled text hash
   (same document, then ordinal, then id). This settles VALID and RE_ANCHORABLE;
2. a second pass, only when some label with text is still unresolved, that keeps the chunks
   of just those labels' documents (documents whose text changed). Each such document's text
   is rebuilt once from its chunks (ordinal order, neighbours' overlaps folded, whitespace at
   seams ignored) and every pending label is found in it with ``str.find``; which chunks hold
   or overlap an occurrence comes from a bisection over the chunks' spans.

No label is ever compared with every chunk, in the corpus or in its document.

Partitioned (goldkeeper.io.partitioned, spec/scaling.md): labels and chunks split by a hash of
doc_uri (``partition_of``), so a document and its labels meet in one partition. Only the hash
pass looks across documents (a live id elsewhere, a text that moved to another document); the
labels a partition could not settle in their own document (``unsettled``) are looked up in
every partition (``find``), the answers merged (``merge_found``), and those partitions
classified again with them (``classify(..., elsewhere=...)``), which gives exactly the
one-process result (``merge_partitions`` restores the label order).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from typing_extensions import Required, TypedDict

from goldkeeper.core.identity import chunk_id, normalize, normalized_sha, text_sha
from goldkeeper.errors import InputError, compressed_input, describe_value

if TYPE_CHECKING:
    from pydantic import Field  # (bound at run time where pydantic first reads the annotations)

    from goldkeeper.models.judgment import Judgment

# pydantic and the Judgment model load on first use (parse_corpus, fix): classify itself
# needs neither, and drift should not pay for their import.

__all__ = [
    "ChunkSource",
    "Corpus",
    "DriftResult",
    "Found",
    "LiveChunk",
    "build_snapshot",
    "chunk_from_dict",
    "classify",
    "classify_and_queue",
    "concat_results",
    "drift_counts",
    "find",
    "fix",
    "merge_found",
    "merge_partitions",
    "parse_corpus",
    "partition_of",
    "queue_item_id",
    "rejudgment_queue",
    "snapshot_rows",
    "unsettled",
]

_OVERLAP_WINDOW = 4096
_SURE_OVERLAP = 8  # shorter overlaps between neighbours count only on word boundaries
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


@dataclass(frozen=True, slots=True)
class LiveChunk:
    chunk_id: Annotated[str, Field(min_length=1)]
    doc_uri: Annotated[str, Field(min_length=1)]
    ordinal: Annotated[int, Field(ge=0)] | None = None
    text: str | None = None
    text_sha: Annotated[str, Field(min_length=1)] | None = None
    """The hash the snapshot stores, if it stores one; ``sha()`` is the chunk's hash. (An
    empty one stores nothing: refused by the one-pass reader, read as None by the other.)"""
    start_index: Annotated[int, Field(ge=0)] | None = None
    """Where the chunker says the text starts in its document, when it says (optional)."""

    def order(self) -> tuple[int, str]:
        return (self.ordinal if self.ordinal is not None else 1 << 62, self.chunk_id)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # By position: the default for a slotted dataclass pickles a state dict per chunk.
        return (LiveChunk, (self.chunk_id, self.doc_uri, self.ordinal, self.text, self.text_sha, self.start_index))

    def sha(self) -> str | None:
        """The text hash: as stored, else computed from the text (not kept: most chunks'
        hashes are never needed, and classify finds the wanted ones by their text)."""
        return self.text_sha or (text_sha(self.text) if self.text is not None else None)


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


class _CorpusJson(TypedDict, total=False):
    __pydantic_config__ = {"strict": True}  # noqa: RUF012 (pydantic reads a TypedDict's config from a plain dict)
    corpus_fingerprint: str | None
    chunker_fingerprint: str | None
    chunks: Required[list[LiveChunk]]


_CORPUS_JSON: Any = None


def _corpus_adapter() -> Any:
    """pydantic's validator of ``_CorpusJson``, built on first use. (``LiveChunk``'s
    annotations name ``Field``, bound here before pydantic reads them.)"""
    global _CORPUS_JSON
    if _CORPUS_JSON is None:
        from pydantic import Field, TypeAdapter

        globals()["Field"] = Field
        _CORPUS_JSON = TypeAdapter(_CorpusJson)
    return _CORPUS_JSON


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
            return Corpus(payload["chunks"], payload.get("corpus_fingerprint"), payload.get("chunker_fingerprint"))
    return _parse_corpus_fields(data, source)


def _parse_corpus_fields(data: bytes | str, source: str) -> Corpus:
    from pydantic_core import from_json

    try:
        payload = from_json(data, allow_inf_nan=False)
    except ValueError as error:
        raise compressed_input(data[:8], source) or InputError(
            source, f"not valid JSON ({error})", field="json", found="the file") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("chunks"), list):
        raise InputError(source, "a corpus snapshot is an object with a chunks array", field="chunks",
                         found=describe_value(payload.get("chunks") if isinstance(payload, dict) else payload))
    chunks = [chunk_from_dict(raw, source, f"chunks[{index}].") for index, raw in enumerate(payload["chunks"])]
    fingerprints = {name: payload.get(name) for name in ("corpus_fingerprint", "chunker_fingerprint")}
    return Corpus(chunks, **{k: v if isinstance(v, str) else None for k, v in fingerprints.items()})


def _overlap(text: str, piece: str, known: bool | None = None) -> int:
    """How much of ``piece`` repeats the end of ``text``: the longest border (a b > 0 with
    ``text``'s last b characters equal to ``piece``'s first b) that is long enough to be
    deliberate, or that is made of whole words (it starts after a space in ``text`` and ends
    before one in ``piece``; both are collapsed). So "refunds" + "so the", or "**Context**" +
    "* Populated", are not read as overlaps of one character. ``known`` is what the chunker's
    start offsets say: False, no overlap; True, the longest border.

    Borders of 8 or more (at most ``_OVERLAP_WINDOW``) are found by searching ``text``'s end
    for ``piece``'s first 8 characters, longest first, and checking each hit; shorter ones
    where ``text``'s last 7 characters hold ``piece``'s first. Each search and check runs in C."""
    if known is False:
        return 0
    size = len(text)
    window = min(size, len(piece), _OVERLAP_WINDOW)
    if window == 0:
        return 0
    if window >= _SURE_OVERLAP:
        needle = piece[:_SURE_OVERLAP]
        at = text.find(needle, size - window)
        while at >= 0:
            if piece.startswith(text[at:]):
                return size - at
            at = text.find(needle, at + 1)
    first = piece[0]
    at = text.find(first, size - min(_SURE_OVERLAP - 1, window))
    while at >= 0:
        b = size - at
        if piece.startswith(text[at:]) and (known or ((at == 0 or text[at - 1] == " ")
                                                      and (b == len(piece) or piece[b] == " "))):
            return b
        at = text.find(first, at + 1)
    return 0


_ANCHOR_K = 16  # characters per shingle
_ANCHOR_EVERY = 32  # about one position in this many is an anchor
_SCAN_BUDGET = 1 << 25  # characters str.find may scan per document before anchors pay off


_BASE = 0x100000001B3  # odd, so invertible modulo 2**64
_HASH_BLOCK = 1 << 22  # windows hashed per numpy pass, which bounds the temporaries (~160 MB)
_POWERS: dict[int, tuple[Any, Any]] = {}


def _powers(length: int) -> tuple[Any, Any]:
    """_BASE**i and _BASE**-i modulo 2**64 for i < length (numpy wraps uint64 products)."""
    import numpy as np

    cached = _POWERS.get(length)
    if cached is None:
        forward = np.full(length, _BASE, dtype=np.uint64)
        backward = np.full(length, pow(_BASE, -1, 1 << 64), dtype=np.uint64)
        forward[0] = backward[0] = 1
        with np.errstate(over="ignore"):
            cached = _POWERS[length] = (np.cumprod(forward, dtype=np.uint64), np.cumprod(backward, dtype=np.uint64))
    return cached


def _anchors_of(text: str) -> tuple[Any, Any]:
    """Positions of ``text``'s anchors and their keys. A window's key is the polynomial hash
    sum(code[p+i] * _BASE**i) of its _ANCHOR_K characters modulo 2**64, from prefix sums (a few
    numpy passes per block, whatever _ANCHOR_K is); it is an anchor when the key's top bits are
    zero, one window in about _ANCHOR_EVERY. Keys depend on the window's characters only."""
    import numpy as np

    windows = len(text) - _ANCHOR_K + 1
    positions, keys = [], []
    shift = np.uint64(64 - max(1, (_ANCHOR_EVERY - 1).bit_length()))
    for first in range(0, max(windows, 0), _HASH_BLOCK):
        count = min(_HASH_BLOCK, windows - first)
        codes = np.frombuffer(text[first:first + count + _ANCHOR_K - 1].encode("utf-32-le"), dtype=np.uint32)
        forward, backward = _powers(min(_HASH_BLOCK, windows) + _ANCHOR_K - 1)
        with np.errstate(over="ignore"):
            prefix = np.zeros(len(codes) + 1, dtype=np.uint64)
            np.cumsum(codes.astype(np.uint64) * forward[:len(codes)], dtype=np.uint64, out=prefix[1:])
            hashes = (prefix[_ANCHOR_K:_ANCHOR_K + count] - prefix[:count]) * backward[:count]
        chosen = np.flatnonzero((hashes >> shift) == 0)
        positions.append(chosen + first)
        keys.append(hashes[chosen])
    if not positions:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    return np.concatenate(positions), np.concatenate(keys)


class _Anchors:
    """Content-defined anchors of a long document, sorted by key. Every occurrence of a text
    holds the same anchors at the same offsets, so one lookup of the text's rarest anchor finds
    every occurrence (each checked with ``startswith``); a text too short to hold an anchor
    falls back to ``str.find``."""

    def __init__(self, text: str) -> None:
        import numpy as np

        positions, keys = _anchors_of(text)
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.positions = positions[order]

    def find(self, text: str, wanted: str) -> list[int] | None:
        return self.find_many(text, [wanted])[0]

    def find_many(self, text: str, wanted: list[str]) -> list[list[int] | None]:
        """Where each wanted text occurs in ``text`` (None: too short for an anchor). One
        numpy pass hashes every wanted text's windows (their concatenation's windows, less
        those that straddle two texts: a key depends on the window's characters only), and
        one sorted search looks up the first 8 anchors of each; per text, the rarest one's
        hits are checked with ``startswith``."""
        import numpy as np

        bounds = np.cumsum([0] + [len(w) for w in wanted], dtype=np.int64)
        positions, keys = _anchors_of("".join(wanted))
        owner = np.searchsorted(bounds, positions, "right") - 1
        inside = positions + _ANCHOR_K <= bounds[owner + 1]
        positions, keys, owner = positions[inside], keys[inside], owner[inside]
        # Each text's first 8 anchors, in position order (as ``_anchors_of`` of the text alone).
        first = np.searchsorted(owner, np.arange(len(wanted)), "left")
        rank = np.arange(len(owner)) - first[owner]
        keep = rank < 8
        positions, keys, owner = positions[keep], keys[keep], owner[keep]
        lows = np.searchsorted(self.keys, keys, "left")
        counts = (np.searchsorted(self.keys, keys, "right") - lows).tolist()
        offsets = (positions - bounds[owner]).tolist()
        lows_list, owner_list = lows.tolist(), owner.tolist()
        best: dict[int, int] = {}  # text -> index of its rarest anchor (the first among equals)
        for i, who in enumerate(owner_list):
            current = best.get(who)
            if current is None or counts[i] < counts[current]:
                best[who] = i
        out: list[list[int] | None] = [None] * len(wanted)
        for who, i in best.items():
            offset, lo = offsets[i], lows_list[i]
            starts = sorted(p - offset for p in self.positions[lo:lo + counts[i]].tolist())
            item = wanted[who]
            out[who] = [at for at in starts if at >= 0 and text.startswith(item, at)]
        return out


@dataclass
class _Document:
    """A document's live text, rebuilt from its chunks, and where each chunk lies in it.

    ``ends`` never decreases (each chunk ends where the text ended when it was added);
    ``floor[i]`` is the smallest start from span i on, which bounds the bisection scans.
    """

    text: str
    starts: list[int]
    ends: list[int]
    chunks: list[LiveChunk]
    floor: list[int]
    anchors: _Anchors | None = None
    found: dict[str, list[int] | None] = field(default_factory=dict)
    """Occurrences looked up ahead through the anchors (``look_up``)."""

    def look_up(self, wanted: list[str]) -> None:
        """Find the texts about to be asked for through the anchors, all in one batch."""
        if self.anchors is not None:
            unique = list(dict.fromkeys(wanted))
            self.found.update(zip(unique, self.anchors.find_many(self.text, unique)))

    def occurrences(self, wanted: str) -> Iterator[int]:
        """Where ``wanted`` starts in the text, in order (overlapping occurrences included)."""
        if self.anchors is not None:
            found = self.found[wanted] if wanted in self.found else self.anchors.find(self.text, wanted)
            if found is not None:
                yield from found
                return
        at = self.text.find(wanted)
        while at >= 0:
            yield at
            at = self.text.find(wanted, at + 1)

    def holding(self, at: int, end: int) -> Iterator[int]:
        """Spans that contain [at, end)."""
        i = bisect_left(self.ends, end)
        while i < len(self.ends) and self.floor[i] <= at:
            if self.starts[i] <= at:
                yield i
            i += 1

    def overlapping(self, at: int, end: int) -> Iterator[int]:
        """Spans that share a character with [at, end), in document order."""
        i = bisect_right(self.ends, at)
        while i < len(self.ends) and self.floor[i] < end:
            if self.starts[i] < end:
                yield i
            i += 1


_ORDINAL_THEN_ID = attrgetter("ordinal", "chunk_id")


def _in_order(chunks: list[LiveChunk]) -> list[LiveChunk]:
    """``chunks`` sorted by ``LiveChunk.order``. Keyed in C by (ordinal, chunk_id) when every
    ordinal is known, or none is (the same order); a document mixing the two cannot be
    sorted so without comparing None with a number, which raises, and takes the method."""
    try:
        return sorted(chunks, key=_ORDINAL_THEN_ID)
    except TypeError:
        return sorted(chunks, key=LiveChunk.order)


def _texts(chunks: list[LiveChunk]) -> tuple[list[LiveChunk], list[str], str | None]:
    """The chunks that have text, their texts in comparable form, and these joined by a space
    when that came free (``_comparable_all``)."""
    chunks = [chunk for chunk in chunks if chunk.text is not None]
    return chunks, *_comparable_all([chunk.text for chunk in chunks])  # type: ignore[misc]


def _may_share(find: Callable[..., int], end: int, piece: str) -> bool:
    """Whether ``piece`` may share a border with the ``end`` characters before it (searched by
    ``find``, theirs): the two searches ``_overlap`` begins with, its first 8 characters in
    the last ``window``, its first character in the last 7. Neither finding anything, it
    finds no border."""
    size = len(piece)
    window = end if end < size else size
    if window < _SURE_OVERLAP:
        return find(piece[0], end - window, end) >= 0
    if window > _OVERLAP_WINDOW:
        window = _OVERLAP_WINDOW
    return find(piece[:_SURE_OVERLAP], end - window, end) >= 0 or find(piece[0], end - (_SURE_OVERLAP - 1), end) >= 0


def _seamless(chunks: list[LiveChunk], pieces: list[str], spaced: str | None = None) -> _Document | None:
    """``_rebuild``'s document when no two neighbours share a border, as with most chunkers:
    the pieces joined by a space, each chunk's span its piece. None when a piece is empty or
    some seam may share one (``_may_share``, or the start offsets say so), for ``_rebuild``'s
    loop to decide. What comes before a piece is searched in the pieces run together, as
    ``_rebuild``'s tail holds them, which is cheaper than the loop for the common case of
    documents cut into pieces without overlap."""
    if not pieces or not all(pieces):
        return None
    together = "".join(pieces)
    find = together.find
    starts = [0]
    end = len(pieces[0])  # where the next piece starts in ``together``
    if all(chunk.start_index is None for chunk in chunks):
        for piece in pieces[1:]:
            if _may_share(find, end, piece):
                return None
            starts.append(end + len(starts))  # a space before each piece after the first
            end += len(piece)
    else:
        reach = None if chunks[0].start_index is None else chunks[0].start_index + len(chunks[0].text)  # type: ignore[arg-type]
        for chunk, piece in zip(chunks[1:], pieces[1:]):
            known = None if reach is None or chunk.start_index is None else chunk.start_index < reach
            if known or (known is None and _may_share(find, end, piece)):
                return None
            reach = None if chunk.start_index is None else chunk.start_index + len(chunk.text)  # type: ignore[arg-type]
            starts.append(end + len(starts))
            end += len(piece)
    ends = [start + len(piece) for start, piece in zip(starts, pieces)]
    return _Document(spaced if spaced is not None else " ".join(pieces), starts, ends, list(chunks), starts[:])


def _rebuild(chunks: list[LiveChunk], pieces: list[str] | None = None, spaced: str | None = None) -> _Document:
    """The document rebuilt from its chunks (in order); ``pieces`` are their comparable texts,
    as ``_texts`` gives them with the chunks (and ``spaced``), when the caller has them."""
    if pieces is None:
        chunks, pieces, spaced = _texts(chunks)
    return _seamless(chunks, pieces, spaced) or _stitched(chunks, pieces)


def _stitched(chunks: list[LiveChunk], pieces: list[str]) -> _Document:
    """``_rebuild``'s document, seam by seam: each piece's border with the text before it
    (``_overlap``) is laid over it, or a space goes between."""
    parts: list[str] = []
    length = 0
    tail = ""
    starts, ends, kept = [], [], []
    reach = None  # where the previous chunk ended in the raw document, when offsets are known
    for chunk, piece in zip(chunks, pieces):
        if not piece:
            continue
        known = None if reach is None or chunk.start_index is None else chunk.start_index < reach
        reach = None if chunk.start_index is None else chunk.start_index + len(chunk.text)
        shared = _overlap(tail, piece, known)
        if shared:
            start = length - shared
            added = piece[shared:]
        else:
            if length:
                parts.append(" ")
                length += 1
            start = length
            added = piece
        parts.append(added)
        length += len(added)
        tail = (tail + added)[-_OVERLAP_WINDOW:] if len(added) < _OVERLAP_WINDOW else added[-_OVERLAP_WINDOW:]
        starts.append(start)
        ends.append(start + len(piece))
        kept.append(chunk)
    floor = starts[:]
    for i in range(len(floor) - 2, -1, -1):
        floor[i] = min(floor[i], floor[i + 1])
    return _Document("".join(parts), starts, ends, kept, floor)


@dataclass
class DriftResult:
    findings: list[dict[str, Any]]
    summary: dict[str, Any]
    judgments_fingerprint: str | None
    corpus_fingerprint: str | None
    chunks: dict[str, LiveChunk] = field(default_factory=dict, repr=False)
    """Every live chunk a finding names (re-anchor targets and split pieces), for fix and queue."""
    corpus_chunks: int = 0
    corpus_documents: int = 0
    fingerprints: frozenset[str] = frozenset()
    """Every corpus_fingerprint the labels carry (one: ``judgments_fingerprint``)."""

    def to_dict(self) -> dict[str, Any]:
        return {"findings": self.findings, "summary": self.summary,
                "judgments_fingerprint": self.judgments_fingerprint,
                "corpus_fingerprint": self.corpus_fingerprint}


def _better(chunk: LiveChunk, current: LiveChunk | None) -> bool:
    return current is None or chunk.order() < current.order()


def _row(judgment: Judgment | Mapping[str, Any]) -> Mapping[str, Any]:
    """A label's fields: a row as it is, a ``Judgment``'s own (pydantic keeps them in ``__dict__``)."""
    return judgment if isinstance(judgment, Mapping) else judgment.__dict__


def _label_sha(row: Mapping[str, Any]) -> tuple[str | None, bool]:
    """The hash a label's text is found by, and whether its text_sha contradicts its text."""
    sha, mismatch, _ = _label_key(row)
    return sha, mismatch


def _label_key(row: Mapping[str, Any]) -> tuple[str | None, bool, str | None]:
    """``_label_sha`` and the label's ``normalize``d text (None without chunk_text)."""
    chunk_text = row.get("chunk_text")
    sha = row.get("text_sha")
    if chunk_text is not None:
        normal = normalize(chunk_text)
        own = normalized_sha(normal)
        return own, sha is not None and sha != own, normal
    return sha, False, None


def partition_of(key: str, partitions: int) -> int:
    """The partition of a key (a doc_uri for drift, a query id for scoring): the first 8 bytes
    of its sha256, modulo ``partitions``. Stable across processes and machines (Python's
    ``hash`` of a string is not)."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % partitions


@dataclass
class Found:
    """What one hash pass found for asked labels: which asked chunk ids are live, and the best
    live chunk (ordinal, then id) for each asked text hash."""

    live: set[str] = field(default_factory=set)
    best: dict[str, LiveChunk] = field(default_factory=dict)


def unsettled(judgments: Iterable[Judgment | Mapping[str, Any]], result: DriftResult) -> tuple[set[str], set[str]]:
    """Chunk ids and text hashes of the labels whose finding another partition could change:
    all but VALID ones and those re-anchored within their own document (which wins over any
    other document, spec/drift.md)."""
    ids: set[str] = set()
    shas: set[str] = set()
    for judgment, finding in zip(judgments, result.findings, strict=True):
        row = _row(judgment)
        if row.get("chunk_id") is None or finding["status"] == "VALID":
            continue
        if finding["status"] == "RE_ANCHORABLE" and not finding.get("cross_document"):
            continue
        ids.add(row["chunk_id"])
        sha = _label_sha(row)[0]
        if sha is not None:
            shas.add(sha)
    return ids, shas


def find(corpus: ChunkSource, ids: set[str], shas: set[str]) -> Found:
    """One pass over ``corpus``: the asked ids that are live and the best chunk per asked hash."""
    found = Found()
    for chunk in corpus:
        if chunk.chunk_id in ids:
            found.live.add(chunk.chunk_id)
        sha = chunk.sha()
        if sha in shas and _better(chunk, found.best.get(sha)):
            found.best[sha] = chunk  # type: ignore[index]
    return found


def merge_found(parts: Iterable[Found]) -> Found:
    """The ``Found`` of the union of the partitions (the same as one pass over all of them)."""
    merged = Found()
    for part in parts:
        merged.live |= part.live
        for sha, chunk in part.best.items():
            if _better(chunk, merged.best.get(sha)):
                merged.best[sha] = chunk
    return merged


def merge_partitions(parts: Iterable[tuple[Sequence[int], DriftResult]], labels: int,
                     corpus_fingerprint: str | None) -> DriftResult:
    """One result from each partition's (the input positions of its labels, its result): the
    findings back in input order, and counts summed (documents never span partitions)."""
    findings: list[dict[str, Any] | None] = [None] * labels
    named: dict[str, LiveChunk] = {}
    fingerprints: frozenset[str] = frozenset()
    chunks = documents = 0
    for positions, result in parts:
        for position, finding in zip(positions, result.findings, strict=True):
            findings[position] = finding
        named.update(result.chunks)
        fingerprints |= result.fingerprints
        chunks += result.corpus_chunks
        documents += result.corpus_documents
    missing = sum(finding is None for finding in findings)
    if missing:
        raise ValueError(f"merge_partitions: {missing} of {labels} labels have no finding")
    return _result(findings, fingerprints, corpus_fingerprint, named, chunks, documents)  # type: ignore[arg-type]


def _batches(corpus: ChunkSource) -> Iterator[Sequence[LiveChunk]]:
    """The corpus's chunks a list at a time: an in-memory one whole, a streamed one in lists
    of ``PROGRESS_EVERY``."""
    if isinstance(corpus, Corpus):
        yield corpus.chunks
        return
    stream = iter(corpus)
    while batch := list(islice(stream, PROGRESS_EVERY)):
        yield batch


def classify(
    judgments: Iterable[Judgment | Mapping[str, Any]],
    corpus: ChunkSource,
    progress: Callable[[int], None] | None = None,
    *,
    elsewhere: Found | None = None,
) -> DriftResult:
    """Classify every label against a live corpus (module docstring: two passes at most).

    ``progress`` is called with the number of chunks read so far after each batch: every
    ``PROGRESS_EVERY`` chunks of a streamed snapshot, once for an in-memory one.
    ``elsewhere`` adds what the other partitions of a partitioned corpus found for this one's
    unsettled labels (the module docstring).
    """
    return _classify([_row(judgment) for judgment in judgments], corpus, progress, elsewhere)[0]


def classify_and_queue(
    judgments: Iterable[Judgment | Mapping[str, Any]],
    corpus: ChunkSource,
    progress: Callable[[int], None] | None = None,
    *,
    elsewhere: Found | None = None,
    candidates: int = 3,
) -> tuple[DriftResult, list[dict[str, Any]]]:
    """``classify`` and then ``rejudgment_queue``, sharing one read: the documents classify
    rebuilt hold every ORPHANED label's candidates, so the corpus is not read a third time."""
    rows = [_row(judgment) for judgment in judgments]
    result, rebuilt = _classify(rows, corpus, progress, elsewhere)
    return result, rejudgment_queue(rows, result, corpus, candidates, documents=rebuilt)


def _classify(rows: list[Mapping[str, Any]], corpus: ChunkSource, progress: Callable[[int], None] | None,
              elsewhere: Found | None) -> tuple[DriftResult, dict[str, list[LiveChunk]]]:
    """``classify``, and the chunks of the documents that now hold an ORPHANED label with text
    (read in the second pass anyway; the queue's candidates come from them)."""
    label_ids: set[str] = set()
    wanted: dict[str, set[str]] = {}  # text hash -> documents of the labels that want it
    by_text: dict[str, str] = {}  # normalized label text -> its hash
    hash_only = False  # some label is found by a stored hash alone: every chunk's hash is needed
    shas: list[tuple[str | None, bool]] = []
    live: set[str] = set()
    in_memory = isinstance(corpus, Corpus)
    if in_memory:
        # The live labels first, whose texts then need no hash (a VALID label is looked up no
        # further). A streamed corpus finds them in its pass.
        live = {row["chunk_id"] for row in rows if row.get("chunk_id") is not None}.intersection(
            [chunk.chunk_id for chunk in corpus.chunks])
    for row in rows:
        if row.get("chunk_id") is None or row["chunk_id"] in live:
            shas.append((None, False))
            continue
        sha, mismatch, normal = _label_key(row)
        shas.append((sha, mismatch))
        label_ids.add(row["chunk_id"])
        if sha is not None:
            wanted.setdefault(sha, set()).add(row["doc_uri"])
            if normal is None:
                hash_only = True
            else:
                by_text[normal] = sha

    documents: set[str] = set()
    best_any: dict[str, LiveChunk] = {}
    best_in_doc: dict[tuple[str, str], LiveChunk] = {}
    seen = 0
    for batch in _batches(corpus):
        # Column at a time: the set operations and comprehensions run in C, and only the
        # chunks whose hash some label wants are looked at one by one.
        seen += len(batch)
        if progress is not None:
            progress(seen)
        if not in_memory:
            live.update(label_ids.intersection([chunk.chunk_id for chunk in batch]))
        documents.update([chunk.doc_uri for chunk in batch])
        if hash_only:
            keys = [chunk.sha() for chunk in batch]
        else:
            # Equal normalized texts have equal hashes, so an unhashed chunk is found by its
            # text, and hashed only when some label carries nothing but a hash.
            keys = [chunk.text_sha or (by_text.get(normalize(chunk.text)) if chunk.text is not None else None)
                    for chunk in batch]
        for index in [i for i, key in enumerate(keys) if key in wanted]:
            chunk, sha = batch[index], keys[index]
            if _better(chunk, best_any.get(sha)):
                best_any[sha] = chunk
            if chunk.doc_uri in wanted[sha]:
                key = (sha, chunk.doc_uri)
                if _better(chunk, best_in_doc.get(key)):
                    best_in_doc[key] = chunk
    if elsewhere is not None:
        live |= elsewhere.live & label_ids
        for sha, chunk in elsewhere.best.items():
            if sha in wanted and _better(chunk, best_any.get(sha)):
                best_any[sha] = chunk

    findings: list[dict[str, Any]] = []
    named: dict[str, LiveChunk] = {}
    pending: dict[str, list[int]] = {}
    for position, (row, (sha, mismatch)) in enumerate(zip(rows, shas)):
        doc_uri = row["doc_uri"]
        finding: dict[str, Any] = {"query_id": row["query_id"], "doc_uri": doc_uri}
        findings.append(finding)
        chunk = row.get("chunk_id")
        if chunk is None:
            finding["status"] = "VALID" if doc_uri in documents else "ORPHANED"
            continue
        finding["chunk_id"] = chunk
        if chunk in live:
            finding["status"] = "VALID"
            continue
        if mismatch:
            # The label contradicts itself; the text a person read is the better witness.
            finding["text_sha_mismatch"] = True
        target = best_in_doc.get((sha, doc_uri)) or best_any.get(sha) if sha is not None else None
        if target is not None:
            finding.update(status="RE_ANCHORABLE", reanchor_to=target.chunk_id)
            named[target.chunk_id] = target
            if target.doc_uri != doc_uri:
                finding.update(cross_document=True, reanchor_doc_uri=target.doc_uri)
            continue
        finding["status"] = "ORPHANED"
        if row.get("chunk_text") is not None and doc_uri in documents:
            pending.setdefault(doc_uri, []).append(position)

    orphaned: dict[str, list[LiveChunk]] = {}
    if pending:
        by_doc: dict[str, list[LiveChunk]] = {doc_uri: [] for doc_uri in pending}
        for chunk in corpus:
            if chunk.doc_uri in by_doc:
                by_doc[chunk.doc_uri].append(chunk)
        for doc_uri, positions in pending.items():
            chunks, pieces, spaced = _texts(_in_order(by_doc[doc_uri]))
            wanted = {position: _comparable(rows[position]["chunk_text"]) for position in positions}
            rest = positions
            document = _seamless(chunks, pieces, spaced)  # cheap, when it exists: no need to avoid it
            if document is None and len(positions) * (sum(map(len, pieces)) + len(pieces)) <= _SCAN_BUDGET:
                # A text inside one chunk is MERGED with no need of the rebuilt document: a
                # chunk's span in it holds an occurrence exactly when its piece does. (Past
                # the budget, the rebuilt document's anchors find texts without scanning.)
                pieces_of = _Pieces(pieces)
                rest = [position for position in positions
                        if not _merged(findings[position], wanted[position], chunks, pieces_of, named)]
                if not rest:
                    continue
            if document is None:
                document = _rebuild(chunks, pieces)
            if len(rest) * len(document.text) > _SCAN_BUDGET:
                document.anchors = _Anchors(document.text)
                document.look_up([wanted[position] for position in rest])
            for position in rest:
                _resolve(findings[position], wanted[position], document, named)
                if findings[position]["status"] == "ORPHANED":
                    orphaned[doc_uri] = by_doc[doc_uri]

    fingerprints = frozenset(row["corpus_fingerprint"] for row in rows if row.get("corpus_fingerprint"))
    return _result(findings, fingerprints, corpus.corpus_fingerprint, named, seen, len(documents)), orphaned


def _result(findings: list[dict[str, Any]], fingerprints: frozenset[str], corpus_fingerprint: str | None,
            named: dict[str, LiveChunk], chunks: int, documents: int) -> DriftResult:
    counts = dict.fromkeys(("VALID", "RE_ANCHORABLE", "MERGED", "SPLIT", "ORPHANED"), 0)
    for finding in findings:
        counts[finding["status"]] += 1
    total = len(findings)
    summary = {
        "valid": counts["VALID"],
        "re_anchorable": counts["RE_ANCHORABLE"],
        "merged": counts["MERGED"],
        "split": counts["SPLIT"],
        "orphaned": counts["ORPHANED"],
        "invalid_ratio": round((total - counts["VALID"]) / total, 12) if total else 0.0,
    }
    return DriftResult(findings, summary, next(iter(fingerprints)) if len(fingerprints) == 1 else None,
                       corpus_fingerprint, named, chunks, documents, fingerprints)


def concat_results(first: DriftResult, second: DriftResult) -> DriftResult:
    """The result for two label lists, one after the other, classified against one corpus:
    exactly what classifying the concatenation gives, since each label is classified alone."""
    return _result(first.findings + second.findings, first.fingerprints | second.fingerprints,
                   first.corpus_fingerprint, {**first.chunks, **second.chunks}, first.corpus_chunks,
                   first.corpus_documents)


class _Pieces:
    """A document's chunk texts (comparable) joined by NUL, to find which hold a text with one
    search of the whole rather than one per chunk; only a text longer than every chunk (a
    SPLIT), which ``in`` refuses by length, is slower this way."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.joined = "\x00".join(pieces)
        self.starts = [0]
        for piece in pieces[:-1]:
            self.starts.append(self.starts[-1] + len(piece) + 1)

    def holding(self, wanted: str) -> list[int]:
        """The indexes of the pieces that hold ``wanted``, in order."""
        if "\x00" in wanted:  # could match across a seam: piece by piece
            return [i for i, piece in enumerate(self.pieces) if wanted in piece]
        found: list[int] = []
        at = self.joined.find(wanted)
        while at >= 0:
            i = bisect_right(self.starts, at) - 1
            found.append(i)
            if i + 1 == len(self.starts):
                break
            at = self.joined.find(wanted, self.starts[i + 1])
        return found


def _merged(finding: dict[str, Any], wanted: str, chunks: list[LiveChunk], pieces: _Pieces,
            named: dict[str, LiveChunk]) -> bool:
    """MERGED when some chunk's comparable text holds ``wanted`` (the label's, comparable):
    the shortest such chunk, then the first in order, as ``_resolve`` picks it."""
    if not wanted:
        return False
    holders = [chunks[i] for i in pieces.holding(wanted)]
    if not holders:
        return False
    target = min(holders, key=lambda c: (len(c.text or ""), *c.order()))
    finding.update(status="MERGED", reanchor_to=target.chunk_id)
    named[target.chunk_id] = target
    return True


def _resolve(finding: dict[str, Any], wanted: str, document: _Document, named: dict[str, LiveChunk]) -> None:
    """MERGED or SPLIT, from where ``wanted`` (the label's text, comparable) occurs in its
    rebuilt document."""
    if not wanted:
        return
    holders: set[int] = set()
    first = -1
    for at in document.occurrences(wanted):
        if first < 0:
            first = at
        holders.update(document.holding(at, at + len(wanted)))
    if holders:
        target = min((document.chunks[i] for i in holders), key=lambda c: (len(c.text or ""), *c.order()))
        finding.update(status="MERGED", reanchor_to=target.chunk_id)
        named[target.chunk_id] = target
    elif first >= 0:
        pieces = [document.chunks[i] for i in document.overlapping(first, first + len(wanted))]
        finding.update(status="SPLIT", split_into=[c.chunk_id for c in pieces])
        named.update((c.chunk_id, c) for c in pieces)


def fix(judgments: Iterable[Judgment], result: DriftResult) -> tuple[list[Judgment], int]:
    """Re-anchor RE_ANCHORABLE and MERGED labels; leave every other label exactly as it was.

    A moved label gets the live chunk's id, text hash and text (when the label stored text),
    the document of its new chunk, and the corpus fingerprint; what it pointed at before is
    kept in ``reanchored_from`` (id, hash, text, status). SPLIT and ORPHANED labels are never
    touched: a fix never invents ground truth. Fixing a fixed set changes nothing, since every
    moved label is then VALID. Returns the labels and how many moved.
    """
    from goldkeeper.models.judgment import Judgment

    out: list[Judgment] = []
    moved = 0
    for judgment, finding in zip(judgments, result.findings, strict=True):
        if finding["status"] not in ("RE_ANCHORABLE", "MERGED"):
            out.append(judgment)
            continue
        target = result.chunks[finding["reanchor_to"]]
        before = {"chunk_id": judgment.chunk_id, "status": finding["status"]}
        if judgment.text_sha is not None:
            before["text_sha"] = judgment.text_sha
        if judgment.chunk_text is not None:
            before["chunk_text"] = judgment.chunk_text
        if judgment.doc_uri != target.doc_uri:
            before["doc_uri"] = judgment.doc_uri
        values = judgment.canonical_dict()
        values.update(chunk_id=target.chunk_id, doc_uri=target.doc_uri, reanchored_from=before)
        sha = target.sha()
        if sha is not None:
            values["text_sha"] = sha
        if judgment.chunk_text is not None and target.text is not None:
            values["chunk_text"] = target.text
        if result.corpus_fingerprint is not None:
            values["corpus_fingerprint"] = result.corpus_fingerprint
        out.append(Judgment.model_construct(**values))
        moved += 1
    return out, moved


_WORD = re.compile(r"\w+")
_POSTINGS_BUDGET = 4096
#: Documents of at most this many chunks are scored chunk by chunk, without postings.
_SCORE_WHOLE = 64


def _words(text: str) -> set[str]:
    return set(_WORD.findall(normalize(text).lower()))


def queue_item_id(row: Mapping[str, Any]) -> str:
    """A queue item's stable id: the same label gives the same id on every run."""
    key = "\x1f".join((row["query_id"], row["doc_uri"], row.get("chunk_id") or ""))
    return "rq1:" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


class _WordIndex:
    """One document's chunks by word, to find partial matches without scanning every chunk."""

    def __init__(self, chunks: list[LiveChunk]):
        self.chunks = chunks
        self.words = [_words(c.text or "") for c in chunks]
        self._postings: dict[str, list[int]] | None = None

    @property
    def postings(self) -> dict[str, list[int]]:
        """Word -> chunks holding it, built on first use: a short document is scored whole."""
        if self._postings is None:
            self._postings = {}
            for i, words in enumerate(self.words):
                for word in words:
                    self._postings.setdefault(word, []).append(i)
        return self._postings

    def best(self, text: str, limit: int) -> list[tuple[float, LiveChunk]]:
        wanted = _words(text)
        if not wanted:
            return []
        pool: set[int] | range
        if len(self.chunks) <= _SCORE_WHOLE:
            pool = range(len(self.chunks))  # every chunk: cheaper than building postings
        else:
            # Candidates are the chunks sharing the label's rarest words (a budget of
            # postings), then each is scored exactly: the share of the label's words it covers.
            rare = sorted((len(self.postings.get(w, ())), w) for w in wanted)
            pool = set()
            spent = 0
            for size, word in rare:
                if size == 0:
                    continue
                if spent and spent + size > _POSTINGS_BUDGET:
                    break
                pool.update(self.postings[word])
                spent += size
        scored = sorted((-len(wanted & self.words[i]) / len(wanted), *self.chunks[i].order(), i) for i in pool)
        return [(-s[0], self.chunks[s[-1]]) for s in scored[:limit]]


def rejudgment_queue(
    judgments: Iterable[Judgment | Mapping[str, Any]], result: DriftResult, corpus: ChunkSource, candidates: int = 3,
    *, documents: Mapping[str, list[LiveChunk]] | None = None,
) -> list[dict[str, Any]]:
    """The labels a person must look at, with candidates found (spec/drift.md, queue).

    ``action: rejudge`` for SPLIT and ORPHANED labels, whose ground truth is unknown;
    ``action: review`` for MERGED ones, which fix moved to a bigger chunk (still sound, but the
    extra text may deserve a second look for precision). Candidates: a SPLIT's pieces in
    document order; an ORPHANED label's best partial matches in its document (when it carried
    text), ranked by the share of its words each chunk covers, ties by ordinal and id; a
    MERGED label's new chunk. The corpus is read once more, for ORPHANED labels' documents
    only, unless ``documents`` already holds their chunks (``classify_and_queue``: a live
    document it lacks has none). The queue proposes; nothing in it is ground truth until a
    person answers.
    """
    rows = [_row(judgment) for judgment in judgments]
    orphan_docs = {row["doc_uri"] for row, finding in zip(rows, result.findings, strict=True)
                   if finding["status"] == "ORPHANED" and row.get("chunk_text") and row.get("chunk_id")}
    by_doc: dict[str, list[LiveChunk]] = {doc_uri: [] for doc_uri in orphan_docs}
    if documents is not None:
        by_doc = {doc_uri: list(documents[doc_uri]) for doc_uri in orphan_docs if doc_uri in documents}
    elif by_doc:
        for chunk in corpus:
            if chunk.doc_uri in by_doc:
                by_doc[chunk.doc_uri].append(chunk)
    indexes: dict[str, _WordIndex] = {}
    queue = []
    for row, finding in zip(rows, result.findings, strict=True):
        status = finding["status"]
        if status not in ("SPLIT", "ORPHANED", "MERGED"):
            continue
        item: dict[str, Any] = {"item_id": queue_item_id(row), "action": "review" if status == "MERGED" else "rejudge",
                                "status": status}
        item.update((key, row[key]) for key in ("query_id", "query", "doc_uri", "chunk_id", "chunk_text", "text_sha",
                                                 "relevance", "labeled_by", "labeled_at") if row.get(key) is not None)
        found: list[tuple[float | None, LiveChunk]] = []
        if status == "SPLIT":
            found = [(None, result.chunks[chunk_id]) for chunk_id in finding["split_into"]]
        elif status == "MERGED":
            item["reanchor_to"] = finding["reanchor_to"]
            found = [(None, result.chunks[finding["reanchor_to"]])]
        elif row["doc_uri"] in by_doc and row.get("chunk_text"):
            index = indexes.get(row["doc_uri"])
            if index is None:
                index = indexes[row["doc_uri"]] = _WordIndex(_in_order(by_doc[row["doc_uri"]]))
            found = index.best(row["chunk_text"], candidates)
        if row.get("chunk_text") and found and found[0][0] is None:
            wanted = _words(row["chunk_text"])
            found = [(len(wanted & _words(c.text or "")) / len(wanted) if wanted else 0.0, c) for _, c in found]
        item["candidates"] = [
            {"chunk_id": c.chunk_id, "doc_uri": c.doc_uri, "ordinal": c.ordinal, "text": c.text,
             **({} if score is None else {"coverage": round(score, 6)})}
            for score, c in found if score is None or score > 0 or status != "ORPHANED"
        ]
        queue.append(item)
    return queue


def snapshot_rows(
    chunks: Iterable[Any], chunker_fingerprint: str, source: str = "chunks", *, numbered: bool = False,
) -> Iterator[dict[str, Any]]:
    """Snapshot chunks from chunker output rows ``{doc_uri, doc_revision, ordinal, text}``, lazily.

    Ids follow spec/chunk-id.md; ``doc_revision`` defaults to the text's own hash, as the spec
    allows for sources without versions. Each row is checked, with its line on error (the
    rows' positions, or with ``numbered`` the line numbers given as ``(line, row)`` pairs).
    """
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
        except ValueError as error:
            raise InputError(source, str(error).split(": ", 2)[-1], line=line, field="chunk") from None
        out = {"chunk_id": identity, "doc_uri": row["doc_uri"], "doc_revision": revision,
               "ordinal": ordinal, "text": text, "text_sha": sha}
        start = _count(row, "start_index", source, line)
        if start is not None:
            out["start_index"] = start
        yield out


def build_snapshot(
    chunks: Iterable[Any], chunker_fingerprint: str, corpus_fingerprint: str | None = None,
    source: str = "chunks", *, numbered: bool = False,
) -> dict[str, Any]:
    """A corpus.json (in memory) from chunker output rows; see ``snapshot_rows``."""
    return {"corpus_fingerprint": corpus_fingerprint or chunker_fingerprint,
            "chunker_fingerprint": chunker_fingerprint,
            "chunks": list(snapshot_rows(chunks, chunker_fingerprint, source, numbered=numbered))}


def drift_counts(judgments: Iterable[Judgment | Mapping[str, Any]], corpus: ChunkSource,
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Drift counts and corpus facts for a report, what ``score --corpus`` adds, as the report
    writes them (``goldkeeper.models.report``'s ``DriftCounts`` and ``CorpusInfo``)."""
    result = classify(judgments, corpus)
    info = {"fingerprint": corpus.corpus_fingerprint, "documents": result.corpus_documents,
            "chunks": result.corpus_chunks}
    return dict(result.summary), {name: value for name, value in info.items() if value is not None}
