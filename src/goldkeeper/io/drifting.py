"""Classify a judgments file against a snapshot by URL, on both cores when it is large.

Each label is classified on its own against the whole corpus, so the labels split freely: a
large local judgments file is cut at a newline near its middle. A forked child reads the
second half of the labels and classifies them while the parent does the same for the first
half; the two results are concatenated, which is exactly the one-process result. A local
snapshot is read by both processes at once (one the child inherited would be copied page by
page anyway, as reading objects writes their reference counts); a remote one is fetched once,
before the fork. A snapshot that cannot be read is reported before any label (in one process
too); errors in the labels keep file order (the parent's half is read first). Anything else
(stdin, remote judgments, small files, platforms without fork) runs in one process.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from typing import Any

import msgspec

from goldkeeper.core.drift import ChunkSource, DriftResult, classify, concat_results
from goldkeeper.io.fastjson import judgment_blocks
from goldkeeper.io.files import count_lines, is_local, iter_blocks, local_path, midpoint, source_name
from goldkeeper.io.forked import can_fork, start
from goldkeeper.io.snapshots import open_corpus

__all__ = ["classify_url"]

#: Below this a second process costs more than it saves.
PARALLEL_MIN_BYTES = 2 << 20
_LEFT: list[Any] = []  # (in the forked child only) what is left for the process's exit


def _rows(url: str, source: str, start_at: int = 0, stop: int | None = None,
          first_line: int = 1) -> list[dict[str, Any]]:
    """The checked rows of a judgments file, or of bytes [start_at, stop) of a local one (a
    half: an empty one is allowed, the caller words a file of blank lines)."""
    rows: list[dict[str, Any]] = []
    for block in judgment_blocks(iter_blocks(url, start=start_at, stop=stop), source,
                                 first_line=first_line, allow_empty=stop is not None):
        rows.extend(block)
    return rows


def _second_half(path: str, source: str, mid: int, size: int, corpus: ChunkSource | str,
                 keep_rows: bool) -> tuple[list[dict[str, Any]] | None, DriftResult, bytes]:  # runs forked
    """The second half's rows (if kept), its result without findings, and the findings as
    msgpack: plain dicts of strings, bools and lists, which msgspec encodes in 4 ms where
    pickle took 40 (50,000 findings), and both decode alike. ``corpus`` is the snapshot, or
    the URL of a local one to open here."""
    if isinstance(corpus, str):
        corpus = open_corpus(corpus)
    rows = _rows(path, source, mid, size, count_lines(path, mid) + 1)
    result = classify(rows, corpus)
    if not keep_rows:
        result.chunks = {}  # the named chunks serve fix and the queue, which need the rows too
    findings = msgspec.msgpack.encode(result.findings)
    # The child ends once this is sent (``os._exit``): freeing its labels, findings and
    # snapshot object by object first took 0.12 s of the parent's wait.
    _LEFT.append((rows, result.findings, corpus))
    result.findings = []
    return (rows if keep_rows else None), result, findings


def classify_url(
    judgments_url: str, corpus_url: str, *, keep_rows: bool = True,
    progress: Callable[[int], None] | None = None, workers: int = 2,
) -> tuple[list[dict[str, Any]], DriftResult, ChunkSource]:
    """The label rows (all of them when ``keep_rows``, else the first half's at least), the
    drift result, and the opened snapshot (for fix and the queue)."""
    source = source_name(judgments_url)
    path = local_path(judgments_url) if judgments_url != "-" and is_local(judgments_url) else None
    size = os.path.getsize(path) if path is not None and os.path.isfile(path) else 0
    mid = midpoint(path, size) if path is not None and size >= PARALLEL_MIN_BYTES else 0
    if not (path and mid and can_fork() and workers > 1):
        corpus = open_corpus(corpus_url)
        rows = _rows(judgments_url, source)
        return rows, classify(rows, corpus, progress=progress), corpus
    if is_local(corpus_url):
        # Each process reads a local snapshot itself, both at once: an inherited one would
        # be copied page by page anyway, as the child's reads write its reference counts.
        second = start(_second_half, path, source, mid, size, corpus_url, keep_rows)
        try:
            corpus = open_corpus(corpus_url)
        except BaseException:
            second.cancel()
            raise
    else:
        # A remote snapshot is fetched once. The child only reads it: frozen, no collection
        # of the child's touches (and so copies) its pages. This process takes its objects
        # back into view at once, unless its owner had frozen some itself (the CLI does).
        corpus = open_corpus(corpus_url)
        frozen_before = gc.get_freeze_count()
        gc.freeze()
        try:
            second = start(_second_half, path, source, mid, size, corpus, keep_rows)
        finally:
            if not frozen_before:
                gc.unfreeze()
    try:
        rows = _rows(path, source, 0, mid, 1)
        first = classify(rows, corpus, progress=progress)
    except BaseException:
        second.cancel()
        raise
    more, result, findings = second.result()
    result.findings = msgspec.msgpack.decode(findings)
    if not rows and not result.findings:
        _rows(judgments_url, source)  # only blank lines: the whole file's reader words it
    if more:
        rows.extend(more)
    return rows, concat_results(first, result), corpus
