"""Validate a judgments file by URL, on both cores when the file is large and local.

Validation of a million labels is dominated by per-label work in Python, and this machine
class has two cores. A large local file is cut at a newline near its middle; a forked child
validates the second half while the parent validates the first, and the child's accumulated
state (sets and counters, not labels) comes back through a pipe to be absorbed. The result is
exactly the one-pass result: findings keep file order, the first error in the file is the
one reported, and when the halves interact (a target labeled in both) the second half is
simply re-fed after the first. Anything else (stdin, remote URLs, small files, platforms
without fork) takes the one-process path.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from goldkeeper.core.judgments import iter_judgment_blocks
from goldkeeper.core.validation import Validator
from goldkeeper.io.fastjson import judgment_blocks
from goldkeeper.io.files import LINES_BLOCK, count_lines, is_local, iter_blocks, local_path, midpoint, source_name
from goldkeeper.io.forked import can_fork, start

if TYPE_CHECKING:
    from goldkeeper.core.validation import ValidationResult

__all__ = ["feed", "validate_url"]

#: Below this a second process costs more than it saves.
PARALLEL_MIN_BYTES = 32 << 20
_BLOCK = LINES_BLOCK


def feed(validator: Validator, path: str, source: str, start: int, stop: int, first_line: int) -> None:
    """Validate the labels of bytes [start, stop) of a local judgments file (lines numbered
    from ``first_line``); a validator given a ``Qrels`` groups them into it too (score's
    reader)."""
    for rows in judgment_blocks(
        iter_blocks(path, _BLOCK, start=start, stop=stop), source, first_line=first_line, allow_empty=True
    ):
        validator.add_many(rows)


def _second_half(path: str, source: str, mid: int, size: int) -> Validator:  # runs forked
    validator = Validator()
    feed(validator, path, source, mid, size, count_lines(path, mid) + 1)
    return validator


def validate_url(url: str, *, workers: int = 2) -> ValidationResult:
    """Parse, type-check and validate a judgments file; ``InputError`` on the first bad line."""
    source = source_name(url)
    path = local_path(url) if url != "-" and is_local(url) else None
    size = os.path.getsize(path) if path is not None and os.path.isfile(path) else 0
    mid = midpoint(path, size) if path is not None and size >= PARALLEL_MIN_BYTES else 0
    if not (path and mid and can_fork() and workers > 1):
        validator = Validator()
        for rows in judgment_blocks(iter_blocks(url), source):
            validator.add_many(rows)
        return validator.result()

    second = start(_second_half, path, source, mid, size)
    validator = Validator()
    try:
        feed(validator, path, source, 0, mid, 1)
    except BaseException:
        second.cancel()
        raise
    if not validator.absorb(second.result()):
        feed(validator, path, source, mid, size, count_lines(path, mid) + 1)
    if validator.labels == 0:
        # Only blank lines on both sides: the one-pass reader words this error.
        for _ in iter_judgment_blocks(iter_blocks(url), source):
            pass
    return validator.result()
