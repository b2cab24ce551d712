"""Corpus snapshots on any fsspec root: the spec's single ``corpus.json``, and the streaming
layout for corpora too big to hold, a ``manifest.json`` plus JSONL chunk shards, optionally
gzip (spec/formats.md, "Sharded snapshots").

A sharded snapshot is written shard by shard, each atomically, and the manifest last: a reader
never sees a half-written snapshot. Reading streams the shards in order and checks each shard's
sha256 and chunk count against the manifest as it goes, so memory stays bounded by what the
caller keeps, never by the corpus text.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Annotated, Any

import msgspec
from typing_extensions import Required, TypedDict

from goldkeeper.core.drift import (
    Corpus,
    DriftResult,
    LiveChunk,
    check_unique_ids,
    chunk_from_dict,
    classify,
    keys_accounted_for,
    live_keys,
    parse_corpus,
    snapshot_rows,
)
from goldkeeper.errors import InputError, StorageError, UsageError, compressed_input, describe_value
from goldkeeper.io import parquet
from goldkeeper.io.fastjson import NonEmpty as _NonEmpty
from goldkeeper.io.fastjson import judgment_blocks
from goldkeeper.io.files import (
    capped_lines,
    filesystem,
    is_local,
    iter_blocks,
    line_blocks,
    local_path,
    open_read,
    open_write_atomic,
    read_bytes,
    remove_quietly,
    source_name,
    write_bytes_atomic,
)
from goldkeeper.models.records import CHUNK, CORPUS_FINGERPRINTS, LIVE_CHUNK

__all__ = ["MANIFEST", "LabelRows", "LiveChunkStruct", "ShardedCorpus", "SpooledCorpus", "chunk_count", "classify_url", "corpus_json", "open_corpus", "write_sharded_snapshot"]

MANIFEST = "manifest.json"
FORMAT = "goldkeeper-corpus-shards/1"
DEFAULT_SHARD_CHUNKS = 100_000


_STRUCT_TYPES = {"id": _NonEmpty, "text": str | None, "count": Annotated[int, msgspec.Meta(ge=0)] | None,
                 "hash": _NonEmpty | None}

#: core's ``LiveChunk`` as a msgspec Struct, made from the same ``records.LIVE_CHUNK`` with
#: the same methods: it decodes faster than the dataclass in any form, checks the same
#: constraints, and is never tracked by the collector. core reads chunks only through these
#: fields and methods, so classify, fix and the queue take either.
LiveChunkStruct = msgspec.defstruct(
    "LiveChunkStruct",
    [(spec.name, _STRUCT_TYPES[spec.kind]) if spec.kind == "id" else (spec.name, _STRUCT_TYPES[spec.kind], None)
     for spec in LIVE_CHUNK],
    namespace={"order": LiveChunk.order, "sha": LiveChunk.sha},
    module=__name__,
    frozen=True,
    gc=False,
)


_CorpusJson = TypedDict(  # type: ignore[misc]
    "_CorpusJson", {**dict.fromkeys(CORPUS_FINGERPRINTS, str | None), "chunks": Required[list[LiveChunkStruct]]},
    total=False)


_CORPUS = msgspec.json.Decoder(_CorpusJson)


def corpus_json(data: bytes) -> Corpus | None:
    """The spec's corpus.json, decoded into checked ``LiveChunkStruct``s; None if refused, or
    if its keys are not all accounted for (``keys_accounted_for``)."""
    try:
        payload = _CORPUS.decode(data)
    except (msgspec.MsgspecError, RecursionError):
        return None
    if not keys_accounted_for(data, payload):
        return None
    return Corpus(payload["chunks"], payload.get("corpus_fingerprint"), payload.get("chunker_fingerprint"))


_CorpusRaw = TypedDict(  # type: ignore[misc]
    "_CorpusRaw", {**dict.fromkeys(CORPUS_FINGERPRINTS, str | None), "chunks": Required[list[msgspec.Raw]]},
    total=False)

_CORPUS_RAW = msgspec.json.Decoder(_CorpusRaw)
_CHUNK = msgspec.json.Decoder(LiveChunkStruct)
_SPOOL_BLOCK = 1 << 14  # chunks decoded, checked and spooled at a time

#: A corpus.json this large or smaller is held in memory even by a reader that streams:
#: holding it is faster (drift then knows every live id before it reads a label), and its
#: parsed chunks take about 1.3 times the file.
HOLD_UP_TO = 256 << 20


class SpooledCorpus:
    """The spec's corpus.json, streamed: checked whole once (as ``corpus_json`` checks it),
    each chunk then kept as one line of an unnamed temporary file, which the system removes
    when the process ends however it ends. Each pass decodes those lines a block at a time, so
    memory holds no chunk beyond the block a pass is at, as with a sharded snapshot."""

    def __init__(self, spool: Any, count: int, corpus_fingerprint: str | None, chunker_fingerprint: str | None) -> None:
        self.spool = spool
        self.count = count
        self.corpus_fingerprint = corpus_fingerprint
        self.chunker_fingerprint = chunker_fingerprint

    def __iter__(self) -> Iterator[LiveChunk]:
        stream = io.BufferedReader(_Pread(self.spool.fileno()), 1 << 20)
        for block in line_blocks(stream, "corpus spool", 1 << 20):
            yield from _CHUNK.decode_lines(block)


class _Pread(io.RawIOBase):
    """A file descriptor read from the start with an offset of its own (passes may overlap)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = os.pread(self.fd, len(buffer), self.offset)
        buffer[: len(data)] = data
        self.offset += len(data)
        return len(data)


def spooled_corpus(data: bytes) -> SpooledCorpus | None:
    """``SpooledCorpus`` of a corpus.json's bytes; None if refused (the caller reads it the
    way that words the error, ``parse_corpus``)."""
    try:
        payload = _CORPUS_RAW.decode(data)
    except (msgspec.MsgspecError, RecursionError):
        return None
    raws, present = payload["chunks"], 0
    spool = tempfile.TemporaryFile(prefix="goldkeeper-corpus-")
    try:
        for start in range(0, len(raws), _SPOOL_BLOCK):
            # A newline outside a JSON string is whitespace (inside one it is escaped): each
            # chunk's text, newlines made spaces, is one line.
            block = b"\n".join([bytes(raw).replace(b"\n", b" ") for raw in raws[start:start + _SPOOL_BLOCK]]) + b"\n"
            present += live_keys(_CHUNK.decode_lines(block))
            spool.write(block)
        spool.flush()
    except (msgspec.MsgspecError, RecursionError):
        spool.close()
        return None
    except BaseException:
        spool.close()
        raise
    if not keys_accounted_for(data, payload, present):
        spool.close()
        return None
    return SpooledCorpus(spool, len(raws), payload.get("corpus_fingerprint"), payload.get("chunker_fingerprint"))


def _join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


def _base(manifest_url: str) -> str:
    return manifest_url[: manifest_url.rstrip("/").rfind("/") + 1] if "/" in manifest_url else ""


def _is_dir(url: str) -> bool:
    if is_local(url):
        import os

        return os.path.isdir(local_path(url))
    if url.endswith("/"):
        return True
    try:
        fs, path = filesystem(url)
        return fs.isdir(path)
    except (OSError, StorageError):
        return False


class _Hashing(io.RawIOBase):
    """Reads through ``inner``, hashing the bytes as they pass."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        self.sha.update(data)
        buffer[: len(data)] = data
        return len(data)


class ShardedCorpus:
    """A sharded snapshot, read lazily; iterate it as often as needed (each pass streams)."""

    def __init__(self, manifest_url: str, *, checked: bool = False) -> None:
        """``checked``: every line was checked when the shards were written (partition pieces,
        which ``map_corpus`` copies only after checking each line as drift does); reading then
        builds chunks without checking fields again. Hashes and counts are always verified."""
        self.url = manifest_url
        self.checked = checked
        from pydantic_core import from_json  # (only sharded snapshots need it: loaded here)

        source = source_name(manifest_url)
        data = read_bytes(manifest_url)
        try:
            payload = from_json(data, allow_inf_nan=False)
        except ValueError as error:
            raise compressed_input(data[:8], source) or InputError(
                source, f"not valid JSON ({error})", field="json", found="the file") from None
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise InputError(source, f"a sharded snapshot's manifest has format '{FORMAT}'", field="format",
                             found=describe_value(payload.get("format") if isinstance(payload, dict) else payload))
        shards = payload.get("shards")
        if not isinstance(shards, list):
            raise InputError(source, "must be an array", field="shards", found=describe_value(shards))
        for index, shard in enumerate(shards):
            where = f"shards[{index}]"
            if not isinstance(shard, dict):
                raise InputError(source, "must be an object", field=where, found=describe_value(shard))
            for name, kind in (("path", str), ("sha256", str), ("chunks", int)):
                if type(shard.get(name)) is not kind:
                    raise InputError(source, f"required, must be a{'n integer' if kind is int else ' string'}",
                                     field=f"{where}.{name}", found=describe_value(shard.get(name)))
            if any(c in shard["path"] for c in "/\\\0") or shard["path"] in ("", ".", ".."):
                raise InputError(source, "a file name beside the manifest (no /, \\ or NUL)", field=f"{where}.path",
                                 found=describe_value(shard["path"]))
        self.shards: list[dict[str, Any]] = shards
        self.counts: dict[str, Any] = payload.get("counts") if isinstance(payload.get("counts"), dict) else {}
        self.corpus_fingerprint = payload.get("corpus_fingerprint") if isinstance(payload.get("corpus_fingerprint"), str) else None
        self.chunker_fingerprint = payload.get("chunker_fingerprint") if isinstance(payload.get("chunker_fingerprint"), str) else None

    def __iter__(self) -> Iterator[LiveChunk]:
        for index in range(len(self.shards)):
            yield from self.read_shard(index)

    def read_shard(self, index: int) -> Iterator[LiveChunk]:
        """The chunks of one shard, checked (unless the snapshot says they were)."""
        source = source_name(self.shard_url(index))
        for line_number, _, raw_chunk in self.parsed_lines(index):
            if self.checked:
                yield LiveChunk(raw_chunk["chunk_id"], raw_chunk["doc_uri"], raw_chunk.get("ordinal"),
                                raw_chunk.get("text"), raw_chunk.get("text_sha") or None, raw_chunk.get("start_index"))
            else:
                yield chunk_from_dict(raw_chunk, source, line=line_number)

    def parsed_lines(self, index: int) -> Iterator[tuple[int, bytes, Any]]:
        """(line number, line as stored, its JSON value) of one shard; a line that is not JSON
        is an ``InputError`` naming the shard and the line."""
        from pydantic_core import from_json

        source = source_name(self.shard_url(index))
        for line_number, line in self.shard_lines(index):
            try:
                yield line_number, line, from_json(line, allow_inf_nan=False)
            except ValueError as error:
                raise InputError(source, f"not valid JSON ({error})", line=line_number, field="json",
                                 found="the line") from None

    def shard_url(self, index: int) -> str:
        return _base(self.url) + self.shards[index]["path"]

    def shard_lines(self, index: int) -> Iterator[tuple[int, bytes]]:
        """(line number, line) of one shard as stored; its sha256 and chunk count are checked
        against the manifest once the last line is read."""
        url, shard = self.shard_url(index), self.shards[index]
        source = source_name(url)
        count = 0
        with open_read(url, decompress=False) as raw:  # the stored bytes: the manifest hashes those
            hashing = _Hashing(raw)
            stream: Any = io.BufferedReader(hashing, 1 << 20)
            if url.endswith(".gz"):
                stream = io.BufferedReader(gzip.GzipFile(fileobj=stream, mode="rb"), 1 << 20)  # type: ignore[arg-type]
            try:
                for line_number, line in enumerate(capped_lines(stream, url), 1):
                    count += 1
                    yield line_number, line
            except (OSError, EOFError, gzip.BadGzipFile) as error:
                raise InputError(source, f"cannot be decompressed ({error})", field="gzip", found="the shard") from None
            hashing.inner.read()  # anything after the last line still counts in the hash
        if hashing.sha.hexdigest() != shard["sha256"]:
            raise InputError(source, "does not match the manifest's sha256 (changed or truncated)", field="sha256",
                             found=hashing.sha.hexdigest())
        if count != shard["chunks"]:
            raise InputError(source, f"the manifest says {shard['chunks']} chunks", field="chunks", found=count)


def open_corpus(url: str, *, stream: bool = False) -> Corpus | ShardedCorpus | SpooledCorpus:
    """A snapshot by URL: a ``manifest.json`` (or a directory holding one) streams; a Parquet
    snapshot is read and held, or with ``stream`` streams (``ParquetCorpus``); any other file is read whole as the spec's corpus.json, and held, or with ``stream`` (a reader that
    passes over it a few times, as drift does), when larger than ``HOLD_UP_TO``, spooled
    (``SpooledCorpus``)."""
    if url.endswith(MANIFEST):
        return ShardedCorpus(url)
    if url != "-" and _is_dir(url):
        return ShardedCorpus(_join(url, MANIFEST))
    if stream and url != "-" and parquet.is_parquet(url):  # a Parquet snapshot (spec/formats.md, "Parquet")
        return parquet.ParquetCorpus(url)
    data = read_bytes(url)
    if data.startswith(parquet.MAGIC):
        return parquet.corpus_of(url, data)
    if stream and len(data) > HOLD_UP_TO and (spooled := spooled_corpus(data)) is not None:
        return spooled
    corpus = corpus_json(data)
    if corpus is None:  # core reads and words it
        return parse_corpus(data, source_name(url))
    check_unique_ids((chunk.chunk_id for chunk in corpus.chunks), source_name(url))
    return corpus


def resolve_spans_at(corpus_url: str, rows: Iterable[Mapping[str, Any]]) -> Any:
    """``core.spans.resolve_labels`` of ``rows`` against the snapshot at ``corpus_url``: only
    the chunks of the documents the span labels name are kept, so a streamed snapshot is read
    once, holding those documents' texts."""
    from goldkeeper.core.spans import document_texts, resolve_labels

    rows = list(rows)
    wanted = {row["doc_uri"] for row in rows if row.get("span") is not None}
    corpus = open_corpus(corpus_url, stream=True)
    return resolve_labels(rows, document_texts(corpus, wanted))


def snapshot_document(url: str) -> dict[str, Any]:
    """A snapshot of any form (corpus.json, a sharded one, Parquet) as the corpus.json document
    ``snapshot`` writes: the fingerprints and every chunk with every field it has, each chunk
    checked as drift checks it (``convert --to snapshot`` between the forms)."""
    from goldkeeper.core.jsonl import decode_document

    source = source_name(url)
    table = url != "-" and parquet.is_parquet(url)
    if table:
        meta = parquet.parquet_metadata(url)
        fingerprints = {name: meta.get(name) for name in CORPUS_FINGERPRINTS}
        raws: Iterator[tuple[str, int | None, Any]] = (
            (source, done + n, row) for done, rows in parquet.parquet_rows(url) for n, row in enumerate(rows, 1))
    elif url.endswith(MANIFEST) or (url != "-" and _is_dir(url)):
        sharded = ShardedCorpus(url if url.endswith(MANIFEST) else _join(url, MANIFEST))
        fingerprints = {"corpus_fingerprint": sharded.corpus_fingerprint,
                        "chunker_fingerprint": sharded.chunker_fingerprint}
        raws = ((source_name(sharded.shard_url(index)), line, raw) for index in range(len(sharded.shards))
                for line, _, raw in sharded.parsed_lines(index))
    else:
        payload = decode_document(read_bytes(url), source)
        if not isinstance(payload, dict) or not isinstance(payload.get("chunks"), list):
            raise InputError(source, "a corpus snapshot is an object with a chunks array", field="chunks",
                             found=describe_value(payload.get("chunks") if isinstance(payload, dict) else payload))
        fingerprints = {name: payload.get(name) for name in CORPUS_FINGERPRINTS}
        raws = ((source, None, raw) for raw in payload["chunks"])
    chunks = []
    known = [spec.name for spec in CHUNK]
    for index, (where, line, raw) in enumerate(raws):
        try:
            chunk_from_dict(raw, where, "" if line is not None else f"chunks[{index}].", line=line)
        except InputError as error:
            raise (parquet.at_row(error) if table else error) from None
        chunks.append({**{name: raw[name] for name in known if raw.get(name) is not None},
                       **{name: value for name, value in raw.items() if name not in known and value is not None}})
    check_unique_ids((chunk["chunk_id"] for chunk in chunks), source)
    return {**{name: value for name, value in fingerprints.items() if isinstance(value, str)}, "chunks": chunks}


def write_snapshot_document(out: str, document: dict[str, Any]) -> None:
    """A snapshot document as ``snapshot`` writes it: corpus.json (indented by one), or for an
    ``out`` named .parquet, a Parquet snapshot."""
    if out.endswith(".parquet"):
        parquet.write_parquet(out, "snapshot", document["chunks"],
                              {name: document[name] for name in CORPUS_FINGERPRINTS if document.get(name)})
    else:
        write_bytes_atomic(out, (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))


#: How many of the first ranked ids ``check_run_over`` looks for in the snapshot.
RUN_PROBE = 2000


def check_run_over(corpus_url: str, keys: Iterable[str], run: str) -> None:
    """Refuse a run none of whose first ranked ``keys`` (up to ``RUN_PROBE``) is a chunk id or
    document of the snapshot at ``corpus_url``: it was made over another snapshot, and would
    score 0 against labels resolved to this one. The snapshot is streamed until one is found."""
    probe = set(islice(dict.fromkeys(keys), RUN_PROBE))
    if not probe:
        return
    for chunk in open_corpus(corpus_url, stream=True):
        if chunk.chunk_id in probe or chunk.doc_uri in probe:
            return
    raise UsageError(f"{source_name(run)}: none of the first {len(probe)} ids it ranks is a chunk or document of "
                     f"the snapshot {source_name(corpus_url)}: the run was made over another snapshot (hint: give the "
                     "snapshot the run was made over with --corpus; compare takes one --corpus per run)")


def write_sharded_snapshot(
    directory: str,
    rows: Iterable[Mapping[str, Any]],
    chunker_fingerprint: str,
    corpus_fingerprint: str | None = None,
    *,
    shard_chunks: int = DEFAULT_SHARD_CHUNKS,
    compress: bool = True,
    source: str = "chunks",
    numbered: bool = False,
) -> dict[str, Any]:
    """Write chunker output rows as a sharded snapshot under ``directory``; the manifest.

    Rows stream through ``snapshot_rows`` (ids per spec/chunk-id.md) into shards of
    ``shard_chunks`` chunks named ``chunks-00000.jsonl[.gz]``; the manifest is written last.
    If a row is refused, the shards already written are removed: nothing half-built remains.
    """
    if shard_chunks < 1:
        raise InputError("--shard-chunks", "must be at least 1", field="shard_chunks", found=shard_chunks)
    shards: list[dict[str, Any]] = []
    documents: set[str] = set()
    produced = snapshot_rows(rows, chunker_fingerprint, source, numbered=numbered)
    try:
        pending = next(produced, None)
        _write_shards(directory, produced, pending, shards, documents, shard_chunks, compress)
    except BaseException:
        for shard in shards:
            remove_quietly(_join(directory, shard["path"]))
        raise
    total = sum(shard["chunks"] for shard in shards)
    manifest = {
        "format": FORMAT,
        "corpus_fingerprint": corpus_fingerprint or chunker_fingerprint,
        "chunker_fingerprint": chunker_fingerprint,
        "counts": {"chunks": total, "documents": len(documents), "shards": len(shards)},
        "shards": shards,
    }
    with open_write_atomic(_join(directory, MANIFEST)) as handle:
        handle.write((json.dumps(manifest, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))  # type: ignore[attr-defined]
    return manifest


def _write_shards(directory: str, produced: Iterator[dict[str, Any]], pending: dict[str, Any] | None,
                  shards: list[dict[str, Any]], documents: set[str], shard_chunks: int, compress: bool) -> None:
    suffix = ".jsonl.gz" if compress else ".jsonl"
    while pending is not None or not shards:
        name = f"chunks-{len(shards):05d}{suffix}"
        count = 0
        digest = hashlib.sha256()
        with open_write_atomic(_join(directory, name)) as handle:
            sink = _HashingWriter(handle, digest)
            out: Any = gzip.GzipFile(fileobj=sink, mode="wb", mtime=0, compresslevel=6) if compress else sink
            buffer = io.BufferedWriter(out, 1 << 20)  # type: ignore[arg-type]
            while pending is not None and count < shard_chunks:
                buffer.write(json.dumps(pending, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
                documents.add(pending["doc_uri"])
                count += 1
                pending = next(produced, None)
            buffer.flush()
            if compress:
                out.close()
        shards.append({"path": name, "sha256": digest.hexdigest(), "chunks": count})
        if pending is None:
            break


class _HashingWriter(io.RawIOBase):
    def __init__(self, inner: Any, digest: Any) -> None:
        self.inner = inner
        self.digest = digest

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.digest.update(data)
        self.inner.write(data)
        return len(data)

    def close(self) -> None:  # the caller owns ``inner``
        super().close()



def chunk_count(corpus: Corpus | ShardedCorpus | SpooledCorpus) -> int:
    """How many chunks a snapshot holds, without reading its shards."""
    if isinstance(corpus, ShardedCorpus):
        return sum(shard["chunks"] for shard in corpus.shards)
    if isinstance(corpus, (SpooledCorpus, parquet.ParquetCorpus)):
        return corpus.count
    return len(corpus.chunks)


class LabelRows:
    """The label rows of a judgments file, read again on each pass, so that drift holds a few
    fields of each label rather than every row (stdin is read once and held). The first pass
    takes the file's sha256 (``sha256``); a later one that reads other bytes, or more lines,
    fails with an ``InputError``: the file changed while drift read it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sha256: str | None = None
        self.count = 0
        self.held: list[dict[str, Any]] | None = None
        if url == "-":
            self.held = list(self._read())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.held) if self.held is not None else self._read()

    def _read(self) -> Iterator[dict[str, Any]]:
        from goldkeeper.io.loading import Hashed

        source = source_name(self.url)
        first = self.sha256 is None
        if self.url != "-" and parquet.is_parquet(self.url):
            hashed: Any = parquet.FileDigest(self.url)
            blocks = parquet.judgment_blocks(self.url)
        else:
            hashed = Hashed(iter_blocks(self.url))
            blocks = judgment_blocks(hashed, source)
        count = 0
        for block in blocks:
            count += len(block)
            if not first and count > self.count:
                raise self._changed(source)
            yield from block
        if first:
            self.sha256, self.count = hashed.hexdigest(), count
        elif hashed.hexdigest() != self.sha256:
            raise self._changed(source)

    def _changed(self, source: str) -> InputError:
        return InputError(source, "changed while it was read (another writer?): run again", field="sha256",
                          found="other bytes than the first pass read")


def classify_url(judgments_url: str, corpus_url: str, *, progress: Callable[[int], None] | None = None
                 ) -> tuple[LabelRows, DriftResult, Corpus | ShardedCorpus | SpooledCorpus, str]:
    """The label rows of a judgments file (``LabelRows``: read again by each pass), their
    drift against a snapshot, the opened snapshot (for fix and the queue) and the judgments'
    sha256 as first read (for a rewrite in place). A snapshot that cannot be read is reported
    before any label. Neither the labels nor the snapshot are held whole."""
    corpus = open_corpus(corpus_url, stream=True)
    if hasattr(progress, "expect"):  # the CLI's bar: a snapshot knows how many chunks it holds
        progress.expect(chunk_count(corpus))
    rows = LabelRows(judgments_url)
    result = classify(rows, corpus, progress=progress)
    return rows, result, corpus, rows.sha256  # type: ignore[return-value]
