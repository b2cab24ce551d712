"""Documents that move: pages renamed, split, merged or moved between spaces keep the text a
person judged under another ``doc_uri``. A label whose own document no longer holds its text
is looked for in every other live document (spec/drift.md, "Documents that move").

No label is compared with every document. A text's keys are the smallest window key
(``anchors.window_keys``: 16-character windows) of each of up to ``_KEYS`` stretches of it;
a document that holds the text holds each of its windows, so its rebuilt text has every one
of those keys. One pass over the corpus rebuilds each document, hashes its windows (a batch
of documents at a time, in numpy), and searches a document for a text only when it has all of
the text's keys: most documents are looked at by a bitmap lookup per window and nothing more.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from goldkeeper.core.drift.anchors import _ANCHOR_K, window_keys
from goldkeeper.core.drift.corpus import LiveChunk
from goldkeeper.core.drift.rebuild import _Document, _in_order, _rebuild, _texts

#: The shortest text looked for in other documents (one window). Shorter ones stay ORPHANED.
SHORTEST = _ANCHOR_K
_KEYS = 4  # stretches of a text, each giving one key
_BATCH_CHARACTERS = 1 << 20  # document text hashed per numpy pass (and label text, for keys)
_FILTER_BITS = 24  # a bitmap of 16M entries (16 MB) screens every window before an exact lookup

#: Where a text was found in one document: ("MERGED", [chunk]) or ("SPLIT", [pieces]).
Hit = tuple[str, list[LiveChunk]]


def _keys_of(texts: list[str]) -> list[tuple[int, ...]]:
    """Each text's keys: the smallest window key of each of up to ``_KEYS`` stretches of its
    windows (a text shorter than a window has none); the texts are hashed a batch of about
    ``_BATCH_CHARACTERS`` at a time (``_batch_keys``)."""
    out: list[tuple[int, ...]] = []
    first = size = 0
    for end, text in enumerate(texts, 1):
        size += len(text)
        if size >= _BATCH_CHARACTERS or end == len(texts):
            out += _batch_keys(texts[first:end])
            first, size = end, 0
    return out


def _batch_keys(texts: list[str]) -> list[tuple[int, ...]]:
    """``_keys_of`` a batch: one numpy pass over the texts' concatenation, the windows that
    straddle two texts left out."""
    import numpy as np

    lengths = np.array([len(text) for text in texts], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    windows = np.maximum(lengths - _ANCHOR_K + 1, 0)
    parts = np.minimum(windows, _KEYS)
    # Stretch j of a text of n windows in p parts starts at j * n // p (every stretch non-empty).
    owner = np.repeat(np.arange(len(texts)), parts)
    index = np.arange(int(parts.sum())) - np.repeat(np.cumsum(parts) - parts, parts)
    firsts = starts[owner] + index * windows[owner] // parts[owner]
    ends = starts[owner] + (index + 1) * windows[owner] // parts[owner]
    keys = window_keys("".join(texts))
    # reduceat over [first, next first): the last stretch of a text runs to its own end only,
    # so each text's end is a boundary too (its minimum ignored).
    bounds = np.unique(np.concatenate((firsts, ends)))
    bounds = bounds[bounds < len(keys)]
    minima = dict(zip(bounds.tolist(), np.minimum.reduceat(keys, bounds).tolist())) if len(bounds) else {}
    out: list[list[int]] = [[] for _ in texts]
    for who, first in zip(owner.tolist(), firsts.tolist()):
        out[who].append(minima[first])
    return [tuple(sorted(set(found))) for found in out]


class _Wanted:
    """The texts looked for (each with the documents it is not looked for in: its labels' own),
    indexed by key: a bitmap of the keys' low bits, the distinct keys sorted, and for each key
    the texts that have it (``by_key``, from ``starts[i]`` to ``starts[i + 1]``)."""

    def __init__(self, texts: Mapping[str, tuple[str, Collection[str]]]) -> None:
        import numpy as np

        kept = [(name, text, homes) for name, (text, homes) in texts.items() if len(text) >= SHORTEST]
        self.names = [name for name, _, _ in kept]
        self.texts = [text for _, text, _ in kept]
        self.homes = [homes for _, _, homes in kept]
        keys = _keys_of(self.texts)
        self.needed = np.array([len(k) for k in keys], dtype=np.int64)
        flat = np.fromiter((key for k in keys for key in k), dtype=np.uint64, count=int(self.needed.sum()))
        owners = np.repeat(np.arange(len(keys), dtype=np.int64), self.needed)
        order = np.argsort(flat, kind="stable")
        self.keys, first = np.unique(flat[order], return_index=True)
        self.starts = np.append(first, len(flat)).astype(np.int64)
        self.by_key = owners[order]
        self.bitmap = np.zeros(1 << _FILTER_BITS, dtype=bool)
        self.bitmap[(flat & np.uint64((1 << _FILTER_BITS) - 1)).astype(np.intp)] = True

    def candidates(self, text: str, starts: Any) -> tuple[list[int], list[int]]:
        """For a batch of documents (``text``: their texts joined by NUL, ``starts``: where
        each begins), the (document, text) pairs where the document has every key of the
        text, in numpy: windows screened by the bitmap, then looked up exactly; each
        document's distinct keys spread to the texts that have them, and counted."""
        import numpy as np

        windows = window_keys(text)
        # A key is the smallest of its stretch, so most windows are above every key: one
        # comparison drops them before the bitmap's scattered reads.
        at = np.flatnonzero(windows <= self.keys[-1])
        at = at[self.bitmap[(windows[at] & np.uint64((1 << _FILTER_BITS) - 1)).astype(np.intp)]]
        values = windows[at]
        index = np.minimum(np.searchsorted(self.keys, values), len(self.keys) - 1)
        real = self.keys[index] == values
        documents = np.searchsorted(starts, at[real], "right") - 1
        distinct = np.unique(documents * len(self.keys) + index[real])
        documents, index = distinct // len(self.keys), distinct % len(self.keys)
        counts = self.starts[index + 1] - self.starts[index]
        total = int(counts.sum())
        spread = np.repeat(self.starts[index] - np.cumsum(counts) + counts, counts) + np.arange(total)
        pairs, held = np.unique(np.repeat(documents, counts) * len(self.names) + self.by_key[spread],
                                return_counts=True)
        whole = pairs[held == self.needed[pairs % len(self.names)]]
        return (whole // len(self.names)).tolist(), (whole % len(self.names)).tolist()


def find_moved(documents: Iterable[list[LiveChunk] | _Document], texts: Mapping[str, tuple[str, Collection[str]]],
               ) -> dict[str, dict[str, Hit]]:
    """Every document (each given as its live chunks, or rebuilt already) whose rebuilt text
    holds a wanted text,
    and how: name -> doc_uri -> ``Hit``. ``texts``: name -> (comparable text, the documents
    not to look in: its labels' own, searched already); a text shorter than ``SHORTEST`` is not
    looked for."""
    wanted = _Wanted(texts)
    found: dict[str, dict[str, Hit]] = {}
    if not wanted.names:
        return found
    batch: list[_Document] = []
    size = 0
    for given in documents:
        if isinstance(given, _Document):
            document = given
        else:
            chunks, pieces, spaced = _texts(_in_order(given))
            if not chunks:
                continue
            document = _rebuild(chunks, pieces, spaced)
        batch.append(document)
        size += len(document.text) + 1
        if size >= _BATCH_CHARACTERS:
            _search(batch, wanted, found)
            batch, size = [], 0
    if batch:
        _search(batch, wanted, found)
    return found


def _search(batch: list[_Document], wanted: _Wanted, found: dict[str, dict[str, Hit]]) -> None:
    """Look for the wanted texts in a batch of documents: each is searched for the texts whose
    keys it has all of (``_Wanted.candidates``), but not for those it is a home of."""
    import numpy as np

    starts = np.cumsum([0] + [len(document.text) + 1 for document in batch[:-1]], dtype=np.int64)
    by_document: dict[int, list[int]] = {}
    for document, name in zip(*wanted.candidates("\x00".join(d.text for d in batch), starts)):
        if batch[document].chunks[0].doc_uri not in wanted.homes[name]:
            by_document.setdefault(document, []).append(name)
    for index, names in by_document.items():
        document = batch[index]
        document.look_up([wanted.texts[name] for name in names])
        doc_uri = document.chunks[0].doc_uri
        for name in names:
            hit = document.locate(wanted.texts[name])
            if hit is not None:
                found.setdefault(wanted.names[name], {})[doc_uri] = hit
