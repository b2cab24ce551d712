"""``goldkeeper score``: what the command does, apart from typer.

The command line is defined with typer in ``goldkeeper.cli``, which calls ``run_score``. But
typer's import and its building of the command took 18-19 ms before a score read a byte
(without them a 10k-query score took 0.235 s against 0.270 s, interleaved), so the console script
(``goldkeeper.launch``) first tries ``fast_options``: a ``score`` command line written with
nothing but this command's options, as ``--name value``, ``--name=value`` or ``-j value``,
and values typer would take as they are, is read here. Anything else (help, an unknown or
attached short option, a value that starts with ``-`` or that typer would convert or refuse)
returns None and goes to typer, so usage, help and every usage error stay typer's. A test
holds ``OPTIONS`` to typer's definition of the command, and both readers to the same values.
"""

from __future__ import annotations

import gc
import os
import sys
from enum import Enum
from typing import Any, NamedTuple

from goldkeeper.errors import UsageError
from goldkeeper.launch import EXIT_FAILED, EXIT_OK, hold

__all__ = ["OPTIONS", "LabelsFormat", "ReportFormat", "ScoreOptions", "bootstrap_spec", "check_bootstrap",
           "fast_options", "gates_and_cutoffs", "parse_cutoffs", "report_time", "run_score"]


class LabelsFormat(str, Enum):
    jsonl = "jsonl"
    trec = "trec"
    beir = "beir"


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


class ScoreOptions(NamedTuple):
    """``goldkeeper score``'s options, with typer's defaults (judgments and run are required)."""

    judgments: str
    run: str
    k: list[str] = []  # noqa: RUF012 - never mutated
    threshold: int = 1
    gate: list[str] = []  # noqa: RUF012 - never mutated
    baseline: str | None = None
    corpus: str | None = None
    report: str | None = None
    judgments_format: LabelsFormat | None = None
    run_format: str | None = None
    now: str | None = None
    intervals: bool = True
    confidence: float = 0.95
    resamples: int = 10_000
    seed: int = 0
    output: ReportFormat = ReportFormat.text


def _whole(value: str) -> int | None:
    return int(value) if value.isascii() and value.isdigit() else None


def _decimal(value: str) -> float | None:
    return float(value) if value.isascii() and value.replace(".", "", 1).isdigit() else None


def _choice(kind: type[Enum]) -> Any:
    return lambda value: kind._value2member_map_.get(value)


def _text(value: str) -> str:
    return value


#: Each option of ``score`` that takes a value: its names, its field, and how typer reads
#: the value (None from a reader: typer decides). ``k`` and ``gate`` repeat.
OPTIONS: dict[str, tuple[tuple[str, ...], Any]] = {
    "judgments": (("--judgments", "-j"), _text),
    "run": (("--run", "-r"), _text),
    "k": (("-k", "--k"), _text),
    "threshold": (("--threshold",), _whole),
    "gate": (("--gate",), _text),
    "baseline": (("--baseline",), _text),
    "corpus": (("--corpus",), _text),
    "report": (("--report",), _text),
    "judgments_format": (("--judgments-format",), _choice(LabelsFormat)),
    "run_format": (("--run-format",), _text),
    "now": (("--now",), _text),
    "confidence": (("--confidence",), _decimal),
    "resamples": (("--resamples",), _whole),
    "seed": (("--seed",), _whole),
    "output": (("--format",), _choice(ReportFormat)),
}
#: The flag pair, and what each sets ``intervals`` to.
SWITCHES = {"--intervals": True, "--no-intervals": False}
REPEATED = ("k", "gate")
_BY_NAME = {name: (field, read) for field, (names, read) in OPTIONS.items() for name in names}


def fast_options(args: list[str]) -> ScoreOptions | None:
    """``score``'s options from its arguments (those after ``score``) when this reader gives
    exactly what typer would, else None."""
    found: dict[str, Any] = {}
    repeated: dict[str, list[str]] = {field: [] for field in REPEATED}
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if arg in SWITCHES:
            found["intervals"] = SWITCHES[arg]
            continue
        name, equals, value = arg.partition("=")
        if not equals or not name.startswith("--"):
            name, value = arg, None
        if name not in _BY_NAME:
            return None
        if value is None:
            if position == len(args):
                return None
            value = args[position]
            position += 1
            if value.startswith("-") and value != "-":
                return None
        field, read = _BY_NAME[name]
        parsed = read(value)
        if parsed is None:
            return None
        if field in repeated:
            repeated[field].append(parsed)
        else:
            found[field] = parsed
    if "judgments" not in found or "run" not in found:
        return None
    return ScoreOptions(**found, **repeated)


def parse_cutoffs(values: list[str]) -> list[int]:
    ks: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part.isdigit() or int(part) < 1:
                raise UsageError(f"-k: every cutoff must be a positive integer, got '{part}'")
            ks.append(int(part))
    return list(dict.fromkeys(ks))


def report_time(now: str | None) -> str:
    from datetime import datetime, timezone

    if now is not None:
        text = now[:-1] + "+00:00" if now.endswith("Z") else now
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise UsageError(f"--now: must be an ISO 8601 date-time, got '{now}'") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
    elif os.environ.get("SOURCE_DATE_EPOCH"):
        raw = os.environ["SOURCE_DATE_EPOCH"]
        if not raw.isdigit():
            raise UsageError(f"SOURCE_DATE_EPOCH: must be whole seconds since 1970, got '{raw}'")
        moment = datetime.fromtimestamp(int(raw), tz=timezone.utc)
    else:
        moment = datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def gates_and_cutoffs(gate: list[str], k: list[str]) -> tuple[list[Any], list[int]]:
    """Parsed gates and the cutoffs to compute: those asked for, plus any a gate names."""
    from goldkeeper.core.gates import parse_gate
    from goldkeeper.core.metric_ids import parse_metric_id

    ks = parse_cutoffs(k) if k else []
    try:
        gates = [parse_gate(expression) for expression in gate]
    except ValueError as error:
        raise UsageError(str(error)) from None
    for parsed in gates:
        if "@" in parsed.metric:
            cutoff = parse_metric_id(parsed.metric).k
            if cutoff not in ks:
                ks.append(cutoff)
    return gates, ks or [10]


def check_bootstrap(confidence: float, resamples: int) -> None:
    if not 0 < confidence < 1:
        raise UsageError(f"--confidence: must be between 0 and 1, got {confidence}")
    if resamples < 100:
        raise UsageError(f"--resamples: must be at least 100, got {resamples}")


def bootstrap_spec(intervals: bool, confidence: float, resamples: int, seed: int):
    if not intervals:
        return None
    check_bootstrap(confidence, resamples)
    from goldkeeper.core.intervals import BootstrapSpec  # (numpy)
    from goldkeeper.io.heap import keep_freed_blocks

    keep_freed_blocks()  # the bootstrap's arrays, block after block
    return BootstrapSpec(confidence, resamples, seed)


#: What importing the scoring modules without numpy weighs in judgments bytes for the
#: reader's cuts (``read_scoring_inputs``): 2.3 ms in a timeline at 10k x 100, where 0.25 MB
#: of labels take about 5 ms; not tuned further.
_SCORING_IMPORT_BYTES = 1 << 18


def _import_scoring(intervals: bool) -> None:
    """The scoring modules, and numpy (0.05 s) and scipy.special when intervals will need
    them: ``score`` loads them while its reader's child is still reading, instead of before
    reading. A score without intervals never loads numpy (its kernel is Python's).

    With one OpenBLAS thread: at import OpenBLAS starts one per core, and beside a busy
    process numpy's import then took 0.11-0.13 s instead of 0.05-0.065. score spreads its
    work over processes itself and multiplies no large matrices; a user's setting stands."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from goldkeeper.core import reporting, scoring  # noqa: F401

    if intervals:
        import numpy  # noqa: F401

        # The intervals' quantiles, loaded here once: imported where they are first used,
        # they were imported by this process and by the child that computes half the
        # intervals (``split_map``), each after the fork; scipy 1.17's took 0.14-0.21 s.
        import scipy.special  # noqa: F401


def _query_values(qrels: Any, blocks: Any, ks: list[int], threshold: int) -> Any:
    """``query_values`` of a run's heads given a block at a time, where the reader read them:
    each block's keys are freed once scored."""
    from goldkeeper.core.scoring import RunScorer

    scorer = RunScorer(qrels, ks, threshold)
    for heads in blocks:
        scorer.add(heads)
    return scorer.result()


def run_score(options: ScoreOptions) -> int:
    """Score a run against judgments, decide the gates, write the report: the exit code
    (0 PASS, 1 FAIL or INDETERMINATE); bad input raises."""
    (judgments, run, k, threshold, gate, baseline, corpus, report, judgments_format, run_format, now,
     intervals, confidence, resamples, seed, output) = options
    # score makes no reference cycles that matter: its containers are label rows, grade maps,
    # key pairs and per-query values, all acyclic, and it ends with the process. The collector
    # only walks them: at 100k queries x 100, 25 young collections of 100,000 objects each
    # took 0.10 s of the parent's 3 s and 0.04 s of the child's. It is off for the command.
    gc.disable()
    from goldkeeper.io.files import report_bytes, write_bytes_atomic
    from goldkeeper.io.forked import split_map
    from goldkeeper.io.loading import MEANWHILE_LABEL_BYTES, load_baseline, read_scoring_inputs

    if threshold < 1:
        raise UsageError(f"--threshold: must be an integer >= 1, got {threshold}")
    if judgments == "-" and run == "-":
        raise UsageError("--judgments and --run cannot both read stdin")
    gates, ks = gates_and_cutoffs(gate, k)
    generated = report_time(now)
    if intervals:
        check_bootstrap(confidence, resamples)
    previous = load_baseline(baseline) if baseline else None
    # The run is read in a second process while this one reads and validates the judgments
    # (a block at a time; only --corpus keeps every row, since drift looks at each label).
    # The scoring modules (and numpy, for intervals) are imported once this process has read
    # its share, while the other still reads (it was idle then, waiting). Importing numpy
    # while both processes read from the start made score no faster (10k x 100: 0.52-0.57 s
    # against 0.50 s): two busy processes slow each other here by 20-35%, and the larger
    # share came back by pipe.
    count_drift = None
    if corpus:
        from goldkeeper.core.drift import drift_counts
        from goldkeeper.io.snapshots import open_corpus

        def count_drift(rows: list[dict[str, Any]]) -> Any:
            return drift_counts(rows, open_corpus(corpus))

    read = read_scoring_inputs(judgments, judgments_format.value if judgments_format else None,
                               run, run_format, max(ks), on_rows=count_drift,
                               meanwhile=lambda: _import_scoring(intervals),
                               meanwhile_bytes=MEANWHILE_LABEL_BYTES if intervals else _SCORING_IMPORT_BYTES,
                               score_heads=lambda qrels, blocks: _query_values(qrels, blocks, ks, threshold))
    from goldkeeper.core.reporting import report_document
    from goldkeeper.core.scoring import add_query_values, summarize

    bootstrap = bootstrap_spec(intervals, confidence, resamples, seed)
    validation, qrels, judgments_sha, parts, run_sha = (read.validation, read.qrels, read.judgments_sha,
                                                        read.run, read.run_sha)
    drift_counts_found, corpus_info = read.from_rows if corpus else (None, None)
    hold(read.spent)
    del read
    found = add_query_values(parts)
    result = summarize(qrels, found, intervals=bootstrap, parallel=split_map)
    inputs = {"judgments": {"url": judgments, "sha256": judgments_sha},
              "run": {"url": run, "sha256": run_sha}}
    if baseline:
        inputs["baseline"] = {"url": baseline}
    if corpus:
        inputs["corpus"] = {"url": corpus}
    # The report stays JSON values (no pydantic) unless a renderer wants the model.
    built = report_document(result, validation, generated_at=generated, gates=gates,
                            baseline=previous, inputs=inputs, drift=drift_counts_found, corpus=corpus_info)
    if report or output is ReportFormat.json:
        document = report_bytes(built)
        if report:
            write_bytes_atomic(report, document)
    if output is ReportFormat.json:
        sys.stdout.flush()
        sys.stdout.buffer.write(document)
    elif output is ReportFormat.markdown:
        from goldkeeper.render import report_markdown

        sys.stdout.write(report_markdown(built))
    else:
        from goldkeeper.render import print_report

        print_report(built)
    hold(qrels, validation, result, built)
    return EXIT_OK if built["verdict"]["status"] == "PASS" else EXIT_FAILED
