"""``drift``, ``snapshot`` and ``queue apply``: labels against a live corpus, and people's answers
merged back."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Annotated, Any, Optional

import typer

from goldkeeper.cli.app import (
    MAX_SHARD_CHUNKS,
    FormatOption,
    OutputFormat,
    QuietOption,
    app,
    emit_json,
    progress,
    share,
)
from goldkeeper.errors import EXIT_FAILED, EXIT_OK, InputError, UsageError
from goldkeeper.io.files import source_name


@app.command()
def drift(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL.")],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help="A snapshot: corpus.json, or a sharded snapshot's directory or manifest.json.")],
    fix: Annotated[bool, typer.Option("--fix", help="Re-anchor RE_ANCHORABLE and MERGED labels (in place unless --out).")] = False,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="With --fix: write the fixed judgments here, not in place.")] = None,
    in_place: Annotated[bool, typer.Option("--in-place", help="Same as --fix without --out: rewrite --judgments.")] = False,
    queue: Annotated[Optional[str], typer.Option("--queue", help="Write the labels a person must look at, with candidates, here (JSONL).")] = None,
    max_invalid: Annotated[float, typer.Option("--max-invalid", callback=share, help="Exit 0 while the share of labels still wrong is at most this.")] = 0.0,
    output: FormatOption = OutputFormat.text,
    quiet: QuietOption = False,
) -> None:
    """Classify every label against a live corpus; --fix re-anchors the recoverable ones."""
    from goldkeeper.core.drift import span_counts
    from goldkeeper.io.snapshots import classify_url

    fix = fix or in_place
    if in_place and out:
        raise UsageError("--in-place and --out: choose one")
    if out and not fix:
        raise UsageError("--out only applies with --fix")
    if fix and judgments == "-" and not out:
        raise UsageError("--fix on stdin needs --out")
    if fix and (out or judgments).endswith(".parquet"):
        raise UsageError("--fix writes judgments JSONL: give --out NAME.jsonl (convert makes Parquet of it after)")
    if not 0.0 <= max_invalid <= 1.0:
        raise UsageError(f"--max-invalid: a share between 0 and 1, got {max_invalid}")
    with progress("chunks classified", quiet=quiet or output is OutputFormat.json) as advance:
        rows, result, snapshot, judgments_sha = classify_url(judgments, corpus, progress=advance)
    with progress(quiet=quiet or output is OutputFormat.json):  # the second pass: documents rebuilt, the queue
        moved = _fix_and_queue(judgments, rows, result, snapshot, judgments_sha, fix=fix, out=out, queue=queue)
    labels_count = len(result.findings)
    summary = result.summary
    needs_person = summary["split"] + summary["orphaned"]
    if output is OutputFormat.json:
        payload = result.to_dict()
        spans = span_counts(result.findings)
        if spans:
            payload["spans"] = spans
        if fix:
            payload["fixed"] = {"reanchored": moved, "needs_a_person": needs_person, "written_to": out or judgments}
        emit_json(payload, large=True)
    else:
        from goldkeeper.render import print_drift

        print_drift(result, labels_count)
        if fix:
            sys.stdout.write(f"re-anchored {moved} label(s) in {out or judgments}; "
                             f"{needs_person} still need a person\n")
        from goldkeeper.render import drift_next

        sys.stdout.write("\n".join(drift_next(summary, out or judgments, corpus, fixed=fix, queue=queue)) + "\n")
    still_wrong = needs_person / labels_count if fix and labels_count else summary["invalid_ratio"]
    raise typer.Exit(EXIT_FAILED if still_wrong > max_invalid else EXIT_OK)


def _fix_and_queue(judgments: str, rows: Iterable[dict[str, Any]], result: Any, snapshot: Any, judgments_sha: str, *,
                   fix: bool, out: str | None, queue: str | None) -> int:
    """Write the fixed judgments and the queue together (nothing if either fails); how many
    labels moved."""
    from goldkeeper.io.files import write_together

    moved = 0
    outputs: list[tuple[str, bytes]] = []  # written together, after every one is made
    if fix:
        from goldkeeper.core.drift import fixed_rows
        from goldkeeper.core.judgments import dump_rows

        moved = result.summary["re_anchorable"] + result.summary["merged"]  # every one of them moves
        if moved or out:
            outputs.append((out or judgments, dump_rows(fixed_rows(rows, result))))
    if queue:
        from goldkeeper.core.drift import rejudgment_queue

        items = rejudgment_queue(rows, result, snapshot)
        outputs.append((queue, "".join(
            json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n" for item in items).encode("utf-8")))
    write_together(outputs, unchanged={judgments: judgments_sha})
    return moved


@app.command()
def snapshot(
    chunks: Annotated[Optional[str], typer.Argument(help="Chunker output, JSONL or Parquet: {doc_uri, doc_revision, ordinal, text[, start_index]} per line or row.", show_default=False)] = None,
    chunker: Annotated[str, typer.Option("--chunker", help="Chunker fingerprint, e.g. recursive/512/64.")] = "",
    out: Annotated[str, typer.Option("--out", "-o", help="corpus.json; a name ending .parquet: a Parquet snapshot; with --sharded a directory.")] = "",
    store: Annotated[Optional[str], typer.Option("--store", help="Read the chunks from the vector store that holds them instead: lancedb:DIR#TABLE, chroma:DIR#COLLECTION, qdrant:DIR#COLLECTION, qdrant:http://HOST:6333#COLLECTION, postgresql://USER@HOST/DB#TABLE (spec/stores.md).")] = None,
    field: Annotated[list[str], typer.Option("--field", help="With --store: which of the store's fields is a chunk's id, text, doc, revision, ordinal or offset, as NAME=FIELD (dotted for nested: doc=metadata.source; NAME= for none). Repeat.")] = [],  # noqa: B006
    corpus_fingerprint: Annotated[Optional[str], typer.Option(
        "--corpus-fingerprint", help="The corpus and chunker state, as labels made against it name it.")] = None,
    sharded: Annotated[bool, typer.Option("--sharded", help="Write manifest.json plus gzip JSONL shards, streaming.")] = False,
    shard_chunks: Annotated[int, typer.Option("--shard-chunks", min=1, max=MAX_SHARD_CHUNKS, help="Chunks per shard (with --sharded).")] = 100_000,
    gzip: Annotated[bool, typer.Option("--gzip/--no-gzip", help="Compress shards (with --sharded).")] = True,
    quiet: QuietOption = False,
) -> None:
    """Build a corpus snapshot from chunker output or straight from a vector store, computing
    every id: one corpus.json, a Parquet file, or (--sharded) a streaming layout for corpora
    too big to hold in memory."""
    from goldkeeper.core.identity import FIELD_SEPARATOR

    if (chunks is None) == (store is None):
        raise UsageError("snapshot: give the chunker output (CHUNKS) or --store, one of them")
    if field and store is None:
        raise UsageError("--field: maps a vector store's fields (with --store)")
    for name, value in (("--chunker", chunker), ("--out", out)):
        if not value:
            raise UsageError(f"snapshot: {name} is required")

    if not chunker or FIELD_SEPARATOR in chunker:
        raise UsageError(f"--chunker: must be a non-empty string without U+001F (the field separator of chunk ids), "
                         f"got {chunker!r}")
    with progress(quiet=quiet):
        if store is not None:
            from goldkeeper.io.stores import FieldMap, store_chunks

            rows, source = store_chunks(store, FieldMap().with_given(field)), store
        else:
            rows, source = None, chunks or ""
        _write_snapshot(source, chunker, out, corpus_fingerprint, sharded, shard_chunks, gzip, rows)


def _write_snapshot(chunks: str, chunker: str, out: str, corpus_fingerprint: str | None, sharded: bool,
                    shard_chunks: int, gzip: bool, rows: Any = None) -> None:
    """``chunks`` (a file's name, or a store's with its ``rows`` given) as a snapshot at ``out``."""
    from goldkeeper.core.jsonl import decode_jsonl
    from goldkeeper.io import parquet
    from goldkeeper.io.files import iter_lines

    source = source_name(chunks)
    from_store, table = rows is not None, rows is None and parquet.is_parquet(chunks)
    if table:
        rows = ((done + n, row) for done, block in parquet.parquet_rows(chunks) for n, row in enumerate(block, 1))
    elif not from_store:
        rows = decode_jsonl(iter_lines(chunks), source)
    if sharded and out.endswith(".parquet"):
        raise UsageError("--sharded writes a directory of gzip JSONL shards; a Parquet snapshot is one file")
    if sharded:
        from goldkeeper.io.snapshots import write_sharded_snapshot

        manifest = write_sharded_snapshot(out, rows, chunker, corpus_fingerprint, shard_chunks=shard_chunks,
                                          compress=gzip, source=source, numbered=True)
        counts = manifest["counts"]
        sys.stdout.write(f"wrote {out}/manifest.json: {counts['chunks']} chunks of {counts['documents']} "
                         f"documents in {counts['shards']} shard(s)\n")
        return
    from goldkeeper.core.drift import build_snapshot
    from goldkeeper.io.snapshots import write_snapshot_document

    try:
        built = build_snapshot(rows, chunker, corpus_fingerprint, source, numbered=True)
    except InputError as error:
        if from_store:  # a store's: its chunk in the store's order, and the field
            raise parquet.at_row(error, unit="chunk", part="field") from None
        raise (parquet.at_row(error) if table else error) from None
    write_snapshot_document(out, built)
    sys.stdout.write(f"wrote {out}: {len(built['chunks'])} chunks of "
                     f"{len({c['doc_uri'] for c in built['chunks']})} documents\n")


queue_app = typer.Typer(help="The re-judgment queue: answers from people, merged into the judgments.",
                        no_args_is_help=True)
app.add_typer(queue_app, name="queue")


@queue_app.command("apply")
def queue_apply(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL the queue was made from (fixed or not).")],
    queue: Annotated[str, typer.Option("--queue", "-q", help="The queue JSONL written by drift --queue.")],
    answers: Annotated[str, typer.Option("--answers", "-a", help="Answers JSONL: {item_id, chunk_id or \"none\", relevance, labeled_by, labeled_at}.")],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help="The live snapshot the answers chose chunks from.")],
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="Write here instead of rewriting --judgments.")] = None,
    quiet: QuietOption = False,
) -> None:
    """Merge people's answers into the judgments, canonically and atomically (spec/drift.md)."""
    if judgments == "-" and not out:
        raise UsageError("--judgments on stdin needs --out")
    with progress(quiet=quiet):
        _apply(judgments, queue, answers, corpus, out)


def _apply(judgments: str, queue: str, answers: str, corpus: str, out: str | None) -> None:
    from goldkeeper.core.jsonl import decode_jsonl
    from goldkeeper.core.judgments import dump_rows
    from goldkeeper.core.rejudge import Waiting, apply_answers, check_answers, pending_items
    from goldkeeper.io.files import iter_lines, write_bytes_atomic
    from goldkeeper.io.loading import load_label_rows
    from goldkeeper.io.snapshots import open_corpus
    from goldkeeper.io.storage import read_queue

    rows, judgments_sha = load_label_rows(judgments, "jsonl")
    items = {item["item_id"]: item for item in read_queue(queue)}
    snapshot = open_corpus(corpus)
    answer_source = source_name(answers)
    answer_rows = list(decode_jsonl(iter_lines(answers), answer_source, allow_empty=True))
    wanted = {a.get("chunk_id") for _, a in answer_rows if isinstance(a, dict)}
    live = {chunk.chunk_id: chunk for chunk in snapshot if chunk.chunk_id in wanted}
    by_item = check_answers(answer_rows, items, live, answer_source)
    applied = apply_answers(rows, by_item, items, live, snapshot.corpus_fingerprint, answer_source)
    if applied.replaced or applied.removed or out:
        write_bytes_atomic(out or judgments, b"".join(dump_rows(applied.judgments)),
                           unchanged=None if out else judgments_sha)
    sys.stdout.write(f"{applied.replaced} label(s) re-judged, {applied.removed} removed (answered none), "
                     f"{applied.already_applied} answer(s) already applied; now "
                     f"{Waiting.of(pending_items(items.values(), applied.judgments))}; judgments in {out or judgments}\n")


