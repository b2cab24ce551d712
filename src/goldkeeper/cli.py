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
from goldkeeper.errors import GoldkeeperError, StorageError, UsageError
from goldkeeper.io.files import decode_utf8, source_name
from goldkeeper.launch import (  # (entry, EXIT_INTERNAL: where they always were)
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    entry,
    exit_with,
    fail,
    guarded,
    hold,
    interrupted,
    quiet_collector,
)
from goldkeeper.score_command import (
    LabelsFormat,
    ReportFormat,
    ScoreOptions,
    bootstrap_spec,
    gates_and_cutoffs,
    parse_cutoffs,
    report_time,
    run_score,
)

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "app", "entry", "main"]

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


def _emit_json(payload: Any, *, large: bool = False) -> None:
    if large:
        # Per-label output (drift): orjson is several times faster. Its layout is json.dumps'
        # with indent=2; only exponents differ (1e-7 for 1e-07), and drift prints none.
        import orjson

        sys.stdout.flush()
        sys.stdout.buffer.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
        return
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


@app.command()
def validate(
    file: Annotated[str, typer.Argument(help="Judgments JSONL: a path, an fsspec URL, or - for stdin.")],
    output: FormatOption = OutputFormat.text,
) -> None:
    """Check a judgments file: types, duplicates, provenance, strata. Exit 1 on any error."""
    from goldkeeper.io.scan import validate_url

    result = validate_url(file)
    if output is OutputFormat.json:
        payload = {"source": source_name(file), "ok": result.ok}
        payload.update(result.to_dict())
        _emit_json(payload)
    else:
        from goldkeeper.render import print_validation

        print_validation(source_name(file), result)
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

    source = source_name(file)
    data = read_bytes(file)
    if to in (ConvertTarget.judgments, ConvertTarget.qrels):
        kind = from_.value if from_ else qrels.detect_labels_format(decode_utf8(data, source), file)
        if kind == "jsonl":
            if as_chunk_ids:
                raise UsageError("--as-chunk-ids applies to qrels input, not judgments JSONL")
            labels = parse_judgments(data, source)
        elif kind == "trec":
            labels = qrels.parse_trec_qrels(decode_utf8(data, source), source, as_chunk_ids=as_chunk_ids)
        else:
            labels = qrels.parse_beir_tsv(decode_utf8(data, source), source, as_chunk_ids=as_chunk_ids)
        text = dump_judgments(labels) if to is ConvertTarget.judgments else qrels.to_qrels(labels, source)
    else:
        if from_ is LabelsFormat.beir:
            raise UsageError("--from beir is a qrels format; a run is jsonl or trec")
        decoded = decode_utf8(data, source)
        kind = from_.value if from_ else ("jsonl" if decoded.lstrip().startswith("{") else "trec")
        entries = runs.parse_run(data, source) if kind == "jsonl" else qrels.parse_trec_run(decoded, source)
        text = qrels.to_trec_run(entries, tag, source) if to is ConvertTarget.trec_run else runs.dump_run(entries)
    write_bytes_atomic(out or "-", text.encode("utf-8"))


THRESHOLD_HELP = "Lowest grade that counts as relevant."
GATE_HELP = ("A gate, repeatable: recall@5:0.8 (at least), ndcg@10:-0.02 (a drop from --baseline of at "
             "most 0.02), worst-stratum:recall@5:0.5, recall@5:ci-lower:0.6, ndcg@10:regression, "
             "recall@5:sequential:0.8, coverage:0.95, drift:0.05 (spec/metrics.md).")


@app.command()
def score(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL, TREC qrels or BEIR TSV.")],
    run: Annotated[str, typer.Option("--run", "-r", help="Run JSONL or TREC run file.")],
    k: Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10,100 (default 10).")] = [],  # noqa: B006
    threshold: Annotated[int, typer.Option("--threshold", help=THRESHOLD_HELP)] = 1,
    gate: Annotated[list[str], typer.Option("--gate", help=GATE_HELP)] = [],  # noqa: B006
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="A previous report, for delta gates.")] = None,
    corpus: Annotated[Optional[str], typer.Option("--corpus", help="A corpus snapshot: check drift first.")] = None,
    report: Annotated[Optional[str], typer.Option("--report", help="Also write the report JSON here.")] = None,
    judgments_format: Annotated[Optional[LabelsFormat], typer.Option(
        "--judgments-format", help="jsonl, trec or beir; guessed from the name and first line if omitted.")] = None,
    run_format: Annotated[Optional[str], typer.Option("--run-format", help="jsonl or trec; guessed if omitted.")] = None,
    now: Annotated[Optional[str], typer.Option("--now", help="Report time (ISO 8601); else SOURCE_DATE_EPOCH; else now.")] = None,
    intervals: Annotated[bool, typer.Option("--intervals/--no-intervals", help="A confidence interval on every metric.")] = True,
    confidence: Annotated[float, typer.Option("--confidence", help="Interval confidence level.")] = 0.95,
    resamples: Annotated[int, typer.Option("--resamples", help="Bootstrap resamples for graded metrics.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    output: Annotated[ReportFormat, typer.Option("--format", help="text, json or markdown.")] = ReportFormat.text,
) -> None:
    """Score a run against judgments and decide the gates. Exit 0 PASS, 1 FAIL or INDETERMINATE."""
    raise typer.Exit(run_score(ScoreOptions(**locals())))  # (the parameters are ScoreOptions' fields)


class Backend(str, Enum):
    http = "http"
    command = "command"
    run_file = "run-file"
    python = "python"


@app.command("eval")
def eval_(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL (with query texts), TREC qrels or BEIR TSV.")],
    backend: Annotated[Backend, typer.Option("--backend", help="How to reach the retriever.")] = Backend.http,
    url_template: Annotated[Optional[str], typer.Option("--url-template", help="HTTP: {query}, {query_id}, {k}, {mode} are URL-encoded.")] = None,
    method: Annotated[str, typer.Option("--method", help="HTTP: GET or POST.")] = "GET",
    body_template: Annotated[Optional[str], typer.Option("--body-template", help="HTTP POST: a JSON body with placeholders.")] = None,
    results_path: Annotated[str, typer.Option("--results-path", help="Dotted path to the hit list in the answer.")] = "",
    id_field: Annotated[str, typer.Option("--id-field", help="The hit's id: a chunk id or doc uri of the judgments.")] = "id",
    score_field: Annotated[str, typer.Option("--score-field", help="The hit's score; '' when hits carry none.")] = "score",
    header_env: Annotated[list[str], typer.Option("--header-env", help="HTTP header from the environment: NAME=ENV_VARIABLE. Repeatable.")] = [],  # noqa: B006
    command: Annotated[Optional[str], typer.Option("--command", help="An argv template (JSON list or command line), run without a shell.")] = None,
    run_file: Annotated[list[str], typer.Option("--run-file", help="A TREC run or run JSONL; several are several systems.")] = [],  # noqa: B006
    python_target: Annotated[Optional[str], typer.Option("--python", help="module:function returning ranked ids.")] = None,
    modes: Annotated[Optional[str], typer.Option("--modes", help="Comma-separated modes, one run each ({mode}); the first is the baseline.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Calls in flight.")] = 16,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per call.")] = 10.0,
    retries: Annotated[int, typer.Option("--retries", help="Retries of a transient failure, with backoff.")] = 3,
    rate: Annotated[Optional[float], typer.Option("--rate", help="At most this many calls per second.")] = None,
    cache: Annotated[Optional[str], typer.Option("--cache", help="Result cache (JSONL); a rerun resumes from it. Default OUT/cache.jsonl.")] = None,
    max_errors: Annotated[float, typer.Option("--max-errors", help="Share of queries allowed to fail before the verdict fails.")] = 0.0,
    out: Annotated[str, typer.Option("--out", "-o", help="Directory for the runs, errors and reports.")] = "goldkeeper-eval",
    k: Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10 (default 10).")] = [],  # noqa: B006
    threshold: Annotated[int, typer.Option("--threshold", help=THRESHOLD_HELP)] = 1,
    gate: Annotated[list[str], typer.Option("--gate", help=GATE_HELP)] = [],  # noqa: B006
    report: Annotated[Optional[str], typer.Option("--report", help="Also write the (first run's) report JSON here.")] = None,
    now: Annotated[Optional[str], typer.Option("--now", help="Report time (ISO 8601); else SOURCE_DATE_EPOCH; else now.")] = None,
    intervals: Annotated[bool, typer.Option("--intervals/--no-intervals", help="A confidence interval on every metric.")] = True,
    output: Annotated[ReportFormat, typer.Option("--format", help="text, json or markdown.")] = ReportFormat.text,
) -> None:
    """Call a retriever for every judged query, record the runs, score and gate them.

    Exit 0 when every run PASSes (errors within --max-errors included), else 1."""
    import hashlib

    from goldkeeper.core.comparison import compare_scores
    from goldkeeper.core.reporting import apply_error_budget, build_report
    from goldkeeper.core.scoring import build_qrels
    from goldkeeper.core.scoring import score as score_run
    from goldkeeper.core.validation import validate
    from goldkeeper.io.evaluation import judged_queries, retrieve_run
    from goldkeeper.io.files import report_bytes, write_bytes_atomic
    from goldkeeper.io.loading import load_label_rows
    from goldkeeper.io.retrievers import make_retriever

    if concurrency < 1 or retries < 0 or timeout <= 0 or (rate is not None and rate <= 0):
        raise UsageError("--concurrency >= 1, --retries >= 0, --timeout > 0 and --rate > 0, please")
    if not 0 <= max_errors <= 1:
        raise UsageError(f"--max-errors: a share from 0 to 1, got {max_errors}")
    gates, ks = gates_and_cutoffs(gate, k)
    config = {"backend": backend.value, "url_template": url_template, "method": method,
              "body_template": body_template, "results_path": results_path, "id_field": id_field,
              "score_field": score_field, "header_env": header_env, "command": command, "python": python_target,
              "timeout": timeout}
    if backend is Backend.run_file:
        if not run_file:
            raise UsageError("--backend run-file needs --run-file (repeat it for several systems)")
        if len(set(run_file)) != len(run_file):
            raise UsageError("--run-file: the same file twice; a run is never compared with itself")
        if modes:
            raise UsageError("--modes does not apply to run files: each --run-file is a system")
        systems = [(url, make_retriever({**config, "run_file": url}), "") for url in run_file]
    else:
        names = [m.strip() for m in modes.split(",")] if modes else [""]
        if modes and any(not m for m in names):
            raise UsageError(f"--modes: comma-separated names, got {modes}")
        if len(set(names)) != len(names):
            raise UsageError(f"--modes: a mode twice in {modes}; a run is never compared with itself")
        retriever = make_retriever(config)  # bad options are reported before any input is read
        systems = [(m or backend.value, retriever, m) for m in names]
    rows, judgments_sha = load_label_rows(judgments)
    validation = validate(rows)
    qrels = build_qrels(rows)
    texts = judged_queries(rows, qrels.grades, need_text=backend is not Backend.run_file)
    generated_at = report_time(now)
    os.makedirs(out, exist_ok=True)
    named, reports = [], []
    for name, retriever, mode in systems:
        with _progress(f"retrieving {name}", len(texts)) as advance:
            got = retrieve_run(retriever, name, texts, max(ks), mode, concurrency=concurrency, retries=retries,
                               rate=rate, cache=cache or os.path.join(out, "cache.jsonl"), progress=advance)
        slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in os.path.basename(name)) or "run"
        run_path = os.path.join(out, f"run-{slug}.jsonl")
        write_bytes_atomic(run_path, got.run_bytes)
        write_bytes_atomic(os.path.join(out, f"errors-{slug}.jsonl"),
                           "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in got.errors).encode("utf-8"))
        result = score_run(qrels, got.entries, k=ks, threshold=threshold,
                           intervals=bootstrap_spec(intervals, 0.95, 10_000, 0))
        inputs = {"judgments": {"url": judgments, "sha256": judgments_sha},
                  "run": {"url": run_path, "sha256": hashlib.sha256(got.run_bytes).hexdigest(), "system": name}}
        built = build_report(result, validation, generated_at=generated_at, gates=gates, inputs=inputs)
        built = apply_error_budget(built, got.queries, got.errors, max_errors)
        document = report_bytes(built)
        write_bytes_atomic(os.path.join(out, f"report-{slug}.json"), document)
        if report and not reports:
            write_bytes_atomic(report, document)
        named.append((name, result))
        reports.append((name, built, document))
    comparison = compare_scores(named) if len(named) > 1 else None
    if comparison is not None:
        write_bytes_atomic(os.path.join(out, "comparison.json"),
                           (json.dumps(comparison, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    if output is ReportFormat.json:
        _emit_json({"systems": {name: json.loads(document) for name, _, document in reports},
                    "comparison": comparison, "out": out})
    else:
        from goldkeeper.render import print_comparison, print_report, report_markdown

        for name, built, _ in reports:
            retrieval = built.retrieval  # type: ignore[attr-defined]
            if output is ReportFormat.markdown:
                sys.stdout.write(f"## {name}\n\n" + report_markdown(built))
            else:
                sys.stdout.write(f"== {name}: {retrieval['queries'] - retrieval['errors']} of {retrieval['queries']} "
                                 f"queries answered, {retrieval['errors']} errors\n")
                print_report(built)
        if comparison is not None and output is ReportFormat.text:
            print_comparison(comparison)
        sys.stdout.write(f"runs, errors and reports in {out}/\n")
    ok = all(built.verdict.status == "PASS" for _, built, _ in reports)
    raise typer.Exit(EXIT_OK if ok else EXIT_FAILED)


@app.command()
def compare(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL, TREC qrels or BEIR TSV.")],
    run: Annotated[list[str], typer.Option("--run", "-r", help="A run; the first is the baseline. Repeat.")],
    k: Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10 (default 10).")] = [],  # noqa: B006
    metric: Annotated[list[str], typer.Option("--metric", "-m", help="Metric ids to compare (default all).")] = [],  # noqa: B006
    threshold: Annotated[int, typer.Option("--threshold", help=THRESHOLD_HELP)] = 1,
    alpha: Annotated[float, typer.Option("--alpha", help="Family-wise error rate per metric.")] = 0.05,
    resamples: Annotated[int, typer.Option("--resamples", help="Monte Carlo sign flips beyond 20 differing pairs.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the Monte Carlo sign flips.")] = 0,
    output: Annotated[ReportFormat, typer.Option("--format", help="text, json or markdown.")] = ReportFormat.text,
) -> None:
    """Paired comparison of runs against the first: better, worse, no difference, or unresolvable."""
    from goldkeeper.core.comparison import compare_scores
    from goldkeeper.core.metric_ids import parse_metric_id
    from goldkeeper.core.scoring import build_qrels
    from goldkeeper.core.scoring import score as score_run
    from goldkeeper.io.loading import load_label_rows, load_run

    if len(run) < 2:
        raise UsageError("compare needs at least two --run: a baseline and a challenger")
    if len(set(run)) != len(run):
        raise UsageError("compare: the same run file was given twice; a run is never compared with itself")
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha: must be between 0 and 1, got {alpha}")
    ks = parse_cutoffs(k) if k else []
    for name in metric:
        try:
            parsed = parse_metric_id(name)
        except ValueError as error:
            raise UsageError(str(error)) from None
        if parsed.k not in ks:
            ks.append(parsed.k)
    ks = ks or [10]
    rows, _ = load_label_rows(judgments)
    qrels = build_qrels(rows)
    named = []
    runs_info = []
    for url in run:
        entries, hashed = load_run(url)
        result = score_run(qrels, entries, k=ks, threshold=threshold)
        named.append((url, result))
        runs_info.append({"url": url, "sha256": hashed.hexdigest(), "missing_queries": result.missing_queries})
    try:
        payload = compare_scores(named, metrics=list(metric) or None, alpha=alpha, resamples=resamples, seed=seed)
    except ValueError as error:
        raise UsageError(str(error)) from None
    payload["runs"] = runs_info
    if output is ReportFormat.json:
        _emit_json(payload)
    elif output is ReportFormat.markdown:
        from goldkeeper.render import comparison_markdown

        sys.stdout.write(comparison_markdown(payload))
    else:
        from goldkeeper.render import print_comparison

        print_comparison(payload)


@app.command()
def power(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL, TREC qrels or BEIR TSV.")],
    run: Annotated[list[str], typer.Option("--run", "-r", help="Baseline then candidate; omit both to assume a spread.")] = [],  # noqa: B006
    metric: Annotated[str, typer.Option("--metric", "-m", help="Metric id.")] = "recall@10",
    target: Annotated[Optional[float], typer.Option("--target", help="An effect to size the query set for.")] = None,
    sd: Annotated[float, typer.Option("--sd", help="Assumed sd of per-query differences when no run is given.")] = 0.5,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided significance level.")] = 0.05,
    power_: Annotated[float, typer.Option("--power", help="Wanted power.")] = 0.8,
    threshold: Annotated[int, typer.Option("--threshold", help=THRESHOLD_HELP)] = 1,
    output: FormatOption = OutputFormat.text,
) -> None:
    """What a gold set can resolve: smallest detectable effect, and queries needed for a target."""
    from goldkeeper.core.metric_ids import parse_metric_id
    from goldkeeper.core.power import power_analysis
    from goldkeeper.core.scoring import build_qrels
    from goldkeeper.core.scoring import score as score_run
    from goldkeeper.io.loading import load_label_rows, load_run

    if len(run) not in (0, 2):
        raise UsageError("power takes no --run (an assumed spread) or exactly two: baseline, candidate")
    try:
        parsed = parse_metric_id(metric)
    except ValueError as error:
        raise UsageError(str(error)) from None
    rows, _ = load_label_rows(judgments)
    qrels = build_qrels(rows)
    try:
        if run:
            results = [score_run(qrels, load_run(url)[0], k=[parsed.k], threshold=threshold) for url in run]
            base, cand = (r.per_query for r in results)
            diffs = [cand[q][metric] - base[q][metric] for q in base]
            found = power_analysis(diffs, alpha=alpha, power=power_, target=target)
        else:
            scored = score_run(qrels, [], k=[parsed.k], threshold=threshold).queries_scored
            found = power_analysis(n=scored, sd=sd, alpha=alpha, power=power_, target=target)
    except ValueError as error:
        raise UsageError(str(error)) from None
    found["metric"] = metric
    if output is OutputFormat.json:
        _emit_json(found)
        return
    lines = [f"resolution of this gold set ({metric}):",
             f"  n = {found['n']} queries, per-query difference sd = {found['sd']:.3f} ({found['sd_source']})"]
    if "note" in found:
        lines.append(f"  {found['note']}")
    else:
        lines.append(f"  smallest detectable effect at {power_:.0%} power: +{found['normal']['mde']:.3f} (normal), "
                     f"+{found['t']['mde']:.3f} (paired t)")
        if target is not None:
            lines.append(f"  queries needed to resolve +{target}: {found['normal']['queries_needed']:,} (normal), "
                         f"{found['t']['queries_needed']:,} (paired t)")
    sys.stdout.write("\n".join(lines) + "\n")


@app.command()
def audit(
    n: Annotated[int, typer.Option("-n", help="Number of queries the figure was computed on.")],
    value: Annotated[float, typer.Option("-v", "--value", help="The reported mean, from 0 to 1.")],
    metric: Annotated[str, typer.Option("-m", "--metric", help="Metric id, e.g. recall@5.")] = "recall@5",
    baseline: Annotated[Optional[float], typer.Option("-b", "--baseline", help="The baseline it claims to beat.")] = None,
    confidence: Annotated[float, typer.Option("--confidence", help="Interval confidence level.")] = 0.95,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level of the lift test.")] = 0.05,
    output: FormatOption = OutputFormat.text,
) -> None:
    """Audit a published figure: its interval, and whether a claimed lift could be significant.

    Exit 1 when the lift is unresolvable: no outcome on that many queries could be significant."""
    from goldkeeper.core.audit import audit as run_audit

    try:
        found = run_audit(n, metric, value, baseline, confidence, alpha)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if output is OutputFormat.json:
        _emit_json(found)
    else:
        lo, hi = found["interval"]
        lines = [f"{metric} = {value:.3f} on {n} queries"]
        if "successes" in found:
            lines.append(f"  that is {found['successes']}/{n} successes")
        lines.append(f"  {confidence:.0%} interval   [{lo:.3f}, {hi:.3f}]   width {hi - lo:.3f}   ({found['interval_method']})")
        lift = found.get("lift")
        if lift:
            lines.append(f"claimed lift {lift['difference']:+.3f} over {lift['baseline']:.3f}")
            if "min_attainable_p" in lift:
                if lift["differing_least"] == lift["differing_most"]:
                    lines.append(f"  the two means determine it exactly: {lift['differing_most']} of {n} queries differ")
                else:
                    lines.append(f"  between {lift['differing_least']} and {lift['differing_most']} of {n} queries differ")
                lines.append(f"  smallest attainable p   {lift['min_attainable_p']:.4f}")
                if lift["verdict"] == "unresolvable":
                    lines.append(f"  UNRESOLVABLE: no outcome of a paired test on {lift['differing_most']} differing "
                                 f"queries can reach {alpha}; this is a fact about the sample size, not the systems")
                else:
                    lines.append("  resolvable: a paired test on the per-query values could be significant")
            else:
                lines.append(f"  {lift['note']}")
        sys.stdout.write("\n".join(lines) + "\n")
    raise typer.Exit(EXIT_FAILED if found.get("lift", {}).get("verdict") == "unresolvable" else EXIT_OK)


@app.command()
def agreement(
    files: Annotated[list[str], typer.Argument(help="Judgments files (JSONL, TREC qrels, BEIR): human: and synthetic: labels, in one file or several.")],
    threshold: Annotated[int, typer.Option("--threshold", help="Lowest relevance that counts as relevant.")] = 1,
    output: FormatOption = OutputFormat.text,
) -> None:
    """How far the LLM judge (synthetic: labels) agrees with people (human: labels): Cohen's
    kappa with the base rates, on the pairs both labelled. Exit 1 when no pair has both."""
    from goldkeeper.core.agreement import agreement as agree
    from goldkeeper.io.loading import load_label_rows

    rows: list[dict[str, Any]] = []
    for url in files:
        rows.extend(load_label_rows(url)[0])
    found = agree(rows, threshold)
    if output is OutputFormat.json:
        _emit_json(found)
    else:
        lines = [f"{found['pairs']} pairs labelled by both a person and the judge "
                 f"({found['human_only']} by people only, {found['judge_only']} by the judge only)"]
        if found["pairs"]:
            kappa = found["kappa"]
            lines.append(f"  relevant at grade >= {threshold}: people {found['base_rate']['human']:.1%}, "
                         f"judge {found['base_rate']['judge']:.1%} (bias {found['judge_bias']:+.1%})")
            lines.append(f"  agreement {found['observed_agreement']:.1%}, by chance {found['chance_agreement']:.1%}; "
                         f"Cohen's kappa " + ("undefined" if kappa is None else f"{kappa:.3f}"))
            if found.get("weighted_kappa") is not None:
                lines.append(f"  quadratic-weighted kappa on grades {found['weighted_kappa']:.3f}")
            share = found.get("relevant_share")
            if share:
                low, high = share["ppi"]["ci"]
                lines.append(f"  share relevant over all {share['ppi']['labeled'] + share['ppi']['unlabeled']} judged pairs: "
                             f"[{low:.3f}, {high:.3f}] by PPI++ (judge alone says {share['judge_only']:.3f}, "
                             f"the {share['ppi']['labeled']} hand labels {share['hand_labels_only']:.3f})")
        if found.get("note"):
            lines.append(f"  {found['note']}")
        sys.stdout.write("\n".join(lines) + "\n")
    raise typer.Exit(EXIT_OK if found["pairs"] else EXIT_FAILED)


@app.command()
def calibrate(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL, TREC qrels or BEIR TSV.")],
    run: Annotated[str, typer.Option("--run", "-r", help="A run with the retriever's scores (TREC run, or run JSONL with scores).")],
    alpha: Annotated[float, typer.Option("--alpha", help="Coverage: a relevant passage in the set with probability >= 1 - alpha.")] = 0.10,
    risk_alpha: Annotated[float, typer.Option("--risk-alpha", help="Risk: answering without a relevant passage at most this often...")] = 0.05,
    delta: Annotated[float, typer.Option("--delta", help="...with probability >= 1 - delta over the calibration draw.")] = 0.05,
    splits: Annotated[str, typer.Option("--splits", help="Temperature, calibration and evaluation fractions.")] = "0.25,0.5,0.25",
    temperature: Annotated[Optional[float], typer.Option("--temperature", help="Fix the softmax temperature instead of choosing it on the first split.")] = None,
    max_k: Annotated[Optional[int], typer.Option("--max-k", help="A hard cap on passages (reported when it binds).")] = None,
    threshold: Annotated[int, typer.Option("--threshold", help="Lowest relevance that counts as relevant.")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split.")] = 0,
    output: FormatOption = OutputFormat.text,
) -> None:
    """Certify how many passages to send an LLM (conformal) and when to abstain (risk control).

    Exit 0 when both are certified and the abstention threshold is not degenerate, else 1."""
    from goldkeeper.core.calibration import calibrate as certify
    from goldkeeper.core.calibration import calibration_queries
    from goldkeeper.core.scoring import build_qrels
    from goldkeeper.io.loading import load_label_rows, load_run

    try:
        fractions = tuple(float(part) for part in splits.split(","))
    except ValueError:
        raise UsageError(f"--splits: three fractions like 0.25,0.5,0.25, got {splits}") from None
    rows, _ = load_label_rows(judgments)
    entries, _ = load_run(run)
    queries, excluded = calibration_queries(build_qrels(rows).grades, entries, threshold, source_name(run))
    try:
        certificate = certify(queries, alpha=alpha, risk_alpha=risk_alpha, delta=delta, fractions=fractions,
                              temperature=temperature, max_k=max_k, seed=seed)
    except ValueError as error:
        raise UsageError(str(error)) from None
    payload = certificate.to_dict()
    payload["excluded"] = {**excluded, **payload["excluded"]}
    if output is OutputFormat.json:
        _emit_json(payload)
    else:
        from goldkeeper.render import print_certificate

        print_certificate(payload)
    ok = payload["coverage"]["certified"] and payload["risk"]["certified"] and not payload["risk"]["degenerate"]
    raise typer.Exit(EXIT_OK if ok else EXIT_FAILED)


@app.command()
def drift(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL.")],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help="A snapshot: corpus.json, or a sharded snapshot's directory or manifest.json.")],
    fix: Annotated[bool, typer.Option("--fix", help="Re-anchor RE_ANCHORABLE and MERGED labels (in place unless --out).")] = False,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="With --fix: write the fixed judgments here, not in place.")] = None,
    in_place: Annotated[bool, typer.Option("--in-place", help="Same as --fix without --out: rewrite --judgments.")] = False,
    queue: Annotated[Optional[str], typer.Option("--queue", help="Write the labels a person must look at, with candidates, here (JSONL).")] = None,
    max_invalid: Annotated[float, typer.Option("--max-invalid", help="Exit 0 while the share of labels still wrong is at most this.")] = 0.0,
    output: FormatOption = OutputFormat.text,
) -> None:
    """Classify every label against a live corpus; --fix re-anchors the recoverable ones.

    Exit 1 when the share of labels that no longer match (without --fix) or that still need a
    person (with it) exceeds --max-invalid (default 0)."""
    from goldkeeper.io.drifting import classify_url
    from goldkeeper.io.files import write_bytes_atomic

    fix = fix or in_place
    if in_place and out:
        raise UsageError("--in-place and --out: choose one")
    if out and not fix:
        raise UsageError("--out only applies with --fix")
    if fix and judgments == "-" and not out:
        raise UsageError("--fix on stdin needs --out")
    if not 0.0 <= max_invalid <= 1.0:
        raise UsageError(f"--max-invalid: a share between 0 and 1, got {max_invalid}")
    with _progress("reading the corpus") as advance:
        rows, result, snapshot = classify_url(judgments, corpus, keep_rows=bool(fix or queue), progress=advance)
    labels_count = len(result.findings)
    moved = 0
    if fix:
        from goldkeeper.core.drift import fix as fix_labels
        from goldkeeper.core.judgments import dump_judgments
        from goldkeeper.models.judgment import Judgment  # pydantic: only a fix needs the model

        labels = [Judgment.model_construct(**row) for row in rows]
        fixed, moved = fix_labels(labels, result)
        if moved:
            write_bytes_atomic(out or judgments, dump_judgments(fixed).encode("utf-8"))
        elif out:
            write_bytes_atomic(out, dump_judgments(labels).encode("utf-8"))
    if queue:
        from goldkeeper.core.drift import rejudgment_queue

        items = rejudgment_queue(rows, result, snapshot)
        write_bytes_atomic(queue, "".join(
            json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n" for item in items).encode("utf-8"))
    summary = result.summary
    needs_person = summary["split"] + summary["orphaned"]
    if output is OutputFormat.json:
        payload = result.to_dict()
        if fix:
            payload["fixed"] = {"reanchored": moved, "needs_a_person": needs_person, "written_to": out or judgments}
        _emit_json(payload, large=True)
    else:
        from goldkeeper.render import print_drift

        print_drift(result, labels_count)
        if fix:
            sys.stdout.write(f"re-anchored {moved} label(s) in {out or judgments}; "
                             f"{needs_person} still need a person\n")
    still_wrong = needs_person / labels_count if fix and labels_count else summary["invalid_ratio"]
    hold(rows, result, snapshot)
    raise typer.Exit(EXIT_FAILED if still_wrong > max_invalid else EXIT_OK)


class _progress:
    """A rich progress bar on stderr while a long read runs, when stderr is a terminal."""

    def __init__(self, what: str, total: int | None = None) -> None:
        self.what, self.total, self.bar = what, total, None

    def __enter__(self):
        if not sys.stderr.isatty():
            return None
        from rich.console import Console
        from rich.progress import Progress

        self.bar = Progress(console=Console(stderr=True), transient=True)
        self.bar.start()
        task = self.bar.add_task(self.what, total=self.total)
        return lambda done: self.bar.update(task, completed=done)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


@app.command()
def snapshot(
    chunks: Annotated[str, typer.Argument(help="Chunker output JSONL: {doc_uri, doc_revision, ordinal, text} per line.")],
    chunker: Annotated[str, typer.Option("--chunker", help="Chunker fingerprint, e.g. recursive/512/64.")],
    out: Annotated[str, typer.Option("--out", "-o", help="corpus.json, or with --sharded a directory.")],
    corpus_fingerprint: Annotated[Optional[str], typer.Option(
        "--corpus-fingerprint", help="The corpus and chunker state, as labels made against it name it.")] = None,
    sharded: Annotated[bool, typer.Option("--sharded", help="Write manifest.json plus gzip JSONL shards, streaming.")] = False,
    shard_chunks: Annotated[int, typer.Option("--shard-chunks", help="Chunks per shard (with --sharded).")] = 100_000,
    gzip: Annotated[bool, typer.Option("--gzip/--no-gzip", help="Compress shards (with --sharded).")] = True,
) -> None:
    """Build a corpus snapshot from chunker output, computing every id: one corpus.json, or
    (--sharded) a streaming layout for corpora too big to hold in memory."""
    from goldkeeper.core.judgments import decode_jsonl
    from goldkeeper.io.files import iter_lines, write_bytes_atomic

    source = source_name(chunks)
    rows = decode_jsonl(iter_lines(chunks), source)
    if sharded:
        from goldkeeper.io.snapshots import write_sharded_snapshot

        manifest = write_sharded_snapshot(out, rows, chunker, corpus_fingerprint, shard_chunks=shard_chunks,
                                          compress=gzip, source=source, numbered=True)
        counts = manifest["counts"]
        sys.stdout.write(f"wrote {out}/manifest.json: {counts['chunks']} chunks of {counts['documents']} "
                         f"documents in {counts['shards']} shard(s)\n")
        return
    from goldkeeper.core.drift import build_snapshot

    built = build_snapshot(rows, chunker, corpus_fingerprint, source, numbered=True)
    write_bytes_atomic(out, (json.dumps(built, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
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
) -> None:
    """Merge people's answers into the judgments, canonically and atomically (spec/drift.md)."""
    from goldkeeper.core.judgments import decode_jsonl, dump_judgments
    from goldkeeper.core.rejudge import apply_answers, check_answers
    from goldkeeper.io.files import iter_lines, write_bytes_atomic
    from goldkeeper.io.loading import load_label_rows
    from goldkeeper.io.snapshots import open_corpus
    from goldkeeper.models.judgment import Judgment

    if judgments == "-" and not out:
        raise UsageError("--judgments on stdin needs --out")
    rows, _ = load_label_rows(judgments, "jsonl")
    items: dict[str, dict[str, Any]] = {}
    queue_source = source_name(queue)
    for line, item in decode_jsonl(iter_lines(queue), queue_source, allow_empty=True):
        if not isinstance(item, dict) or not isinstance(item.get("item_id"), str):
            from goldkeeper.errors import InputError, describe_value

            raise InputError(queue_source, "a queue item has an item_id", line=line, field="item_id",
                             found=describe_value(item.get("item_id") if isinstance(item, dict) else item))
        items[item["item_id"]] = item
    snapshot = open_corpus(corpus)
    answer_source = source_name(answers)
    answer_rows = list(decode_jsonl(iter_lines(answers), answer_source, allow_empty=True))
    wanted = {a.get("chunk_id") for _, a in answer_rows if isinstance(a, dict)}
    live = {chunk.chunk_id: chunk for chunk in snapshot if chunk.chunk_id in wanted}
    by_item = check_answers(answer_rows, items, live, answer_source)
    applied = apply_answers([Judgment.model_construct(**row) for row in rows], by_item, items, live,
                            snapshot.corpus_fingerprint, answer_source)
    if applied.replaced or applied.removed or out:
        write_bytes_atomic(out or judgments, dump_judgments(applied.judgments).encode("utf-8"))
    sys.stdout.write(f"{applied.replaced} label(s) re-judged, {applied.removed} removed (answered none), "
                     f"{applied.already_applied} answer(s) already applied, {applied.unanswered} item(s) "
                     f"still unanswered; judgments in {out or judgments}\n")


suite_app = typer.Typer(help="A suite's configuration on storage: what the flows score, how, and on which corpus.",
                        no_args_is_help=True)
app.add_typer(suite_app, name="suite")

StorageOption = Annotated[Optional[str], typer.Option(
    "--storage", help="Storage root URL (default: $GOLDKEEPER_STORAGE, else ./.goldkeeper).")]
SuiteRuns = Annotated[list[str], typer.Option("--run", "-r", help="A run file to score on each evaluation (URL). Repeat.")]
SuiteK = Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10.")]
SuiteGates = Annotated[list[str], typer.Option("--gate", help=GATE_HELP)]
SuiteCorpus = Annotated[Optional[str], typer.Option("--corpus", help="The live corpus snapshot (manifest.json or corpus.json).")]
SuiteChunker = Annotated[Optional[str], typer.Option("--chunker", help="Chunker fingerprint for events naming chunker output.")]
SuiteSchedule = Annotated[Optional[str], typer.Option("--schedule", help="Cron (UTC) for the nightly evaluation; 'off' for none.")]
SuiteGrade = Annotated[Optional[int], typer.Option("--max-grade", min=1, max=1023, help="Top of the relevance scale reviewers grade on.")]


def _suite_changes(run: list[str], k: list[str], gate: list[str], corpus: str | None, chunker: str | None,
                   schedule: str | None, max_grade: int | None) -> dict[str, Any]:
    """The fields a `suite init` or `suite set` gives: only those named on the command line."""
    changes: dict[str, Any] = {}
    if run:
        changes["runs"] = run
    if k:
        changes["k"] = parse_cutoffs(k)
    if gate:
        from goldkeeper.core.gates import parse_gate

        changes["gates"] = [] if gate == ["none"] else gate
        for expression in changes["gates"]:
            try:
                parse_gate(expression)
            except ValueError as error:
                raise UsageError(f"--gate: {error}") from None
    for name, value in (("corpus_url", corpus), ("chunker", chunker), ("max_grade", max_grade)):
        if value is not None:
            changes[name] = value
    if schedule is not None:
        changes["schedule"] = None if schedule == "off" else schedule
    return changes


def _suite_config(values: dict[str, Any], what: str):
    from pydantic import ValidationError

    from goldkeeper.models.suite import SuiteConfig

    try:
        return SuiteConfig.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "suite"
        raise UsageError(f"{what}: {field}: {first['msg'].removeprefix('Value error, ')}") from None


def _say_suite(root: str, config, url: str, verb: str, schedule_changed: bool) -> None:
    """What was written; and, when the schedule was given, the server's schedule made to match."""
    from goldkeeper.io.storage import current_judgments_url

    sys.stdout.write(f"{verb} {url}\n" + _suite_text(config, current_judgments_url(root, config.suite)))
    if schedule_changed:
        _quiet_prefect()
        from goldkeeper.flows.schedules import apply_schedule

        sys.stdout.write(apply_schedule(config, root) + "\n")


def _suite_text(config, judgments_url: str) -> str:
    runs = "".join(f"\n  {run}" for run in config.runs) or " none (the lifecycle re-anchors and queues, and scores nothing)"
    return (f"suite {config.suite}\n"
            f"judgments: {judgments_url}\n"
            f"runs:{runs}\n"
            f"k: {', '.join(map(str, config.k))}; gates: {', '.join(config.gates) or 'none'}\n"
            f"corpus: {config.corpus_url or 'none yet (the next re-index sets it)'}"
            + (f"; chunker {config.chunker}" if config.chunker else "") + "\n"
            f"schedule: {config.schedule + ' UTC' if config.schedule else 'off (events only)'}; "
            f"grades 0 to {config.max_grade}\n")


@suite_app.command("init")
def suite_init(
    suite: Annotated[str, typer.Argument(help="The suite's name.")],
    judgments: Annotated[Optional[str], typer.Option("--judgments", "-j", help="Judgments JSONL to start from, copied to the suite's current version (omit it when the suite already has judgments on storage).")] = None,
    run: SuiteRuns = [],  # noqa: B006
    k: SuiteK = [],  # noqa: B006
    gate: SuiteGates = [],  # noqa: B006
    corpus: SuiteCorpus = None,
    chunker: SuiteChunker = None,
    schedule: SuiteSchedule = None,
    max_grade: SuiteGrade = None,
    storage: StorageOption = None,
) -> None:
    """Configure a suite on storage (suites/<suite>.json) and seed its judgments
    (judgments/<suite>/current.jsonl) from a local or remote file, so that an event or a
    deployment has only to name the suite. A suite whose judgments are already on storage
    (a flow or `demo` made them) is configured with those."""
    from goldkeeper.core.judgments import parse_judgments
    from goldkeeper.errors import MissingError
    from goldkeeper.io.files import read_bytes
    from goldkeeper.io.storage import (
        current_judgments_url,
        default_root,
        read_current_judgments,
        read_suite,
        write_judgments_version,
        write_suite,
    )

    root = storage or default_root()
    if read_suite(root, suite, required=False) is not None:
        raise UsageError(f"suite '{suite}' is already configured in {root}: change it with `goldkeeper suite set`")
    try:
        existing, sha = read_current_judgments(root, suite)
    except MissingError:
        existing, sha = None, None
    if judgments is None and existing is None:
        raise UsageError(f"suite '{suite}' has no judgments in {root}: give --judgments FILE to start from")
    data = existing if judgments is None else read_bytes(judgments)
    if existing is not None and existing != data:
        raise UsageError(f"suite '{suite}' already has other judgments in {root} (a fix or a re-judgment made them); "
                         "they are kept: omit --judgments to configure the suite with them")
    source = source_name(judgments) if judgments is not None else current_judgments_url(root, suite)
    labels = parse_judgments(data, source)
    if not labels:
        raise UsageError(f"{source}: holds no judgments; a suite starts from at least one label")
    values = {"suite": suite, "max_grade": max(1, max(label.relevance for label in labels)),
              **_suite_changes(run, k, gate, corpus, chunker, schedule, max_grade)}
    config = _suite_config(values, f"suite {suite}")
    if existing is None:
        write_judgments_version(root, suite, data, sha)
    _say_suite(root, config, write_suite(root, config), "wrote", schedule is not None)


@suite_app.command("set")
def suite_set(
    suite: Annotated[str, typer.Argument(help="The suite's name.")],
    run: SuiteRuns = [],  # noqa: B006
    k: SuiteK = [],  # noqa: B006
    gate: SuiteGates = [],  # noqa: B006
    corpus: SuiteCorpus = None,
    chunker: SuiteChunker = None,
    schedule: SuiteSchedule = None,
    max_grade: SuiteGrade = None,
    storage: StorageOption = None,
) -> None:
    """Change a suite's configuration: each option given replaces that field (--run and
    --gate replace the whole list; --gate none clears the gates, --schedule off the schedule)."""
    from goldkeeper.io.storage import default_root, read_suite, write_suite

    root = storage or default_root()
    changes = _suite_changes(run, k, gate, corpus, chunker, schedule, max_grade)
    if not changes:
        raise UsageError("nothing to change: give at least one of --run, -k, --gate, --corpus, --chunker, "
                         "--schedule, --max-grade")
    config = _suite_config({**read_suite(root, suite).model_dump(), **changes}, f"suite {suite}")
    _say_suite(root, config, write_suite(root, config), "wrote", schedule is not None)


@suite_app.command("show")
def suite_show(
    suite: Annotated[str, typer.Argument(help="The suite's name.")],
    storage: StorageOption = None,
    output: FormatOption = OutputFormat.text,
) -> None:
    """A suite's configuration, and where its judgments are."""
    from goldkeeper.io.storage import current_judgments_url, default_root, read_suite

    root = storage or default_root()
    config = read_suite(root, suite)
    if output is OutputFormat.json:
        _emit_json({**config.model_dump(mode="json"), "judgments_url": current_judgments_url(root, suite)})
    else:
        sys.stdout.write(_suite_text(config, current_judgments_url(root, suite)))


def _quiet_prefect() -> None:
    """Nothing leaves the machine from goldkeeper's own commands: Prefect's telemetry and the
    server's analytics are off unless the user turned them on explicitly. And a temporary
    server (no API URL configured, as on a fresh machine) gets 120 s to start, not Prefect's
    20: on a busy 2-core machine `demo` failed with exit 3 waiting for it."""
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


@app.command()
def history(
    suite: Annotated[str, typer.Argument(help="The suite whose evaluations to show.")],
    storage: Annotated[Optional[str], typer.Option("--storage", help="Storage root URL the flows published to (default: ./.goldkeeper).")] = None,
    html: Annotated[Optional[str], typer.Option("--html", help="Also write the suite's page (trend, chart, latest report) here.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text, json or markdown.")] = "text",
) -> None:
    """A suite's trend: every evaluation's time, judgments and corpus versions (a change
    marked), the gated metrics with intervals and the change from the previous comparable
    evaluation, and the verdict; --html writes the page the flows publish."""
    from goldkeeper.core.trend import gate_thresholds, gated_metrics, trend_points
    from goldkeeper.dashboard import suite_page, summary_markdown, trend_chart_svg, trend_markdown
    from goldkeeper.io.files import read_bytes, write_bytes_atomic
    from goldkeeper.io.storage import default_root, read_history

    if fmt not in ("text", "json", "markdown"):
        raise UsageError(f"--format: text, json or markdown, got '{fmt}'")
    root = storage or default_root()
    entries = read_history(root, suite)
    if not entries:
        raise UsageError(f"suite '{suite}': no evaluation in {root} (history/ holds none for it)")
    gates = [g["expression"] for g in entries[-1].get("gates") or []]
    metrics = gated_metrics(gates) or list(entries[-1]["metrics"])[:2]
    points = trend_points(entries, metrics)
    if fmt == "json":
        sys.stdout.write(json.dumps({"suite": suite, "metrics": metrics, "points": points}, indent=2) + "\n")
    else:
        sys.stdout.write(trend_markdown(suite, points, metrics))
    if html:
        document = json.loads(read_bytes(entries[-1]["report"]))
        if points[-1]["previous"] is not None:
            points[-1]["previous_entry"] = entries[points[-1]["previous"]]
        summary = summary_markdown(suite, document, report_link=None, report_location=entries[-1]["report"],
                                   point=points[-1])
        chart = trend_chart_svg(suite, points, metrics, gate_thresholds(gates))
        write_bytes_atomic(html, suite_page(suite, points, metrics, document, chart, summary).encode("utf-8"))
        sys.stderr.write(f"the suite's page: file://{os.path.abspath(html)}\n")


@app.command("emit-reindex")
def emit_reindex(
    corpus: Annotated[str, typer.Argument(help="The corpus name: the event is about goldkeeper.corpus.<name>.")],
    suite: Annotated[Optional[str], typer.Option("--suite", help="The suite to run (default: the corpus name).")] = None,
    snapshot_url: Annotated[Optional[str], typer.Option("--snapshot-url", help="The new snapshot (corpus.json or a sharded directory).")] = None,
    chunks_url: Annotated[Optional[str], typer.Option("--chunks-url", help="Or chunker output to snapshot first...")] = None,
    chunker: Annotated[Optional[str], typer.Option("--chunker", help="...with its chunker fingerprint.")] = None,
    payload: Annotated[Optional[str], typer.Option("--payload", help="Extra JSON object for the event's payload.")] = None,
) -> None:
    """Emit goldkeeper.corpus.reindexed to the configured Prefect server, for indexers that do
    not use Prefect's SDK; a served or deployed on-reindex runs on it."""
    if not corpus or any(c.isspace() for c in corpus):
        raise UsageError(f"corpus: a name without spaces, got '{corpus}'")
    extra: dict[str, Any] = {}
    if payload:
        try:
            extra = json.loads(payload)
        except json.JSONDecodeError as error:
            raise UsageError(f"--payload: not JSON ({error.msg})") from None
        if not isinstance(extra, dict):
            raise UsageError("--payload: a JSON object")
    if not snapshot_url and not (chunks_url and chunker):
        raise UsageError("give --snapshot-url, or --chunks-url and --chunker")
    _quiet_prefect()
    from prefect.events import emit_event
    from prefect.settings import PREFECT_API_URL

    from goldkeeper.flows.lifecycle import REINDEX_EVENT

    if not PREFECT_API_URL.value():
        raise UsageError("no Prefect server is configured: set PREFECT_API_URL (the event would go nowhere)")
    resource = {"prefect.resource.id": f"goldkeeper.corpus.{corpus}"}
    for key, value in (("goldkeeper.suite", suite), ("goldkeeper.snapshot_url", snapshot_url),
                       ("goldkeeper.chunks_url", chunks_url), ("goldkeeper.chunker", chunker)):
        if value:
            resource[key] = value
    from prefect.events.worker import EventsWorker

    event = emit_event(REINDEX_EVENT, resource=resource, payload=extra)
    if event is None:
        raise GoldkeeperError("Prefect did not accept the event")
    EventsWorker.drain_all()  # sent before this process exits
    sys.stdout.write(f"emitted {REINDEX_EVENT} {event.id} about {resource['prefect.resource.id']}\n")


@app.command()
def alert(
    webhook: Annotated[str, typer.Option("--webhook", help="The URL to post to (a Slack or Teams incoming webhook, or any HTTP endpoint).")],
    suite: Annotated[list[str], typer.Option("--suite", help="Only this suite (repeatable; default: every suite).")] = [],  # noqa: B006
) -> None:
    """Create the Prefect automation that posts to a webhook when an evaluation fails or
    cannot decide (goldkeeper.evaluation.failed / .indeterminate); run again to replace it."""
    if not webhook.startswith(("http://", "https://")):
        raise UsageError(f"--webhook: an http(s) URL, got '{webhook}'")
    _quiet_prefect()
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value():
        raise UsageError("no Prefect server is configured: set PREFECT_API_URL (the automation would go nowhere)")
    from goldkeeper.flows.alerts import ALERT_NAME, create_alert

    automation = create_alert(webhook, suite or None)
    sys.stdout.write(f"created automation '{ALERT_NAME}' ({automation}): evaluations of "
                     f"{', '.join(suite) if suite else 'every suite'} that do not pass post to {webhook}\n")


@app.command()
def serve(
    storage: Annotated[Optional[str], typer.Option("--storage", help="Storage root URL for the flows (default: ./.goldkeeper).")] = None,
    k: Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs for the runs the lifecycle scores.")] = [],  # noqa: B006
    nightly_suite: Annotated[Optional[str], typer.Option("--nightly-suite", help="Score this suite on --cron...")] = None,
    nightly_judgments: Annotated[Optional[str], typer.Option("--nightly-judgments", help="...these judgments...")] = None,
    nightly_run: Annotated[Optional[str], typer.Option("--nightly-run", help="...against this run.")] = None,
    cron: Annotated[str, typer.Option("--cron", help="When the nightly evaluation runs (UTC).")] = "0 3 * * *",
) -> None:
    """Serve goldkeeper's deployments from this process, for single-box users without a work
    pool, each named "serve": on-reindex (run by every goldkeeper.corpus.reindexed event),
    rejudge, evaluate-suite and evaluate (run from the UI or `prefect deployment run`), and
    evaluate on --cron with --nightly-*."""
    _quiet_prefect()
    from prefect import serve as prefect_serve
    from prefect.events import DeploymentEventTrigger

    from goldkeeper.flows.evaluate import evaluate
    from goldkeeper.flows.lifecycle import REINDEX_EVENT, REINDEX_MATCH, REINDEX_PARAMETERS, evaluate_suite, on_reindex
    from goldkeeper.flows.rejudge import rejudge
    from goldkeeper.io.storage import default_root

    nightly = (nightly_suite, nightly_judgments, nightly_run)
    if any(nightly) and not all(nightly):
        raise UsageError("--nightly-suite, --nightly-judgments and --nightly-run go together")
    root = storage or default_root()
    cutoffs = {"k": parse_cutoffs(k)} if k else {}  # none given: the suite's configured cutoffs
    trigger = DeploymentEventTrigger(expect={REINDEX_EVENT}, match=REINDEX_MATCH, parameters=REINDEX_PARAMETERS)
    # Named "serve", so that they stand beside deployments/prefect.yaml's on one server.
    deployments = [
        on_reindex.to_deployment(name="serve", triggers=[trigger], parameters={"storage_url": root, **cutoffs}),
        rejudge.to_deployment(name="serve", parameters={"storage_url": root}),
        evaluate_suite.to_deployment(name="serve", parameters={"storage_url": root}),
    ]
    if all(nightly):
        deployments.append(evaluate.to_deployment(
            name="serve-nightly", cron=cron,
            parameters={"suite": nightly_suite, "judgments_url": nightly_judgments, "run_url": nightly_run,
                        "storage_url": root, "k": cutoffs.get("k", [10])}))
    else:
        deployments.append(evaluate.to_deployment(name="serve", parameters={"storage_url": root, **cutoffs}))
    prefect_serve(*deployments, print_starting_message=True)


@app.command()
def demo(
    storage: Annotated[Optional[str], typer.Option("--storage", help="Storage root URL (default: ./.goldkeeper).")] = None,
) -> None:
    """The whole lifecycle on the example shipped in the package: a help center re-chunked
    after an edit, its judgments (made on the old chunks) checked for drift, fixed where sound,
    the rest queued for people, and two retrievers' runs scored on the result; on Prefect (a
    temporary local server unless PREFECT_API_URL names one) and local storage."""
    from importlib import resources

    _quiet_prefect()
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import default_root, read_current_judgments, write_judgments_version

    example = resources.files("goldkeeper.examples") / "lifecycle"
    root = storage or default_root()
    suite = "help-center"
    try:
        read_current_judgments(root, suite)
    except GoldkeeperError:  # a fresh root: the judgments as people made them, on the old chunks
        write_judgments_version(root, suite, (example / "judgments.jsonl").read_bytes(), None)
    runs = [str(example / "run-a.jsonl"), str(example / "run-b.jsonl")]
    from goldkeeper.flows.evaluate import outcome_of

    state = on_reindex(suite=suite, chunks_url=str(example / "chunks-v2.jsonl"), chunker="sentences/v2",
                       run_urls=runs, storage_url=root, k=[1, 5], gates=["recall@1:0.4", "coverage:1"],
                       return_state=True)
    outcome = outcome_of(state)
    rejudged = _demo_rejudgment(root, suite, outcome, example, runs)
    drift = outcome["drift"]
    lines = [
        "",
        f"drift after the re-index: {drift['valid']} valid, {drift['re_anchorable']} re-anchorable, "
        f"{drift['merged']} merged, {drift['split']} split, {drift['orphaned']} orphaned",
        f"re-anchored {outcome['reanchored']} label(s); new judgments version: {outcome['judgments_version'] or 'none'}",
        f"queued for people: {outcome['queue_url'] or 'nothing'}",
    ]
    for run_url, result in outcome["evaluations"].items():
        lines.append(f"{run_url.rsplit('/', 1)[-1]}: verdict {result['verdict']}; report at {result['report_url']}")
        lines += [f"  {reason}" for reason in result["reasons"]]
        for metric, bracket in (result.get("bracket") or {}).items():
            lines.append(f"  {metric} {bracket['scored']:.4f} as scored, {bracket['found']:.4f} if every queued label "
                         "is found: the most the stale labels can explain")
        lines.append(f"  the suite's page (trend, chart, next steps): {result['pages']['page']}")
    if rejudged is not None:
        lines += ["", f"a reviewer's answers ({rejudged['applied']}) made a new judgments version; "
                      "each run evaluated again on it:"]
        for name, result in rejudged["evaluations"].items():
            lines.append(f"{name}: verdict {result['verdict']}" + (f": {result['message']}" if result["verdict"] != "PASS" else ""))
            for metric, split in ((result.get("attribution") or {}).get("metrics") or {}).items():
                lines.append(f"  {metric} changed {split['change']:+.4f}: {split['labels']:+.4f} from the labels, "
                             f"{split['retriever']:+.4f} from the retriever")
    lines += [
        "",
        "Labels still queued score as misses until people re-judge them (the rejudge flow, or",
        "`goldkeeper queue apply`). Each suite's page above shows its trend, chart and next steps.",
        "To see it all in the Prefect UI: run `prefect server start`, then, in another shell,",
        "`PREFECT_API_URL=http://127.0.0.1:4200/api goldkeeper demo --storage file://$PWD/.goldkeeper-ui`",
        "and open http://127.0.0.1:4200/runs and http://127.0.0.1:4200/artifacts.",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def _demo_rejudgment(root: str, suite: str, outcome: dict[str, Any], example: Any, runs: list[str]) -> dict[str, Any] | None:
    """The demo's second day: a reviewer's answers to the queue (shipped with the example,
    answers.jsonl) merged into a new judgments version as `queue apply` does, and each run
    evaluated again on it, so every suite's trend has a judgments change to attribute. Once
    applied, nothing is done again."""
    from goldkeeper.core.judgments import decode_jsonl, dump_judgments, parse_judgments
    from goldkeeper.core.rejudge import apply_answers, check_answers
    from goldkeeper.flows.evaluate import evaluate, outcome_of
    from goldkeeper.flows.lifecycle import evaluation_suite
    from goldkeeper.io.snapshots import open_corpus
    from goldkeeper.io.storage import current_judgments_url, read_current_judgments, read_queue, write_judgments_version

    if not outcome["queue_url"]:
        return None
    items = {item["item_id"]: item for item in read_queue(outcome["queue_url"])}
    source = "answers.jsonl (the demo's reviewer)"
    answers = [(n, a) for n, a in decode_jsonl((example / "answers.jsonl").read_bytes().splitlines(), source)
               if a["item_id"] in items]
    if not answers:
        return None
    data, sha = read_current_judgments(root, suite)
    snapshot = open_corpus(outcome["corpus_url"])
    wanted = {a["chunk_id"] for _, a in answers}
    live = {chunk.chunk_id: chunk for chunk in snapshot if chunk.chunk_id in wanted}
    applied = apply_answers(parse_judgments(data), check_answers(answers, items, live, source), items, live,
                            snapshot.corpus_fingerprint, source)
    if not (applied.replaced or applied.removed):
        return None
    write_judgments_version(root, suite, dump_judgments(applied.judgments).encode("utf-8"), sha)
    evaluations = {}
    for run_url in runs:
        name = evaluation_suite(suite, run_url, runs)
        evaluations[name] = outcome_of(evaluate(
            suite=name, judgments_url=current_judgments_url(root, suite), run_url=run_url, storage_url=root,
            k=[1, 5], gates=["recall@1:0.4", "coverage:1"], corpus_url=outcome["corpus_url"], return_state=True))
    return {"applied": f"{applied.replaced} label(s) re-judged", "evaluations": evaluations}


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
        _emit_json(payload)
    else:
        sys.stdout.write(f"text_sha  {payload['text_sha']}\n")
        if "chunk_id" in payload:
            sys.stdout.write(f"chunk_id  {payload['chunk_id']}\n")


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the command line (through typer) and exit with its exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    quiet_collector()
    if not args:
        # A bare invocation gets the help, on stdout, but is still not a successful command.
        try:
            app(args=["--help"], prog_name="goldkeeper", standalone_mode=False)
        finally:
            exit_with(EXIT_USAGE)
    guarded(lambda: _through_typer(args))


#: What typer returns for an interrupt inside a command (``typer.core``: ``Exit(130)``); no
#: goldkeeper command exits with it.
_TYPER_INTERRUPTED = 130


def _through_typer(args: list[str]) -> int:
    try:
        # Without standalone mode, typer returns the code of a command's ``typer.Exit``.
        code = _narrowed(args[0])(args=args, prog_name="goldkeeper", standalone_mode=False)
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


def _narrowed(name: str) -> typer.Typer:
    """The app with only the command (or group) ``name``, when there is one by that name.

    typer builds the click parameters of every registered command on each start, evaluating
    all their annotations: 24 ms of a 0.45 s score of 10k queries, for the one command run.
    Usage, help and errors of that command are the same either way."""
    import copy

    from typer.main import get_command_name

    commands = [info for info in app.registered_commands
                if (info.name or get_command_name(info.callback.__name__)) == name]  # type: ignore[union-attr]
    groups = [info for info in app.registered_groups if info.name == name]
    if not commands and not groups:
        return app
    narrow = copy.copy(app)
    narrow.registered_commands, narrow.registered_groups = commands, groups
    return narrow
