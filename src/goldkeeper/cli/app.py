"""The ``goldkeeper`` command's app: the typer application every command registers on,
the options and printers they share, and ``main``.

Every command shares one contract: text for people on stdout, or ``--format json`` for
machines (stdout then holds only JSON, messages go to stderr); and one set of exit codes
(``goldkeeper.errors``). Malformed input is reported as one line on stderr, ``error:
<file>:<line>: <field>: <what is wrong>, got <what was found>``, never as a traceback. Only
the subcommands that run flows import prefect, and only when they run.
"""

from __future__ import annotations

import gc
import json
import math
import os
import sys
from enum import Enum
from typing import Annotated, Any, NoReturn

import typer

from goldkeeper._version import __version__
from goldkeeper.errors import EXIT_OK, EXIT_USAGE, UsageError, exit_with, fail, guarded, interrupted
from goldkeeper.models.records import MAX_RELEVANCE

__all__ = [
    "GATE_HELP",
    "THRESHOLD_HELP",
    "FormatOption",
    "LabelsFormat",
    "OutputFormat",
    "QuietOption",
    "ReportFormat",
    "ThresholdOption",
    "app",
    "emit_json",
    "finite",
    "help_",
    "main",
    "parse_cutoffs",
    "positive",
    "probability",
    "progress",
    "quiet_prefect",
    "share",
    "use_prefect",
]

app = typer.Typer(
    name="goldkeeper",
    help="Keep a RAG retrieval test suite true across re-chunks, and gate on it honestly.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


#: When each command exits 1, its check having failed (retrieval-eval's convention: every
#: command's --help ends with its exit codes). Every command exits 0 when it did its job, 2 on
#: bad usage or input and 3 on an internal error; the others never exit 1.
EXIT_ONE = {
    "drift": "the share of labels that no longer match (without --fix) or that still need a person (with it) "
             "exceeds --max-invalid",
    "judge": "pairs were asked and none was graded",
    "validate": "the judgments have an error",
    "score": "a gate FAILs or is INDETERMINATE",
    "eval": "a run does not PASS (more errors than --max-errors included)",
    "audit": "the lift is unresolvable: no outcome on that many queries could be significant",
    "agreement": "no pair has both a judge's and a person's label",
    "calibrate": "coverage or risk is not certified, or the abstention threshold is degenerate",
}


def exit_codes(command: str) -> str:
    """The "Exit codes" section of a command's --help (click keeps a paragraph after \\b as written)."""
    lines = ["\b", "Exit codes:", "  0  done" + (" (and the check passed)" if command in EXIT_ONE else "")]
    if command in EXIT_ONE:
        lines.append(f"  1  {EXIT_ONE[command]}")
    lines += ["  2  bad usage or input: one line naming the option, or the file, line and field",
              "  3  an internal error (a goldkeeper bug; GOLDKEEPER_DEBUG=1 shows the traceback)"]
    return "\n".join(lines)


def add_exit_codes(application: typer.Typer, prefix: str = "") -> None:
    """Give every command of ``application`` (and of its groups) its "Exit codes" section."""
    for info in application.registered_commands:
        name = info.name or (info.callback.__name__.rstrip("_").replace("_", "-") if info.callback else "")
        info.epilog = exit_codes(f"{prefix}{name}")
    for group in application.registered_groups:
        if group.typer_instance is not None:
            add_exit_codes(group.typer_instance, f"{prefix}{group.name} ")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


class LabelsFormat(str, Enum):
    jsonl = "jsonl"
    json = "json"
    trec = "trec"
    beir = "beir"
    gold = "gold"
    parquet = "parquet"


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", help="text for people, json for machines.")
]


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"goldkeeper {__version__}\n")
        raise typer.Exit(EXIT_OK)


def help_(
    command: Annotated[list[str], typer.Argument(help="A command, e.g. drift or 'queue apply'.", show_default=False)] = [],  # noqa: B006
) -> None:
    """Show the help of goldkeeper, or of one command. (Registered last, in goldkeeper.cli, so
    that `goldkeeper --help` lists it after the commands it explains.)"""
    group = typer.main.get_command(app)
    context = group.make_context("goldkeeper", [], resilient_parsing=True)
    found: Any = group
    for name in command:
        # a group (typer's own click) answers get_command; a plain command has no subcommands
        sub = found.get_command(context, name) if hasattr(found, "get_command") else None
        if sub is None:
            from goldkeeper.core.metric_ids import suggest

            choices = tuple(found.list_commands(context)) if hasattr(found, "list_commands") else ()
            raise UsageError(f"help: no command '{' '.join(command)}'{suggest(name, choices)}")
        context = sub.make_context(name, [], parent=context, resilient_parsing=True)
        found = sub
    sys.stdout.write(found.get_help(context) + "\n")


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


def emit_json(payload: Any, *, large: bool = False) -> None:
    if large:
        # Per-label output (drift): orjson is several times faster. Its layout is json.dumps'
        # with indent=2; only exponents differ (1e-7 for 1e-07), and drift prints none.
        import orjson

        sys.stdout.flush()
        sys.stdout.buffer.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
        return
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


def _number_check(test: Any, wanted: str) -> Any:
    """An option callback refusing a number outside ``test`` (NaN and infinities always: no
    comparison refuses NaN by itself, so every range is checked here, in one place)."""

    def check(value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and test(value)):
            raise typer.BadParameter(f"must be {wanted}, got {value}")
        return value

    return check


#: Option callbacks for numbers: a level or rate strictly between 0 and 1 (alpha, confidence,
#: power, delta); a share from 0 to 1 (tolerated failures); a positive amount (an sd, a
#: temperature, seconds); any finite number.
probability = _number_check(lambda v: 0 < v < 1, "between 0 and 1, exclusive")
share = _number_check(lambda v: 0 <= v <= 1, "from 0 to 1")
positive = _number_check(lambda v: v > 0, "a finite number above 0")
finite = _number_check(lambda v: True, "a finite number")
#: An interval's width, a share above 0 (an audit sized for width 0 would ask everyone).
width = _number_check(lambda v: 0 < v <= 1, "above 0 and at most 1")
#: Cohen's kappa, from -1 to 1.
kappa = _number_check(lambda v: -1 <= v <= 1, "a kappa from -1 to 1")
#: A number of queries an interval or a test is computed from: one says nothing.
queries = _number_check(lambda v: v >= 2, "at least 2 queries (an interval from one query says nothing)")


#: The largest values counts and seeds take: beyond them a value is a typo, not a plan (a
#: bootstrap of 10^40 resamples would never end; a seed must fit the 64-bit JSON it is
#: recorded in).
MAX_SEED = 2**32 - 1
MAX_RESAMPLES = 1_000_000
MAX_CONCURRENCY = 1024
MAX_RETRIES = 100
MAX_SHARD_CHUNKS = 100_000_000

THRESHOLD_HELP = "Lowest grade that counts as relevant."
#: ``--threshold``: from 1 (below it every judged pair, a grade 0 too, would be relevant, and
#: recall, kappa or a certificate would mean nothing) to the largest grade a label may carry.
ThresholdOption = Annotated[int, typer.Option(
    "--threshold", help=THRESHOLD_HELP, callback=_number_check(lambda v: 1 <= v <= MAX_RELEVANCE,
                                                               f"a grade from 1 to {MAX_RELEVANCE}"))]
GATE_HELP = ("A gate, repeatable: recall@5:0.8 (at least), ndcg@10:-0.02 (a drop from --baseline of at "
             "most 0.02), worst-stratum:recall@5:0.5, recall@5:ci-lower:0.6, ndcg@10:regression, "
             "recall@5:sequential:0.8, coverage:0.95, drift:0.05 (spec/metrics.md).")


QuietOption = Annotated[bool, typer.Option("--quiet", help="No progress bar on stderr.")]


class progress:
    """Progress on stderr while a command works: a bar for each file being read (bytes, rate
    and time left, from the file's size, compressed or not, local or remote), and, given
    ``what``, one for the steps counted by the callback it returns (with ``total``: a count,
    a rate and time left). Only when stderr is a terminal and the command is not ``quiet``
    (``--quiet``, ``--format json``); else it shows nothing and returns None."""

    def __init__(self, what: str | None = None, total: int | None = None, *, quiet: bool = False) -> None:
        self.what, self.total, self.quiet, self.bar, self.watch = what, total, quiet, None, None

    def __enter__(self):
        if self.quiet or not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        from goldkeeper.io.files import watching

        console = Console(stderr=True, force_terminal=True)  # stderr is a terminal: checked above
        self.bar = bar = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                  TextColumn("{task.fields[done]}"), TextColumn("{task.fields[speed]}"),
                                  TimeRemainingColumn(), console=console, transient=True)
        size, speed, count = DownloadColumn(), TransferSpeedColumn(), MofNCompleteColumn()
        bar.start()
        reads: dict[str, int] = {}

        def file_opened(url: str, total: int | None) -> Any:
            reads[url] = reads.get(url, 0) + 1
            name = url.rstrip("/").rsplit("/", 1)[-1] or url
            task = bar.add_task(f"reading {name}" + (f" (pass {reads[url]})" if reads[url] > 1 else ""),
                                total=total, done="", speed="")

            def advance(read: int | None) -> None:
                if read is None:  # the file is closed: show it read, once, then make room
                    bar.refresh()
                    bar.remove_task(task)
                    return
                bar.advance(task, read)
                shown = bar.tasks[bar.task_ids.index(task)]
                bar.update(task, done=size.render(shown).plain, speed=speed.render(shown).plain)
            bar.refresh()
            return advance

        self.watch = watching(file_opened)
        self.watch.__enter__()
        if self.what is None:
            return None
        return _Counter(bar, bar.add_task(self.what, total=self.total, done="", speed=""), count)

    def __exit__(self, *exc: object) -> None:
        if self.watch is not None:
            self.watch.__exit__(*exc)
        if self.bar is not None:
            self.bar.stop()


class _Counter:
    """``progress``'s counted steps: call it with the number done so far; ``expect(total)``
    once the total is known (a snapshot's chunk count, read from its manifest)."""

    def __init__(self, bar: Any, task: Any, column: Any) -> None:
        self.bar, self.task, self.column, self.total = bar, task, column, None

    def expect(self, total: int | None) -> None:
        self.total = total
        self.bar.update(self.task, total=total)

    def __call__(self, done: int) -> None:
        bar, task = self.bar, self.task
        bar.update(task, completed=done)
        shown = bar.tasks[bar.task_ids.index(task)]
        per_second = shown.speed
        bar.update(task, done=self.column.render(shown).plain if shown.total else f"{done:,}",
                   speed=f"{per_second:,.0f}/s" if per_second else "")


def quiet_prefect() -> None:
    """Nothing leaves the machine from goldkeeper's own commands: Prefect's telemetry and the
    server's analytics are off unless the user turned them on explicitly. And a temporary
    server (no API URL configured, as on a fresh machine) gets 120 s to start, not Prefect's
    20: on a busy 2-core machine `demo` failed with exit 3 waiting for it."""
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def use_prefect() -> None:
    """Before a command talks to Prefect: ``quiet_prefect``, then, when an API is configured,
    one request to its health route, so that a server nobody runs is said in one line (exit 2)
    rather than as a connection error deep in Prefect's client, or an event sent nowhere
    while the command reports success. Any HTTP answer (401 from Prefect Cloud without a key
    included) means the server is there."""
    quiet_prefect()
    import httpx
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        return
    try:
        httpx.get(f"{url.rstrip('/')}/health", timeout=10)
    except httpx.HTTPError as error:
        raise UsageError(f"cannot reach the Prefect API at {url} ({type(error).__name__}: {error})",
                         hint="start it (prefect server start), or unset PREFECT_API_URL to run on a temporary "
                              "local server") from None


def parse_cutoffs(values: list[str]) -> list[int]:
    from goldkeeper.core.metric_ids import MAX_CUTOFF

    ks: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            # isdigit alone takes '²' and other digits int() refuses
            if not (part.isascii() and part.isdigit()) or not 1 <= int(part) <= MAX_CUTOFF:
                raise UsageError(f"-k: every cutoff must be a whole number from 1 to {MAX_CUTOFF:,}, got '{part}'")
            ks.append(int(part))
    return list(dict.fromkeys(ks))


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the command line and exit with its exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    # Commands build hundreds of thousands of acyclic containers (parsed JSON, chunks, label
    # rows) at once, and none of them is garbage until the command ends: the collector's
    # young generation would walk them every 700 allocations. What is alive after the
    # imports leaves its sight, and it runs a hundred times less often.
    gc.freeze()
    gc.set_threshold(100_000, 20, 20)
    if not args:
        # A bare invocation gets the help, on stdout, but is still not a successful command.
        try:
            app(args=["--help"], prog_name="goldkeeper", standalone_mode=False)
        finally:
            exit_with(EXIT_USAGE)
    guarded(lambda: _through_typer(_bare_gate(_habits(_utf8(args)))))


#: ``--color``'s words, as retrieval-eval's CLI has them.
COLORS = ("auto", "always", "never")


def _habits(args: list[str]) -> list[str]:
    """Two global options of the reference CLI, allowed anywhere before ``--``: ``--json`` is
    ``--format json`` on the command, and ``--color auto|always|never`` sets the environment
    rich reads (``NO_COLOR``, honoured as it is under ``auto``; ``FORCE_COLOR``;
    ``TTY_COMPATIBLE``). Progress bars on a terminal stay, without colour under ``never``."""
    end = args.index("--") if "--" in args else len(args)
    kept: list[str] = []
    wants_json = False
    position = 0
    while position < end:
        arg = args[position]
        position += 1
        if arg == "--json":
            wants_json = True
        elif arg == "--color" or arg.startswith("--color="):
            if arg == "--color":
                if position >= end:
                    raise UsageError(f"--color: needs one of {', '.join(COLORS)}")
                when, position = args[position], position + 1
            else:
                when = arg.partition("=")[2]
            if when not in COLORS:
                raise UsageError(f"--color: must be one of {', '.join(COLORS)}, got '{when}'")
            if when == "never":  # no colour, and no bold or dim either (NO_COLOR alone keeps those)
                os.environ.pop("FORCE_COLOR", None)
                os.environ.update(NO_COLOR="1", TTY_COMPATIBLE="0")
            elif when == "always":
                os.environ.pop("NO_COLOR", None)
                os.environ.update(FORCE_COLOR="1", TTY_COMPATIBLE="1")
        else:
            kept.append(arg)
    return kept + (["--format", "json"] if wants_json else []) + args[end:]


def _bare_gate(args: list[str]) -> list[str]:
    """rag-eval-gate's ``eval --gate`` is a flag (gate on its thresholds), goldkeeper's ``--gate``
    takes an expression: on ``eval``, a ``--gate`` followed by an option or by nothing is the
    flag, passed on as ``--gate=`` (an empty expression) for the command to read."""
    if not args or args[0] != "eval":
        return args
    end = args.index("--") if "--" in args else len(args)
    return [("--gate=" if arg == "--gate" and (position + 1 >= end or args[position + 1].startswith("-")) else arg)
            if position < end else arg for position, arg in enumerate(args)]


def _utf8(args: list[str]) -> list[str]:
    """The arguments, each checked to be UTF-8: Python hands undecodable bytes on as lone
    surrogates, which nothing goldkeeper writes (JSON, reports, ids) could hold."""
    for index, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as error:
            bad = arg[error.start].encode("utf-8", "surrogateescape")
            where, start = _named(args, index)
            raise UsageError(f"{where} is not valid UTF-8 (byte 0x{bad[0]:02X} at character "
                             f"{error.start - start + 1}); goldkeeper reads UTF-8 arguments") from None
    return args


def _named(args: list[str], index: int) -> tuple[str, int]:
    """An argument as the user knows it, and where its value starts in it: the option it
    gives a value to (``--url-template=VALUE``, or ``--url-template VALUE``), else its position."""
    arg = args[index]
    if arg.startswith("--") and "=" in arg:
        option = arg.split("=", 1)[0]
        return f"{option}: its value", len(option) + 1
    before = args[index - 1] if index else ""
    if before.startswith("-") and before != "--" and "=" not in before and "--" not in args[:index]:
        return f"{before}: its value", 0
    return f"argument {index + 1}", 0


#: What typer returns for an interrupt inside a command (``typer.core``: ``Exit(130)``); no
#: goldkeeper command exits with it.
_TYPER_INTERRUPTED = 130


def _through_typer(args: list[str]) -> int:
    try:
        # Without standalone mode, typer returns the code of a command's ``typer.Exit``.
        code = app(args=args, prog_name="goldkeeper", standalone_mode=False)
    except typer.Exit as done:
        code = done.exit_code
    except typer.Abort:  # click's word for an end of input at a prompt (no command prompts)
        interrupted()
    except typer.TyperException as error:  # typer's (vendored click's) usage errors
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        fail(f"error: {message}", EXIT_USAGE)
    if code == _TYPER_INTERRUPTED:  # silent there: said here as on every other path
        interrupted()
    return code if isinstance(code, int) else EXIT_OK

