"""``validate``, ``convert``, ``id`` and ``example``: judgments as files, and chunk identity."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from goldkeeper.cli.app import FormatOption, LabelsFormat, OutputFormat, QuietOption, app, emit_json, progress
from goldkeeper.errors import EXIT_FAILED, EXIT_OK, UsageError
from goldkeeper.io.files import decode_utf8, source_name


class ConvertTarget(str, Enum):
    judgments = "judgments"
    qrels = "qrels"
    qrels_json = "qrels-json"
    trec_run = "trec-run"
    run = "run"
    run_json = "run-json"
    snapshot = "snapshot"
    report = "report"


@app.command()
def validate(
    file: Annotated[Optional[str], typer.Argument(help="Judgments JSONL: a path, an fsspec URL, or - for stdin.",
                                                  show_default=False)] = None,
    judgments: Annotated[Optional[str], typer.Option("--judgments", "-j", help="The same file, named as retrieval-eval names it.")] = None,
    output: FormatOption = OutputFormat.text,
    quiet: QuietOption = False,
) -> None:
    """Check a judgments file: types, duplicates, provenance, strata."""
    from goldkeeper.io.loading import validate_url

    if (file is None) == (judgments is None):
        raise UsageError("validate: name the judgments once, as an argument or as --judgments")
    file = file or judgments or ""

    with progress(quiet=quiet or output is OutputFormat.json):
        result = validate_url(file)
    if output is OutputFormat.json:
        payload = {"source": source_name(file), "ok": result.ok}
        payload.update(result.to_dict())
        emit_json(payload)
    else:
        from goldkeeper.render import print_validation

        print_validation(source_name(file), result)
    raise typer.Exit(EXIT_OK if result.ok else EXIT_FAILED)


def _with_spans(labels: list[Any], corpus: str, source: str) -> list[Any]:
    """``convert --corpus``: the labels with the spans of the chunks they judged."""
    from goldkeeper.core.spans import derive_spans, document_texts
    from goldkeeper.io.snapshots import open_corpus
    from goldkeeper.models.judgment import Judgment

    rows = [label.canonical_dict() for label in labels]
    ids = {row["chunk_id"] for row in rows if row.get("chunk_id")}
    chunks = {chunk.chunk_id: chunk for chunk in open_corpus(corpus, stream=True) if chunk.chunk_id in ids}
    documents = document_texts(open_corpus(corpus, stream=True), {chunk.doc_uri for chunk in chunks.values()})
    rows, derived = derive_spans(rows, chunks, documents)
    missing = sum(1 for row in rows if row.get("span") is None)
    sys.stderr.write(f"{source}: {derived} of {len(rows)} label(s) gained the span of the chunk they judged"
                     + (f"; {missing} have none (no chunk_id, or their chunk is not in {source_name(corpus)} "
                        "with offsets)" if missing else "") + "\n")
    return [Judgment.model_construct(**row) for row in rows]


@app.command()
def convert(
    to: Annotated[ConvertTarget, typer.Option("--to", help="What to write.")],
    file: Annotated[Optional[str], typer.Argument(help="Input: a path, an fsspec URL, or - for stdin.",
                                                  show_default=False)] = None,
    judgments: Annotated[Optional[str], typer.Option("--judgments", "-j", help="The same input, named as retrieval-eval names it.")] = None,
    from_: Annotated[
        Optional[LabelsFormat],
        typer.Option("--from", help="Input format; guessed from the name and content if omitted."),
    ] = None,
    out: Annotated[
        Optional[str], typer.Option("--out", "-o", help="Write here (atomically) instead of stdout; a name ending .parquet writes judgments, a run, a snapshot or a report as Parquet.")
    ] = None,
    as_chunk_ids: Annotated[
        bool, typer.Option("--as-chunk-ids", help="Read the qrels doc column as chunk ids.")
    ] = False,
    tag: Annotated[str, typer.Option("--tag", help="Run tag for trec-run output.")] = "goldkeeper",
    queries_file: Annotated[Optional[str], typer.Option(
        "--queries-file", help="Query texts for qrels (BEIR's queries.jsonl, or query_id/query lines).")] = None,
    corpus: Annotated[Optional[str], typer.Option(
        "--corpus", help="--to judgments: the snapshot the labels were judged on; each chunk label whose chunk it "
        "holds with offsets gains that chunk's span (spec/spans.md).")] = None,
    quiet: QuietOption = False,
) -> None:
    """Convert between judgments JSONL, TREC qrels, BEIR TSV, nested JSON qrels and runs
    ({query: {doc: grade or score}}), run JSONL and TREC runs, and Parquet; and between a
    snapshot's forms (--to snapshot: corpus.json, sharded, Parquet), and a report's (--to report:
    JSON, or Parquet, its per-query table)."""
    if (file is None) == (judgments is None):
        raise UsageError("convert: name the input once, as an argument or as --judgments")
    if to is ConvertTarget.snapshot:
        from goldkeeper.io.snapshots import snapshot_document, write_snapshot_document

        if not out:
            raise UsageError("--to snapshot: give --out corpus.json or NAME.parquet")
        with progress(quiet=quiet):
            write_snapshot_document(out, snapshot_document(file or judgments or ""))
        return
    if to is ConvertTarget.report:
        from goldkeeper.io.loading import read_report, write_report

        write_report(out or "-", read_report(file or judgments or "", check=True))
        return
    if corpus is not None and to is not ConvertTarget.judgments:
        raise UsageError("--corpus: derives span labels, so it writes judgments (--to judgments)")
    file = file or judgments or ""
    from goldkeeper.core import nested, qrels, runs
    from goldkeeper.core.judgments import dump_judgments
    from goldkeeper.io.files import read_bytes, write_bytes_atomic
    from goldkeeper.io.loading import parse_gold_data, parse_labels, parse_run_data, run_kind, with_queries

    source = source_name(file)
    parquet_out = out is not None and out.endswith(".parquet")
    if parquet_out and to not in (ConvertTarget.judgments, ConvertTarget.run):
        raise UsageError(f"--out {out}: Parquet holds judgments, a run, a snapshot or a report (--to judgments, "
                         f"run, snapshot or report), not --to {to.value}")
    with progress(quiet=quiet):
        data = read_bytes(file)
    if to in (ConvertTarget.judgments, ConvertTarget.qrels, ConvertTarget.qrels_json):
        from goldkeeper.io.parquet import MAGIC

        kind = from_.value if from_ else "parquet" if data.startswith(MAGIC) else qrels.detect_labels_format(
            data[:4096].decode("utf-8", "replace"), file)
        if kind == "gold":
            labels, derived = parse_gold_data(data, source)
            if derived:
                sys.stderr.write(f"note: {derived} query id(s) derived from the query text ('gq:' and 12 hex digits "
                                 "of its sha256); give a line query_id to choose one\n")
        else:
            labels = parse_labels(data, source, kind, as_chunk_ids=as_chunk_ids)
        if queries_file is not None:
            from goldkeeper.models.judgment import Judgment

            labels = [Judgment.model_construct(**row) for row in with_queries([j.__dict__ for j in labels], queries_file)]
        if corpus is not None:
            labels = _with_spans(labels, corpus, source)
        if parquet_out:
            from goldkeeper.io.parquet import write_parquet

            write_parquet(out or "", "judgments", (label.canonical_dict() for label in labels))
            return
        write = {ConvertTarget.judgments: dump_judgments, ConvertTarget.qrels: qrels.to_qrels,
                 ConvertTarget.qrels_json: nested.to_nested_qrels}[to]
        text = write(labels) if to is ConvertTarget.judgments else write(labels, source)
    else:
        if from_ in (LabelsFormat.beir, LabelsFormat.gold):
            raise UsageError(f"--from {from_.value} is a labels format; a run is jsonl, json or trec")
        if queries_file is not None:
            raise UsageError("--queries-file gives labels their query texts; a run has none")
        entries = parse_run_data(data, source, run_kind(file, from_.value if from_ else None, data))
        if parquet_out:
            from goldkeeper.io.parquet import write_parquet

            write_parquet(out or "", "run", (entry.model_dump(exclude_none=True) for entry in entries))
            return
        if to is ConvertTarget.trec_run:
            text = qrels.to_trec_run(entries, tag, source)
        else:
            text = runs.dump_run(entries) if to is ConvertTarget.run else nested.to_nested_run(entries, source)
    write_bytes_atomic(out or "-", text.encode("utf-8"))


@app.command()
def example(
    directory: Annotated[str, typer.Argument(help="The local folder to write the example files in.")] = "goldkeeper-example",
) -> None:
    """Write the example shipped inside the package (judgments, a run, a corpus snapshot)."""
    from importlib import resources
    from pathlib import Path

    from goldkeeper.io.files import is_local, local_path, write_bytes_atomic

    if not is_local(directory):
        raise UsageError(f"DIRECTORY: a local folder for the example, got the URL {directory}",
                         hint="write it here, then copy it where you like")
    target = Path(local_path(directory))
    if target.exists() and not target.is_dir():
        raise UsageError(f"{directory}: exists and is not a directory")
    files = {name: (resources.files("goldkeeper.examples") / name).read_bytes()
             for name in ("judgments.jsonl", "run.jsonl", "corpus.json")}
    for name, data in files.items():
        path = target / name
        if path.exists() and path.read_bytes() != data:
            raise UsageError(f"{path}: exists with other content; not overwriting it")
    target.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        write_bytes_atomic(str(target / name), data)
    sys.stdout.write(
        f"wrote {target}/judgments.jsonl, run.jsonl and corpus.json\n"
        f"next: goldkeeper validate {target}/judgments.jsonl\n"
        f"      goldkeeper score --judgments {target}/judgments.jsonl --run {target}/run.jsonl -k 1,5\n"
        f"      goldkeeper drift --judgments {target}/judgments.jsonl --corpus {target}/corpus.json\n"
    )


@app.command("id")
def id_(
    text: Annotated[str, typer.Option("--text", help="The chunk text ('-' reads it from stdin).")],
    doc_uri: Annotated[Optional[str], typer.Option("--doc-uri", help="The chunk's document URI.")] = None,
    doc_revision: Annotated[Optional[str], typer.Option("--doc-revision", help="The document's revision (etag).")] = None,
    ordinal: Annotated[Optional[int], typer.Option("--ordinal", min=0, help="The chunk's position in it, from 0.")] = None,
    chunker: Annotated[Optional[str], typer.Option("--chunker", help="Chunker fingerprint.")] = None,
    output: FormatOption = OutputFormat.text,
) -> None:
    """Compute normalize(text), its text_sha and, given all four chunk fields, its chunk_id."""
    from goldkeeper.core.identity import chunk_id, normalize, text_sha

    if text == "-":
        text = decode_utf8(sys.stdin.buffer.read(), "<stdin>")
    fields = (doc_uri, doc_revision, ordinal, chunker)
    if any(f is not None for f in fields) and any(f is None for f in fields):
        raise UsageError(
            "a chunk_id needs all of --doc-uri, --doc-revision, --ordinal and --chunker"
        )
    payload: dict[str, Any] = {"normalized": normalize(text), "text_sha": text_sha(text)}
    if ordinal is not None:
        try:
            payload["chunk_id"] = chunk_id(doc_uri, doc_revision, ordinal, text, chunker)  # type: ignore[arg-type]
        except ValueError as error:
            raise UsageError(str(error)) from None
    if output is OutputFormat.json:
        emit_json(payload)
    else:
        sys.stdout.write(f"text_sha  {payload['text_sha']}\n")
        if "chunk_id" in payload:
            sys.stdout.write(f"chunk_id  {payload['chunk_id']}\n")


