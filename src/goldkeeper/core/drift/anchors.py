"""Content-defined anchors: rolling-hash shingles of a text, about one position in
``_ANCHOR_EVERY``, so that a long label text is found in a long document without scanning it
from every start (a rebuilt document builds them past ``rebuild._SCAN_BUDGET``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_ANCHOR_K = 16  # characters per shingle
_ANCHOR_EVERY = 32  # about one position in this many is an anchor


_BASE = 0x100000001B3  # odd, so invertible modulo 2**64
_HASH_BLOCK = 1 << 22  # windows hashed per numpy pass, which bounds the temporaries (~160 MB)
_POWERS: list[tuple[Any, Any]] = []  # the longest tables made so far: shorter ones are their heads


def _powers(length: int) -> tuple[Any, Any]:
    """_BASE**i and _BASE**-i modulo 2**64 for i < at least ``length`` (numpy wraps uint64
    products); made at twice the longest length asked so far, up to a block's."""
    import numpy as np

    if not _POWERS or len(_POWERS[0][0]) < length:
        grown = 2 * len(_POWERS[0][0]) if _POWERS else 1 << 12
        length = max(length, min(grown, _HASH_BLOCK + _ANCHOR_K - 1))  # no block asks for more
        forward = np.full(length, _BASE, dtype=np.uint64)
        backward = np.full(length, pow(_BASE, -1, 1 << 64), dtype=np.uint64)
        forward[0] = backward[0] = 1
        with np.errstate(over="ignore"):
            _POWERS[:] = [(np.cumprod(forward, dtype=np.uint64), np.cumprod(backward, dtype=np.uint64))]
    return _POWERS[0]


def _hash_blocks(text: str) -> Iterator[tuple[int, Any]]:
    """The keys of ``text``'s windows, a block at a time: (first window, keys). A window's key
    is the polynomial hash sum(code[p+i] * _BASE**i) of its _ANCHOR_K characters modulo 2**64,
    from prefix sums (a few numpy passes per block, whatever _ANCHOR_K is), so it depends on
    the window's characters only."""
    import numpy as np

    windows = len(text) - _ANCHOR_K + 1
    for first in range(0, max(windows, 0), _HASH_BLOCK):
        count = min(_HASH_BLOCK, windows - first)
        codes = np.frombuffer(text[first:first + count + _ANCHOR_K - 1].encode("utf-32-le"), dtype=np.uint32)
        forward, backward = _powers(count + _ANCHOR_K - 1)
        with np.errstate(over="ignore"):
            prefix = np.zeros(len(codes) + 1, dtype=np.uint64)
            np.cumsum(codes.astype(np.uint64) * forward[:len(codes)], dtype=np.uint64, out=prefix[1:])
            yield first, (prefix[_ANCHOR_K:_ANCHOR_K + count] - prefix[:count]) * backward[:count]


def window_keys(text: str) -> Any:
    """The key of every window of ``text`` (``_hash_blocks``), in position order."""
    import numpy as np

    blocks = [keys for _, keys in _hash_blocks(text)]
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.uint64)


def _anchors_of(text: str) -> tuple[Any, Any]:
    """Positions of ``text``'s anchors and their keys: the windows whose key's top bits are
    zero, one in about _ANCHOR_EVERY."""
    import numpy as np

    positions, keys = [], []
    shift = np.uint64(64 - max(1, (_ANCHOR_EVERY - 1).bit_length()))
    for first, hashes in _hash_blocks(text):
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
