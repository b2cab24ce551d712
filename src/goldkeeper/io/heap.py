"""Keep freed blocks of memory in the process's heap, for the bootstrap's arrays.

glibc's malloc serves a block above its mmap threshold (128 KiB at start) with a fresh
mapping and unmaps it when freed, and gives back heap above its trim threshold. It raises
both thresholds when such a block is freed (to that block's size), so what a process
happened to allocate before decided the cost of what came after: the bootstrap's arrays
(0.5 MiB of draws and 1 MiB of counts per block of resamples, 770 blocks at 10,000 queries)
were each mapped, faulted in page by page and unmapped again once score read its inputs in
64 KiB blocks, where 4 MiB blocks had raised the thresholds by chance: score with intervals
took 1.9 s instead of 1.0-1.4 s at 10k x 100 (summarize alone 3.1-3.5 s against 1.4-1.9 s in
process, and 1.9 s again after one 4 MiB block was allocated and freed). Setting both
thresholds says so on purpose. ``goldkeeper score`` with intervals and the flows' tasks that
compute intervals call it (the evaluate flow's score took 2.8 s against 1.4-1.6 s at 10k x
100 without); a Python caller of ``goldkeeper.score`` with intervals may call it too.
"""

from __future__ import annotations

import sys

__all__ = ["keep_freed_blocks"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_kept = False


def keep_freed_blocks(size: int = 32 << 20) -> bool:
    """Serve blocks up to ``size`` bytes from the heap and keep up to twice that freed there
    (glibc's ``mallopt``), once per process. False, changing nothing, where the C library
    has no ``mallopt`` (not glibc)."""
    global _kept
    if _kept:
        return True
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    _kept = mallopt(_M_MMAP_THRESHOLD, size) == 1 and mallopt(_M_TRIM_THRESHOLD, 2 * size) == 1
    return _kept
