"""Parquet forms of judgments, runs and snapshots (spec/formats.md, "Parquet"), through pyarrow
over fsspec (local files and S3 alike).

A Parquet file is told by its magic bytes (``PAR1``), whatever its name. Its rows are read a
batch at a time and checked by the very readers the JSON formats have, so the same rules hold;
a refusal names the file, the row (from 1) and the column: ``gold.parquet: row 12: column
relevance: must be ...``. A file pyarrow cannot read (truncated, not Parquet after all), or one
with two columns of one name, is refused whole.

Written files have a column per field: the fields every format knows typed (strings, 64-bit
integers, ``span`` a struct, a run's ``ranking`` a list of strings and ``scores`` of doubles),
any other field as its JSON text, listed in the schema's metadata
(``goldkeeper.json_columns``) so that reading gives the value back. A value that is absent is
null, and a null is read as absent: converting to Parquet and back gives the canonical JSON
that went in, byte for byte. A snapshot keeps its fingerprints in the schema's metadata.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from goldkeeper.errors import GoldkeeperError, InputError, UsageError, describe_value
from goldkeeper.io.files import open_read, open_write_atomic, source_name

__all__ = ["BATCH_ROWS", "MAGIC", "FileDigest", "ParquetCorpus", "at_row", "corpus_of", "is_parquet", "judgment_blocks", "parquet_metadata",
           "parquet_rows", "report_of", "run_entries", "run_heads", "write_parquet", "write_report_parquet"]

MAGIC = b"PAR1"
#: Rows written at a time, as a row group.
BATCH_ROWS = 65_536
#: Rows read at a time.
READ_ROWS = 16_384
_JSON_COLUMNS = b"goldkeeper.json_columns"
_FORMAT = b"goldkeeper.format"
_REPORT = b"goldkeeper.report"

_SPAN_FIELDS = (("start", "int64"), ("end", "int64"), ("exact", "string"), ("prefix", "string"),
                ("suffix", "string"), ("proposed_by", "string"))
#: The typed columns of each format; any other field is a JSON text column.
_TYPED = {
    "judgments": (("query_id", "string"), ("query", "string"), ("doc_uri", "string"), ("doc_revision", "string"),
                  ("chunk_id", "string"), ("text_sha", "string"), ("chunk_text", "string"), ("relevance", "int64"),
                  ("labeled_by", "string"), ("labeled_at", "string"), ("corpus_fingerprint", "string"),
                  ("stratum", "string"), ("prompt_sha", "string"), ("pooled_from", "string"), ("span", "span")),
    "run": (("query_id", "string"), ("ranking", "strings"), ("scores", "doubles")),
    "snapshot": (("chunk_id", "string"), ("doc_uri", "string"), ("doc_revision", "string"), ("ordinal", "int64"),
                 ("start_index", "int64"), ("text", "string"), ("text_sha", "string"), ("store_id", "string")),
}


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UsageError("Parquet needs pyarrow: pip install 'goldkeeper[parquet]'") from None
    return pyarrow


def _type(pa: Any, name: str) -> Any:
    if name == "span":
        return pa.struct([(field, _type(pa, kind)) for field, kind in _SPAN_FIELDS])
    return {"string": pa.string(), "int64": pa.int64(), "strings": pa.list_(pa.string()),
            "doubles": pa.list_(pa.float64())}[name]


def is_parquet(url: str) -> bool:
    """Whether ``url`` holds a Parquet file (its first four bytes); stdin is never one."""
    if url == "-":
        return False
    try:
        with open_read(url, decompress=False) as stream:
            return stream.read(4) == MAGIC
    except (OSError, ValueError, GoldkeeperError):  # the readers say what is wrong with it
        return False


def _open(url: str, stream: Any) -> Any:
    pa = _pyarrow()
    try:
        parquet = pa.parquet.ParquetFile(stream)
    except (pa.ArrowException, OSError) as error:
        raise InputError(source_name(url), f"is not a readable Parquet file ({str(error).splitlines()[0][:120]})",
                         hint="a truncated or damaged file: write it again") from None
    names = parquet.schema_arrow.names
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InputError(source_name(url), "has two columns of one name", field=f"column {twice[0]}",
                         found=f"{names.count(twice[0])} columns")
    return parquet


@contextmanager
def _stream(url: str, data: bytes | None) -> Iterator[Any]:
    """A seekable binary stream of the file (``data`` when its bytes were read already)."""
    if data is not None:
        yield io.BytesIO(data)
        return
    with open_read(url, decompress=False) as stream:
        yield stream if stream.seekable() else io.BytesIO(stream.read())


class FileDigest:
    """The sha256 of the bytes stored at ``url`` (read when asked), with ``Hashed``'s interface."""

    def __init__(self, url: str, data: bytes | None = None) -> None:
        self.url, self.data = url, data

    def hexdigest(self) -> str:
        if self.data is not None:
            return hashlib.sha256(self.data).hexdigest()
        digest = hashlib.sha256()
        with open_read(self.url, decompress=False) as stream:
            for block in iter(lambda: stream.read(1 << 22), b""):
                digest.update(block)
        return digest.hexdigest()


def parquet_metadata(url: str, data: bytes | None = None) -> dict[str, str]:
    """The schema metadata goldkeeper wrote (``goldkeeper.*`` keys, without the prefix), as text."""
    with _stream(url, data) as stream:
        meta = _open(url, stream).schema_arrow.metadata or {}
    return {key.decode().removeprefix("goldkeeper."): value.decode() for key, value in meta.items()
            if key.startswith(b"goldkeeper.")}


def _present(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _present(inner) for key, inner in value.items() if inner is not None}
    return value


def at_row(error: InputError, first: int = 0, unit: str = "row", part: str = "column") -> InputError:
    """A reader's refusal of a row (its ``line``, counted from ``first`` + 1) as a Parquet
    file's: the row and the column (a store's: its chunk and field)."""
    if error.line is None:
        return error
    field = f"{part} {error.field}" if error.field and error.field != "line" else None
    return InputError(error.source, error.problem, field=f"{unit} {first + error.line}" + (f": {field}" if field else ""),
                      found=error.found, hint=error.hint)


_RUN_COLUMN = re.compile(r"^(?:missing )?(query_id|ranking|scores)(\[[0-9]+\])? ?(.*)$")


def run_at_row(error: InputError, first: int = 0) -> InputError:
    """``at_row`` of the run reader's refusal, whose words name the field: the column said as
    such, and an earlier line of a repeated query said as its row."""
    if error.field is None and error.line is not None:
        problem, field = error.problem, None
        if problem.startswith("duplicate entry"):
            field, problem = "query_id", problem.replace("already on line", "already in row")
        elif (named := _RUN_COLUMN.match(problem)) is not None:
            field, problem = named.group(1) + (named.group(2) or ""), named.group(3) or "required"
        error = InputError(error.source, problem, line=error.line, field=field, found=error.found, hint=error.hint)
    return at_row(error, first)


def parquet_rows(url: str, data: bytes | None = None) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """The rows of the Parquet file at ``url``, a batch at a time, each batch with the number
    of the row before its first: nulls left out, JSON columns decoded. Nothing is checked
    here but the file itself: each format's reader checks the rows (``at_row`` words it)."""
    pa = _pyarrow()
    source = source_name(url)
    with _stream(url, data) as stream:
        parquet = _open(url, stream)
        meta = parquet.schema_arrow.metadata or {}
        coded = set(json.loads(meta.get(_JSON_COLUMNS, b"[]")))
        done = 0
        try:
            for batch in _batches(parquet):
                rows = batch.to_pylist()
                for offset, row in enumerate(rows, start=1):
                    for name in coded & row.keys():
                        if isinstance(row[name], str):
                            try:
                                row[name] = json.loads(row[name])
                            except ValueError:
                                raise InputError(source, "must hold JSON text (the file says it does)",
                                                 field=f"row {done + offset}: column {name}",
                                                 found=describe_value(row[name])) from None
                    rows[offset - 1] = _present(row)
                yield done, rows
                done += len(rows)
        except pa.ArrowException as error:
            raise InputError(source, f"is not a readable Parquet file past row {done} "
                                     f"({str(error).splitlines()[0][:120]})") from None


def write_parquet(url: str, kind: str, rows: Iterable[Mapping[str, Any]], metadata: Mapping[str, str] | None = None,
                  columns: list[str] | None = None) -> int:
    """Write ``rows`` (canonical rows of ``kind``: judgments, run or snapshot) as a Parquet file
    at ``url``, atomically, a row group at a time; how many rows. The columns are the typed
    fields of ``kind`` that any row has, then every other field any row has, as JSON text
    (the rows are held to find them); given ``columns``, those, and the rows stream."""
    from itertools import islice

    pa = _pyarrow()
    typed = dict(_TYPED[kind])
    if columns is None:
        rows = list(rows)
        names = list(dict.fromkeys(name for row in rows for name in row))
        columns = [name for name in typed if name in names] + [name for name in names if name not in typed]
    coded = [name for name in columns if name not in typed]
    fields_ = [pa.field(name, _type(pa, typed[name]) if name in typed else pa.string()) for name in columns]
    meta = {_FORMAT: kind.encode(), _JSON_COLUMNS: json.dumps(coded).encode(),
            **{f"goldkeeper.{key}".encode(): value.encode() for key, value in (metadata or {}).items()}}
    schema = pa.schema(fields_, metadata=meta)
    stream, count = iter(rows), 0
    with open_write_atomic(url) as sink:
        writer = pa.parquet.ParquetWriter(sink, schema, compression="zstd")
        while True:
            part = list(islice(stream, BATCH_ROWS))
            if not part and count:
                break
            values = {name: [row.get(name) for row in part] for name in columns}
            for name in coded:
                values[name] = [None if value is None else json.dumps(value, ensure_ascii=False)
                                for value in values[name]]
            writer.write_table(pa.table(values, schema=schema))
            count += len(part)
            if not part:
                break
        writer.close()
    return count


def write_report_parquet(url: str, document: Mapping[str, Any]) -> int:
    """Write a report document as Parquet at ``url``, atomically: its per-query table (a row
    per query in the report's order: ``query_id``, then a double column per metric, null
    where a query has no value) with the rest of the report as JSON in the schema's metadata
    (``goldkeeper.report``, ``per_query`` null in its place); how many rows."""
    pa = _pyarrow()
    per_query = document["per_query"]
    metrics = list(dict.fromkeys(metric for values in per_query.values() for metric in values))
    rest = json.dumps({**document, "per_query": None}, ensure_ascii=False, allow_nan=False)
    schema = pa.schema([pa.field("query_id", pa.string())] + [pa.field(m, pa.float64()) for m in metrics],
                       metadata={_FORMAT: b"report", _REPORT: rest.encode()})
    table = pa.table({"query_id": list(per_query),
                      **{m: [values.get(m) for values in per_query.values()] for m in metrics}}, schema=schema)
    with open_write_atomic(url) as sink:
        pa.parquet.write_table(table, sink, compression="zstd", row_group_size=BATCH_ROWS)
    return len(per_query)


def report_of(url: str, data: bytes | None = None) -> dict[str, Any]:
    """A Parquet report (``write_report_parquet``) as the report document it was written
    from; a table that is not one, or whose cells a report cannot hold, is refused with its
    row and column."""
    pa = _pyarrow()
    source = source_name(url)
    with _stream(url, data) as stream:
        parquet = _open(url, stream)
        meta = parquet.schema_arrow.metadata or {}
        if meta.get(_FORMAT) != b"report" or _REPORT not in meta:
            raise InputError(source, "is not a goldkeeper report: its schema has no goldkeeper.report metadata",
                             field="file", found=f"a {(meta.get(_FORMAT) or b'plain').decode()} table",
                             hint="write reports with score --report NAME.parquet")
        try:
            document = json.loads(meta[_REPORT])
        except ValueError:
            document = None
        if not isinstance(document, dict) or "per_query" not in document:
            raise InputError(source, "holds no report in its goldkeeper.report metadata", field="file",
                             found=describe_value(meta[_REPORT].decode("utf-8", "replace")))
        schema = parquet.schema_arrow
        if "query_id" not in schema.names or schema.field("query_id").type not in (pa.string(), pa.large_string()):
            found = str(schema.field("query_id").type) if "query_id" in schema.names else "no such column"
            raise InputError(source, "a report's query ids are a string column", field="column query_id", found=found)
        for field in schema:
            if field.name != "query_id" and not pa.types.is_floating(field.type) and not pa.types.is_integer(field.type):
                raise InputError(source, "a per-query metric column holds numbers", field=f"column {field.name}",
                                 found=str(field.type))
        per_query: dict[str, dict[str, float]] = {}
        done = 0
        try:
            for batch in _batches(parquet):
                _report_rows(source, batch.to_pylist(), done, per_query)
                done += batch.num_rows
        except pa.ArrowException as error:
            raise InputError(source, f"is not a readable Parquet file past row {done} "
                                     f"({str(error).splitlines()[0][:120]})") from None
    document["per_query"] = per_query
    return document


def _report_rows(source: str, rows: list[dict[str, Any]], done: int, per_query: dict[str, dict[str, float]]) -> None:
    for offset, row in enumerate(rows, start=1):
        where = f"row {done + offset}"
        query = row.pop("query_id")
        if query is None or query in per_query:
            raise InputError(source, "a query's row must name it once", field=f"{where}: column query_id",
                             found="null" if query is None else f"'{query}' again")
        for metric, value in row.items():
            if value is not None and not math.isfinite(value):
                raise InputError(source, "a metric's value must be a finite number", field=f"{where}: column {metric}",
                                 found=str(value))
        per_query[query] = {metric: float(value) for metric, value in row.items() if value is not None}


def judgment_blocks(url: str, data: bytes | None = None) -> Iterator[list[dict[str, Any]]]:
    """A Parquet judgments file's label rows a batch at a time, each checked as a JSONL line
    is (``core.judgments.check_row``)."""
    from goldkeeper.core.judgments import check_row

    source = source_name(url)
    found = False
    for done, rows in parquet_rows(url, data):
        try:
            yield [check_row(row, source, done + n) for n, row in enumerate(rows, start=1)]
        except InputError as error:
            raise at_row(error) from None
        found = found or bool(rows)
    if not found:
        raise InputError(source, "holds no row, so there is nothing to read", field="file", found="an empty table")


def run_entries(url: str, data: bytes | None = None) -> Iterator[Any]:
    """A Parquet run's entries (``RunEntry``), each row checked as a run JSONL line is."""
    from goldkeeper.core.runs import iter_run

    seen: dict[str, int] = {}
    for done, rows in parquet_rows(url, data):
        try:
            yield from iter_run([_run_line(row) for row in rows], source_name(url), first_line=done + 1, seen=seen)
        except InputError as error:
            raise run_at_row(error) from None


def _run_line(row: dict[str, Any]) -> str:
    """A run row as the JSON line the run reader reads; a score that is no finite number is
    given as its text, which the reader refuses (JSON has no NaN)."""
    scores = row.get("scores")
    if isinstance(scores, list) and any(isinstance(v, float) and not math.isfinite(v) for v in scores):
        row = {**row, "scores": [v if not isinstance(v, float) or math.isfinite(v) else str(v) for v in scores]}
    return json.dumps(row, ensure_ascii=False)


def corpus_of(url: str, data: bytes | None = None) -> Any:
    """A Parquet snapshot as a ``Corpus``: each row checked as a corpus.json chunk is, the
    fingerprints from the schema's metadata."""
    from goldkeeper.core.drift import Corpus, check_unique_ids, chunk_from_dict

    source = source_name(url)
    chunks = []
    for done, rows in parquet_rows(url, data):
        try:
            chunks += [chunk_from_dict(row, source, line=done + n) for n, row in enumerate(rows, start=1)]
        except InputError as error:
            raise at_row(error) from None
    check_unique_ids((chunk.chunk_id for chunk in chunks), source)
    meta = parquet_metadata(url, data)
    return Corpus(chunks, meta.get("corpus_fingerprint"), meta.get("chunker_fingerprint"))


class ParquetCorpus:
    """A Parquet snapshot, streamed: each pass reads it a batch of rows at a time, by column,
    so memory holds no chunk beyond the batch a pass is at (as a sharded snapshot's reader).
    A batch whose columns hold nothing the snapshot reader would refuse becomes chunks from its
    columns; any other is read row by row by that reader, which words the refusal. As with
    sharded snapshots, a repeated chunk id is not looked for (it would hold every id)."""

    _COLUMNS = ("chunk_id", "doc_uri", "ordinal", "text", "text_sha", "start_index")

    def __init__(self, url: str) -> None:
        self.url = url
        with _stream(url, None) as stream:
            parquet = _open(url, stream)
            self.count = parquet.metadata.num_rows
            names = parquet.schema_arrow.names
            sizes = [parquet.metadata.row_group(group).num_rows for group in range(parquet.num_row_groups)]
        #: The row before each row group's first (row numbers count from 1).
        self.group_starts = [sum(sizes[:group]) for group in range(len(sizes))]
        meta = parquet_metadata(url)
        self.corpus_fingerprint = meta.get("corpus_fingerprint")
        self.chunker_fingerprint = meta.get("chunker_fingerprint")
        self.columns = [name for name in self._COLUMNS if name in names]

    def __iter__(self) -> Iterator[Any]:
        return self.chunks_of(range(len(self.group_starts)))

    def chunks_of(self, groups: Iterable[int]) -> Iterator[Any]:
        """The chunks of row groups ``groups`` (indices, in the order given), read from the
        file alone: a partitioned drift's map task reads its own row groups this way."""
        pa = _pyarrow()
        import pyarrow.compute as pc

        from goldkeeper.core.drift import LiveChunk, chunk_from_dict

        source = source_name(self.url)
        with _stream(self.url, None) as stream:
            parquet = _open(self.url, stream)
            for group in groups:
                done = self.group_starts[group]
                for batch in parquet.iter_batches(batch_size=READ_ROWS, row_groups=[group], columns=self.columns):
                    columns = _chunk_columns(pa, pc, batch, len(self._COLUMNS))
                    if columns is not None:
                        yield from map(LiveChunk, *columns)
                    else:
                        for n, row in enumerate(batch.to_pylist(), start=1):
                            try:
                                yield chunk_from_dict(_present(row), source, line=done + n)
                            except InputError as error:
                                raise at_row(error) from None
                    done += batch.num_rows


def _chunk_columns(pa: Any, pc: Any, batch: Any, width: int) -> list[list[Any]] | None:
    """The LiveChunk fields of a batch as lists, column by column, when every value is one the
    snapshot reader takes as it is: ids non-empty strings, counts integers from 0, texts and
    hashes strings (an empty hash is none); else None."""
    out = []
    for name in ParquetCorpus._COLUMNS:
        if name not in batch.schema.names:
            out.append([None] * batch.num_rows)
            continue
        column = batch.column(name)
        if name in ("chunk_id", "doc_uri"):
            if not pa.types.is_string(column.type) or column.null_count or (
                    len(column) and pc.min(pc.binary_length(column)).as_py() == 0):
                return None
        elif name in ("ordinal", "start_index"):
            if not pa.types.is_integer(column.type) or (len(column) - column.null_count and
                                                        pc.min(column).as_py() < 0):
                return None
        elif not pa.types.is_string(column.type):
            return None
        values = column.to_pylist()
        if name == "text_sha":
            values = [value or None for value in values]
        out.append(values)
    return out if len(out) == width else None


def run_heads(url: str, depth: int, data: bytes | None = None, part: tuple[int, int] | None = None) -> Iterator[Any]:
    """A Parquet run's heads (``core.grouped.RunHeads``) a batch at a time, read by column: the
    query ids and each ranking's first ``depth`` keys (more where a key repeats among them),
    never the rest of the file's values as Python objects. A row the columns cannot give
    strictly (a null, a score that is not a finite number, a repeated query) is read by the
    run reader instead, which words its refusal. ``part`` (p, n): only the rows of queries in
    partition p of n (``core.drift.partition_of``), read by a partition's worker straight
    from the row groups; a row's number is still its row in the file."""
    pa = _pyarrow()
    import pyarrow.compute as pc

    from goldkeeper.core.grouped import RunHeads

    source = source_name(url)
    with _stream(url, data) as stream:
        parquet = _open(url, stream)
        names = parquet.schema_arrow.names
        for needed in ("query_id", "ranking"):
            if needed not in names:
                raise InputError(source, "a run has the columns query_id and ranking", field=f"column {needed}",
                                 found="no such column")
        extra = sorted(set(names) - {"query_id", "ranking", "scores"})
        if extra:
            raise InputError(source, "is not a column of a run (query_id, ranking, scores)", field=f"column {extra[0]}",
                             found="a column")
        done = 0
        seen: dict[str, int] = {}  # each query's row, for the refusal of a repeated one
        try:
            for batch in _batches(parquet):
                rows = range(done + 1, done + batch.num_rows + 1)
                done += batch.num_rows
                if part is not None:
                    batch, rows = _in_part(pa, batch, part, rows)
                heads = _heads_of(pa, pc, batch, depth, RunHeads, seen)
                if heads is None:
                    yield _checked_heads(url, batch, rows, depth, seen)
                else:
                    seen.update(zip(heads.query_ids, rows))
                    yield heads
        except pa.ArrowException as error:
            raise InputError(source, f"is not a readable Parquet file past row {done} "
                                     f"({str(error).splitlines()[0][:120]})") from None


def _batches(parquet: Any, columns: list[str] | None = None) -> Iterator[Any]:
    """The file's record batches (of ``columns``, else all) in order, ``READ_ROWS`` at a time:
    a row group's pages are decoded as the batches need them, so memory holds about one batch
    (reading a whole row group ahead, or the row groups ahead on threads, held 3 to 7 GiB of a
    1.6 GiB run of 1M x 100 and was no faster)."""
    yield from parquet.iter_batches(batch_size=READ_ROWS, columns=columns)


def _heads_of(pa: Any, pc: Any, batch: Any, depth: int, RunHeads: Any, seen: Mapping[str, int]) -> Any:
    """The heads of a batch whose columns hold nothing a reader would refuse; else None."""
    queries, ranking = batch.column("query_id"), batch.column("ranking")
    if not pa.types.is_string(queries.type) or not pa.types.is_list(ranking.type) or \
            not pa.types.is_string(ranking.type.value_type):
        return None
    if queries.null_count or ranking.null_count or (len(queries) and pc.min(pc.binary_length(queries)).as_py() == 0):
        return None
    flat = pc.list_flatten(ranking)
    if flat.null_count or (len(flat) and pc.min(pc.binary_length(flat)).as_py() == 0):
        return None
    if "scores" in batch.schema.names:
        scores = batch.column("scores")
        if not pa.types.is_list(scores.type) or not pa.types.is_floating(scores.type.value_type):
            return None
        present, lengths = scores, pc.list_value_length(ranking)
        if scores.null_count:
            present, lengths = scores.filter(pc.is_valid(scores)), lengths.filter(pc.is_valid(scores))
        values = pc.list_flatten(present)
        if values.null_count or (len(values) and not pc.all(pc.is_finite(values)).as_py()):
            return None
        if not pc.all(pc.equal(pc.list_value_length(present), lengths)).as_py():
            return None
    ids = queries.to_pylist()
    if len(set(ids)) != len(ids) or not seen.keys().isdisjoint(ids):
        return None
    firsts = pc.list_slice(ranking, 0, depth)
    keys = pc.list_flatten(firsts)
    repeating = _repeating_rows(pc, firsts, keys)
    if not repeating:
        return RunHeads.of_distinct(depth, ids, keys.to_pylist(), pc.list_value_length(firsts).to_pylist())
    heads = RunHeads(depth)  # a key repeats among some query's first: those read on until depth are distinct
    for n, (query_id, head) in enumerate(zip(ids, firsts.to_pylist())):
        heads.add(query_id, ranking[n].as_py() if n in repeating else head)
    return heads


def _repeating_rows(pc: Any, firsts: Any, keys: Any) -> set[int]:
    """The rows of ``firsts`` (lists) in which a key appears twice: each key coded as (row,
    key's dictionary code) in one integer, sorted, a repeat is two neighbours alike. (numpy
    reads the Arrow arrays itself: their ``to_numpy`` would import pandas.)"""
    import numpy as np

    if len(keys) < 2:
        return set()
    encoded = pc.dictionary_encode(keys)
    width = len(encoded.dictionary)
    rows = np.repeat(np.arange(len(firsts), dtype=np.int64), np.asarray(pc.list_value_length(firsts)))
    pairs = np.sort(rows * width + np.asarray(encoded.indices).astype(np.int64))
    twice = pairs[1:][pairs[1:] == pairs[:-1]]
    return set((twice // width).tolist())


def _in_part(pa: Any, batch: Any, part: tuple[int, int], rows: Any) -> tuple[Any, list[int]]:
    """The rows of ``batch`` in partition p of n, and their numbers in the file (``rows``
    numbers the batch's); a row without a query id is partition 0's, whose reader refuses it."""
    from goldkeeper.core.drift import partition_of

    p, n = part
    keep = [partition_of(query, n) == p if isinstance(query, str) and query else p == 0
            for query in batch.column("query_id").to_pylist()]
    return batch.filter(pa.array(keep, pa.bool_())), [row for row, kept in zip(rows, keep) if kept]


def _checked_heads(url: str, batch: Any, rows: Any, depth: int, seen: dict[str, int]) -> Any:
    """A batch read row by row by the run reader (``core.runs``), each row with its number in
    the file (``rows``), its refusal worded for rows."""
    from goldkeeper.core.grouped import pack_run
    from goldkeeper.core.runs import iter_run

    source = source_name(url)
    lines = [_run_line(_present(row)) for row in batch.to_pylist()]
    try:
        return pack_run((entry for row, line in zip(rows, lines)
                         for entry in iter_run([line], source, first_line=row, seen=seen)), depth)
    except InputError as error:
        raise run_at_row(error) from None
