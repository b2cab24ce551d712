"""A document's text rebuilt from its chunks: ordinal order, neighbours' overlaps folded,
whitespace at seams ignored, each chunk's span known, so that a label's text is found in the
whole document and the chunks that hold or overlap it come from a bisection over the spans."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

from goldkeeper.core.drift.anchors import _Anchors
from goldkeeper.core.drift.corpus import LiveChunk, _comparable_all

if TYPE_CHECKING:

    pass


_OVERLAP_WINDOW = 4096
_SCAN_BUDGET = 1 << 25  # characters str.find may scan per document before anchors pay off
_SURE_OVERLAP = 8  # shorter overlaps between neighbours count only on word boundaries


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
        """Find the texts about to be asked for: through the anchors, all in one batch, when
        scanning the text for each would cost more than ``_SCAN_BUDGET`` (the anchors are
        built then, once per document)."""
        if self.anchors is None and len(wanted) * len(self.text) > _SCAN_BUDGET:
            self.anchors = _Anchors(self.text)
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

    def locate(self, wanted: str) -> tuple[str, list[LiveChunk]] | None:
        """Where ``wanted`` (comparable) lies in the document: ("MERGED", [the shortest chunk
        that holds an occurrence, then the first in order]), ("SPLIT", the chunks that overlap
        its first occurrence, in document order) when no chunk holds one, or None."""
        if not wanted:
            return None
        holders: set[int] = set()
        first = -1
        for at in self.occurrences(wanted):
            if first < 0:
                first = at
            holders.update(self.holding(at, at + len(wanted)))
        if holders:
            return "MERGED", [min((self.chunks[i] for i in holders), key=lambda c: (len(c.text or ""), *c.order()))]
        if first >= 0:
            return "SPLIT", [self.chunks[i] for i in self.overlapping(first, first + len(wanted))]
        return None

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
