"""The ``goldkeeper`` command.

Every command shares one contract: text for people on stdout, or ``--format json`` for
machines (stdout then holds only JSON, messages go to stderr); and one set of exit codes:

    0  ok                 1  a check failed (validation errors, a failed or undecided gate)
    2  bad usage or input 3  internal error, so a crash never reads as a failed gate

Malformed input is reported as one line on stderr, ``error: <file>:<line>: <field>: <what is
wrong>, got <what was found>``, never as a traceback. Only the subcommands that run flows
import prefect, and only when they run, so validation and scoring start fast.
"""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from typing import Annotated, Any, NoReturn, Optional

import typer

from goldkeeper._version import __version__
from goldkeeper.errors import GoldkeeperError, UsageError

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "app", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

app = typer.Typer(
    name="goldkeeper",
    help="Keep a RAG retrieval test suite true across re-chunks, and gate on it honestly.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


class LabelsFormat(str, Enum):
    jsonl = "jsonl"
    trec = "trec"
    beir = "beir"


class ConvertTarget(str, Enum):
    judgments = "judgments"
    qrels = "qrels"
    trec_run = "trec-run"
    run = "run"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", help="text for people, json for machines.")
]


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"goldkeeper {__version__}\n")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Keep a RAG retrieval test suite true across re-chunks, and gate on it honestly."""


def _emit_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


def _source_name(url: str) -> str:
    return "<stdin>" if url == "-" else url


@app.command()
def validate(
    file: Annotated[str, typer.Argument(help="Judgments JSONL: a path, an fsspec URL, or - for stdin.")],
    output: FormatOption = OutputFormat.text,
) -> None:
    """Check a judgments file: types, duplicates, provenance, strata. Exit 1 on any error."""
    from goldkeeper.io.scan import validate_url

    result = validate_url(file)
    if output is OutputFormat.json:
        payload = {"source": _source_name(file), "ok": result.ok}
        payload.update(result.model_dump())
        _emit_json(payload)
    else:
        from goldkeeper.render import print_validation

        print_validation(_source_name(file), result)
    raise typer.Exit(EXIT_OK if result.ok else EXIT_FAILED)


@app.command()
def convert(
    file: Annotated[str, typer.Argument(help="Input: a path, an fsspec URL, or - for stdin.")],
    to: Annotated[ConvertTarget, typer.Option("--to", help="What to write.")],
    from_: Annotated[
        Optional[LabelsFormat],
        typer.Option("--from", help="Input format; guessed from the name and content if omitted."),
    ] = None,
    out: Annotated[
        Optional[str], typer.Option("--out", "-o", help="Write here (atomically) instead of stdout.")
    ] = None,
    as_chunk_ids: Annotated[
        bool, typer.Option("--as-chunk-ids", help="Read the qrels doc column as chunk ids.")
    ] = False,
    tag: Annotated[str, typer.Option("--tag", help="Run tag for trec-run output.")] = "goldkeeper",
) -> None:
    """Convert between judgments JSONL, TREC qrels, BEIR TSV, run JSONL and TREC runs."""
    from goldkeeper.core import qrels, runs
    from goldkeeper.core.judgments import dump_judgments, parse_judgments
    from goldkeeper.io.files import read_bytes, write_bytes_atomic

    source = _source_name(file)
    data = read_bytes(file)
    if to in (ConvertTarget.judgments, ConvertTarget.qrels):
        kind = from_.value if from_ else qrels.detect_labels_format(_decode(data, source), file)
        if kind == "jsonl":
            if as_chunk_ids:
                raise UsageError("--as-chunk-ids applies to qrels input, not judgments JSONL")
            labels = parse_judgments(data, source)
        elif kind == "trec":
            labels = qrels.parse_trec_qrels(_decode(data, source), source, as_chunk_ids=as_chunk_ids)
        else:
            labels = qrels.parse_beir_tsv(_decode(data, source), source, as_chunk_ids=as_chunk_ids)
        text = dump_judgments(labels) if to is ConvertTarget.judgments else qrels.to_qrels(labels, source)
    else:
        if from_ is LabelsFormat.beir:
            raise UsageError("--from beir is a qrels format; a run is jsonl or trec")
        decoded = _decode(data, source)
        kind = from_.value if from_ else ("jsonl" if decoded.lstrip().startswith("{") else "trec")
        entries = runs.parse_run(data, source) if kind == "jsonl" else qrels.parse_trec_run(decoded, source)
        text = qrels.to_trec_run(entries, tag, source) if to is ConvertTarget.trec_run else runs.dump_run(entries)
    write_bytes_atomic(out or "-", text.encode("utf-8"))


@app.command()
def example(
    directory: Annotated[str, typer.Argument(help="Where to write the example files.")] = "goldkeeper-example",
) -> None:
    """Write the example shipped inside the package (judgments, a run, a corpus snapshot)."""
    from importlib import resources
    from pathlib import Path

    from goldkeeper.io.files import write_bytes_atomic

    target = Path(directory)
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
    )


@app.command("id")
def id_(
    text: Annotated[str, typer.Option("--text", help="The chunk text ('-' reads it from stdin).")],
    doc_uri: Annotated[Optional[str], typer.Option("--doc-uri")] = None,
    doc_revision: Annotated[Optional[str], typer.Option("--doc-revision")] = None,
    ordinal: Annotated[Optional[int], typer.Option("--ordinal", min=0)] = None,
    chunker: Annotated[Optional[str], typer.Option("--chunker", help="Chunker fingerprint.")] = None,
    output: FormatOption = OutputFormat.text,
) -> None:
    """Compute normalize(text), its text_sha and, given all four chunk fields, its chunk_id."""
    from goldkeeper.core.identity import chunk_id, normalize, text_sha

    if text == "-":
        text = _decode(sys.stdin.buffer.read(), "<stdin>")
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
        _emit_json(payload)
    else:
        sys.stdout.write(f"text_sha  {payload['text_sha']}\n")
        if "chunk_id" in payload:
            sys.stdout.write(f"chunk_id  {payload['chunk_id']}\n")


def _decode(data: bytes, source: str) -> str:
    from goldkeeper.errors import InputError

    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(
            source, "not valid UTF-8", line=line, field="encoding",
            found=f"byte 0x{data[error.start]:02X}",
        ) from None


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(message.replace("\n", " ") + "\n")
    raise SystemExit(code)


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the command line and exit with its exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        # A bare invocation gets the help, on stdout, but is still not a successful command.
        try:
            app(args=["--help"], prog_name="goldkeeper", standalone_mode=False)
        finally:
            _exit(EXIT_USAGE)
    try:
        # Without standalone mode, typer returns the code of a command's ``typer.Exit``.
        code = app(args=args, prog_name="goldkeeper", standalone_mode=False)
        _exit(code if isinstance(code, int) else EXIT_OK)
    except typer.Exit as done:
        _exit(done.exit_code)
    except typer.Abort:
        _fail("error: aborted", EXIT_USAGE)
    except typer.TyperException as error:  # typer's (vendored click's) usage errors
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        _fail(f"error: {message}", EXIT_USAGE)
    except GoldkeeperError as error:
        hint = getattr(error, "hint", None)
        _fail(f"error: {error}" + (f" (hint: {hint})" if hint else ""), error.exit_code)
    except BrokenPipeError:
        # The reader went away (``| head``); not our failure.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _exit(EXIT_OK)
    except KeyboardInterrupt:
        _fail("error: interrupted", EXIT_USAGE)
    except Exception as error:  # noqa: BLE001 - the last line of defence, exit 3
        if os.environ.get("GOLDKEEPER_DEBUG"):
            raise
        _fail(
            f"internal error: {type(error).__name__}: {error} "
            "(a goldkeeper bug; set GOLDKEEPER_DEBUG=1 for the traceback)",
            EXIT_INTERNAL,
        )


def _exit(code: int | None) -> NoReturn:
    sys.stdout.flush()
    raise SystemExit(code or 0)
