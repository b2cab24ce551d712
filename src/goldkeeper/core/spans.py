"""Span labels: relevance anchored to the passage that answers, resolved under any chunking.

A chunk label says "this chunk answers the query"; a re-chunk moves the chunk and the label
must be re-found, split or queued. A span label (spec/spans.md) says "this passage of the
document answers it", as a W3C Web Annotation does: character offsets into the document
(``TextPositionSelector``) beside the quoted text and some context (``TextQuoteSelector``).
Any chunking of the document is then scored from one gold set: the label resolves to the
live chunks that hold the passage, by one rule (``RULE``), with the chunks' offsets
(``start_index``) as the only geometry. After an edit the passage is found again by its quote
and context, fuzzily within a stated bound (``MAX_EDIT_SHARE``): Google's diff-match-patch
finds where its quote begins (the Bitap matcher Hypothesis' annotator uses for the same job)
and an edit-distance alignment picks its boundaries; only a passage that is gone, or found at
several places alike, needs a person.

Pure: values in, values out. diff-match-patch is pure Python and reads no clock for a match;
numpy runs the alignment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CONTEXT", "DEFAULT_SHARE", "GAP", "MAX_EDIT_SHARE", "RULE", "DocumentText", "Located", "Resolution", "Span",
           "derive_spans", "document_texts", "locate", "quoted", "relevant_chunks", "resolve_labels", "resolve_span", "span_for_chunk",
           "span_of"]

#: A chunk that holds at least this share of a span's characters is relevant (``RULE``).
DEFAULT_SHARE = 0.5
#: A quote is found again after an edit when its new text is at most this share of its
#: characters away from it (Levenshtein distance over the quote's length).
MAX_EDIT_SHARE = 0.1
#: Characters of context kept on each side of a span that goldkeeper derives.
CONTEXT = 32

RULE = ("a chunk is relevant to a span label when it holds at least half of the span's characters "
        "(the whole span included), lies wholly inside the span, or holds more of the span than any "
        "other chunk (the first of equals); it takes the label's grade")

#: Stands for a character no chunk holds (the whitespace a splitter drops between chunks).
GAP = "\x00"

_BITS = 32  # diff-match-patch's Bitap matches patterns of at most this many characters


@dataclass(frozen=True)
class Span:
    """A passage of a document: ``[start, end)`` in characters (code points) of the document
    text the chunker read, with the quoted text and what precedes and follows it."""

    start: int
    end: int
    exact: str
    prefix: str = ""
    suffix: str = ""
    proposed_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"start": self.start, "end": self.end, "exact": self.exact}
        if self.prefix:
            out["prefix"] = self.prefix
        if self.suffix:
            out["suffix"] = self.suffix
        if self.proposed_by:
            out["proposed_by"] = self.proposed_by
        return out


def span_of(value: Any) -> Span:
    """A label's ``span`` (checked by ``core.judgments.check_span``, or a validated
    ``Judgment``'s ``models.judgment.Span``) as a ``Span``."""
    if not isinstance(value, Mapping):
        value = value.model_dump(exclude_none=True)
    return Span(value["start"], value["end"], value["exact"], value.get("prefix") or "", value.get("suffix") or "",
                value.get("proposed_by"))


@dataclass(frozen=True)
class Located:
    """Where a span was found in a document: its new offsets, how (``offsets``: where it was;
    ``quote``: its quote elsewhere; ``fuzzy``: text within the edit bound), the edit distance
    of the text there from the quote, and the text found."""

    start: int
    end: int
    how: str
    distance: int = 0
    text: str = ""


class DocumentText:
    """A document's text as its chunks hold it: each chunk's text at its ``start_index``,
    characters no chunk holds as ``GAP``. Chunks are ``(chunk_id, start, text)``."""

    def __init__(self, chunks: Iterable[tuple[str, int, str]]) -> None:
        ordered = sorted(chunks, key=lambda c: (c[1], -len(c[2]), c[0]))
        parts: list[str] = []
        end = 0
        for _, start, text in ordered:
            if start > end:
                parts.append(GAP * (start - end))
                end = start
            stop = start + len(text)
            if stop > end:
                parts.append(text[end - start:])
                end = stop
        self.text = "".join(parts)
        self.extents = [(chunk_id, start, start + len(text)) for chunk_id, start, text in ordered]

    def padded(self, length: int) -> str:
        """The text at least ``length`` characters long: what follows the last chunk (the
        whitespace a splitter drops at the end) is unknown, as a gap is."""
        return self.text + GAP * (length - len(self.text)) if length > len(self.text) else self.text

    def holds(self, start: int, end: int, exact: str) -> bool:
        """Whether ``exact`` is the text at ``[start, end)``, characters no chunk holds aside,
        and some chunk holds part of it."""
        if end - start != len(exact):
            return False
        there = self.padded(end)[start:end]
        if there == exact:
            return True
        return GAP in there and there.count(GAP) < len(there) and all(map(_agrees, there, exact))


def _agrees(found: str, wanted: str) -> bool:
    """A character of the document agrees with one of a quote: the same, or one no chunk
    holds where the quote has whitespace (what splitters drop between chunks)."""
    return found == wanted or (found == GAP and wanted.isspace())


def _context_score(text: str, start: int, end: int, span: Span) -> int:
    """How many characters of the span's prefix (read backwards) and suffix agree around
    ``[start, end)``, characters no chunk holds counting as agreeing."""
    score = 0
    for a, b in zip(reversed(text[max(0, start - len(span.prefix)):start]), reversed(span.prefix)):
        if not _agrees(a, b):
            break
        score += 1
    for a, b in zip(text[end:end + len(span.suffix)], span.suffix):
        if not _agrees(a, b):
            break
        score += 1
    return score


def _occurrences(text: str, exact: str) -> list[int]:
    """Every start of ``exact`` in ``text``, a character no chunk holds matching whitespace."""
    found = []
    at = text.find(exact)
    while at >= 0:
        found.append(at)
        at = text.find(exact, at + 1)
    if found or GAP not in text:
        return found
    if not any(c.isspace() for c in exact):
        return found
    pattern = re.compile("".join(f"[{re.escape(c)}{GAP}]" if c.isspace() else re.escape(c) for c in exact))
    spans = []
    at = 0
    while (hit := pattern.search(text, at)) is not None:
        if hit.group().count(GAP) < len(exact):
            spans.append(hit.start())
        at = hit.start() + 1
    return spans


def _matcher() -> Any:
    from diff_match_patch import diff_match_patch

    return diff_match_patch()


#: Whitespace and characters no chunk holds read as one space when a quote is matched
#: fuzzily: what a splitter drops between chunks is whitespace, one character for one.
_BLANK = str.maketrans(dict.fromkeys([GAP, *"\t\n\x0b\x0c\r \x85\xa0\u2028\u2029"], " "))


def _distances(pattern: str, text: str) -> Any:
    """The Levenshtein distance from ``pattern`` to each prefix of ``text``: item ``j`` is the
    distance to ``text[:j]``. Wagner-Fischer by rows, each row's insertions as a running
    minimum, so a row is a few array operations."""
    import numpy as np

    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    steps = np.arange(len(text) + 1)
    row = steps.copy()
    for i, char in enumerate(pattern, 1):
        best = np.empty_like(row)
        best[0] = i
        np.minimum(row[1:] + 1, row[:-1] + (codes != ord(char)), out=best[1:])
        row = np.minimum.accumulate(best - steps) + steps
    return row


def _fuzzy(document: DocumentText, span: Span, max_edit_share: float) -> Located | None:
    """The span's quote within the edit bound: its first and its last 32 characters each found
    by Bitap near where they were (an edit may spoil one, or make it match better elsewhere),
    then the boundaries around each place whose text is fewest edits (Levenshtein distance)
    from the quote; the place with fewer edits, then the one nearer the span's offsets, wins.
    Whitespace and characters no chunk holds read alike; the text after the last chunk is not
    searched (a passage found there would hold text no one has seen)."""
    original = document.text
    text = original.translate(_BLANK)
    exact = span.exact.translate(_BLANK)
    dmp = _matcher()
    dmp.Match_Threshold = 0.3
    dmp.Match_Distance = 1000  # a character of error weighs as much as 1000/32 characters of distance
    tail = exact[-_BITS:]
    near = min(span.start, max(0, len(text) - 1))
    head_at = dmp.match_main(text, exact[:_BITS], near)
    tail_at = dmp.match_main(text, tail, min(max(0, span.end - len(tail)), max(0, len(text) - 1)))
    starts = {head_at} if head_at >= 0 else set()
    if tail_at >= 0:
        starts.add(max(0, tail_at + len(tail) - len(exact)))
    found = [_aligned(text, exact, start, max_edit_share) for start in sorted(starts)]
    if not found:
        return None
    distance, start, end = min(found, key=lambda f: (f[0], abs(f[1] - span.start)))
    if distance > max_edit_share * len(exact) or not text[start:end].strip():
        return None
    return Located(start, end, "fuzzy", distance, original[start:end])


def _aligned(text: str, exact: str, start: int, max_edit_share: float) -> tuple[int, int, int]:
    """``(edits, start, end)``: the boundaries near ``start`` within the bound whose text is
    fewest edits from ``exact``, then of the length nearest its (a diff alone may align a
    repeated run of characters anywhere along it): the end first, then the start again. One
    alignment gives the distance to every end at once."""
    bound = int(max_edit_share * len(exact))
    size = len(exact)
    ends = _distances(exact, text[start:start + size + bound])
    end = min(range(max(start + 1, start + size - bound), min(len(text), start + size + bound) + 1),
              key=lambda b: (ends[b - start], abs(b - start - size)), default=start + 1)
    lowest = max(0, end - size - bound)
    starts = _distances(exact[::-1], text[lowest:end][::-1])
    start = min(range(lowest, min(end - 1, end - size + bound) + 1),
                key=lambda a: (starts[end - a], abs(end - a - size)), default=start)
    return int(starts[end - start]), start, end


def locate(document: DocumentText, span: Span, *, max_edit_share: float = MAX_EDIT_SHARE) -> Located | str:
    """Where ``span`` is in ``document``, or why it is not found: ``"gone"`` (no text within the
    bound) or ``"ambiguous"`` (the quote at several places that its context does not tell
    apart). In order: at its own offsets with its context; its quote once, or at the one place
    whose context agrees best; its quote within ``max_edit_share`` edits."""
    text = document.padded(max(span.end, len(document.text)) + len(span.exact) + len(span.suffix))
    best = len(span.prefix) + len(span.suffix)
    if document.holds(span.start, span.end, span.exact) and _context_score(text, span.start, span.end, span) == best:
        return Located(span.start, span.end, "offsets", 0, span.exact)
    places = _occurrences(text, span.exact)
    if len(places) == 1:
        return Located(places[0], places[0] + len(span.exact), "quote", 0, span.exact)
    if places:
        scored = sorted(((_context_score(text, at, at + len(span.exact), span), at) for at in places), reverse=True)
        if scored[0][0] == scored[1][0]:
            return "ambiguous"
        at = scored[0][1]
        return Located(at, at + len(span.exact), "quote", 0, span.exact)
    found = _fuzzy(document, span, max_edit_share)
    return found if found is not None else "gone"


def relevant_chunks(start: int, end: int, extents: Sequence[tuple[str, int, int]],
                    share: float = DEFAULT_SHARE) -> list[tuple[str, int]]:
    """The chunks relevant to ``[start, end)`` by ``RULE``, each with the characters of the
    span it holds, in document order: ``extents`` are ``(chunk_id, start, end)``."""
    held = [(chunk_id, min(end, chunk_end) - max(start, chunk_start), chunk_start >= start and chunk_end <= end)
            for chunk_id, chunk_start, chunk_end in extents]
    most = max((h for _, h, _ in held), default=0)
    if most <= 0:
        return []
    primary = next(chunk_id for chunk_id, h, _ in held if h == most)
    return [(chunk_id, h) for chunk_id, h, inside in held
            if h > 0 and (h >= share * (end - start) or inside or chunk_id == primary)]


def quoted(text: str, quote: str) -> list[tuple[int, int]]:
    """Where a person's ``quote`` occurs in ``text``, as ``[start, end)`` pairs: its words in
    order with any whitespace between them (a quote copied from a rendered page has its line
    breaks as spaces)."""
    words = quote.split()
    if not words:
        return []
    pattern = re.compile(r"\s+".join(map(re.escape, words)))
    return [match.span() for match in pattern.finditer(text)]


def span_for_chunk(document: str, start: int, end: int, context: int = CONTEXT) -> Span:
    """The span of ``document[start:end]`` with ``context`` characters of prefix and suffix."""
    return Span(start, end, document[start:end], document[max(0, start - context):start], document[end:end + context])


@dataclass
class Resolution:
    """What resolving a label set's span labels against a snapshot found: the rows to score
    (each span label as one row per relevant chunk; other labels as they were), and per span
    label (in order) what happened to it."""

    rows: list[dict[str, Any]]
    outcomes: list[dict[str, Any]]

    def summary(self) -> dict[str, Any]:
        """What a report says of it: counts by outcome, the chunks resolved to, the rule."""
        counts: dict[str, Any] = {"labels": len(self.outcomes), "resolved": 0, "found_again": 0, "fuzzy": 0,
                                  "gone": 0, "ambiguous": 0, "no_offsets": 0, "no_chunk": 0, "chunks": 0}
        for outcome in self.outcomes:
            status = outcome["status"]
            counts[status] += 1
            if status == "resolved":
                counts["chunks"] += len(outcome["chunks"])
                counts["found_again"] += outcome["how"] != "offsets"
                counts["fuzzy"] += outcome["how"] == "fuzzy"
        counts["rule"] = RULE
        return counts


def document_texts(chunks: Iterable[Any], wanted: set[str]) -> dict[str, DocumentText | None]:
    """The wanted documents' texts from a snapshot's live chunks (objects with chunk_id,
    doc_uri, text and start_index): None for a document whose chunks lack offsets."""
    by_doc: dict[str, list[tuple[str, int, str]] | None] = {}
    for chunk in chunks:
        uri = chunk.doc_uri
        if uri not in wanted:
            continue
        held = by_doc.setdefault(uri, [])
        if held is None:
            continue
        if chunk.start_index is None or chunk.text is None:
            by_doc[uri] = None
            continue
        held.append((chunk.chunk_id, chunk.start_index, chunk.text))
    return {uri: None if held is None else DocumentText(held) for uri, held in by_doc.items()}


def resolve_span(row: Mapping[str, Any], document: DocumentText | None, share: float = DEFAULT_SHARE,
                 max_edit_share: float = MAX_EDIT_SHARE) -> dict[str, Any]:
    """One span label against its document: its outcome, with ``chunks`` (id, characters
    held) when it resolves and ``located`` (the new ``Span``) when it was found."""
    span = span_of(row["span"])
    if document is None:
        return {"status": "no_offsets"}
    where = locate(document, span, max_edit_share=max_edit_share)
    if isinstance(where, str):
        return {"status": where}
    # The passage ends where the last chunk does (what a splitter drops after it is not known
    # to be there); a character no chunk holds is the quote's where the quote was found as it
    # is, else a space (what splitters drop is whitespace).
    end = min(where.end, len(document.text))
    there = document.text[where.start:end]
    exact = "".join(said if char == GAP else char for char, said in zip(there, span.exact)) \
        if where.how != "fuzzy" else there.replace(GAP, " ")
    chunks = relevant_chunks(where.start, end, document.extents, share)
    moved = Span(where.start, end, exact, _before(document.text, where.start, len(span.prefix)),
                 _after(document.text, end, len(span.suffix)), span.proposed_by)
    if not chunks:
        return {"status": "no_chunk", "how": where.how, "located": moved, "distance": where.distance}
    return {"status": "resolved", "how": where.how, "located": moved, "distance": where.distance, "chunks": chunks}


def _before(text: str, start: int, size: int) -> str:
    """Up to ``size`` characters before ``start``, back to the nearest character no chunk holds."""
    piece = text[max(0, start - size):start]
    return piece[piece.rfind(GAP) + 1:]


def _after(text: str, end: int, size: int) -> str:
    """Up to ``size`` characters from ``end``, up to the nearest character no chunk holds."""
    piece = text[end:end + size]
    cut = piece.find(GAP)
    return piece if cut < 0 else piece[:cut]


def derive_spans(rows: Iterable[Mapping[str, Any]], chunks: Mapping[str, Any],
                 documents: Mapping[str, DocumentText | None], context: int = CONTEXT
                 ) -> tuple[list[dict[str, Any]], int]:
    """Chunk labels with the span of the chunk they judged (``convert --corpus``): for each
    label without a span whose ``chunk_id`` is among ``chunks`` (live chunks by id, with
    offsets), the chunk's text at its offsets and ``context`` characters each side. The rest
    stay as they are. Returns the rows and how many gained a span."""
    out, derived = [], 0
    for row in rows:
        row = dict(row)
        chunk = chunks.get(row.get("chunk_id") or "")
        document = documents.get(row["doc_uri"]) if chunk is not None else None
        if row.get("span") is None and document is not None and chunk.start_index is not None and chunk.text:
            start, end = chunk.start_index, chunk.start_index + len(chunk.text)
            span = Span(start, end, chunk.text, _before(document.text, start, context),
                        _after(document.text, end, context))
            row["span"] = span.to_dict()
            derived += 1
        out.append(row)
    return out, derived


def resolve_labels(rows: Iterable[Mapping[str, Any]], documents: Mapping[str, DocumentText | None],
                   share: float = DEFAULT_SHARE, max_edit_share: float = MAX_EDIT_SHARE) -> Resolution:
    """Every label to score against a snapshot's chunks: a span label as one row per chunk
    relevant to it (its grade; a chunk that two labels of a query make relevant takes the
    higher grade), other labels as they are. A span label that does not resolve (its
    document has no offsets, its passage is gone or ambiguous) stays as it is, scored as its
    chunk label (``chunk_id``) as before spans; ``outcomes`` says which."""
    out: list[dict[str, Any]] = []
    outcomes: list[dict[str, Any]] = []
    placed: dict[tuple[str, str], int] = {}
    for row in rows:
        if row.get("span") is None:
            out.append(dict(row))
            continue
        outcome = resolve_span(row, documents.get(row["doc_uri"]), share, max_edit_share)
        outcomes.append({"query_id": row["query_id"], "doc_uri": row["doc_uri"], **outcome})
        if outcome["status"] != "resolved":
            out.append(dict(row))
            continue
        for chunk_id, _ in outcome["chunks"]:
            key = (row["query_id"], chunk_id)
            if key in placed:
                held = out[placed[key]]
                held["relevance"] = max(held["relevance"], row["relevance"])
                continue
            placed[key] = len(out)
            resolved = {name: value for name, value in row.items() if name not in ("chunk_text", "text_sha")}
            resolved["chunk_id"] = chunk_id
            out.append(resolved)
    return Resolution(out, outcomes)
