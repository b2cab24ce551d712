"""Read scoring inputs by URL, in whatever format they come, hashing the bytes as read.

One reader per input, shared by the CLI and the flows: ``read_labels`` for judgments
(JSONL, TREC qrels, BEIR TSV), ``read_run_heads`` for runs (JSONL, TREC). Both stream a block
at a time, so what a caller keeps bounds the memory, not the file's size: ``score`` hands each
block of a run's heads to its scorer and lets the keys go. Reports carry the sha256 of every
input, so a number can be traced to the exact files it was computed from; hashing while
reading costs one pass over bytes already in memory.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from goldkeeper.core import qrels as qrels_format
from goldkeeper.core.grouped import Qrels, RunHeads, build_qrels, pack_run
from goldkeeper.core.jsonl import keys_in_text, nests_deeply
from goldkeeper.core.runs import iter_run
from goldkeeper.core.scoring import QueryValues, RunScorer
from goldkeeper.core.validation import Validator
from goldkeeper.errors import InputError, UsageError
from goldkeeper.io import parquet
from goldkeeper.io.ahead import ReadAhead
from goldkeeper.io.fastjson import Refused, judgment_blocks, run_lines
from goldkeeper.io.files import decode_utf8, iter_blocks, iter_lines, read_bytes, sha256, source_name, uncompressed_name

if TYPE_CHECKING:
    from goldkeeper.core.validation import ValidationResult
    from goldkeeper.models.judgment import Judgment
    from goldkeeper.models.report import Report
    from goldkeeper.models.run import RunEntry


__all__ = [
    "Hashed",
    "ScoringInputs",
    "load_baseline",
    "load_label_rows",
    "load_run",
    "load_run_prefixes",
    "parse_labels",
    "parse_run_data",
    "read_labels",
    "read_report",
    "read_run_heads",
    "read_scoring_inputs",
    "run_kind",
    "validate_url",
    "write_report",
]

#: A run is read, and its heads scored, this many bytes at a time (whole lines): a process
#: then holds one block's keys, not the run's (spec/scaling.md has the measured peaks).
RUN_BLOCK_BYTES = 1 << 20


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


class _Digest:
    """A sha256 already known, with ``Hashed``'s interface."""

    def __init__(self, data: bytes) -> None:
        self._digest = sha256(data).hexdigest()

    def hexdigest(self) -> str:
        return self._digest


def _head(url: str) -> bytes:
    for block in iter_blocks(url, size=4096):
        return block[:4096]
    return b""


def read_labels(url: str, fmt: str | None = None) -> tuple[Iterator[list[dict[str, Any]]], Any]:
    """Checked label rows a block at a time, from judgments JSONL (streamed: memory holds one
    block), TREC qrels or BEIR TSV; and an object whose ``hexdigest()`` is the file's sha256
    once the blocks are consumed. Standard input is read once, so guessing its format loses
    no line."""
    source = source_name(url)
    if fmt not in (None, "jsonl", "json", "trec", "beir", "gold", "parquet"):
        raise UsageError(f"unknown judgments format '{fmt}', expected jsonl, json, trec, beir, gold or parquet")
    if fmt == "parquet" or (fmt is None and parquet.is_parquet(url)):
        data = read_bytes(url) if url == "-" else None
        return parquet.judgment_blocks(url, data), parquet.FileDigest(url, data)
    if url != "-":
        kind = fmt or qrels_format.detect_labels_format(_head(url).decode("utf-8", "replace"), uncompressed_name(url))
        if kind == "jsonl":
            hashed = Hashed(iter_blocks(url))
            return judgment_blocks(hashed, source), hashed
    data = read_bytes(url)
    kind = fmt or qrels_format.detect_labels_format(data[:4096].decode("utf-8", "replace"), uncompressed_name(url))
    if kind == "jsonl":
        blocks: Iterator[list[dict[str, Any]]] = judgment_blocks(_whole_lines(data), source)
    else:
        blocks = iter([[{**j.__dict__, **(j.__pydantic_extra__ or {})} for j in parse_labels(data, source, kind)]])
    return blocks, _Digest(data)


def parse_labels(data: bytes, source: str, kind: str, *, as_chunk_ids: bool = False) -> list[Judgment]:
    """Judgments from a whole file's bytes in a known format (``jsonl``, ``json``, ``trec``,
    ``beir``, ``parquet``); ``as_chunk_ids`` reads a qrels doc column as chunk ids."""
    from goldkeeper.core.judgments import parse_judgments
    from goldkeeper.core.nested import parse_nested_qrels
    from goldkeeper.models.judgment import Judgment

    if kind == "parquet" or data.startswith(parquet.MAGIC):
        if as_chunk_ids:
            raise UsageError("--as-chunk-ids applies to qrels input, not judgments Parquet")
        return [Judgment.model_construct(**row) for block in parquet.judgment_blocks(source, data) for row in block]

    if kind == "jsonl":
        if as_chunk_ids:
            raise UsageError("--as-chunk-ids applies to qrels input, not judgments JSONL")
        return parse_judgments(data, source)
    if kind == "json":
        return parse_nested_qrels(data, source, as_chunk_ids=as_chunk_ids)
    if kind == "gold":
        return parse_gold_data(data, source)[0]
    parse = qrels_format.parse_trec_qrels if kind == "trec" else qrels_format.parse_beir_tsv
    return parse(decode_utf8(data, source), source, as_chunk_ids=as_chunk_ids)


def parse_gold_data(data: bytes, source: str) -> tuple[list[Judgment], int]:
    """A rag-eval-gate gold set's judgments, and how many query ids were derived."""
    from goldkeeper.core.gold import parse_gold
    from goldkeeper.core.jsonl import split_lines

    return parse_gold(split_lines(data), source)


def load_label_rows(url: str, fmt: str | None = None, *, queries: str | None = None) -> tuple[list[dict[str, Any]], str]:
    """Checked label rows from judgments JSONL, TREC qrels, BEIR TSV or a gold set, and the
    sha256; with ``queries`` (a queries JSONL), each row gets its query's text from it."""
    blocks, digest = read_labels(url, fmt)
    rows = [row for block in blocks for row in block]
    if queries is not None:
        rows = with_queries(rows, queries)
    return rows, digest.hexdigest()


def with_queries(rows: Iterable[dict[str, Any]], queries: str) -> list[dict[str, Any]]:
    """Label rows with their query texts from a queries file (BEIR's queries.jsonl or
    query_id/query lines)."""
    from goldkeeper.core.gold import attach_queries, parse_queries

    source = source_name(queries)
    return list(attach_queries(rows, parse_queries(iter_lines(queries), source), source))


def validate_url(url: str) -> ValidationResult:
    """Parse, type-check and validate a judgments file; ``InputError`` on the first bad line."""
    validator = Validator()
    blocks = parquet.judgment_blocks(url) if parquet.is_parquet(url) else judgment_blocks(iter_blocks(url),
                                                                                           source_name(url))
    for rows in blocks:
        validator.add_many(rows)
    return validator.result()


def judgment_rows_of(data: bytes, source: str) -> list[dict[str, Any]]:
    """The checked label rows of a judgments JSONL file's bytes (drift's reader, no models)."""
    return [row for block in judgment_blocks(_whole_lines(data), source) for row in block]


def _whole_lines(data: bytes, size: int = 64 << 10) -> Iterator[bytes]:
    """Whole lines, about ``size`` bytes at a time."""
    start, total = 0, len(data)
    while start < total:
        end = min(start + size, total)
        if end < total:
            newline = data.find(b"\n", end)
            end = total if newline < 0 else newline + 1
        yield data[start:end]
        start = end


def run_kind(url: str, fmt: str | None, data: bytes | None) -> str:
    """A run's format: as given, else by its first non-blank line: json when that opens a
    nested object, jsonl when it opens any other object (or there is none), trec otherwise."""
    from goldkeeper.core.nested import looks_nested

    if fmt not in (None, "jsonl", "json", "trec", "parquet"):
        raise UsageError(f"unknown run format '{fmt}', expected jsonl, json, trec or parquet")
    if fmt is not None:
        return fmt
    if (data[:4] == parquet.MAGIC) if data is not None else parquet.is_parquet(url):
        return "parquet"
    blocks = iter_blocks(url, size=1 << 16) if data is None else iter([data[:1 << 16]])
    for block in blocks:
        for line in block.splitlines():
            if line.strip():
                # (a byte order mark before the brace: JSONL, whose reader says what is wrong)
                text = line.lstrip().removeprefix(b"\xef\xbb\xbf")
                if not text.startswith(b"{"):
                    return "trec"
                return "json" if looks_nested(text.decode("utf-8", "replace")) else "jsonl"
    return "jsonl"


def parse_run_data(data: bytes, source: str, kind: str) -> list[RunEntry]:
    """Run entries from a whole file's bytes in a known format (``jsonl``, ``json``, ``trec``)."""
    from goldkeeper.core.nested import parse_nested_run
    from goldkeeper.core.runs import parse_run

    if kind == "jsonl":
        return parse_run(data, source)
    if kind == "json":
        return parse_nested_run(data, source)
    if kind == "parquet":
        return list(parquet.run_entries(source, data))
    return qrels_format.parse_trec_run(decode_utf8(data, source), source)


def load_run(url: str, fmt: str | None = None) -> tuple[Iterator[RunEntry], Any]:
    """Run entries from run JSONL (streamed) or a TREC run file (grouped, then sorted), and
    an object whose ``hexdigest()`` is the file's sha256 once the entries are consumed."""
    source = source_name(url)
    data = read_bytes(url) if url == "-" else None
    kind = run_kind(url, fmt, data)
    if kind == "jsonl":
        lines = Hashed(iter_blocks(url) if data is None else iter([data]))
        return iter_run(_split(lines), source), lines
    if kind == "parquet":
        return parquet.run_entries(url, data), parquet.FileDigest(url, data)
    return _whole_run(read_bytes(url) if data is None else data, source, kind)


def _whole_run(data: bytes, source: str, kind: str) -> tuple[Iterator[RunEntry], Any]:
    # A TREC or nested run is read whole (it is grouped and sorted per query) and hashed in one call.
    return iter(parse_run_data(data, source, kind)), _Digest(data)


def _split(blocks: Iterable[bytes]) -> Iterator[bytes]:
    for block in blocks:
        yield from io.BytesIO(block)


def read_run_heads(url: str, fmt: str | None, depth: int) -> tuple[Iterator[RunHeads], Any]:
    """A run's entries cut to what scoring at cutoffs up to ``depth`` reads (``RunHeads``), a
    block of about ``RUN_BLOCK_BYTES`` at a time, and an object whose ``hexdigest()`` is the
    file's sha256 once the blocks are consumed. Entries, refusals and their messages are
    ``load_run``'s."""
    source = source_name(url)
    data = read_bytes(url) if url == "-" else None
    kind = run_kind(url, fmt, data)
    if kind == "jsonl":
        hashed = Hashed(iter_blocks(url, RUN_BLOCK_BYTES) if data is None else _whole_lines(data, RUN_BLOCK_BYTES))
        return _jsonl_heads(hashed, source, depth), hashed
    if kind == "parquet":
        return parquet.run_heads(url, depth, data), parquet.FileDigest(url, data)
    entries, digest = _whole_run(read_bytes(url) if data is None else data, source, kind)
    return iter([pack_run(entries, depth)]), digest


def _jsonl_heads(blocks: Iterable[bytes], source: str, depth: int) -> Iterator[RunHeads]:
    """Each block's heads: msgspec reads the common lines (``fastjson.run_lines``); a block
    with any other line, or naming a query an earlier block named, is read by core's reader,
    which keeps extras and words every refusal with its line."""
    seen: dict[str, int] = {}
    line = 1
    for block in blocks:
        lines = block.count(b"\n") + (1 if block and not block.endswith(b"\n") else 0)
        heads = _common_heads(block, depth)
        if heads is None or any(query_id in seen for query_id in heads.query_ids):
            heads = pack_run(iter_run(io.BytesIO(block), source, first_line=line, seen=seen), depth)
        else:
            seen.update(zip(heads.query_ids, range(line, line + lines)))
        line += lines
        yield heads


def _common_heads(block: bytes, depth: int) -> RunHeads | None:
    """The heads of a block of run JSONL when msgspec reads every line as a common one and
    no query repeats in it, else None."""
    if nests_deeply(block, 2):
        return None
    try:
        heads = pack_run(run_lines(block), depth)
    except Refused:
        return None
    queries = len(heads)
    # What a decoder cannot see: a key named twice in a line, a query on two lines.
    if keys_in_text(block) == 2 * queries and len(set(heads.query_ids)) == queries:
        return heads
    return None


def load_run_prefixes(url: str, fmt: str | None, depth: int) -> tuple[RunHeads, str]:
    """The whole run's heads at ``depth`` (``read_run_heads`` joined), and the sha256."""
    blocks, digest = read_run_heads(url, fmt, depth)
    heads = RunHeads(depth)
    for block in blocks:
        heads.extend(block)
    return heads, digest.hexdigest()


class ScoringInputs(NamedTuple):
    """What ``score`` reads: the labels checked and grouped, the run's per-query values, and
    the sha256 of each file."""

    validation: ValidationResult
    qrels: Qrels
    judgments_sha: str
    from_rows: Any
    """What ``on_rows`` gave for every label row, when given; else None."""
    run: QueryValues
    run_sha: str
    spans: dict[str, Any] | None = None
    """How the span labels resolved against the snapshot (``Resolution.summary``), when any."""


def read_scoring_inputs(judgments: str, fmt: str | None, run: str, run_fmt: str | None, ks: list[int],
                        threshold: int, *, on_rows: Callable[[list[dict[str, Any]]], Any] | None = None,
                        resolve: Callable[[list[dict[str, Any]]], Any] | None = None,
                        check_keys: Callable[[list[str]], None] | None = None) -> ScoringInputs:
    """Read, check and group the judgments, then read the run and score it at ``ks`` a block
    at a time, each block's keys let go once scored.

    ``on_rows`` (drift counts, for ``--corpus``) gets every label row; without it, and without
    span labels, no row is kept. ``resolve`` (``io.snapshots.resolve_spans_at`` of the run's
    snapshot) resolves span labels to the chunks the run is scored on (``core.spans``);
    without it, a span label scores as its chunk label, and one without a chunk_id is refused.
    ``check_keys`` (``io.snapshots.check_run_over``) gets the keys of the run's first block that
    ranks any, before it is scored. A Parquet run is read on a thread from the start
    (``io.ahead``), while the labels are read and checked; a refusal of the labels still
    comes before one of the run."""
    run_sha: list[str] = []
    heads = _run_then_sha(run, run_fmt, max(ks), run_sha)
    if run_fmt != "parquet" and (run_fmt is not None or not parquet.is_parquet(run)):
        # A text run's decoding holds the interpreter's lock: on a thread it only contends
        # for it, and is slower than here (bench/RESULTS.md).
        return _score_inputs(judgments, fmt, heads, run_sha, ks, threshold, on_rows, resolve, check_keys)
    with ReadAhead(heads, RUN_AHEAD_KEYS, _keys_in) as ahead:
        return _score_inputs(judgments, fmt, ahead, run_sha, ks, threshold, on_rows, resolve, check_keys)


#: How many keys of the run's heads ``score`` holds read ahead of the scoring (a key is about
#: 100 bytes as a Python string in a list: some 400 MB).
RUN_AHEAD_KEYS = 4_000_000


def _keys_in(heads: RunHeads) -> int:
    return len(heads.keys) + len(heads.query_ids)


def _run_then_sha(url: str, fmt: str | None, depth: int, sha: list[str]) -> Iterator[RunHeads]:
    """``read_run_heads``, then the file's sha256 put in ``sha``: all of it on the thread that
    reads ahead, so that a refusal of the run comes when its heads are asked for."""
    heads, hashed = read_run_heads(url, fmt, depth)
    yield from heads
    sha.append(hashed.hexdigest())


def _score_inputs(judgments: str, fmt: str | None, heads: Iterable[RunHeads], run_sha: list[str],
                  ks: list[int], threshold: int, on_rows: Callable[[list[dict[str, Any]]], Any] | None,
                  resolve: Callable[[list[dict[str, Any]]], Any] | None,
                  check_keys: Callable[[list[str]], None] | None) -> ScoringInputs:
    blocks, hashed = read_labels(judgments, fmt)
    qrels, kept = Qrels(), []
    validator = Validator(qrels)
    spanned = False
    for block in blocks:
        validator.add_many(block)
        has_spans = any("span" in row for row in block)
        spanned = spanned or has_spans
        if on_rows is not None or (resolve is not None and spanned):
            kept.extend(block)
        if has_spans and resolve is None:
            unanchored(block, source_name(judgments))
    found = on_rows(kept) if on_rows is not None else None
    resolved = None
    if spanned and resolve is not None:
        resolution = resolve(kept)
        qrels, resolved = build_qrels(resolution.rows), resolution.summary()
    scorer = RunScorer(qrels, ks, threshold)
    for block in heads:
        if check_keys is not None and block.keys:
            check_keys(block.keys)
            check_keys = None
        scorer.add(block)
    return ScoringInputs(validator.result(), qrels, hashed.hexdigest(), found, scorer.result(), run_sha[0], resolved)


def unanchored(rows: Iterable[dict[str, Any]], source: str) -> None:
    """Refuse a span label with no chunk to score when no snapshot resolves it."""
    for row in rows:
        if row.get("span") is not None and row.get("chunk_id") is None:
            raise UsageError(f"{source}: query {row['query_id']}: a span label without a chunk_id is scored on the "
                             "chunks that hold its span (hint: give the snapshot the run was made over, --corpus)")


def read_report(url: str, check: bool = False) -> Any:
    """A report's document from its JSON or its Parquet form (``write_report``), whatever the
    name; anything but an object is refused, and with ``check`` anything but a report."""
    from pydantic_core import from_json

    source = source_name(url)
    data = read_bytes(url)
    if data.startswith(parquet.MAGIC):
        return parquet.report_of(url, data)
    try:
        payload = from_json(data, allow_inf_nan=False)
    except ValueError as error:
        raise InputError(source, f"not valid JSON ({error})", field="report", found="the file") from None
    if not isinstance(payload, dict):
        raise InputError(source, "a report is an object", field="report", found=type(payload).__name__)
    if check:
        _report_model(payload, source)
    return payload


def write_report(url: str, report: Any) -> None:
    """Write a report atomically: as Parquet when ``url`` ends ``.parquet`` (its per-query
    table, the rest in the schema's metadata), else as the JSON document."""
    from goldkeeper.io.files import report_bytes, write_bytes_atomic

    if url.endswith(".parquet"):
        parquet.write_report_parquet(url, report if isinstance(report, dict) else report.to_json_dict())
    else:
        write_bytes_atomic(url, report_bytes(report))


def load_baseline(url: str) -> Report:
    """A previous report (JSON or Parquet), for delta gates. Malformed is an input error
    (exit 2), not a crash."""
    return _report_model(read_report(url), source_name(url))


def _report_model(payload: dict[str, Any], source: str) -> Report:
    from pydantic import ValidationError

    from goldkeeper.models.report import Report

    try:
        return Report.model_validate(payload)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "report"
        raise InputError(source, f"not a goldkeeper/retrieval-eval report ({first['msg'].lower()})",
                         field=where, found=repr(first.get("input"))[:60]) from None
