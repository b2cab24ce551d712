"""Score runs against a suite's judgments, publish the report, and show it on dashboards.

The flow reads like its table of contents: load, validate, score, report, publish, show,
then end in the state its verdict is: Completed for PASS, Failed for FAIL, Failed named
"Indeterminate" for INDETERMINATE (spec/prefect.md), tagged with suite and verdict, with an
event about the suite for automations. Each task calls one core or io function; retries
and timeouts live on the decorators, and no task retries a verdict: only reading and
writing storage do.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Completed, Failed, State

from goldkeeper.core.drift import drift_counts
from goldkeeper.core.evaluation import Settings
from goldkeeper.core.judgments import dump_rows
from goldkeeper.core.rejudge import Waiting
from goldkeeper.core.scoring import build_qrels, score
from goldkeeper.core.trend import attribute_change, gate_thresholds, gated_metrics, trend_points, with_queued_found
from goldkeeper.core.validation import validate
from goldkeeper.dashboard import (
    metric_rows,
    suite_page,
    summary_markdown,
    trend_chart_svg,
    trend_markdown,
    verdict_line,
)
from goldkeeper.flows.clock import now
from goldkeeper.flows.faults import step, storage_root
from goldkeeper.flows.reports import evaluation
from goldkeeper.flows.scale import clean_work, score_in_partitions, task_runner
from goldkeeper.flows.signals import announce, tag_run
from goldkeeper.io.files import open_write_atomic
from goldkeeper.io.loading import load_label_rows, load_run_prefixes, unanchored
from goldkeeper.io.snapshots import open_corpus, resolve_spans_at
from goldkeeper.io.storage import (
    browser_link,
    content_sha256,
    evaluation_key,
    find_evaluation,
    publish_page,
    publish_report,
    read_history,
    suite_slug,
    work_url,
)

__all__ = ["EvaluationFailed", "evaluate", "outcome_of", "rolled_up", "verdict_state"]


class EvaluationFailed(Exception):
    """An evaluation whose verdict is FAIL or INDETERMINATE: the Failed state's data, so a
    caller of the flow gets the outcome (``.outcome``: verdict, reasons, report URL) with
    the exception, and ``state.result(raise_on_failure=False)`` returns it."""

    def __init__(self, outcome: dict[str, Any]) -> None:
        super().__init__(f"{outcome.get('suite', 'evaluation')}: {outcome['verdict']}: {outcome.get('message', '')}")
        self.outcome = outcome

    def __reduce__(self):  # pickled with the state's data
        return (type(self), (self.outcome,))


class _VerdictIsNoCrash(logging.Filter):
    """Prefect's engine re-raises a Failed flow run's exception when the run ends in a
    worker's process, and logs it as "exited with unexpected exception" with its traceback,
    to the run's log and the worker's. For an ``EvaluationFailed`` that is an answer, not a
    crash, already logged at its level by the flow: the record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, EvaluationFailed)


# The flow run's logger and the engine's: where the worker's subprocess logs the exception.
for _name in ("prefect.flow_runs", "prefect.engine"):
    logging.getLogger(_name).addFilter(_VerdictIsNoCrash())


def verdict_state(outcome: dict[str, Any]) -> State:
    """The flow run's final state for an outcome: its verdict, with the one-line reason."""
    message = f"{outcome['verdict']}: {outcome['message']}"
    if outcome["verdict"] == "PASS":
        return Completed(message=message, data=outcome)
    name = "Indeterminate" if outcome["verdict"] == "INDETERMINATE" else "Failed"
    return Failed(name=name, message=message, data=EvaluationFailed(outcome))


def rolled_up(outcome: dict[str, Any]) -> State:
    """The lifecycle's state: Completed when every evaluation passed (or none ran), else
    Failed with each evaluation that did not pass in its message, the worst verdict named,
    and the outcome in an ``EvaluationFailed``."""
    evaluations = outcome["evaluations"]
    failing = {url: e for url, e in evaluations.items() if e["verdict"] != "PASS"}
    if not failing:
        return Completed(message=f"{len(evaluations)} evaluation(s) passed", data=outcome)
    worst = "FAIL" if any(e["verdict"] == "FAIL" for e in failing.values()) else "INDETERMINATE"
    outcome = {**outcome, "verdict": worst,
               "message": f"{len(failing)} of {len(evaluations)} evaluation(s) did not pass: "
                          + "; ".join(f"{_named(e)} {e['verdict']} ({e['message']})" for e in failing.values())}
    return Failed(name="Indeterminate" if worst == "INDETERMINATE" else "Failed", message=outcome["message"][:400],
                  data=EvaluationFailed(outcome))


def _named(outcome: dict[str, Any]) -> str:
    """An evaluation as people name it: its suite, and its system when the suite has several."""
    return outcome["suite"] if not outcome.get("system") else f"{outcome['suite']} ({outcome['system']})"


def outcome_of(state: State) -> dict[str, Any]:
    """The outcome of a finished evaluate run, whatever its verdict; a run that crashed or
    failed for another reason raises that reason. Sync even where an event loop runs (a
    notebook, a browser driver): Prefect's ``result`` would hand back a coroutine there."""
    data = state.result(raise_on_failure=False, _sync=True)
    if isinstance(data, EvaluationFailed):
        return data.outcome
    if isinstance(data, BaseException):
        raise data
    return data


#: How many times an evaluation draws the suite's page again when the history changed under it
#: (each time, another evaluation of the suite published its line meanwhile).
PAGE_REDRAWS = 10

@step(timeout_seconds=900)
def load_judgments(url: str) -> tuple[list[dict[str, Any]], str]:
    return load_label_rows(url)


@step(timeout_seconds=900)
def load_run(url: str, depth: int):
    return load_run_prefixes(url, None, depth)


@step(timeout_seconds=900)
def check_judgments(rows: list[dict[str, Any]]):
    return validate(rows)


@step(timeout_seconds=1800)
def resolve_spans(rows: list[dict[str, Any]], corpus_url: str):
    return resolve_spans_at(corpus_url, rows)


@step(timeout_seconds=1800)
def check_corpus(rows: list[dict[str, Any]], corpus_url: str):
    return drift_counts(rows, open_corpus(corpus_url))


@step(name="publish_report", timeout_seconds=300)
def publish(storage_url: str, suite: str, report: dict[str, Any], key: str | None = None,
            system: str | None = None) -> str:
    return publish_report(storage_url, suite, report, key, system)


@step(timeout_seconds=900)
def content_hash(url: str) -> str:
    return content_sha256(url)


@step(timeout_seconds=300)
def already_evaluated(storage_url: str, suite: str, key: str, system: str | None = None) -> dict[str, Any] | None:
    return find_evaluation(storage_url, suite, key, system)


@step(timeout_seconds=300)
def read_suite_history(storage_url: str, suite: str) -> list[dict[str, Any]]:
    return read_history(storage_url, suite)


@step(timeout_seconds=300)
def read_report(url: str) -> dict[str, Any]:
    from goldkeeper.io.loading import read_report as read

    return read(url)


@step(timeout_seconds=300)
def read_judge_audit(url: str) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    from goldkeeper.io.storage import read_audit

    return read_audit(url)


@step(timeout_seconds=600)
def judge_audit(rows: list[dict[str, Any]], record: dict[str, Any], people: list[dict[str, Any]] | None,
                threshold: int):
    from goldkeeper.core.evaluation import audit_for

    return audit_for(rows, record, people, threshold)


@step(timeout_seconds=300)
def read_queue_items(url: str) -> list[dict[str, Any]]:
    from goldkeeper.io.storage import read_queue

    return read_queue(url)


@step(timeout_seconds=900)
def bracket_queued(rows: list[dict[str, Any]], run, items: list[dict[str, Any]], ks: list[int], threshold: int,
                   metrics: list[str], document: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each gated metric as scored and as it would be with every queued label found."""
    queued: dict[str, list[tuple[int, str]]] = {}
    for item in items:
        if item.get("action") == "rejudge" and item.get("chunk_id") and item.get("relevance", 0) >= threshold:
            queued.setdefault(item["query_id"], []).append((-item["relevance"], item["chunk_id"]))
    if not queued:
        return {}
    ends = list(itertools.accumulate(run.lengths))
    rankings = [run.keys[end - length:end] for end, length in zip(ends, run.lengths)]
    found = with_queued_found(run.query_ids, rankings, {q: [key for _, key in sorted(v)] for q, v in queued.items()})
    result = score(build_qrels(rows), [{"query_id": q, "ranking": r} for q, r in found], k=ks, threshold=threshold,
                   intervals=None)
    return {m: {"scored": document["metrics"][m]["value"], "found": result.metrics[m]["value"]}
            for m in metrics if m in document["metrics"] and m in result.metrics}


@step(timeout_seconds=900)
def attribute(rows: list[dict[str, Any]], previous: dict[str, Any], document: dict[str, Any],
              metrics: list[str]) -> dict[str, Any]:
    """The previous evaluation's run scored on these judgments: how much of each change the
    labels made and how much the retriever did (core.trend.attribute_change)."""
    from goldkeeper.errors import GoldkeeperError

    url = previous.get("run_url")
    if not url:
        return {"note": "the previous evaluation did not record where its run was"}
    try:
        run, sha = load_run_prefixes(url, None, max(document["k"]))
    except GoldkeeperError:
        return {"note": f"the previous run ({url}) can no longer be read"}
    if sha != previous.get("run_sha256"):
        return {"note": f"the previous run ({url}) has changed since it was scored"}
    again = score(build_qrels(rows), run, k=document["k"], threshold=document["threshold"], intervals=None).metrics
    return {"metrics": {m: attribute_change(previous["metrics"][m]["value"], again[m]["value"],
                                            document["metrics"][m]["value"])
                        for m in metrics if m in again and m in previous.get("metrics", {}) and m in document["metrics"]}}


@step(timeout_seconds=120)
def show(suite: str, document: dict[str, Any], report_url: str, points: list[dict[str, Any]], waiting: Waiting,
         queue_url: str | None, bracket, attribution, storage_url: str, queue_suite: str,
         system: str | None = None, point: dict[str, Any] | None = None) -> dict[str, str]:
    """Summaries as artifacts under stable keys, so the UI keeps their history (the system's
    metrics and summary, the suite's trend); the chart and the suite's page on storage beside
    the report. The pages' URLs."""
    slug = suite_slug(suite)
    own = slug if system is None else f"{slug}-{suite_slug(system)}"
    named = _named({"suite": suite, "system": system})
    gates = [g["expression"] for g in document["verdict"].get("gates") or []]
    metrics = gated_metrics(gates) or list(document["metrics"])[:2]
    create_table_artifact(key=f"goldkeeper-{own}-metrics", table=metric_rows(document),
                          description=f"{named}: {document['verdict']['status']}, metrics at 4 decimals")
    summary = summary_markdown(suite, document, report_link=browser_link(report_url), report_location=report_url,
                               waiting=waiting, queue_location=queue_url, queue_suite=queue_suite, bracket=bracket,
                               point=point, attribution=attribution, system=system)
    create_markdown_artifact(key=f"goldkeeper-{own}-summary", markdown=summary,
                             description=f"{named}: verdict, reasons and next steps")
    chart = trend_chart_svg(suite, points, metrics, gate_thresholds(gates))
    chart_url = publish_page(storage_url, suite, "trend.svg", chart)
    page = suite_page(suite, points, metrics, document, chart, summary, attribution, system)
    page_url = publish_page(storage_url, suite, "index.html", page.encode("utf-8"))
    page_link = browser_link(page_url)
    trend = trend_markdown(suite, points, metrics, browser_link(chart_url), page_link, chart)
    create_markdown_artifact(key=f"goldkeeper-{slug}-trend",
                             markdown=trend + ("" if page_link else f"\nThe suite's page on storage: `{page_url}`\n"),
                             description=f"{suite}: trend of the gated metrics")
    return {"chart": chart_url, "page": page_url}


@step(timeout_seconds=300)
def audit_key(audit_url: str) -> dict[str, Any]:
    """An audit's part of the evaluation key: its record and people's answers, by content."""
    from goldkeeper.io.storage import audit_sha256s

    return audit_sha256s(audit_url)


@step(timeout_seconds=900)
def write_resolved(work_url: str, rows: list[dict[str, Any]]) -> str:
    """Labels resolved to a snapshot's chunks, as a judgments file in the work folder."""
    url = f"{work_url}/resolved-judgments.jsonl"
    with open_write_atomic(url) as sink:
        sink.writelines(dump_rows(rows))  # type: ignore[attr-defined]
    return url


def _score_in_partitions(storage_url: str, suite: str, key: str, judgments_url: str, run_url: str, partitions: int,
                         k: list[int], threshold: int, cluster: str | None, workers: int,
                         resolved: list[dict[str, Any]] | None = None):
    """Score in query partitions, in a work folder named by the evaluation's ``key``;
    ``resolved``: the labels with their spans resolved to the run's snapshot, scored instead
    of the file's rows (the file's hash and validation are the caller's)."""
    work = work_url(storage_url, suite, "evaluate", key, str(partitions))
    source = judgments_url if resolved is None else write_resolved(work, resolved)
    found = score_in_partitions.with_options(task_runner=task_runner(cluster, workers))(
        source, run_url, work, partitions, k, threshold, remote=cluster not in (None, "local"),
        spans_resolved=resolved is not None)
    clean_work(work)
    return found


@flow(name="goldkeeper-evaluate", log_prints=True)
def evaluate(
    suite: str,
    judgments_url: str,
    run_url: str,
    storage_url: str | None = None,
    k: list[int] = [10],  # noqa: B006 - Prefect parameters are validated copies
    threshold: int = 1,
    gates: list[str] = [],  # noqa: B006
    intervals: bool = True,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    generated_at: str | None = None,
    corpus_url: str | None = None,
    retrieval: dict[str, Any] | None = None,
    partitions: int = 0,
    cluster: str | None = None,
    workers: int = 2,
    queue_url: str | None = None,
    queue_suite: str | None = None,
    system: str | None = None,
    audit_url: str | None = None,
) -> State:
    """Score one run of one suite, publish the report, show it, and end in its verdict's
    state, whose data is the outcome (verdict, reasons, report URL, pages).
    ``retrieval`` (from the eval flow: queries, errors, budget) adds the error budget gate.
    ``confidence``, ``resamples`` and ``seed`` are the intervals' (as ``goldkeeper score``'s).
    ``partitions`` > 0 scores in that many query partitions (goldkeeper.flows.scale), on
    threads or on Dask (``cluster``: "local" or a scheduler address): the same report.
    ``queue_url`` (the lifecycle's re-judgment queue) brackets each gated metric; it is the
    queue of ``queue_suite`` (default ``suite``), which the next steps name for the rejudge
    flow: the configured suite, when ``suite`` is one of its runs' evaluations. ``system`` names
    the run among the suite's several (the lifecycle's: its file stem): history, trend, page,
    events and tags are the suite's, with the system as a dimension. ``audit_url`` (the
    lifecycle's audit of the suite's judge, audit/<suite>/<time>.json): while the judgments
    hold the judge's labels, the metrics are PPI++ estimates on people's audit (INDETERMINATE
    until people answer it, or when the judge is below the kappa floor)."""
    storage_url = storage_root(storage_url)
    # Keyed by the inputs' content: the same judgments, run, corpus and settings again (a
    # repeated event, a retried schedule) find the published report and do no work twice;
    # its artifacts are shown again, so a new server's UI has them too.
    # (Interval settings other than the defaults are part of the key; the defaults are not,
    # so evaluations keyed before they were parameters are still found.)
    chosen = {name: value for name, value, default in (("confidence", confidence, 0.95), ("resamples", resamples, 10_000),
                                                       ("seed", seed, 0)) if intervals and value != default}
    key = evaluation_key(judgments=content_hash(judgments_url), run=content_hash(run_url),
                         corpus=content_hash(corpus_url) if corpus_url else None, k=k, threshold=threshold,
                         gates=gates, intervals=intervals, retrieval=retrieval, **chosen,
                         **(audit_key(audit_url) if audit_url else {}))
    found = already_evaluated(storage_url, suite, key, system)
    rows = run = labels = None
    if found is not None:
        print(f"{suite}: these inputs were evaluated already ({found['time']}); showing that report")
        report_url, document = found["report"], read_report(found["report"])
    else:
        record = read_judge_audit(audit_url) if audit_url else None
        spans = None
        if partitions > 0 and record is None:
            rows, sha = load_judgments(judgments_url) if corpus_url else (None, None)
            if rows is not None and any(row.get("span") is not None for row in rows):
                # Span labels score on the chunks of the snapshot the run was made over (spec/spans.md).
                resolution = resolve_spans(rows, corpus_url)
                spans = resolution.summary()
                labels, run_values, _, _, run_sha = _score_in_partitions(
                    storage_url, suite, key, judgments_url, run_url, partitions, k, threshold, cluster, workers,
                    resolution.rows)
                validation, judgments_sha = check_judgments(rows), sha
            else:
                labels, run_values, validation, judgments_sha, run_sha = _score_in_partitions(
                    storage_url, suite, key, judgments_url, run_url, partitions, k, threshold, cluster, workers)
        else:
            rows, judgments_sha = load_judgments(judgments_url)
            run, run_sha = load_run(run_url, max(k))
            validation = check_judgments(rows)
            labels, run_values = rows, run
        inputs = {"judgments": {"url": judgments_url, "sha256": judgments_sha},
                  "run": {"url": run_url, "sha256": run_sha}}
        drift = check_corpus(rows, corpus_url) if corpus_url else None
        if corpus_url:
            inputs["corpus"] = {"url": corpus_url}
        if spans is not None:
            inputs["spans"] = spans
        elif labels is rows and any(row.get("span") is not None for row in rows):
            # Span labels score on the chunks of the snapshot the run was made over (spec/spans.md).
            if not corpus_url:
                unanchored(rows, judgments_url)
            resolution = resolve_spans(rows, corpus_url)
            labels, inputs["spans"] = resolution.rows, resolution.summary()
        audit = judge_audit(rows, *record, threshold) if record is not None else None
        if audit is not None:
            inputs["audit"] = {"url": audit_url}
        settings = Settings.of(k, threshold, gates, intervals, confidence, resamples, seed)
        document = evaluation(labels, run_values, validation, settings, generated_at or now(), inputs, drift, retrieval,
                              audit)
        report_url = publish(storage_url, suite, document, key, system)
    history = read_suite_history(storage_url, suite)
    metrics = gated_metrics(gates)
    points = trend_points(history, metrics)
    point = next((p for p in reversed(points) if p.get("system") == system), None)  # this system's newest
    if point is not None and point["previous"] is not None:
        point["previous_entry"] = history[point["previous"]]
    items = read_queue_items(queue_url) if queue_url else []
    waiting = Waiting.of(items)
    bracket = (bracket_queued(labels, run, items, k, threshold, metrics, document) if waiting.rejudge and run is not None
               else None)
    attribution = None
    if point is not None and point["judgments_changed"] and rows is not None and metrics:
        attribution = attribute(rows, point["previous_entry"], document, metrics)
    pages = show(suite, document, report_url, points, waiting, queue_url, bracket, attribution, storage_url,
                 queue_suite or suite, system, point)
    # Another evaluation of the suite may have added its line after this one read the history,
    # and written its page before this one's: drawn again until the history it is drawn from
    # is still the history after it is written, the page left on storage has every line.
    for _ in range(PAGE_REDRAWS):
        again = read_suite_history(storage_url, suite)
        if again == history:
            break
        history, points = again, trend_points(again, metrics)
        pages = show(suite, document, report_url, points, waiting, queue_url, bracket, attribution, storage_url,
                     queue_suite or suite, system, point)
    outcome = {"suite": suite, "system": system, "verdict": document["verdict"]["status"], "message": verdict_line(document),
               "report_url": report_url, "reasons": document["verdict"]["reasons"], "cached": found is not None,
               "pages": pages, "bracket": bracket, "attribution": attribution}
    tag_run(suite, outcome["verdict"], system)
    announce(suite, document, outcome)
    # The verdict in the run's log at the level it deserves, so the Logs tab says it in red.
    level = {"PASS": logging.INFO, "INDETERMINATE": logging.WARNING, "FAIL": logging.ERROR}[outcome["verdict"]]
    named = _named(outcome)
    get_run_logger().log(level, f"{named}: {outcome['verdict']}: {outcome['message']}; report at {report_url}")
    return verdict_state(outcome)
