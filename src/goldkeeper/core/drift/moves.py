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

from collections.abc import Iterable, Mapping
from typing import Any

from goldkeeper.core.drift.anchors import _ANCHOR_K, _Anchors, window_keys
from goldkeeper.core.drift.corpus import LiveChunk
from goldkeeper.core.drift.rebuild import _Document, _in_order, _rebuild, _texts

#: The shortest text looked for in other documents (one window). Shorter ones stay ORPHANED.
SHORTEST = _ANCHOR_K
_KEYS = 4  # stretches of a text, each giving one key
_BATCH_CHARACTERS = 1 << 21  # document text hashed per numpy pass
_FILTER_BITS = 24  # a bitmap of 16M entries (16 MB) screens every window before an exact lookup
_SCAN_BUDGET = 1 << 25  # characters str.find may scan per document before anchors pay off

#: Where a text was found in one document: ("MERGED", [chunk]) or ("SPLIT", [pieces]).
Hit = tuple[str, list[LiveChunk]]


def text_keys(text: str) -> tuple[int, ...]:
    """A text's keys: the smallest window key of each of up to ``_KEYS`` stretches of its
    windows, sorted, without repeats; () for a text shorter than a window."""
    import numpy as np

    keys = window_keys(text)
    if not len(keys):
        return ()
    return tuple(sorted({int(part.min()) for part in np.array_split(keys, min(_KEYS, len(keys)))}))


class _Wanted:
    """The texts looked for, indexed by key: a bitmap of their keys' low bits, the keys sorted,
    and each text by its smallest key."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        import numpy as np

        self.texts = {name: text for name, text in texts.items() if len(text) >= SHORTEST}
        self.keys = {name: text_keys(text) for name, text in self.texts.items()}
        self.by_first: dict[int, list[str]] = {}
        for name, keys in self.keys.items():
            self.by_first.setdefault(keys[0], []).append(name)
        every = np.fromiter({key for keys in self.keys.values() for key in keys}, dtype=np.uint64)
        self.sorted = np.sort(every)
        self.bitmap = np.zeros(1 << _FILTER_BITS, dtype=bool)
        self.bitmap[(every & np.uint64((1 << _FILTER_BITS) - 1)).astype(np.intp)] = True

    def present(self, text: str, starts: Any) -> list[set[int]]:
        """For each document of a batch (``text``: their texts joined by NUL, ``starts``:
        where each begins), which wanted keys its windows have."""
        import numpy as np

        keys = window_keys(text)
        at = np.flatnonzero(self.bitmap[(keys & np.uint64((1 << _FILTER_BITS) - 1)).astype(np.intp)])
        values = keys[at]
        real = np.isin(values, self.sorted)
        at, values = at[real], values[real]
        owners = np.searchsorted(starts, at, "right") - 1
        present: list[set[int]] = [set() for _ in range(len(starts))]
        for owner, value in zip(owners.tolist(), values.tolist()):
            present[owner].add(value)
        return present

    def candidates(self, present: set[int]) -> list[str]:
        """The texts whose every key is present."""
        return [name for key in present for name in self.by_first.get(key, ())
                if all(other in present for other in self.keys[name])]


def find_moved(documents: Iterable[list[LiveChunk]], texts: Mapping[str, str]) -> dict[str, dict[str, Hit]]:
    """Every document (each given as its live chunks) whose rebuilt text holds a wanted text
    (``texts``: name -> comparable text; shorter than ``SHORTEST``: not looked for), and how:
    name -> doc_uri -> ``Hit``."""
    wanted = _Wanted(texts)
    found: dict[str, dict[str, Hit]] = {}
    if not wanted.texts:
        return found
    batch: list[_Document] = []
    size = 0
    for chunks in documents:
        chunks, pieces, spaced = _texts(_in_order(chunks))
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
    """Look for the wanted texts in a batch of documents: each is searched for those of its
    candidates (``_Wanted.candidates``) whose keys it has."""
    import numpy as np

    starts = np.cumsum([0] + [len(document.text) + 1 for document in batch[:-1]], dtype=np.int64)
    for document, present in zip(batch, wanted.present("\x00".join(d.text for d in batch), starts)):
        names = wanted.candidates(present) if present else []
        if not names:
            continue
        if len(names) * len(document.text) > _SCAN_BUDGET:
            document.anchors = _Anchors(document.text)
            document.look_up([wanted.texts[name] for name in names])
        doc_uri = document.chunks[0].doc_uri
        for name in names:
            hit = document.locate(wanted.texts[name])
            if hit is not None:
                found.setdefault(name, {})[doc_uri] = hit
