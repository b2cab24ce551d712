"""Load scoring inputs by URL, in whatever format they come, hashing the bytes as read.

Reports carry the sha256 of every input, so a number can be traced to the exact files it was
computed from; hashing while reading costs one pass over bytes already in memory.
"""

from __future__ import annotations

import io
import mmap
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from goldkeeper.core import qrels as qrels_format
from goldkeeper.core.judgments import iter_judgment_blocks
from goldkeeper.core.runs import iter_run
from goldkeeper.core.grouped import Qrels, RunHeads, merge_qrels, pack_run
from goldkeeper.core.validation import Validator
from goldkeeper.errors import InputError, UsageError
from goldkeeper.io.files import (
    LINES_BLOCK, count_lines, decode_utf8, is_local, iter_blocks, iter_lines, local_path, local_sha256, map_file,
    read_bytes, sha256, source_name,
)
from goldkeeper.io.fastjson import Refused, judgment_blocks, run_lines
from goldkeeper.io.forked import Forked, can_fork, start
from goldkeeper.io.scan import feed

if TYPE_CHECKING:
    from goldkeeper.models.report import Report
    from goldkeeper.models.run import RunEntry
    from goldkeeper.core.validation import ValidationResult


__all__ = [
    "Hashed",
    "iter_label_blocks",
    "load_baseline",
    "load_label_rows",
    "load_run",
    "load_run_prefixes",
    "local_size",
    "read_scoring_inputs",
    "RunReader",
    "ScoringInputs",
]


class Hashed:
    """Pass byte chunks (lines or blocks) through while hashing them; ``hexdigest`` once
    consumed. Reports carry the sha256 of every input, so a number traces to its files."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks
        self._hash = sha256()

    def __iter__(self) -> Iterator[bytes]:
        update = self._hash.update
        for chunk in self._chunks:
            update(chunk)
            yield chunk

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def iter_label_blocks(url: str, fmt: str | None = None) -> tuple[Iterator[list[dict[str, Any]]], Any]:
    """Checked label rows a block at a time, from judgments JSONL (streamed: memory holds one
    block), TREC qrels or BEIR TSV; and an object whose ``hexdigest()`` is the file's sha256
    once the blocks are consumed."""
    source = source_name(url)
    if url != "-" and (fmt is None or fmt == "jsonl"):
        kind = fmt
        if kind is None:
            head = b""
            for block in iter_blocks(url, size=4096):
                head = block
                break
            kind = qrels_format.detect_labels_format(head[:4096].decode("utf-8", "replace"), url)
        if kind == "jsonl":
            hashed = Hashed(iter_blocks(url))
            return judgment_blocks(hashed, source), hashed
        fmt = kind
    data = read_bytes(url)
    digest = sha256(data)
    kind = fmt or qrels_format.detect_labels_format(data[:4096].decode("utf-8", "replace"), url)
    if kind == "jsonl":
        blocks: Iterator[list[dict[str, Any]]] = judgment_blocks(_blocks(data), source)
    elif kind == "trec":
        blocks = iter([[j.__dict__ for j in qrels_format.parse_trec_qrels(decode_utf8(data, source), source)]])
    elif kind == "beir":
        blocks = iter([[j.__dict__ for j in qrels_format.parse_beir_tsv(decode_utf8(data, source), source)]])
    else:
        raise UsageError(f"unknown judgments format '{kind}', expected jsonl, trec or beir")
    return blocks, digest


def load_label_rows(url: str, fmt: str | None = None) -> tuple[list[dict[str, Any]], str]:
    """Checked label rows from judgments JSONL, TREC qrels or BEIR TSV, and the sha256."""
    blocks, digest = iter_label_blocks(url, fmt)
    rows = [row for block in blocks for row in block]
    return rows, digest.hexdigest()


def _blocks(data: bytes, size: int = LINES_BLOCK) -> Iterator[bytes]:
    """Whole lines, about ``size`` bytes at a time."""
    start, total = 0, len(data)
    while start < total:
        end = min(start + size, total)
        if end < total:
            newline = data.find(b"\n", end)
            end = total if newline < 0 else newline + 1
        yield data[start:end]
        start = end


def load_run(url: str, fmt: str | None = None) -> tuple[Iterator[RunEntry], Any]:
    """Run entries from run JSONL (streamed) or a TREC run file (grouped, then sorted).

    Standard input is read once and kept, so guessing its format loses no line."""
    source = source_name(url)
    if fmt not in (None, "jsonl", "trec"):
        raise UsageError(f"unknown run format '{fmt}', expected jsonl or trec")
    data = read_bytes(url) if url == "-" or fmt == "trec" else None
    if fmt is None:
        head = b""
        for line in iter_lines(url) if data is None else iter(data.splitlines()):
            if line.strip():
                head = line.lstrip()
                break
        fmt = "jsonl" if head.startswith(b"{") or not head else "trec"
    if fmt == "jsonl":
        lines = Hashed(iter_lines(url) if data is None else iter(data.splitlines(keepends=True)))
        return iter_run(lines, source), lines
    if data is None:
        data = read_bytes(url)
    # A TREC run is read whole (it is grouped and sorted per query) and hashed in one call.
    return iter(qrels_format.parse_trec_run(decode_utf8(data, source), source)), sha256(data)


def _run_kind(url: str, fmt: str | None) -> str:
    """A local run file's format: as given, else jsonl when its first non-blank line opens
    an object, else trec (as ``load_run`` guesses)."""
    if fmt is not None:
        return fmt
    with open(local_path(url), "rb") as handle:
        head = next((line.lstrip() for line in handle.read(1 << 16).splitlines() if line.strip()), b"")
    return "jsonl" if head.startswith(b"{") else "trec"


def load_run_prefixes(url: str, fmt: str | None, depth: int) -> tuple[RunHeads, str]:
    """Every run entry cut to what scoring at cutoffs up to ``depth`` reads (``RunHeads``),
    and the sha256.

    Small enough to send between processes: the CLI reads the run in a forked child while it
    reads the judgments itself.
    """
    if fmt in (None, "jsonl") and url != "-" and is_local(url) and local_size(url):
        if _run_kind(url, fmt) == "jsonl":
            # msgspec first, a block at a time (``_msgspec_prefixes``); anything it refuses
            # is read again below, a line at a time, which words the error with its line.
            digest = sha256()
            packed: RunHeads | None = RunHeads(depth)
            for block in iter_blocks(url):
                digest.update(block)
                part = _msgspec_prefixes(block, depth)
                if part is None:
                    packed = None
                    break
                packed.extend(part)  # type: ignore[union-attr]
            if packed is not None and len(packed) and len(set(packed.query_ids)) == len(packed):
                return packed, digest.hexdigest()
    entries, hashed = load_run(url, fmt)
    return pack_run(entries, depth), hashed.hexdigest()


#: Below this size a TREC run is parsed by one process; above, by two (``RunReader``).
HALVING_MIN_BYTES = 8 << 20


def _query_cut(data: bytes) -> int | None:
    """An offset near the middle of a TREC run where a new query's lines begin (so no query
    is cut in two when the file groups its queries), or None."""
    cut = _query_boundary(data, len(data) // 2, len(data))
    return cut if 0 < cut < len(data) else None


def _query_boundary(data: Any, at: int, stop: int) -> int:
    """The first offset after ``at`` (and at most ``stop``) where a line of a TREC run
    begins whose query is not the one of the line before."""
    mid = data.find(b"\n", at, stop)
    if mid < 0:
        return stop
    before = data[data.rfind(b"\n", 0, mid) + 1:mid].split(None, 1)
    cut = mid + 1
    while before and cut < stop:
        end = data.find(b"\n", cut, stop)
        end = stop if end < 0 else end
        if data[cut:end].split(None, 1)[:1] != before[:1]:
            break
        cut = end + 1
    return min(cut, stop)


def _plain_prefixes(data: bytes, depth: int) -> RunHeads | None:
    """A plain TREC run's prefixes (the column-wise reader's files), or None for any other."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    entries = qrels_format.parse_plain_trec_run(text)
    return None if entries is None else pack_run(entries, depth)


def _occurrences(data: Any, key: bytes, start: int, stop: int) -> int:
    """``data.count(key, start, stop)``, for a file's mapping too (which has find but no count):
    one scan either way, at the same speed (bytes' fast search); a regex took twice as long."""
    if isinstance(data, bytes):
        return data.count(key, start, stop)
    found, at = 0, data.find(key, start, stop)
    while at >= 0:
        found += 1
        at = data.find(key, at + len(key), stop)
    return found


def _msgspec_prefixes(data: Any, depth: int, start: int = 0, stop: int | None = None) -> RunHeads | None:
    """Whole lines of run JSONL in ``data[start:stop]`` (bytes or a mapping) as prefixes when
    msgspec reads every one as a common line (``fastjson.run_lines``), or None."""
    stop = len(data) if stop is None else stop
    try:
        packed = pack_run(run_lines(data, start, stop), depth)
    except Refused:
        return None
    queries = len(packed)
    # What a decoder cannot see: a key named twice in a line, a query on two lines.
    if (_occurrences(data, b'"query_id"', start, stop) == queries == _occurrences(data, b'"ranking"', start, stop)
            and len(set(packed.query_ids)) == queries):
        return packed
    return None


def _jsonl_prefixes(data: Any, depth: int, start: int = 0, stop: int | None = None) -> RunHeads | None:
    """A part of a run JSONL file as prefixes, or None when any line is refused (the whole
    file is then read in one piece, which words the error with its line). msgspec reads
    the common lines; a part with any other goes to core's reader."""
    packed = _msgspec_prefixes(data, depth, start, stop)
    if packed is not None:
        return packed
    try:
        return pack_run(iter_run(io.BytesIO(data[start:stop]), "run"), depth)  # lines as a file yields them
    except InputError:
        return None


def _prefixes(data: Any, start: int, stop: int, depth: int, kind: str) -> RunHeads | None:
    """The prefixes of ``data[start:stop]``; a JSONL part is read in place (no copy)."""
    if kind == "trec":
        return _plain_prefixes(data[start:stop], depth)
    return _jsonl_prefixes(data, depth, start, stop)


#: A part of a run scored where it is read (``RunReader``'s ``score_part``) is parsed and
#: scored this many bytes at a time (whole lines; a TREC run's whole queries), and a mapped
#: file's pages let go once read, so a process holds one block's heads, not its half of the
#: run's (7,000 queries x 1,000 at k = 1,000: 7 million keys). Peak PSS of the process tree
#: there, with the part whole: 582 MiB; blocks of 4 MB 229 MiB, with the pages let go 179,
#: blocks of 2 MB 109, 1 MB 74 MiB; 100k x 100 at k = 100: 1,032, 453, 354, 298, 288 MiB.
#: Times were the same or lower (7k x 1,000: 0.86 s whole, 0.75-0.77 s in blocks of 1-2 MB).
SCORE_BLOCK_BYTES = 1 << 20


class _Declined(Exception):
    """A block the fast readers decline, or a query met again in a later block."""


def _heads_by_block(data: Any, start: int, stop: int, depth: int, kind: str) -> Iterator[RunHeads]:
    """The heads of ``data[start:stop]``, a block (``SCORE_BLOCK_BYTES``) at a time. The
    pages of a mapped file's blocks are let go once read (``madvise``): each process would
    otherwise keep its half of the file resident to the end."""
    seen: set[str] = set()
    release = getattr(data, "madvise", None)
    released = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE  # the first whole page of this part
    while start < stop:
        if kind == "trec":
            end = _query_boundary(data, min(start + SCORE_BLOCK_BYTES, stop), stop)
        else:
            end = data.find(b"\n", min(start + SCORE_BLOCK_BYTES, stop), stop)
            end = stop if end < 0 else end + 1
        heads = _prefixes(data, start, end, depth, kind)
        if heads is None or not seen.isdisjoint(heads.query_ids):
            raise _Declined
        seen.update(heads.query_ids)
        yield heads
        start = end
        if release is not None:
            upto = end // mmap.PAGESIZE * mmap.PAGESIZE
            if upto > released:
                release(mmap.MADV_DONTNEED, released, upto - released)
                released = upto


def _scored_part(data: Any, start: int, stop: int, depth: int, kind: str,
                 score_part: Callable[[Iterator[RunHeads]], Any]) -> Any:
    """``score_part`` of the heads of ``data[start:stop]``, block by block; None when any
    block is declined (the whole file is then read in one piece, which words the error)."""
    try:
        return score_part(_heads_by_block(data, start, stop, depth, kind))
    except _Declined:
        return None


def _first_half(data: Any, cut: int, depth: int, kind: str, score_part: Callable[[Iterator[RunHeads]], Any] | None,
                hashed: bool) -> tuple[Any, str | None]:  # runs forked
    if score_part is None:
        part = _prefixes(data, 0, cut, depth, kind)
    else:
        part = _scored_part(data, 0, cut, depth, kind, score_part)
    return part, (None if hashed else sha256(data).hexdigest())


def _file_sha256(path: str) -> str:  # runs forked
    return local_sha256(path)[0]


#: How many bytes of run JSONL the child reads in the time a byte of judgments takes here
#: (parse, validate, group), for the cuts. Once labels were grouped a batch at a time
#: (``Qrels.join``), 5.4 MB of judgments took about 0.1 s here and 9.2 MB of run 0.07-0.09 s
#: in the child, so 2: at 100k x 100 2.32-2.53 s against 2.67-2.97 s with 3 and 2.45 s with
#: 1.5, at 10k x 100 (where the share's cap decides) 0.360 s against 0.369 s (interleaved
#: medians of 5 and 21). The tail the child reads comes back and is absorbed too.
LABELS_PER_RUN_BYTE = 2

#: The child's work that grows with neither file (forking, counting the lines before its
#: cut, sending its result back) in bytes of judgments, for ``_labels_cut``. At 10k x 100,
#: once score imported no numpy while the child read, the child ended 0.036 s after this
#: process; with 2 MB score took 0.296 s against 0.315 s without (1 MB 0.300 s, 1.5 MB
#: 0.298 s; interleaved medians of 11), and 100k x 100 2.62 s against 2.64 s (3 each).
CHILD_LABEL_BYTES = 2 << 20

#: The same weight when this process reads all the judgments and only the run is cut
#: (``RunReader``): no label crosses the pipe then, and a byte of judgments weighs more. At
#: 7k x 1,000 a judgments byte took 31 ns and a run byte 4.3 ns (one timeline), but the
#: child also hashes the whole run (0.036 s). With 3 this process ended 0.06 s after the
#: child, with 5 0.044 s before it; 4 ran 0.370 s against 0.388 (3) and 0.377 (5),
#: interleaved medians of 9.
READ_HERE_LABELS_PER_RUN_BYTE = 4

#: What ``read_scoring_inputs``'s ``meanwhile`` weighs by default in bytes of judgments read,
#: for the cuts: score's imports for intervals, numpy (0.05-0.07 s) and scipy.special
#: (0.14-0.21 s with scipy 1.17), where 6 MB of labels take about 0.14 s here. With 2 MB
#: (numpy's alone) and 6 MB, interleaved medians: 100k x 100 3.12 s against 3.03 s (5 each),
#: 7k x 1,000 0.927 s against 0.883 s (13), 10k x 100 1.057 s against 1.054 s (11). A caller
#: whose work is lighter says so (``meanwhile_bytes``).
MEANWHILE_LABEL_BYTES = 6 << 20


def _jsonl_share(size: int, judgments_bytes: int) -> float | None:
    """The share of a run JSONL file of ``size`` bytes that the child reads so that it (the
    part before) and this process (the judgments, then the part after) have about equal
    work; None when the judgments alone outweigh the run."""
    share = 0.5 + READ_HERE_LABELS_PER_RUN_BYTE * judgments_bytes / (2 * size)
    return share if share < 0.9 else None


def _line_cut(data: bytes, share: float) -> int | None:
    at = data.find(b"\n", int(len(data) * share))
    return at + 1 if 0 <= at < len(data) - 1 else None


def local_size(url: str) -> int:
    """The size of a local file; 0 when it cannot be read (the reader then reports why)."""
    try:
        return os.path.getsize(local_path(url)) if os.path.isfile(local_path(url)) else 0
    except OSError:
        return 0


class RunReader:
    """``load_run_prefixes`` started in a forked child. A large local run is cut in two and
    the parts parsed by the child and, in ``result``, by this process, which reads the
    judgments first: a TREC run at a query boundary near its middle; a run JSONL file (one
    query per line) where the two processes' work comes out about equal, the judgments'
    ``judgments_bytes`` counted (``READ_HERE_LABELS_PER_RUN_BYTE``), and not at all when they outweigh
    it. Any part the fast readers decline, or a query found in both parts, sends the whole
    file to the one-piece reader, so results and error messages (file, line) are exactly
    ``load_run_prefixes``'s.

    With ``score_part``, each process hands the heads it reads to it, an iterator of blocks
    (a ``RunScorer`` with the judgments already read), and only what it returns crosses the
    pipe: ``result`` gives the list of the parts' values (one when the file was read in one
    piece), each of which names its part's queries in ``seen_in_run``. At 7,000 queries x
    1,000 scored at k=1,000 the heads are 7 million keys; sending half of them took longer
    than scoring them."""

    def __init__(self, url: str, fmt: str | None, depth: int, judgments_bytes: int = 0,
                 score_part: Callable[[Iterator[RunHeads]], Any] | None = None,
                 digest: Forked | None = None) -> None:
        self._args = (url, fmt, depth)
        self._score_part = score_part
        self._digest = digest  # the file's sha256, computed elsewhere: the parts are not hashed
        self._data: bytes | None = None
        self._cut = None
        self._kind = "trec"
        size = local_size(url) if url != "-" and fmt in (None, "trec", "jsonl") and is_local(url) else 0
        if size >= HALVING_MIN_BYTES:
            kind = _run_kind(url, fmt)
            share = 0.5 if kind == "trec" else _jsonl_share(size, judgments_bytes)
            if share is not None:  # else the child reads the whole file: this one never needs it
                data = map_file(url)  # 62 MB took 0.046 s to read here, before the fork
                cut = _query_cut(data) if kind == "trec" else _line_cut(data, share)
                if cut is not None:
                    self._data, self._cut, self._kind = data, cut, kind
                    self._child = start(_first_half, data, cut, depth, kind, score_part, digest is not None)
                    return
        self._child = start(self._whole)

    def _whole(self) -> tuple[Any, str]:
        heads, sha = load_run_prefixes(*self._args)
        return (heads if self._score_part is None else [self._score_part(iter([heads]))]), sha

    def cancel(self) -> None:
        self._child.cancel()
        if self._digest is not None:
            self._digest.cancel()

    def result(self, meanwhile: Callable[[], Any] | None = None) -> tuple[Any, str]:
        """The run's heads (with ``score_part``: the parts' values) and sha256. ``meanwhile``
        is called once this process has parsed its part, before it waits for the child's."""
        second = None
        if self._data is not None:
            args = (self._data, self._cut, len(self._data), self._args[2], self._kind)
            second = _prefixes(*args) if self._score_part is None else _scored_part(*args, self._score_part)
        if meanwhile is not None:
            meanwhile()
        if self._data is None:
            if self._digest is not None:
                self._digest.cancel()  # the one-piece reader hashes the file itself
            return self._child.result()
        first, sha = self._child.result()
        if self._digest is not None:
            sha = self._digest.result()
        if self._score_part is not None:
            if (first is None or second is None or not (first.seen_in_run or second.seen_in_run)
                    or not first.seen_in_run.isdisjoint(second.seen_in_run)):
                return self._whole()
            return [first, second], sha
        if (first is None or second is None or not (len(first) or len(second))
                or not set(first.query_ids).isdisjoint(second.query_ids)):
            return load_run_prefixes(*self._args)
        first.extend(second)
        return first, sha


class ScoringInputs(NamedTuple):
    """What ``score`` reads: the labels checked and grouped, the run cut to its prefixes,
    and the sha256 of each file."""

    validation: ValidationResult
    qrels: Qrels
    judgments_sha: str
    from_rows: Any
    """What ``on_rows`` gave for every label row, when given; else None."""
    run: Any
    """The run cut to its prefixes (``RunHeads``); with ``score_heads``, the list of what it
    gave for the run's parts."""
    run_sha: str
    spent: Any = None
    """What reading accumulated and no longer needs (the validator, with every label's query
    and target in sets): a caller that ends with its process may keep it rather than free it
    object by object, 0.1 s at 500,000 labels."""


def _tail_then_run(path: str, source: str, cut: int, size: int, run: str, run_fmt: str | None,
                   depth: int) -> tuple[Validator, Qrels, str, RunHeads, str]:  # runs forked
    qrels = Qrels()
    validator = Validator(qrels)
    digest, lines = local_sha256(path, cut)
    feed(validator, path, source, cut, size, lines + 1)
    return (validator, qrels, digest, *load_run_prefixes(run, run_fmt, depth))


def _labels_cut(judgments: str, fmt: str | None, run: str, run_fmt: str | None,
                extra: int = 0) -> tuple[str, int, int] | None:
    """Where a judgments file is cut so that a forked child reads its tail and then the whole
    run while this process reads its head and then does work weighing ``extra`` bytes of
    judgments: (path, cut, size), when the file is local JSONL of at least
    ``LABELS_SPLIT_MIN_BYTES`` and the run is not cut itself (``RunReader``)."""
    if judgments == "-" or not is_local(judgments) or fmt not in (None, "jsonl") or not can_fork():
        return None
    size = local_size(judgments)
    if size < LABELS_SPLIT_MIN_BYTES:
        return None
    path = local_path(judgments)
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if fmt is None and qrels_format.detect_labels_format(head.decode("utf-8", "replace"), judgments) != "jsonl":
        return None
    run_size = local_size(run) if run != "-" and run_fmt in (None, "jsonl", "trec") and is_local(run) else 0
    if run_size >= HALVING_MIN_BYTES:
        if _run_kind(run, run_fmt) == "trec" or _jsonl_share(run_size, size + extra) is not None:
            return None  # RunReader cuts the run: this process already reads part of it
    # The head's labels and the extra work against the tail's, the whole run (each weighed
    # per byte) and the child's fixed work.
    share = min(0.95, max(0.05, 0.5 + (run_size / LABELS_PER_RUN_BYTE + CHILD_LABEL_BYTES - extra) / (2 * size)))
    with open(path, "rb") as handle:
        handle.seek(int(size * share))
        rest = handle.read(1 << 20)
    newline = rest.find(b"\n")
    cut = int(size * share) + newline + 1 if newline >= 0 else 0
    return (path, cut, size) if 0 < cut < size else None


#: Below this the judgments are read by one process (and the run by another).
LABELS_SPLIT_MIN_BYTES = 2 << 20


#: ``read_scoring_inputs`` reads the judgments first, and each process scores the part of the
#: run it read (``RunReader``'s ``score_part``), when the run's heads are expected to hold at
#: least this many keys per label: otherwise the heads cross the pipe and are scored here.
#: Reading the judgments before the fork costs their overlap with the run's reading; keys
#: that never cross save their pickling, unpickling and freeing. Interleaved medians of 7 on
#: the bench's files, scored here against where read: 2 keys per label (k=10) 0.297 s
#: against 0.344 s at 10k x 100, 0.400 against 0.437 s at 7k x 1,000; 6 (k=30) 0.366 against
#: 0.364 s and 0.448 against 0.449 s; 20 (k=100) 0.539 against 0.418 s, 0.551 against
#: 0.491 s, and 4.52 against 3.06 s at 100k x 100 (3 each). 200 (7k x 1,000 at k=1,000):
#: 1.63-1.70 against 0.85-0.86 s (two single runs each).
GRADED_KEYS_PER_LABEL = 8

#: How much of a file ``_head_keys`` and ``_labels_estimate`` look at: the check runs before
#: any reading starts (with 1 MB it took 4-5 ms of a 0.25 s score; with this, under 1 ms).
_SAMPLE_BYTES = 1 << 18


def _sample(path: str, size: int = _SAMPLE_BYTES) -> bytes:
    """The whole lines in the first ``size`` bytes of a file (all of a smaller one; the first
    line, however long, when it is longer)."""
    with open(path, "rb") as handle:
        head = handle.read(size)
        if len(head) == size:
            end = head.rfind(b"\n") + 1
            head = head[:end] if end else head + handle.readline()
    return head


def _head_keys(path: str, kind: str, size: int, depth: int) -> float:
    """About how many keys a local run's heads at ``depth`` hold, from its first lines: run
    JSONL's keys counted by their quotes (six a line, two a key), a TREC run's lines by query."""
    head = _sample(path, _SAMPLE_BYTES if kind == "jsonl" else _SAMPLE_BYTES // 4)  # TREC: short lines
    lines = head.count(b"\n") or 1
    if kind == "jsonl":
        per_line = max(0.0, (head.count(b'"') / lines - 6) / 2)
        kept = lines * min(depth, per_line)
    else:  # each query's lines, as many as the sample holds: the first column, counted
        counts = Counter(line.split(None, 1)[0] for line in head.splitlines() if line.strip())
        kept = sum(min(depth, count) for count in counts.values())
    return kept * size / max(len(head), 1)


def _labels_estimate(path: str, size: int) -> float:
    """About how many labels a local judgments file holds (a line each, in every format)."""
    head = _sample(path)
    return head.count(b"\n") * size / len(head) if head else 0.0


def _graded(judgments: str, run: str, run_fmt: str | None, depth: int) -> bool:
    """Whether ``read_scoring_inputs`` scores the run's parts where they are read: a local
    run large enough to be cut (``RunReader``), local judgments, and heads expected to hold
    ``GRADED_KEYS_PER_LABEL`` keys per label or more."""
    if not can_fork() or run == "-" or judgments == "-" or not (is_local(run) and is_local(judgments)):
        return False
    if run_fmt not in (None, "jsonl", "trec"):
        return False
    run_size, judgments_size = local_size(run), local_size(judgments)
    if run_size < HALVING_MIN_BYTES or not judgments_size:
        return False
    keys = _head_keys(local_path(run), _run_kind(run, run_fmt), run_size, depth)
    return keys >= GRADED_KEYS_PER_LABEL * max(1.0, _labels_estimate(local_path(judgments), judgments_size))


def read_scoring_inputs(judgments: str, fmt: str | None, run: str, run_fmt: str | None, depth: int,
                        *, on_rows: Callable[[list[dict[str, Any]]], Any] | None = None,
                        meanwhile: Callable[[], Any] | None = None,
                        meanwhile_bytes: int = MEANWHILE_LABEL_BYTES,
                        score_heads: Callable[[Qrels, Iterator[RunHeads]], Any] | None = None) -> ScoringInputs:
    """Read, check and group the judgments and read the run, on both cores.

    A forked child reads the run while this process reads the judgments. When the
    judgments outweigh the run (and are local JSONL, and their rows need not be kept), the
    child first reads their tail, so both finish together: its validator is absorbed (the
    tail is re-fed here when the two parts interact, as ``validate_url`` does) and its
    grouping merged, which gives exactly the one-pass result. Errors keep their order: the
    head's, then the tail's, then the run's. ``on_rows`` (drift counts, for ``--corpus``)
    gets every row while the run is still being read; the judgments are then read here.
    ``meanwhile()`` is called once this process has read its share, while the child may
    still be reading: ``score`` imports the scoring modules there (and numpy and scipy when
    it computes intervals: 0.05 s and more that came before any reading, at 10k x 100), and
    takes fewer labels here to pay for it, as many as ``meanwhile_bytes`` of judgments would
    take to read.

    ``score_heads(qrels, blocks)`` (a ``RunScorer`` fed the blocks of heads), when given, is
    applied to the run's heads, and ``run`` is then the list of its values for the run's
    parts, whose per-query values add up (a query is in one part; every other part scores
    it 0). When the heads
    would be large against the labels (``_graded``: deep cutoffs), the judgments are read
    first and the run, cut in two, is scored part by part in the process that read it, so
    its keys never cross the pipe.
    """
    source = source_name(judgments)
    extra = meanwhile_bytes if meanwhile is not None else 0
    graded = score_heads is not None and _graded(judgments, run, run_fmt, depth)
    if graded:
        return _read_graded(judgments, fmt, run, run_fmt, depth, on_rows, meanwhile, extra, score_heads)
    cut = None if on_rows is not None else _labels_cut(judgments, fmt, run, run_fmt, extra)
    if cut is None:
        run_reader = RunReader(run, run_fmt, depth, judgments_bytes=local_size(judgments) + extra)
        try:
            validator, qrels, hashed, found = _labels_here(judgments, fmt, on_rows)
        except BaseException:
            run_reader.cancel()
            raise
        prefixes, run_sha = run_reader.result(meanwhile)
        digest = hashed.hexdigest()
    else:
        path, at, size = cut
        child = start(_tail_then_run, path, source, at, size, run, run_fmt, depth)
        validator, qrels, digest, prefixes, run_sha = _labels_split(path, source, at, size, child, meanwhile)
        found = None
    if score_heads is not None:
        prefixes = [score_heads(qrels, iter([prefixes]))]
    return ScoringInputs(validator.result(), qrels, digest, found, prefixes, run_sha, validator)


def _labels_here(judgments: str, fmt: str | None, on_rows: Callable[[list[dict[str, Any]]], Any] | None
                 ) -> tuple[Validator, Qrels, Any, Any]:
    """The labels read, checked and grouped by this process; an object whose ``hexdigest()``
    is the file's sha256; what ``on_rows`` gave for every row (None without it)."""
    blocks, hashed = iter_label_blocks(judgments, fmt)
    qrels, kept = Qrels(), []
    validator = Validator(qrels)
    for block in blocks:
        validator.add_many(block)
        if on_rows is not None:
            kept.extend(block)
    return validator, qrels, hashed, (on_rows(kept) if on_rows is not None else None)


def _labels_split(path: str, source: str, at: int, size: int, child: Forked,
                  meanwhile: Callable[[], Any] | None) -> tuple[Any, ...]:
    """The labels read by this process up to ``at`` and by ``child`` (``_tail_then_run``)
    from there, as one pass would have read them: the child's validator absorbed and its
    grouping merged, or its labels re-fed here when the two halves interact. ``meanwhile()``
    once this process has read its half. The validator, the grouping, and what the child
    returned after them (the file's sha256, the run's heads and sha256)."""
    qrels = Qrels()
    validator = Validator(qrels)
    try:
        feed(validator, path, source, 0, at, 1)
        if meanwhile is not None:
            meanwhile()
    except BaseException:
        child.cancel()
        raise
    tail, tail_qrels, *rest = child.result()
    if validator.absorb(tail):
        merge_qrels(qrels, tail_qrels)
    else:
        feed(validator, path, source, at, size, count_lines(path, at) + 1)
    if validator.labels == 0:
        for _ in iter_judgment_blocks(iter_blocks(path), source):  # only blank lines: worded here
            pass
    return (validator, qrels, *rest)


def _read_graded(judgments: str, fmt: str | None, run: str, run_fmt: str | None, depth: int,
                 on_rows: Callable[[list[dict[str, Any]]], Any] | None, meanwhile: Callable[[], Any] | None,
                 extra: int, score_heads: Callable[[Qrels, Iterator[RunHeads]], Any]) -> ScoringInputs:
    """``read_scoring_inputs`` when each process scores the part of the run it reads: the
    judgments are read here first while another process hashes the run; then the run is cut
    in two and each part scored where it is read (``RunReader``'s ``score_part``).

    Reading the judgments on both cores first (a child reading their tail, as ``_labels_split``
    does) made this no faster: at 100k x 100 and k = 100 the labels took 0.89 s instead of
    about 1.2 s, but each process then scored its half of the run in 1.29-1.40 s instead of
    1.15-1.21 s, 2.87 s against 2.80 s in all (interleaved medians of 3)."""
    digest = start(_file_sha256, local_path(run))
    try:
        validator, qrels, hashed, found = _labels_here(judgments, fmt, on_rows)
    except BaseException:
        digest.cancel()
        raise
    run_reader = RunReader(run, run_fmt, depth, judgments_bytes=extra,
                           score_part=lambda blocks: score_heads(qrels, blocks), digest=digest)
    parts, run_sha = run_reader.result(meanwhile)
    return ScoringInputs(validator.result(), qrels, hashed.hexdigest(), found, parts, run_sha, validator)


def load_baseline(url: str) -> Report:
    """A previous report, for delta gates. Malformed is an input error (exit 2), not a crash."""
    from pydantic import ValidationError
    from pydantic_core import from_json

    from goldkeeper.models.report import Report

    source = source_name(url)
    data = read_bytes(url)
    try:
        payload = from_json(data, allow_inf_nan=False)
    except ValueError as error:
        raise InputError(source, f"not valid JSON ({error})", field="baseline", found="the file") from None
    if not isinstance(payload, dict):
        raise InputError(source, "a baseline is a report object", field="baseline", found=type(payload).__name__)
    try:
        return Report.model_validate(payload)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "report"
        raise InputError(source, f"not a goldkeeper/retrieval-eval report ({first['msg'].lower()})",
                         field=where, found=repr(first.get("input"))[:60]) from None
