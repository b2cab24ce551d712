"""Partitioned drift: a corpus snapshot and its judgments split by a hash of doc_uri, each
partition classified on its own (by a Prefect task, on threads or Dask workers), the results
merged into exactly what one process gives (spec/scaling.md).

Every function here is one task's body: it reads its inputs from storage URLs and writes its
outputs to storage, so a task can run on any worker that reaches the storage (S3 for a remote
cluster) and can be retried alone. The layout under a work URL:

    corpus/p0003/from-00001.jsonl      chunks of source shard group 1 that fall in partition 3
    corpus/p0003/from-00001.keys.npz   64-bit keys of their ids and text hashes
    corpus/p0003/manifest.json         partition 3 as a sharded snapshot (its pieces)
    labels/p0003.jsonl                 the labels of partition 3, canonical, in input order
    exchange/asks-p0003.pickle         ids, hashes and texts partition 3 could not settle alone
    exchange/found-p0003.pickle        what partition 3's chunks hold of every partition's asks

Scoring partitions by a hash of query id instead (``split_labels_by_query``, ``split_run``,
``score_partition``): every query's labels and run entry meet in one partition, which gives
that query's metric values; the driver merges the values and computes means, strata and
intervals on the merged vectors, exactly as one process does.

    scoring/labels-p0003.jsonl         label rows of the queries of partition 3
    scoring/run-p0003.<jsonl|trec>     their run lines, as in the run file
"""

from __future__ import annotations

import hashlib
import heapq
import io
import json
import pickle
from array import array
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
from pydantic_core import from_json

from goldkeeper.core.drift import (
    Corpus,
    Found,
    LiveChunk,
    chunk_from_dict,
    classify_and_queue,
    drift_summary,
    find,
    fixed_rows,
    merge_found,
    partition_of,
    unsettled,
)
from goldkeeper.core.judgments import dump_rows, row_line
from goldkeeper.core.scoring import Qrels, QueryValues, build_qrels, query_values
from goldkeeper.core.validation import ValidationResult, Validator
from goldkeeper.errors import InputError, UsageError
from goldkeeper.io.fastjson import judgment_blocks
from goldkeeper.io.files import (
    filesystem,
    is_local,
    iter_blocks,
    iter_range_blocks,
    local_path,
    open_read,
    open_write_atomic,
    read_bytes,
    size_of,
    source_name,
)
from goldkeeper.io.loading import load_run_prefixes, read_labels, unanchored
from goldkeeper.io.parquet import ParquetCorpus, is_parquet
from goldkeeper.io.snapshots import FORMAT, MANIFEST, ShardedCorpus, _HashingWriter, open_corpus
from goldkeeper.models.records import canonical_judgment

__all__ = [
    "OUTPUTS",
    "PartitionedDrift",
    "classify_partition",
    "exchange_url",
    "find_in_partition",
    "map_corpus",
    "merge_counts",
    "merge_outputs",
    "output_url",
    "partition_labels",
    "partition_positions",
    "positions_url",
    "remove_work",
    "require_shared_storage",
    "score_partition",
    "source_corpus",
    "source_groups",
    "split_labels_by_query",
    "split_run",
    "stage_judgments",
    "write_partition_manifests",
]


def _join(base: str, *names: str) -> str:
    return "/".join([base.rstrip("/"), *names])


def partition_dir(work_url: str, partition: int) -> str:
    return _join(work_url, "corpus", f"p{partition:04d}")


def labels_url(work_url: str, partition: int, piece: int = 0) -> str:
    """One partition's labels from one piece of the judgments file (``line_ranges``)."""
    return _join(work_url, "labels", f"p{partition:04d}-r{piece:04d}.jsonl")


def require_shared_storage(url: str, remote: bool) -> None:
    """A remote cluster's workers cannot read this machine's disk: refuse local URLs then."""
    if remote and is_local(url):
        raise UsageError(f"'{url}' is on this machine's disk, which the workers of a remote Dask cluster "
                         "cannot read; put the snapshot, judgments and work directory on shared storage "
                         "(s3://...), or use a local cluster")


def source_corpus(corpus_url: str) -> ShardedCorpus | ParquetCorpus | Corpus:
    """The snapshot a partitioned drift splits: a sharded or Parquet one streamed (neither is
    ever held whole, by a map task or by the flow process), a corpus.json held."""
    return ParquetCorpus(corpus_url) if is_parquet(corpus_url) else open_corpus(corpus_url)


def source_groups(corpus_url: str, groups: int) -> list[list[int]]:
    """The snapshot's shards (a Parquet snapshot's row groups) dealt into at most ``groups``
    groups, one per map task, which reads only its own; a corpus.json is one group of its own."""
    corpus = source_corpus(corpus_url)
    if isinstance(corpus, ShardedCorpus):
        count = len(corpus.shards)
    elif isinstance(corpus, ParquetCorpus):
        count = len(corpus.group_starts)
    else:
        return [[0]]
    return [list(range(start, count, groups)) for start in range(min(groups, count))]


def _chunk_line(chunk: Any) -> bytes:
    row = {"chunk_id": chunk.chunk_id, "doc_uri": chunk.doc_uri, "ordinal": chunk.ordinal, "text": chunk.text,
           "text_sha": chunk.sha(), "start_index": chunk.start_index}
    row = {k: v for k, v in row.items() if v is not None}
    try:
        return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # a lone surrogate (a corpus.json may escape one), which orjson does not write
        return json.dumps(row, separators=(",", ":")).encode("ascii") + b"\n"


def _source_chunks(corpus: ShardedCorpus | ParquetCorpus | Corpus,
                   shards: Sequence[int]) -> Iterator[tuple[LiveChunk, bytes]]:
    """(chunk, stored line) for every chunk of the given shards: each line is checked as
    ``drift`` checks it (errors name the source shard and line) and then copied, not
    re-encoded; every shard is checked against its manifest as it is read. A Parquet
    snapshot's row groups (``shards``) and a corpus.json give each chunk's line encoded."""
    if isinstance(corpus, ParquetCorpus):
        for chunk in corpus.chunks_of(shards):
            yield chunk, _chunk_line(chunk)
        return
    if isinstance(corpus, Corpus):
        for chunk in corpus:
            # Hashed once, for the line and the keys (a corpus.json's chunks may be io's Chunk).
            chunk = LiveChunk(chunk.chunk_id, chunk.doc_uri, chunk.ordinal, chunk.text, chunk.sha(), chunk.start_index)
            yield chunk, _chunk_line(chunk)
        return
    for index in shards:
        source = source_name(corpus.shard_url(index))
        for line_number, line, raw in corpus.parsed_lines(index):
            yield chunk_from_dict(raw, source, line=line_number), line if line.endswith(b"\n") else line + b"\n"


def _key(text: str) -> int:
    """A 64-bit key of an id or a text hash, for the compact per-piece key files: the first 16
    hex digits of a ``c1:``/``t1:`` hash (already uniform), else 8 bytes of blake2b."""
    if len(text) == 35 and text[2] == ":":
        try:
            return int(text[3:19], 16)
        except ValueError:
            pass
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _keys_name(piece: str) -> str:
    return piece.replace(".jsonl", ".keys.npz")


class _Piece:
    """One partition's piece being written by a map task: its stream and its keys."""

    def __init__(self, stack: ExitStack, url: str) -> None:
        handle = stack.enter_context(open_write_atomic(url))
        self.digest = hashlib.sha256()
        # Uncompressed: pieces live only as long as the run, and compressing them costs more than it saves.
        self.sink = _HashingWriter(handle, self.digest)
        self.buffered = io.BufferedWriter(self.sink, 1 << 20)  # type: ignore[arg-type]
        self.ids = array("Q")
        self.shas = array("Q")

    def add(self, chunk: LiveChunk, line: bytes) -> None:
        self.buffered.write(line)
        self.ids.append(_key(chunk.chunk_id))
        sha = chunk.sha()
        if sha is not None:
            self.shas.append(_key(sha))

    def close(self) -> bytes:
        self.buffered.flush()
        keys = io.BytesIO()
        np.savez(keys, ids=np.unique(np.frombuffer(self.ids, dtype=np.uint64)),
                 shas=np.unique(np.frombuffer(self.shas, dtype=np.uint64)))
        return keys.getvalue()


def map_corpus(corpus_url: str, shards: Sequence[int], work_url: str, partitions: int, mapper: int) -> list[dict[str, Any]]:
    """Split source shards ``shards`` of the snapshot by partition: one JSONL piece per
    partition that gets chunks, each streamed to storage and committed atomically when all
    are complete, with a key file (64-bit keys of its chunk ids and text hashes) that lets
    ``find_in_partition`` skip a partition that cannot hold what is asked. Returns each
    piece as a manifest shard entry with its partition: ``{partition, path, sha256, chunks}``."""
    corpus = source_corpus(corpus_url)
    name = f"from-{mapper:05d}.jsonl"
    pieces: dict[int, _Piece] = {}
    document, partition = None, 0
    with ExitStack() as stack:
        for chunk, line in _source_chunks(corpus, shards):
            if chunk.doc_uri != document:  # a snapshot's chunks come by document
                document, partition = chunk.doc_uri, partition_of(chunk.doc_uri, partitions)
            piece = pieces.get(partition)
            if piece is None:
                piece = pieces[partition] = _Piece(stack, _join(partition_dir(work_url, partition), name))
            piece.add(chunk, line)
        for partition, piece in pieces.items():
            keys = piece.close()
            with open_write_atomic(_join(partition_dir(work_url, partition), _keys_name(name))) as handle:
                handle.write(keys)  # type: ignore[attr-defined]
    return [{"partition": partition, "path": name, "sha256": piece.digest.hexdigest(), "chunks": len(piece.ids)}
            for partition, piece in sorted(pieces.items())]


def write_partition_manifests(corpus_url: str, work_url: str, partitions: int,
                              pieces: Sequence[Sequence[dict[str, Any]]]) -> list[str]:
    """One sharded-snapshot manifest per partition, listing its pieces from every map task,
    with the source snapshot's fingerprints. Returns the manifest URLs, by partition."""
    corpus = source_corpus(corpus_url)
    by_partition: list[list[dict[str, Any]]] = [[] for _ in range(partitions)]
    for mapped in pieces:
        for piece in mapped:
            by_partition[piece["partition"]].append({k: piece[k] for k in ("path", "sha256", "chunks")})
    urls = []
    for partition, shards in enumerate(by_partition):
        shards.sort(key=lambda shard: shard["path"])
        manifest = {
            "format": FORMAT,
            "corpus_fingerprint": corpus.corpus_fingerprint,
            "chunker_fingerprint": corpus.chunker_fingerprint,
            "counts": {"chunks": sum(shard["chunks"] for shard in shards), "shards": len(shards)},
            "shards": shards,
            "partition": {"of": partitions, "index": partition, "key": "sha256(doc_uri)[:8] mod of"},
        }
        url = _join(partition_dir(work_url, partition), MANIFEST)
        with open_write_atomic(url) as handle:
            handle.write((json.dumps(manifest, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))  # type: ignore[attr-defined]
        urls.append(url)
    return urls


def positions_url(work_url: str, partition: int, piece: int = 0) -> str:
    """The positions, within its piece, of one partition's labels from one piece."""
    return _join(work_url, "labels", f"p{partition:04d}-r{piece:04d}.positions")


def partition_labels(judgments_url: str, work_url: str, partitions: int, piece: int = 0,
                     span: tuple[int, int] = (0, -1)) -> int:
    """Stream one piece of a judgments file (``span``, one of ``line_ranges``; the whole file
    by default), each line checked as drift checks it, into each partition's labels file for
    that piece (canonical JSONL, input order kept), a block at a time, with the labels'
    positions within the piece beside it (``positions_url``). Returns the piece's label count:
    the pieces' counts make input positions of those (``partition_positions``), which put the
    merged outputs in input order. Several pieces are split at once by several tasks; an error
    names its line in the whole file."""
    positions = [array("q") for _ in range(partitions)]
    position = 0
    source = source_name(judgments_url)
    try:
        with ExitStack() as stack:
            sinks = [stack.enter_context(open_write_atomic(labels_url(work_url, p, piece))) for p in range(partitions)]
            for block in judgment_blocks(iter_range_blocks(judgments_url, *span), source):
                rows: list[list[dict[str, Any]]] = [[] for _ in range(partitions)]
                for row in block:
                    partition = partition_of(row["doc_uri"], partitions)
                    positions[partition].append(position)
                    rows[partition].append(canonical_judgment(row))
                    position += 1
                for sink, held in zip(sinks, rows):
                    for data in dump_rows(held):
                        sink.write(data)  # type: ignore[attr-defined]
    except InputError as error:
        if span[0] <= 0 or error.line is None or error.source != source:
            raise
        before = sum(block.count(b"\n") for block in iter_range_blocks(judgments_url, 0, span[0]))
        raise InputError(error.source, error.problem, line=error.line + before, field=error.field,
                         found=error.found, hint=error.hint) from None
    for partition, held in enumerate(positions):
        with open_write_atomic(positions_url(work_url, partition, piece)) as handle:
            handle.write(held.tobytes())  # type: ignore[attr-defined]
    return position


def partition_positions(work_url: str, partition: int, counts: Sequence[int]) -> array:
    """The input positions of one partition's labels, from the pieces' label counts (in file
    order, ``partition_labels``' results)."""
    out = array("q")
    offset = 0
    for piece, count in enumerate(counts):
        held = array("q")
        held.frombytes(read_bytes(positions_url(work_url, partition, piece)))
        out.extend(at + offset for at in held)
        offset += count
    return out


def _partition(work_url: str, partition: int, pieces: int = 1) -> tuple[list[dict[str, Any]], ShardedCorpus]:
    labels: list[dict[str, Any]] = []
    for piece in range(pieces):
        url = labels_url(work_url, partition, piece)
        if size_of(url):  # a partition may hold no label of a piece
            labels.extend(row for block in judgment_blocks(iter_blocks(url), source_name(url)) for row in block)
    return labels, ShardedCorpus(_join(partition_dir(work_url, partition), MANIFEST), checked=True)


#: What a partition writes for the merge, each line its label's input position, a tab, and a
#: JSON line: every finding, the queue's items, every label as fixed (re-anchored or as it was).
OUTPUTS = ("findings", "queue", "fixed")


def output_url(work_url: str, kind: str, partition: int | None = None) -> str:
    """A partition's output of one kind, or (``partition`` None) the merged one."""
    name = f"{kind}.jsonl" if partition is None else f"{kind}-p{partition:04d}.jsonl"
    return _join(work_url, "out" if partition is None else "parts", name)


def exchange_url(work_url: str, kind: str, partition: int) -> str:
    """Where a partition's asks (``kind`` "asks": what its labels still need from the others)
    or its answers ("found": what its chunks hold of everyone's asks) are parked between the
    rounds. Only goldkeeper's own values are written here, and read back by the same run."""
    return _join(work_url, "exchange", f"{kind}-p{partition:04d}.pickle")


def _put_exchange(url: str, value: Any) -> None:
    with open_write_atomic(url) as handle:
        handle.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))  # type: ignore[attr-defined]


def _get_exchange(url: str) -> Any:
    return pickle.loads(read_bytes(url))


def classify_partition(work_url: str, partition: int, counts: Sequence[int], partitions: int | None = None,
                       ) -> tuple[dict[str, Any], bool]:
    """Classify one partition's labels against its chunks, and write its findings, queue items
    (candidates from its own documents, or the named chunks) and fixed labels for the merge
    (``OUTPUTS``). On the first round (no ``partitions``) it writes what its unsettled labels
    ask of the others (``unsettled``: ids, hashes, texts) to its asks file; on the second it
    classifies again with what the ``partitions`` partitions found for those asks
    (``find_in_partition``'s files). Returns its counts (``merge_counts`` sums them) and whether
    it asked anything: nothing that grows with its labels, so the flow process holds none."""
    labels, corpus = _partition(work_url, partition, len(counts))
    # The first round looks across documents in its own partition only through ``find``, as
    # every partition does, so that a text found in several partitions is never guessed.
    elsewhere = Found() if partitions is None else _answers(work_url, partition, partitions)
    result, queue = classify_and_queue(labels, corpus, elsewhere=elsewhere)
    positions = partition_positions(work_url, partition, counts)
    flagged = [at for at, finding in zip(positions, result.findings, strict=True)
               if finding["status"] in ("SPLIT", "ORPHANED", "MERGED")]
    outputs = {"findings": zip(positions, result.findings), "queue": zip(flagged, queue, strict=True),
               "fixed": zip(positions, fixed_rows(labels, result))}
    for kind, pairs in outputs.items():
        with open_write_atomic(output_url(work_url, kind, partition)) as handle:
            for at, row in pairs:
                handle.write(b"%d\t" % at + row_line(row))  # type: ignore[attr-defined]
    counts_of = {"summary": result.summary, "fingerprints": sorted(result.fingerprints),
                 "corpus_chunks": result.corpus_chunks, "corpus_documents": result.corpus_documents,
                 "documents": result.documents}
    asked = False
    if partitions is None:
        asks = unsettled(labels, result)
        asked = any(asks)
        _put_exchange(exchange_url(work_url, "asks", partition), asks)
    return counts_of, asked


def _answers(work_url: str, partition: int, partitions: int) -> Found:
    """What every partition found for this one's asks, merged (``merge_found``)."""
    ids, shas, _ = _get_exchange(exchange_url(work_url, "asks", partition))
    found = merge_found(_get_exchange(exchange_url(work_url, "found", p)) for p in range(partitions))
    return _answers_for(found, ids, shas)


def _answers_for(found: Found, ids: set[str], shas: set[str]) -> Found:
    return Found(found.live & ids, {sha: chunk for sha, chunk in found.best.items() if sha in shas},
                 {sha: hits for sha, hits in found.moved.items() if sha in shas})


def merge_outputs(work_url: str, kind: str, partitions: int) -> str:
    """The partitions' outputs of one kind, merged in input order into one JSONL file, read and
    written a line at a time (memory: one line per partition); its URL."""
    url = output_url(work_url, kind)
    with ExitStack() as stack:
        streams = [_positioned(stack.enter_context(open_read(output_url(work_url, kind, p)))) for p in range(partitions)]
        with open_write_atomic(url) as handle:
            for _, line in heapq.merge(*streams):
                handle.write(line)  # type: ignore[attr-defined]
    return url


def _positioned(handle: Any) -> Iterator[tuple[int, bytes]]:
    for line in handle:
        at, _, rest = line.partition(b"\t")
        yield int(at), rest


@dataclass
class PartitionedDrift:
    """What partitioned drift gives: the summary and corpus facts, and where the merged
    findings, queue and fixed judgments are (JSONL in input order, on the run's storage), read
    a line at a time, never held whole by the flow."""

    summary: dict[str, Any]
    labels: int
    judgments_fingerprint: str | None
    corpus_fingerprint: str | None
    corpus_chunks: int
    corpus_documents: int
    urls: dict[str, str]
    documents: list[dict[str, Any]] = field(default_factory=list)
    """The document map (``core.drift.document_map``)."""

    def rows(self, kind: str) -> Iterator[dict[str, Any]]:
        """The merged findings, queue items or fixed labels (``OUTPUTS``), one at a time."""
        with open_read(self.urls[kind]) as handle:
            for line in handle:
                yield json.loads(line)


def merge_counts(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The summary and corpus facts of the whole, from each partition's (``classify_partition``)."""
    counts = {status: sum(part["summary"][status.lower()] for part in parts)
              for status in ("VALID", "RE_ANCHORABLE", "MERGED", "SPLIT", "ORPHANED")}
    fingerprints = sorted({f for part in parts for f in part["fingerprints"]})
    return {"summary": drift_summary(counts), "labels": sum(counts.values()),
            "judgments_fingerprint": fingerprints[0] if len(fingerprints) == 1 else None,
            "corpus_chunks": sum(part["corpus_chunks"] for part in parts),
            "corpus_documents": sum(part["corpus_documents"] for part in parts),
            "documents": sorted((entry for part in parts for entry in part["documents"]),
                                key=lambda entry: entry["doc_uri"])}


def find_in_partition(work_url: str, partition: int, partitions: int) -> list[int]:
    """What one partition's chunks hold of every partition's asks (their asks files, as
    ``classify_partition`` wrote them: ids, text hashes and texts), written to its found file
    for the second round. The pieces' key files are checked first: without texts, the chunks
    are read only when some asked key is there (a 64-bit collision costs a read, never a wrong
    answer), and only for the asks that matched. Returns the partitions it found something
    for (their second round is needed)."""
    asks = [_get_exchange(exchange_url(work_url, "asks", p)) for p in range(partitions)]
    ids = set().union(*(ask[0] for ask in asks))
    shas = set().union(*(ask[1] for ask in asks))
    texts: dict[str, tuple[str, set[str]]] = {}
    for ask in asks:
        for sha, (text, homes) in ask[2].items():
            texts.setdefault(sha, (text, set()))[1].update(homes)
    corpus = ShardedCorpus(_join(partition_dir(work_url, partition), MANIFEST), checked=True)
    have_ids: list[Any] = []
    have_shas: list[Any] = []
    for shard in corpus.shards:
        with np.load(io.BytesIO(read_bytes(_join(partition_dir(work_url, partition), _keys_name(shard["path"]))))) as keys:
            have_ids.append(keys["ids"])
            have_shas.append(keys["shas"])
    ids = _present(ids, have_ids)
    shas = _present(shas, have_shas)
    found = find(corpus, ids, shas, texts) if ids or shas or texts else Found()
    _put_exchange(exchange_url(work_url, "found", partition), found)
    return [p for p, (asked_ids, asked_shas, _) in enumerate(asks)
            if found.live & asked_ids or any(sha in asked_shas for sha in (*found.best, *found.moved))]


def _present(asked: set[str], have: list[Any]) -> set[str]:
    if not asked or not have:
        return set()
    known = np.concatenate(have)
    keys = np.fromiter((_key(value) for value in asked), dtype=np.uint64, count=len(asked))
    return {value for value, hit in zip(asked, np.isin(keys, known)) if hit}


def _scoring_url(work_url: str, name: str, partition: int, suffix: str) -> str:
    return _join(work_url, "scoring", f"{name}-p{partition:04d}.{suffix}")


def split_labels_by_query(judgments_url: str, work_url: str, partitions: int, fmt: str | None = None,
                          spans_resolved: bool = False) -> tuple[Qrels, ValidationResult, str]:
    """Read the judgments once (any format ``score`` reads): validate them, group them for
    scoring, and write each query partition's label rows. Returns the grouping (the driver
    merges and aggregates with it), the validation and the file's sha256. A span label without
    a chunk_id is refused (as ``score`` refuses it without --corpus) unless ``spans_resolved``
    says the labels are already resolved to a snapshot's chunks (``core.spans``)."""
    blocks, hashed = read_labels(judgments_url, fmt)
    qrels = Qrels()
    validator = Validator(qrels)
    with ExitStack() as stack:
        sinks = [stack.enter_context(open_write_atomic(_scoring_url(work_url, "labels", p, "jsonl")))
                 for p in range(partitions)]
        for block in blocks:
            if not spans_resolved and any("span" in row for row in block):
                unanchored(block, source_name(judgments_url))
            validator.add_many(block)  # and groups it into qrels
            lines: list[list[bytes]] = [[] for _ in range(partitions)]
            for row in block:
                # Fields a format does not have (a qrels line's query text) are left out, as
                # a judgments file leaves them out: null is not a value the reader takes.
                present = {name: value for name, value in row.items() if value is not None}
                lines[partition_of(row["query_id"], partitions)].append(orjson.dumps(present) + b"\n")
            for sink, chunk in zip(sinks, lines):
                sink.write(b"".join(chunk))  # type: ignore[attr-defined]
    return qrels, validator.result(), hashed.hexdigest()


def split_run(run_url: str, work_url: str, partitions: int, fmt: str | None = None) -> tuple[str, str]:
    """Copy each line of a run file into its query's partition, unparsed but for the query id
    (a TREC line's first column, a JSONL line's ``query_id``). Returns the format and the
    file's sha256. A line whose query id cannot be read goes to partition 0, whose reader
    then reports it. A Parquet run is not copied: each partition reads its rows straight from
    the file's row groups (``score_partition``); the work folder names it."""
    from goldkeeper.io import parquet

    if fmt == "parquet" or (fmt is None and parquet.is_parquet(run_url)):
        with open_write_atomic(_join(work_url, "scoring", "run.parquet.url")) as handle:
            handle.write(run_url.encode("utf-8"))  # type: ignore[attr-defined]
        return "parquet", parquet.FileDigest(run_url).hexdigest()
    data = read_bytes(run_url)
    if fmt is None:
        head = next((line.lstrip() for line in data.splitlines() if line.strip()), b"")
        fmt = "jsonl" if head.startswith(b"{") or not head else "trec"
    if fmt not in ("jsonl", "trec"):
        raise UsageError(f"unknown run format '{fmt}', expected jsonl or trec")
    pieces: list[list[bytes]] = [[] for _ in range(partitions)]
    for line in data.splitlines(keepends=True):
        if fmt == "trec":
            parts = line.split(None, 1)
            query = parts[0].decode("utf-8", "replace") if parts else None
        else:
            try:
                query = from_json(line).get("query_id") if line.strip() else None
            except (ValueError, AttributeError):
                query = None
        pieces[partition_of(query, partitions) if isinstance(query, str) else 0].append(line)
    for partition, lines in enumerate(pieces):
        with open_write_atomic(_scoring_url(work_url, "run", partition, fmt)) as handle:
            handle.write(b"".join(lines))  # type: ignore[attr-defined]
    return fmt, hashlib.sha256(data).hexdigest()


def score_partition(work_url: str, partition: int, fmt: str, ks: Sequence[int], threshold: int,
                    partitions: int = 1) -> QueryValues:
    """The metric values of one query partition (of ``partitions``, which a Parquet run's
    reader needs) of the scored queries."""
    qrels = Qrels()
    url = _scoring_url(work_url, "labels", partition, "jsonl")
    if size_of(url):  # a partition may hold no query
        for block in read_labels(url, "jsonl")[0]:
            build_qrels(block, qrels)
    if fmt == "parquet":
        from goldkeeper.core.grouped import RunHeads
        from goldkeeper.io import parquet

        source = read_bytes(_join(work_url, "scoring", "run.parquet.url")).decode("utf-8")
        entries = RunHeads(max(ks))
        for block in parquet.run_heads(source, max(ks), part=(partition, partitions)):
            entries.extend(block)
        return query_values(qrels, entries, list(ks), threshold)
    run_url = _scoring_url(work_url, "run", partition, fmt)
    entries = load_run_prefixes(run_url, fmt, max(ks))[0] if size_of(run_url) else []
    return query_values(qrels, entries, list(ks), threshold)


def stage_judgments(work_url: str, data: bytes) -> str:
    """The judgments a flow read, written beside its partitions: the partitions then classify
    exactly the version the flow will fix (and compare-and-swap against)."""
    url = _join(work_url, "judgments.jsonl")
    with open_write_atomic(url) as handle:
        handle.write(data)  # type: ignore[attr-defined]
    return url


def remove_work(work_url: str) -> None:
    """Delete a work directory (its partitions copy the corpus) once the result is merged."""
    if is_local(work_url):
        import shutil

        shutil.rmtree(local_path(work_url), ignore_errors=True)
        return
    fs, path = filesystem(work_url)
    if fs.exists(path):
        fs.rm(path, recursive=True)
