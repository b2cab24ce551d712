"""``score``, ``eval``, ``compare``, ``power``, ``audit``, ``agreement`` and ``calibrate``: numbers
from judgments and runs, with honest statistics."""

from __future__ import annotations

import json
import os
import re
import sys
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from goldkeeper.cli.app import (
    GATE_HELP,
    MAX_CONCURRENCY,
    MAX_RESAMPLES,
    MAX_RETRIES,
    MAX_SEED,
    FormatOption,
    LabelsFormat,
    OutputFormat,
    QuietOption,
    ReportFormat,
    ThresholdOption,
    app,
    emit_json,
    kappa,
    parse_cutoffs,
    positive,
    probability,
    progress,
    queries,
    share,
)
from goldkeeper.core.metric_ids import MAX_CUTOFF
from goldkeeper.errors import EXIT_FAILED, EXIT_OK, UsageError
from goldkeeper.io.files import source_name


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
        try:
            if not (raw.isascii() and raw.isdigit()):
                raise ValueError
            moment = datetime.fromtimestamp(int(raw), tz=timezone.utc)
        except (ValueError, OverflowError, OSError):  # not a number, or past the year 9999
            raise UsageError(f"SOURCE_DATE_EPOCH: must be whole seconds since 1970, up to the year 9999, got '{raw}'") from None
    else:
        moment = datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def note_readings(spellings: list[str]) -> None:
    """Say on stderr how each metric spelling that is not goldkeeper's own id was read, with
    the definition where another tool's name carries one (nDCG is linear gain)."""
    from goldkeeper.core.metric_ids import reading_of

    for spelling in dict.fromkeys(spellings):
        reading = reading_of(spelling)
        if reading is not None:
            sys.stderr.write(f"note: {reading}\n")


def metric_id(text: str) -> Any:
    """A metric named on the command line, as goldkeeper's id; a note says how another spelling
    was read, and a bad one is a usage error."""
    from goldkeeper.core.metric_ids import parse_metric_id

    try:
        parsed = parse_metric_id(text)
    except ValueError as error:
        raise UsageError(str(error)) from None
    note_readings([text])
    return parsed


def gates_and_cutoffs(gate: list[str], k: list[str], seed: int = 0) -> tuple[list[Any], list[int]]:
    """Parsed gates (sequential ones watching the queries in ``seed``'s order) and the cutoffs
    to compute: those asked for, plus any a gate names."""
    from dataclasses import replace

    from goldkeeper.core.gates import parse_gate
    from goldkeeper.core.metric_ids import parse_metric_id

    ks = parse_cutoffs(k) if k else []
    try:
        gates = [parse_gate(expression) for expression in gate]
    except ValueError as error:
        raise UsageError(str(error)) from None
    gates = [replace(parsed, seed=seed) if parsed.kind == "sequential" else parsed for parsed in gates]
    note_readings([parsed.raw.split(":")[1 if parsed.kind == "worst-stratum" else 0] for parsed in gates
                   if "@" in parsed.metric])
    for parsed in gates:
        if "@" in parsed.metric:
            cutoff = parse_metric_id(parsed.metric).k
            if cutoff not in ks:
                ks.append(cutoff)
    return gates, ks or [10]


class GatePolicy(str, Enum):
    point = "point"
    ci_lower = "ci-lower"
    regression = "regression"
    sequential = "sequential"


#: What each --gate-policy makes of a --min-<metric><k> threshold T, in --gate's own words.
POLICY_GATES = {
    GatePolicy.point: ("{metric}:{floor}",),
    GatePolicy.ci_lower: ("{metric}:ci-lower:{floor}",),
    GatePolicy.regression: ("{metric}:{floor}", "{metric}:regression"),
    GatePolicy.sequential: ("{metric}:sequential:{floor}",),
}
POLICY_HELP = ("rag-eval-gate's policies over --min-<metric><k> thresholds (--min-mrr10 0.85), each the same "
               "as a --gate: point (mrr@10:0.85), ci-lower (mrr@10:ci-lower:0.85), regression (mrr@10:0.85 "
               "and mrr@10:regression, with --baseline), sequential (mrr@10:sequential:0.85).")
#: Extra arguments a command takes as --min-<metric><k> thresholds, and nothing else.
THRESHOLD_FLAGS = {"allow_extra_args": True, "ignore_unknown_options": True}


#: rag-eval-gate's retriever when none is named: its default URL template and mode.
PEER_URL = "http://localhost:8080/api/search?q={query}&mode={mode}"
PEER_MODE = "hybrid"
#: How many passages rag-eval-gate's calibrate asks its retriever for (its --max-k).
PEER_DEPTH = 12
#: rag-eval-gate's thresholds: what its ``eval --gate`` gates on, each metric overridden by its
#: ``--min-<metric><k>``.
PEER_THRESHOLDS = (("recall@5", "0.9"), ("mrr@10", "0.85"), ("ndcg@10", "0.85"))


def min_thresholds(extra: list[str], *, positional: bool = False) -> tuple[list[tuple[str, str]], list[str]]:
    """The ``--min-<metric><k> T`` thresholds among a command's extra arguments, as (metric id,
    value), and the arguments that are not options (only where the command takes some)."""
    from goldkeeper.core.metric_ids import MIN_FLAG_NAMES

    # The longest spelling first: ndcg_linear before ndcg.
    min_flag = re.compile(f"--min-({'|'.join(sorted(MIN_FLAG_NAMES, key=len, reverse=True))})([0-9]+)")
    thresholds: list[tuple[str, str]] = []
    others: list[str] = []
    position = 0
    while position < len(extra):
        flag, has_value, value = extra[position].partition("=")
        found = min_flag.fullmatch(flag)
        if found is None:
            if not flag.startswith("-") and positional:
                others.append(extra[position])
                position += 1
                continue
            if not flag.startswith("-"):
                raise UsageError(f"unexpected argument: {flag}")
            hint = "; thresholds are --min-<metric><k>, e.g. --min-recall5 0.9" if flag.startswith("--min") else ""
            raise UsageError(f"no such option: {flag}{hint}")
        if not has_value:
            if position + 1 >= len(extra):
                raise UsageError(f"{flag}: needs a threshold from 0 to 1")
            value, position = extra[position + 1], position + 1
        position += 1
        name = MIN_FLAG_NAMES[found.group(1)]
        thresholds.append((f"{name}@{int(found.group(2))}", value))
    return thresholds, others


def policy_gates(policy: GatePolicy | None, thresholds: list[tuple[str, str]], *, peer: bool = False) -> list[str]:
    """The gate expressions that ``--gate-policy`` and ``--min-<metric><k> T`` (``min_thresholds``)
    stand for; with ``peer`` (eval's bare ``--gate``), rag-eval-gate's thresholds too, for the
    metrics no ``--min-`` names, said on stderr."""
    if peer:
        named = {metric for metric, _ in thresholds}
        defaults = [(metric, floor) for metric, floor in PEER_THRESHOLDS if metric not in named]
        if defaults:
            sys.stderr.write(f"note: --gate also gates on rag-eval-gate's thresholds for what no --min- names: "
                             f"{', '.join(f'{metric} >= {floor}' for metric, floor in defaults)}\n")
        thresholds = [*defaults, *thresholds]
    if not thresholds:
        if policy is not None:
            raise UsageError("--gate-policy: needs at least one --min-<metric><k> threshold, e.g. --min-mrr10 0.85")
        return []
    forms = POLICY_GATES[policy or GatePolicy.point]
    return [form.format(metric=metric, floor=floor) for metric, floor in thresholds for form in forms]


def check_bootstrap(confidence: float, resamples: int) -> None:
    if not 0 < confidence < 1:
        raise UsageError(f"--confidence: must be between 0 and 1, got {confidence}")
    if resamples < 100:
        raise UsageError(f"--resamples: must be at least 100, got {resamples}")


class ScoreFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    trec = "trec"


def bootstrap_spec(intervals: bool, confidence: float, resamples: int, seed: int):
    if not intervals:
        return None
    check_bootstrap(confidence, resamples)
    from goldkeeper.core.intervals import BootstrapSpec  # (numpy)

    return BootstrapSpec(confidence, resamples, seed)


def summarized(specs: list[str], confidence: float) -> dict[str, dict[str, Any]]:
    """``--measurement NAME=SAMPLES``: each file's repeated samples summarized (mean, sd, Student-t
    interval), under NAME among the metrics, where gates can name it (NAME:ci-lower:0.8)."""
    if not specs:
        return {}
    from goldkeeper.core.metric_ids import METRIC_NAMES
    from goldkeeper.core.summary import parse_samples, summarize
    from goldkeeper.io.files import decode_utf8, read_bytes

    found: dict[str, dict[str, Any]] = {}
    for spec in specs:
        name, has_file, url = spec.partition("=")
        if not has_file or not url or not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name in METRIC_NAMES:
            raise UsageError(f"--measurement: expected NAME=SAMPLES_FILE with a lowercase name that is no metric's, "
                             f"e.g. faithfulness=judge-scores.json, got '{spec}'")
        if name in found:
            raise UsageError(f"--measurement: '{name}' given twice")
        source = source_name(url)
        samples = parse_samples(decode_utf8(read_bytes(url), source), source)
        found[name] = summarize(samples, confidence).model_dump(exclude_none=True)
    return found


def run_score(*, judgments: str, run: str, k: list[str], threshold: int, gate: list[str], baseline: str | None,
              corpus: str | None, report: str | None, judgments_format: LabelsFormat | None, run_format: str | None,
              now: str | None, intervals: bool, confidence: float, resamples: int, seed: int,
              output: ScoreFormat, per_query: bool = False, quiet: bool = False,
              measurement: list[str] | None = None, audit: str | None = None,
              kappa_floor: float | None = None) -> int:
    """Score a run against judgments, decide the gates, write the report: the exit code
    (0 PASS, 1 FAIL or INDETERMINATE); bad input raises."""
    from goldkeeper.core.evaluation import Settings, evaluate
    from goldkeeper.io.files import report_bytes
    from goldkeeper.io.loading import load_baseline, read_scoring_inputs, write_report

    if judgments == "-" and run == "-":
        raise UsageError("--judgments and --run cannot both read stdin")
    if kappa_floor is not None and not audit:
        raise UsageError("--kappa-floor: applies to an --audit of the judge's labels")
    if audit and "-" in (judgments, run):
        raise UsageError("--audit: reads --judgments and --run twice, so neither can be stdin")
    gates, ks = gates_and_cutoffs(gate, k, seed)
    generated = report_time(now)
    settings = Settings(tuple(ks), threshold, tuple(gates), bootstrap_spec(intervals, confidence, resamples, seed))
    previous = load_baseline(baseline) if baseline else None
    count_drift = None
    if corpus:
        from goldkeeper.core.drift import drift_counts
        from goldkeeper.io.snapshots import check_run_over, open_corpus, resolve_spans_at

        def count_drift(rows: list[dict[str, Any]]) -> Any:
            return drift_counts(rows, open_corpus(corpus))

    with progress(quiet=quiet or output is ScoreFormat.json):
        read = read_scoring_inputs(judgments, judgments_format.value if judgments_format else None,
                                   run, run_format, ks, threshold, on_rows=count_drift,
                                   resolve=(lambda rows: resolve_spans_at(corpus, rows)) if corpus else None,
                                   check_keys=(lambda keys: check_run_over(corpus, keys, run)) if corpus else None)
    drift_counts_found, corpus_info = read.from_rows if corpus else (None, None)
    inputs = {"judgments": {"url": judgments, "sha256": read.judgments_sha},
              "run": {"url": run, "sha256": read.run_sha}}
    if baseline:
        inputs["baseline"] = {"url": baseline}
    if corpus:
        inputs["corpus"] = {"url": corpus}
    if read.spans is not None:
        inputs["spans"] = read.spans
    labels, scored = read.qrels, read.run
    audited = None
    if audit:
        labels, scored, audited = _audit(judgments, run, run_format, audit, ks, threshold, kappa_floor, corpus)
        inputs["audit"] = {"url": audit}
    # The report stays JSON values (no pydantic) unless a renderer wants the model.
    built = evaluate(labels, scored, read.validation, settings, generated_at=generated, baseline=previous,
                     inputs=inputs, drift=drift_counts_found, corpus=corpus_info,
                     measurements=summarized(measurement or [], confidence), audit=audited)
    if report:
        write_report(report, built)
    if output is ScoreFormat.json:
        sys.stdout.flush()
        sys.stdout.buffer.write(report_bytes(built))
    elif output is ScoreFormat.markdown:
        from goldkeeper.render import report_markdown

        sys.stdout.write(report_markdown(built, per_query=per_query))
    elif output is ScoreFormat.trec:
        from goldkeeper.render import report_trec

        sys.stdout.write(report_trec(built))
    else:
        from goldkeeper.render import print_report

        print_report(built, per_query=per_query)
    return EXIT_OK if built["verdict"]["status"] == "PASS" else EXIT_FAILED


def _audit(judgments: str, run: str, run_format: str | None, audit: str, ks: list[int], threshold: int,
           floor: float | None, corpus: str | None) -> tuple[Any, Any, Any]:
    """The labels, the run and the ``Audit`` for ``score --audit``: people's labels on a sample
    of the queries (a judgments file of human: labels), beside the judge's in the judgments;
    span labels of either resolved to the chunks of the run's snapshot ``corpus``."""
    from goldkeeper.core.evaluation import audit_of
    from goldkeeper.core.scoring import build_qrels
    from goldkeeper.io.loading import load_label_rows, load_run_prefixes, unanchored

    rows, _ = load_label_rows(judgments)
    people, _ = load_label_rows(audit)
    source = source_name(audit)
    if corpus is None:
        unanchored(people, source)
    else:
        from goldkeeper.io.snapshots import resolve_spans_at

        rows, people = (resolve_spans_at(corpus, labels).rows if any(row.get("span") for row in labels) else labels
                        for labels in (rows, people))
    for row in people:
        if not str(row.get("labeled_by") or "").startswith("human:"):
            raise UsageError(f"--audit: {source} holds people's labels only (labeled_by human:<name>); query "
                             f"{row['query_id']} has labeled_by '{row.get('labeled_by') or ''}'")
    audited = {row["query_id"] for row in people}
    heads, _ = load_run_prefixes(run, run_format, max(ks))
    return build_qrels(rows), heads, audit_of(rows, people, threshold, floor, f"{len(audited)} audited queries ({source})")


@app.command(context_settings=THRESHOLD_FLAGS)
def score(
    ctx: typer.Context,
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL, TREC qrels or BEIR TSV.")],
    run: Annotated[str, typer.Option("--run", "-r", help="Run JSONL or TREC run file.")],
    k: Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10,100 (default 10).")] = [],  # noqa: B006
    threshold: ThresholdOption = 1,
    gate: Annotated[list[str], typer.Option("--gate", help=GATE_HELP)] = [],  # noqa: B006
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="A previous report, for delta gates.")] = None,
    corpus: Annotated[Optional[str], typer.Option("--corpus", help="The snapshot the run was made over: drift is checked first, and span labels resolve to its chunks.")] = None,
    report: Annotated[Optional[str], typer.Option("--report", help="Also write the report here: JSON, or Parquet (its per-query table) when the name ends .parquet.")] = None,
    judgments_format: Annotated[Optional[LabelsFormat], typer.Option(
        "--judgments-format", help="jsonl, json (nested), trec or beir; guessed from the name and first line if omitted.")] = None,
    run_format: Annotated[Optional[str], typer.Option("--run-format", help="jsonl, json (nested) or trec; guessed if omitted.")] = None,
    now: Annotated[Optional[str], typer.Option("--now", help="Report time (ISO 8601); else SOURCE_DATE_EPOCH; else now.")] = None,
    intervals: Annotated[bool, typer.Option("--intervals/--no-intervals", help="A confidence interval on every metric.")] = True,
    confidence: Annotated[float, typer.Option("--confidence", callback=probability, help="Interval confidence level.")] = 0.95,
    resamples: Annotated[int, typer.Option("--resamples", min=1, max=MAX_RESAMPLES, help="Bootstrap resamples for graded metrics under 500 queries (from 500 the distribution is computed).")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", "--sequential-seed", min=0, max=MAX_SEED, help="Seed of the bootstrap (under 500 queries) and of the order sequential gates watch queries in, recorded in their results.")] = 0,
    output: Annotated[ScoreFormat, typer.Option("--format", help="text, json, markdown, or trec (trec_eval -q's measure, query, value lines).")] = ScoreFormat.text,
    per_query: Annotated[bool, typer.Option("--per-query", help="Text and markdown: each query's values too.")] = False,
    gate_policy: Annotated[Optional[GatePolicy], typer.Option("--gate-policy", help=POLICY_HELP)] = None,
    measurement: Annotated[list[str], typer.Option("--measurement", help="NAME=SAMPLES: a summarized metric (repeated samples, e.g. a judge's scores: a JSON array or one number a line), reported and gateable as NAME:ci-lower:0.8. Repeatable.")] = [],  # noqa: B006
    audit: Annotated[Optional[str], typer.Option("--audit", help="People's labels (human:) on a sample of the queries the judge labelled: each metric becomes its PPI++ estimate, which the gates read.")] = None,
    kappa_floor: Annotated[Optional[float], typer.Option("--kappa-floor", callback=kappa, help="With --audit: below this kappa (judge against people) the judge is set aside: INDETERMINATE.")] = None,
    quiet: QuietOption = False,
) -> None:
    """Score a run against judgments and decide the gates.

    Thresholds may also be given as --min-<metric><k> VALUE under --gate-policy."""
    options = {name: value for name, value in locals().items() if name not in ("ctx", "gate_policy")}
    options["gate"] = [*gate, *policy_gates(gate_policy, min_thresholds(ctx.args)[0])]
    raise typer.Exit(run_score(**options))


class Backend(str, Enum):
    http = "http"
    command = "command"
    run_file = "run-file"
    python = "python"


def retriever_config(backend: Backend, **options: Any) -> dict[str, Any]:
    """The eval backends' configuration from the command's options (``make_retriever`` reads
    it); HTTP without a URL template asks rag-eval-gate's default, and says so."""
    if backend is Backend.http and options["url_template"] is None:
        options["url_template"] = PEER_URL
        sys.stderr.write(f"note: no --url-template: asking rag-eval-gate's default, {PEER_URL}\n")
    return {"backend": backend.value, **options}


def peer_mode(config: dict[str, Any], option: str) -> str | None:
    """rag-eval-gate's mode for a template that has ``{mode}`` when the command names none."""
    template = " ".join(str(config.get(name) or "") for name in ("url_template", "command", "body_template"))
    if config["backend"] == Backend.run_file.value or "{mode}" not in template:
        return None
    sys.stderr.write(f"note: no {option} for the template's {{mode}}: rag-eval-gate's default, {PEER_MODE}\n")
    return PEER_MODE


#: The retriever's options, shared by eval and calibrate (the eval backends).
BackendOption = Annotated[Backend, typer.Option("--backend", help="How to reach the retriever.")]
UrlTemplateOption = Annotated[Optional[str], typer.Option("--url-template", help=f"HTTP: {{query}}, {{query_id}}, {{k}}, {{mode}} are URL-encoded. Default rag-eval-gate's {PEER_URL}.", show_default=False)]
MethodOption = Annotated[str, typer.Option("--method", help="HTTP: GET or POST.")]
BodyTemplateOption = Annotated[Optional[str], typer.Option("--body-template", help="HTTP POST: a JSON body with placeholders.")]
ResultsPathOption = Annotated[str, typer.Option("--results-path", help="Dotted path to the hit list in the answer; default the answer itself, or its 'results' (rag-eval-gate's).")]
IdFieldOption = Annotated[str, typer.Option("--id-field", help="The hit's id: a chunk id or doc uri of the judgments; with the default, a hit without 'id' may carry 'docId' (rag-eval-gate's).")]
ScoreFieldOption = Annotated[str, typer.Option("--score-field", help="The hit's score; '' when hits carry none.")]
HeaderEnvOption = Annotated[list[str], typer.Option("--header-env", help="HTTP header from the environment: NAME=ENV_VARIABLE. Repeatable.")]
CommandOption = Annotated[Optional[str], typer.Option("--command", help="An argv template (JSON list or command line), run without a shell.")]
PythonOption = Annotated[Optional[str], typer.Option("--python", help="module:function returning ranked ids.")]
ConcurrencyOption = Annotated[int, typer.Option("--concurrency", min=1, max=MAX_CONCURRENCY, help="Calls in flight.")]
TimeoutOption = Annotated[float, typer.Option("--timeout", callback=positive, help="Seconds per call.")]
RetriesOption = Annotated[int, typer.Option("--retries", min=0, max=MAX_RETRIES, help="Retries of a transient failure, with backoff.")]
RateOption = Annotated[Optional[float], typer.Option("--rate", callback=positive, help="At most this many calls per second.")]


@app.command("eval", context_settings=THRESHOLD_FLAGS)
def eval_(
    ctx: typer.Context,
    gold: Annotated[Optional[str], typer.Argument(help="The gold set or judgments (as --judgments), as rag-eval-gate takes it.", show_default=False)] = None,
    judgments: Annotated[Optional[str], typer.Option("--judgments", "-j", "--gold", help="Judgments JSONL (with query texts), a gold set (query, relevant_doc_ids), TREC qrels or BEIR TSV.")] = None,
    queries_file: Annotated[Optional[str], typer.Option("--queries-file", help="Query texts for qrels: BEIR's queries.jsonl, or query_id/query lines.")] = None,
    backend: BackendOption = Backend.http,
    url_template: UrlTemplateOption = None,
    method: MethodOption = "GET",
    body_template: BodyTemplateOption = None,
    results_path: ResultsPathOption = "",
    id_field: IdFieldOption = "id",
    score_field: ScoreFieldOption = "score",
    header_env: HeaderEnvOption = [],  # noqa: B006
    command: CommandOption = None,
    run_file: Annotated[list[str], typer.Option("--run-file", help="A TREC run or run JSONL; several are several systems.")] = [],  # noqa: B006
    python_target: PythonOption = None,
    modes: Annotated[Optional[str], typer.Option("--modes", help="Comma-separated modes, one run each ({mode}); the first is the baseline.")] = None,
    concurrency: ConcurrencyOption = 16,
    timeout: TimeoutOption = 10.0,
    retries: RetriesOption = 3,
    rate: RateOption = None,
    cache: Annotated[Optional[str], typer.Option("--cache", help="Result cache (JSONL); a rerun resumes from it. Default OUT/cache.jsonl.")] = None,
    max_errors: Annotated[float, typer.Option("--max-errors", callback=share, help="Share of queries allowed to fail before the verdict fails.")] = 0.0,
    out: Annotated[str, typer.Option("--out", "-o", help="Directory for the runs, errors and reports.")] = "goldkeeper-eval",
    k: Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10 (default 10).")] = [],  # noqa: B006
    threshold: ThresholdOption = 1,
    gate: Annotated[list[str], typer.Option("--gate", help=GATE_HELP + " Alone (followed by an option or nothing), as rag-eval-gate's flag: its thresholds recall@5 0.9, mrr@10 0.85, ndcg@10 0.85, each overridden by --min-<metric><k>.")] = [],  # noqa: B006
    report: Annotated[Optional[str], typer.Option("--report", help="Also write the (first run's) report here: JSON, or Parquet when the name ends .parquet.")] = None,
    now: Annotated[Optional[str], typer.Option("--now", help="Report time (ISO 8601); else SOURCE_DATE_EPOCH; else now.")] = None,
    intervals: Annotated[bool, typer.Option("--intervals/--no-intervals", help="A confidence interval on every metric.")] = True,
    confidence: Annotated[float, typer.Option("--confidence", callback=probability, help="Interval confidence level.")] = 0.95,
    resamples: Annotated[int, typer.Option("--resamples", min=1, max=MAX_RESAMPLES, help="Bootstrap resamples for graded metrics under 500 queries (from 500 the distribution is computed).")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", "--sequential-seed", min=0, max=MAX_SEED, help="Seed of the bootstrap (under 500 queries) and of the order sequential gates watch queries in, recorded in their results.")] = 0,
    output: Annotated[ReportFormat, typer.Option("--format", help="text, json or markdown.")] = ReportFormat.text,
    gate_policy: Annotated[Optional[GatePolicy], typer.Option("--gate-policy", help=POLICY_HELP)] = None,
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="A previous report, for delta and regression gates.")] = None,
    paired_sequential: Annotated[Optional[str], typer.Option("--paired-sequential", help="METRIC (mrr@10): an anytime-valid paired comparison of each mode or run against the first, which stops asking both once every difference is settled (rag-eval-gate's paired_gate); exit 1 unless each challenger is settled better.")] = None,
    quiet: QuietOption = False,
) -> None:
    """Call a retriever for every judged query, record the runs, score and gate them.

    Thresholds may also be given as --min-<metric><k> VALUE under --gate-policy."""
    import hashlib

    from goldkeeper.core.comparison import compare_scores
    from goldkeeper.core.evaluation import Retrieval, Settings, evaluate
    from goldkeeper.core.power import gold_set_resolution
    from goldkeeper.core.validation import validate
    from goldkeeper.io.files import report_bytes, write_bytes_atomic
    from goldkeeper.io.loading import load_baseline, load_label_rows, write_report
    from goldkeeper.io.retrieval import retrieve_run, sequential_plan
    from goldkeeper.io.retrievers import make_retriever
    from goldkeeper.render import sequential_line

    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out: names a folder for the runs, errors and reports, and {out} is a file")
    cache = cache or os.path.join(out, "cache.jsonl")
    if os.path.isdir(cache):
        raise UsageError(f"--cache: names a file (JSONL), and {cache} is a folder")
    thresholds, given = min_thresholds([gold, *ctx.args] if gold is not None else ctx.args, positional=True)
    if len(given) + (judgments is not None) != 1:
        raise UsageError("eval: name the gold set once, as an argument or as --judgments"
                         + (f", got {len(given)} arguments: {' '.join(given)}" if len(given) > 1 else ""))
    judgments = judgments or given[0]
    peer = "" in gate
    gate = [expression for expression in gate if expression]
    gates, ks = gates_and_cutoffs([*gate, *policy_gates(gate_policy, thresholds, peer=peer)], k, seed)
    paired_id = None if paired_sequential is None else metric_id(paired_sequential)
    paired_metric = None if paired_id is None else str(paired_id)
    if paired_id is not None and paired_id.k not in ks:
        ks.append(paired_id.k)
    config = retriever_config(backend, url_template=url_template, method=method, body_template=body_template,
                              results_path=results_path, id_field=id_field, score_field=score_field,
                              header_env=header_env, command=command, python=python_target, timeout=timeout)
    modes = modes or peer_mode(config, "--modes")
    settings = Settings(tuple(ks), threshold, tuple(gates), bootstrap_spec(intervals, confidence, resamples, seed))
    previous = load_baseline(baseline) if baseline else None
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
    if paired_metric is not None and len(systems) < 2:
        raise UsageError("--paired-sequential: compares systems, and there is one: give --modes a,b or two --run-file")
    with progress(quiet=quiet or output is ReportFormat.json):
        rows, judgments_sha = load_label_rows(judgments, queries=queries_file)
    validation = validate(rows)
    # All gates sequential: ask in the gates' order and stop once they settle (sequential_plan).
    texts, settled, spent = sequential_plan(rows, gates, threshold,
                                            need_text=backend is not Backend.run_file)
    generated_at = report_time(now)
    os.makedirs(out, exist_ok=True)
    paired = None
    if paired_metric is not None:
        # Every system asked the same queries in the seeded order, a batch at a time; with no
        # gate that needs every query, asking stops once each challenger is settled.
        from goldkeeper.core.gates import sequential_order
        from goldkeeper.io.retrieval import paired_stop, paired_verdicts, retrieve_runs, spent_record

        ordered = {query_id: texts[query_id] for query_id in sequential_order(texts, seed)}
        stop = paired_stop(rows, paired_metric, threshold) if not gates else None
        with progress(f"retrieving {', '.join(name for name, _, _ in systems)}", len(ordered) * len(systems),
                      quiet=quiet or output is ReportFormat.json) as advance:
            gots = retrieve_runs([(retriever, name, mode) for name, retriever, mode in systems], ordered, max(ks),
                                 concurrency=concurrency, retries=retries, rate=rate, cache=cache, progress=advance,
                                 settled=stop)
        paired = paired_verdicts(rows, [got.entries for got in gots], [got.name for got in gots], gots[0].asked,
                                 paired_metric, threshold)
        spent_by = [spent_record(got, concurrency, seed, "the paired comparison") if stop is not None else None
                    for got in gots]
    else:
        gots = []
        for name, retriever, mode in systems:
            with progress(f"retrieving {name}", len(texts), quiet=quiet or output is ReportFormat.json) as advance:
                gots.append(retrieve_run(retriever, name, texts, max(ks), mode, concurrency=concurrency,
                                         retries=retries, rate=rate, cache=cache, progress=advance, settled=settled))
        spent_by = [spent(got, concurrency) if settled is not None else None for got in gots]
    named, reports = [], []
    for got, record in zip(gots, spent_by):
        name = got.name
        slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in os.path.basename(name)) or "run"
        run_path = os.path.join(out, f"run-{slug}.jsonl")
        write_bytes_atomic(run_path, got.run_bytes)
        write_bytes_atomic(os.path.join(out, f"errors-{slug}.jsonl"),
                           "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in got.errors).encode("utf-8"))
        inputs = {"judgments": {"url": judgments, "sha256": judgments_sha},
                  "run": {"url": run_path, "sha256": hashlib.sha256(got.run_bytes).hexdigest(), "system": name}}
        # Queries never asked (a sequential retrieval that stopped) are not scored as misses.
        retrieval = Retrieval(got.queries, got.errors, max_errors, record)
        built = evaluate(rows, got.entries, validation, settings, generated_at=generated_at, inputs=inputs,
                         baseline=previous, retrieval=retrieval)
        document = report_bytes(built)
        write_bytes_atomic(os.path.join(out, f"report-{slug}.json"), document)
        if report and not reports:
            write_report(report, built)
        named.append((name, built))
        reports.append((name, built, document))
    comparison = compare_scores(named) if len(named) > 1 else None
    if comparison is not None:
        write_bytes_atomic(os.path.join(out, "comparison.json"),
                           (json.dumps(comparison, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    resolution = gold_set_resolution([(name, built["per_query"]) for name, built, _ in reports],
                                     next((g.metric for g in gates if "@" in g.metric), f"mrr@{max(ks)}"))
    if output is ReportFormat.json:
        emit_json({"systems": {name: json.loads(document) for name, _, document in reports},
                    "comparison": comparison, "resolution": resolution, "paired": paired, "out": out})
    else:
        from goldkeeper.render import (
            comparison_markdown,
            paired_lines,
            print_comparison,
            print_report,
            report_markdown,
            resolution_lines,
        )

        for name, built, _ in reports:
            retrieval = built["retrieval"]
            if output is ReportFormat.markdown:
                sys.stdout.write(f"## {name}\n\n" + report_markdown(built))
            else:
                sys.stdout.write(f"== {name}: {retrieval['queries'] - retrieval['errors']} of {retrieval['queries']} "
                                 f"queries answered, {retrieval['errors']} errors\n")
                if "sequential" in retrieval:
                    sys.stdout.write(sequential_line(retrieval["sequential"]) + "\n")
                print_report(built)
        if comparison is not None and output is ReportFormat.text:
            print_comparison(comparison)
        elif comparison is not None:
            sys.stdout.write("\n" + comparison_markdown(comparison))
        if paired is not None:
            lines = paired_lines(paired)
            sys.stdout.write("\n".join(lines) + "\n" if output is ReportFormat.text
                             else "\n### Paired sequential comparison\n\n" + "".join(f"- {line.strip()}\n" for line in lines[1:]))
        if resolution is not None:
            lines = resolution_lines(resolution, resolution["power"], resolution.get("target"))
            sys.stdout.write("\n".join(lines) + "\n" if output is ReportFormat.text
                             else "\n### " + lines[0].rstrip(":").capitalize() + "\n\n"
                             + "".join(f"- {line.strip()}\n" for line in lines[1:]))
        sys.stdout.write(f"runs, errors and reports in {out}/\n" if output is ReportFormat.text
                         else f"\nRuns, errors and reports: `{out}/`.\n")
    ok = all(built["verdict"]["status"] == "PASS" for _, built, _ in reports)
    ok = ok and all(verdict["decision"] == "better" for verdict in paired or [])
    raise typer.Exit(EXIT_OK if ok else EXIT_FAILED)


def _resolved(rows: list[dict[str, Any]], corpus: str | None) -> tuple[Any, dict[str, Any] | None]:
    """The labels grouped for a run over ``corpus``: its span labels resolved to its chunks."""
    from goldkeeper.core.scoring import build_qrels

    if corpus is None or not any(row.get("span") is not None for row in rows):
        return build_qrels(rows), None
    from goldkeeper.io.snapshots import resolve_spans_at

    resolution = resolve_spans_at(corpus, rows)
    return build_qrels(resolution.rows), resolution.summary()


@app.command()
def compare(
    judgments: Annotated[str, typer.Option("--judgments", "-j", help="Judgments JSONL, TREC qrels or BEIR TSV.")],
    run: Annotated[list[str], typer.Option("--run", "-r", help="A run; the first is the baseline. Repeat.")],
    k: Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10 (default 10).")] = [],  # noqa: B006
    metric: Annotated[list[str], typer.Option("--metric", "-m", help="Metric ids to compare (default all).")] = [],  # noqa: B006
    threshold: ThresholdOption = 1,
    alpha: Annotated[float, typer.Option("--alpha", callback=probability, help="Family-wise error rate per metric.")] = 0.05,
    resamples: Annotated[int, typer.Option("--resamples", min=1, max=MAX_RESAMPLES, help="Monte Carlo sign flips beyond 20 differing pairs.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Seed of the Monte Carlo sign flips.")] = 0,
    output: Annotated[ReportFormat, typer.Option("--format", help="text, json or markdown.")] = ReportFormat.text,
    corpus: Annotated[list[str], typer.Option("--corpus", help="The snapshot each run was made over, in the runs' order (one for all, or one per run): span labels resolve to each run's own chunks, so runs over different chunkings compare on one gold set.")] = [],  # noqa: B006
) -> None:
    """Paired comparison of runs against the first: better, worse, no difference, or unresolvable."""
    from goldkeeper.core.comparison import compare_scores
    from goldkeeper.core.scoring import score as score_run
    from goldkeeper.io.loading import load_label_rows, load_run

    if len(run) < 2:
        raise UsageError("compare needs at least two --run: a baseline and a challenger")
    if len(set(run)) != len(run):
        raise UsageError("compare: the same run file was given twice; a run is never compared with itself")
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha: must be between 0 and 1, got {alpha}")
    ks = parse_cutoffs(k) if k else []
    chosen = []
    for name in metric:
        parsed = metric_id(name)
        chosen.append(str(parsed))  # other tools' spellings as goldkeeper's ids
        if parsed.k not in ks:
            ks.append(parsed.k)
    ks = ks or [10]
    if len(corpus) not in (0, 1, len(run)):
        raise UsageError(f"--corpus: one snapshot for all runs or one per run ({len(run)}), got {len(corpus)}")
    rows, _ = load_label_rows(judgments)
    snapshots = corpus * len(run) if len(corpus) == 1 else corpus or [None] * len(run)
    if not corpus:
        from goldkeeper.io.loading import unanchored

        unanchored(rows, source_name(judgments))
    resolved: dict[str | None, Any] = {}
    named = []
    runs_info = []
    for url, snapshot in zip(run, snapshots):
        if snapshot not in resolved:
            resolved[snapshot] = _resolved(rows, snapshot)
        qrels, spans = resolved[snapshot]
        entries, hashed = load_run(url)
        if snapshot is not None:
            from goldkeeper.io.snapshots import check_run_over

            entries = list(entries)
            check_run_over(snapshot, (key for entry in entries for key in entry.ranking), url)
        result = score_run(qrels, entries, k=ks, threshold=threshold)
        named.append((url, result))
        info = {"url": url, "sha256": hashed.hexdigest(), "missing_queries": result.missing_queries}
        if snapshot is not None:
            info["corpus"] = {"url": snapshot}
        if spans is not None:
            info["spans"] = spans
        runs_info.append(info)
    try:
        payload = compare_scores(named, metrics=chosen or None, alpha=alpha, resamples=resamples, seed=seed)
    except ValueError as error:
        raise UsageError(str(error)) from None
    payload["runs"] = runs_info
    if output is ReportFormat.json:
        emit_json(payload)
    elif output is ReportFormat.markdown:
        from goldkeeper.render import comparison_markdown

        sys.stdout.write(comparison_markdown(payload))
    else:
        from goldkeeper.render import print_comparison

        print_comparison(payload)


@app.command()
def power(
    gold: Annotated[Optional[str], typer.Argument(help="The gold set (as --judgments).", show_default=False)] = None,
    judgments: Annotated[Optional[str], typer.Option("--judgments", "-j", help="Judgments JSONL, TREC qrels or BEIR TSV.")] = None,
    run: Annotated[list[str], typer.Option("--run", "-r", help="Baseline then candidate; omit both to assume a spread.")] = [],  # noqa: B006
    metric: Annotated[str, typer.Option("--metric", "-m", help="Metric id.")] = "recall@10",
    target: Annotated[Optional[float], typer.Option("--target", callback=positive, help="An effect to size the query set for.")] = None,
    sd: Annotated[float, typer.Option("--sd", callback=positive, help="Assumed sd of per-query differences when no run is given.")] = 0.5,
    alpha: Annotated[float, typer.Option("--alpha", callback=probability, help="Two-sided significance level.")] = 0.05,
    power_: Annotated[float, typer.Option("--power", callback=probability, help="Wanted power.")] = 0.8,
    confidence: Annotated[float, typer.Option("--confidence", callback=probability, help="Confidence of the interval widths.")] = 0.95,
    threshold: ThresholdOption = 1,
    output: FormatOption = OutputFormat.text,
) -> None:
    """What a gold set can resolve, with no retriever: the smallest p by differing queries, the
    interval widths by size, and queries needed by spread and effect; with two runs, their
    measured spread."""
    from goldkeeper.core.power import power_analysis, resolution_ladders
    from goldkeeper.core.scoring import build_qrels
    from goldkeeper.core.scoring import score as score_run
    from goldkeeper.io.loading import load_label_rows, load_run

    if (gold is None) == (judgments is None):
        raise UsageError("power: name the gold set once, as an argument or as --judgments")
    if len(run) not in (0, 2):
        raise UsageError("power takes no --run (an assumed spread) or exactly two: baseline, candidate")
    parsed = metric_id(metric)
    metric = str(parsed)
    rows, _ = load_label_rows(gold or judgments or "")
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
            found["gold_set"] = resolution_ladders(scored, alpha=alpha, power=power_, confidence=confidence)
    except ValueError as error:
        raise UsageError(str(error)) from None
    found["metric"] = metric
    if output is OutputFormat.json:
        emit_json(found)
        return
    from goldkeeper.render import print_power

    print_power(found, power_, target)


class AuditBound(str, Enum):
    auto = "auto"
    binary = "binary"
    graded = "graded"


@app.command()
def audit(
    n: Annotated[Optional[int], typer.Option("-n", callback=queries, help="Number of queries the figure was computed on.")] = None,
    value: Annotated[Optional[float], typer.Option("-v", "--value", help="The reported mean, from 0 to 1.")] = None,
    metric: Annotated[str, typer.Option("-m", "--metric", help="Metric id, e.g. recall@5.")] = "recall@5",
    baseline: Annotated[Optional[float], typer.Option("-b", "--baseline", help="The baseline it claims to beat.")] = None,
    binary: Annotated[bool, typer.Option("--binary", help="Force the exact 0/1 bound (every figure must be k/n).")] = False,
    graded: Annotated[bool, typer.Option("--graded", help="Force the graded bound (variance <= m(1-m)).")] = False,
    confidence: Annotated[float, typer.Option("--confidence", callback=probability, help="Interval confidence level.")] = 0.95,
    alpha: Annotated[float, typer.Option("--alpha", callback=probability, help="Significance level of the lift test.")] = 0.05,
    power_: Annotated[float, typer.Option("--power", callback=probability, help="Power for the queries that would resolve the lift.")] = 0.8,
    web: Annotated[bool, typer.Option("--web", help="Write the browser calculator (one static page) and print its link.")] = False,
    out: Annotated[str, typer.Option("--out", "-o", help="Where --web writes the page.")] = "goldkeeper-audit.html",
    open_page: Annotated[bool, typer.Option("--open", help="With --web, open the page in the default browser.")] = False,
    output: FormatOption = OutputFormat.text,
) -> None:
    """Audit a published figure: its interval, and whether a claimed lift could be significant."""
    from goldkeeper.core.audit import audit as run_audit

    if binary and graded:
        raise UsageError("audit: --binary and --graded exclude each other")
    bound = AuditBound.binary if binary else AuditBound.graded if graded else AuditBound.auto
    metric = str(metric_id(metric))
    if web:
        audit_web(out, open_page, n=n, metric=metric, value=value, baseline=baseline, bound=bound.value,
                  confidence=confidence, alpha=alpha, power=power_)
        return
    if n is None or value is None:
        raise UsageError("audit: needs -n (queries) and -v (the reported mean); --web writes the calculator instead")
    try:
        found = run_audit(n, metric, value, baseline, confidence, alpha,
                          bound=None if bound is AuditBound.auto else bound.value, power=power_)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if output is OutputFormat.json:
        emit_json(found)
    else:
        from goldkeeper.render import print_audit

        print_audit(found)
    raise typer.Exit(EXIT_FAILED if found.get("lift", {}).get("verdict") == "unresolvable" else EXIT_OK)


def audit_web(out: str, open_page: bool, **inputs: Any) -> None:
    """Write the calculator page and print a link that opens it on ``inputs`` (those given)."""
    from pathlib import Path

    from goldkeeper.io.files import write_bytes_atomic
    from goldkeeper.web import audit_page, link_fragment

    target = Path(out)
    if target.is_dir():
        raise UsageError(f"--out: {out} is a folder; name the page's file, e.g. {target / 'audit.html'}")
    write_bytes_atomic(str(target), audit_page().encode())
    link = target.resolve().as_uri() + link_fragment(inputs)
    sys.stdout.write(f"wrote {out}\nopen: {link}\n"
                     "publish: copy the file to any static host (GitHub Pages, an S3 bucket); it sends nothing anywhere\n")
    if open_page:
        import webbrowser

        webbrowser.open(link)


@app.command()
def agreement(
    files: Annotated[list[str], typer.Argument(help="Judgments files (JSONL, TREC qrels, BEIR): human: and synthetic: labels, in one file or several.")],
    threshold: ThresholdOption = 1,
    output: FormatOption = OutputFormat.text,
) -> None:
    """How far the LLM judge (synthetic: labels) agrees with people (human: labels): Cohen's
    kappa with the base rates, on the pairs both labelled."""
    from goldkeeper.core.agreement import agreement as agree
    from goldkeeper.io.loading import load_label_rows

    rows: list[dict[str, Any]] = []
    for url in files:
        rows.extend(load_label_rows(url)[0])
    found = agree(rows, threshold)
    if output is OutputFormat.json:
        emit_json(found)
    else:
        from goldkeeper.render import print_agreement

        print_agreement(found, threshold)
    raise typer.Exit(EXIT_OK if found["pairs"] else EXIT_FAILED)


@app.command()
def calibrate(
    gold: Annotated[Optional[str], typer.Argument(help="The gold set or judgments (as --judgments), as rag-eval-gate takes it.", show_default=False)] = None,
    judgments: Annotated[Optional[str], typer.Option("--judgments", "-j", "--gold", help="Judgments JSONL, a gold set, TREC qrels or BEIR TSV.")] = None,
    run: Annotated[Optional[str], typer.Option("--run", "-r", help="A run with the retriever's scores (TREC run, or run JSONL with scores); without it the retriever is asked, as eval asks it.")] = None,
    queries_file: Annotated[Optional[str], typer.Option("--queries-file", help="Query texts for qrels: BEIR's queries.jsonl, or query_id/query lines.")] = None,
    backend: BackendOption = Backend.http,
    url_template: UrlTemplateOption = None,
    method: MethodOption = "GET",
    body_template: BodyTemplateOption = None,
    results_path: ResultsPathOption = "",
    id_field: IdFieldOption = "id",
    score_field: ScoreFieldOption = "score",
    header_env: HeaderEnvOption = [],  # noqa: B006
    command: CommandOption = None,
    python_target: PythonOption = None,
    mode: Annotated[Optional[str], typer.Option("--mode", help="The retriever's {mode} (default rag-eval-gate's hybrid when the template has one).")] = None,
    concurrency: ConcurrencyOption = 16,
    timeout: TimeoutOption = 10.0,
    retries: RetriesOption = 3,
    rate: RateOption = None,
    cache: Annotated[Optional[str], typer.Option("--cache", help="Result cache (JSONL) of the retriever's answers; a rerun resumes from it.")] = None,
    alpha: Annotated[float, typer.Option("--alpha", callback=probability, help="Coverage: a relevant passage in the set with probability >= 1 - alpha.")] = 0.10,
    risk_alpha: Annotated[float, typer.Option("--risk-alpha", callback=probability, help="Risk: answering without a relevant passage at most this often...")] = 0.05,
    delta: Annotated[float, typer.Option("--delta", callback=probability, help="...with probability >= 1 - delta over the calibration draw.")] = 0.05,
    splits: Annotated[str, typer.Option("--splits", help="Temperature, calibration and evaluation fractions.")] = "0.25,0.5,0.25",
    temperature: Annotated[Optional[float], typer.Option("--temperature", callback=positive, help="Fix the softmax temperature instead of choosing it on the first split.")] = None,
    max_k: Annotated[Optional[int], typer.Option("--max-k", min=1, max=MAX_CUTOFF, help=f"A hard cap on passages (reported when it binds); a retriever asked is asked for this many, default {PEER_DEPTH} (rag-eval-gate's).")] = None,
    threshold: ThresholdOption = 1,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Seed of the split.")] = 0,
    output: FormatOption = OutputFormat.text,
) -> None:
    """Certify how many passages to send an LLM (conformal) and when to abstain (risk control)."""
    from goldkeeper.core.calibration import calibrate as certify
    from goldkeeper.core.calibration import calibration_queries
    from goldkeeper.core.scoring import build_qrels
    from goldkeeper.io.loading import load_label_rows, load_run

    try:
        fractions = tuple(float(part) for part in splits.split(","))
    except ValueError:
        raise UsageError(f"--splits: three fractions like 0.25,0.5,0.25, got {splits}") from None
    if (gold is None) == (judgments is None):
        raise UsageError("calibrate: name the gold set once, as an argument or as --judgments")
    judgments = gold or judgments or ""
    if run is not None and (backend is not Backend.http or url_template or command or python_target or mode):
        raise UsageError("calibrate: --run is the retriever's answers already; it takes no retriever options")
    if backend is Backend.run_file:
        raise UsageError("calibrate: a run file is --run")
    rows, _ = load_label_rows(judgments, queries=queries_file)
    if run is None:
        from goldkeeper.io.retrieval import judged_queries, retrieve_run
        from goldkeeper.io.retrievers import make_retriever

        config = retriever_config(backend, url_template=url_template, method=method, body_template=body_template,
                                  results_path=results_path, id_field=id_field, score_field=score_field,
                                  header_env=header_env, command=command, python=python_target, timeout=timeout)
        mode = mode or peer_mode(config, "--mode") or ""
        retriever = make_retriever(config)
        texts = judged_queries(rows, build_qrels(rows).grades, need_text=True, threshold=threshold)
        with progress("retrieving", len(texts), quiet=output is OutputFormat.json) as advance:
            got = retrieve_run(retriever, mode or backend.value, texts, max_k or PEER_DEPTH, mode,
                               concurrency=concurrency, retries=retries, rate=rate, cache=cache, progress=advance)
        if got.errors:
            first = got.errors[0]
            raise UsageError(f"calibrate: {len(got.errors)} of {len(texts)} queries got no answer from the retriever "
                             f"(first: {first.get('query_id')}: {first.get('error')}); a certificate needs every one")
        entries, where = got.entries, "the retriever's answers"
    else:
        entries, _ = load_run(run)
        where = source_name(run)
    queries, excluded = calibration_queries(build_qrels(rows).grades, entries, threshold, where)
    try:
        certificate = certify(queries, alpha=alpha, risk_alpha=risk_alpha, delta=delta, fractions=fractions,
                              temperature=temperature, max_k=max_k, seed=seed)
    except ValueError as error:
        raise UsageError(str(error)) from None
    payload = certificate.to_dict()
    payload["excluded"] = {**excluded, **payload["excluded"]}
    if output is OutputFormat.json:
        emit_json(payload)
    else:
        from goldkeeper.render import print_certificate

        print_certificate(payload)
    ok = payload["coverage"]["certified"] and payload["risk"]["certified"] and not payload["risk"]["degenerate"]
    raise typer.Exit(EXIT_OK if ok else EXIT_FAILED)


