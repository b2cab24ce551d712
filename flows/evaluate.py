"""Score runs against a suite's judgments, publish the report, and show it on dashboards.

The flow reads like its table of contents: load, validate, score, report, publish, show.
Each task calls one core or io function; retries and timeouts live on the decorators.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from goldkeeper.core.drift import drift_counts
from goldkeeper.core.intervals import BootstrapSpec
from goldkeeper.core.reporting import apply_error_budget, build_report
from goldkeeper.core.scoring import build_qrels, score
from goldkeeper.core.validation import validate
from goldkeeper.io.heap import keep_freed_blocks
from goldkeeper.io.snapshots import open_corpus
from goldkeeper.io.loading import load_label_rows, load_run_prefixes
from goldkeeper.io.storage import content_sha256, default_root, evaluation_key, find_evaluation, publish_report, suite_slug
from goldkeeper.render import report_markdown

__all__ = ["evaluate"]


@task(retries=2, retry_delay_seconds=[2, 10], timeout_seconds=900)
def load_judgments(url: str) -> tuple[list[dict[str, Any]], str]:
    return load_label_rows(url)


@task(retries=2, retry_delay_seconds=[2, 10], timeout_seconds=900)
def load_run(url: str, depth: int):
    return load_run_prefixes(url, None, depth)


@task(timeout_seconds=900)
def check_judgments(rows: list[dict[str, Any]]):
    return validate(rows)


@task(name="score_runs", timeout_seconds=1800)
def score_run(rows: list[dict[str, Any]], run, ks: list[int], threshold: int, intervals: bool):
    if intervals:
        keep_freed_blocks()  # the bootstrap's arrays: 2.8 s against 1.4-1.6 s at 10k x 100 (io.heap)
    # The rows were checked as they were read (load_judgments): grouped as they are, not
    # checked again as score checks rows it is given (1 us a label).
    return score(build_qrels(rows), run, k=ks, threshold=threshold, intervals=BootstrapSpec() if intervals else None)


@task(retries=2, retry_delay_seconds=[2, 10], timeout_seconds=1800)
def check_corpus(rows: list[dict[str, Any]], corpus_url: str):
    return drift_counts(rows, open_corpus(corpus_url))


@task(timeout_seconds=300)
def assemble_report(result, validation, generated_at: str, gates: list[str], inputs: dict[str, Any], drift=None,
                    retrieval: dict[str, Any] | None = None):
    counts, corpus = drift if drift is not None else (None, None)
    report = build_report(result, validation, generated_at=generated_at, gates=gates, inputs=inputs,
                          drift=counts, corpus=corpus)
    if retrieval is not None:
        report = apply_error_budget(report, retrieval["queries"], retrieval["errors"], retrieval.get("budget", 0.0))
    return report


@task(name="publish_report", retries=3, retry_delay_seconds=[1, 5, 20], timeout_seconds=300)
def publish(storage_url: str, suite: str, report: dict[str, Any], key: str | None = None) -> str:
    return publish_report(storage_url, suite, report, key)


@task(retries=2, retry_delay_seconds=[2, 10], timeout_seconds=900)
def content_hash(url: str) -> str:
    return content_sha256(url)


@task(retries=2, retry_delay_seconds=[2, 10], timeout_seconds=300)
def already_evaluated(storage_url: str, suite: str, key: str) -> dict[str, Any] | None:
    return find_evaluation(storage_url, suite, key)


@task(timeout_seconds=120)
def show(suite: str, report, report_url: str) -> None:
    """Summaries as artifacts under stable keys; the full report stays on storage."""
    slug = suite_slug(suite)
    rows = [{"metric": name, "value": m.value, "ci_low": m.ci[0] if m.ci else None,
             "ci_high": m.ci[1] if m.ci else None, "n": m.n} for name, m in report.metrics.items()]
    for name, stratum in (report.per_stratum or {}).items():
        rows += [{"metric": f"{metric} [{name}]", "value": m.value, "ci_low": m.ci[0] if m.ci else None,
                  "ci_high": m.ci[1] if m.ci else None, "n": stratum.n} for metric, m in stratum.metrics.items()]
    create_table_artifact(key=f"goldkeeper-{slug}-metrics", table=rows, description=f"{suite}: metrics")
    create_markdown_artifact(key=f"goldkeeper-{slug}-summary", markdown=report_markdown(report),
                             description=f"{suite}: verdict and reasons")
    create_link_artifact(key=f"goldkeeper-{slug}-report", link=report_url, description=f"{suite}: full report")


def _score_in_partitions(storage_url: str, suite: str, judgments_url: str, run_url: str, partitions: int,
                         k: list[int], threshold: int, intervals: bool, cluster: str | None, workers: int):
    from goldkeeper.flows.lifecycle import clean_work
    from goldkeeper.flows.scale import score_in_partitions, task_runner

    work_url = f"{storage_url.rstrip('/')}/work/{suite_slug(suite)}/{uuid.uuid4().hex[:12]}"
    found = score_in_partitions.with_options(task_runner=task_runner(cluster, workers))(
        judgments_url, run_url, work_url, partitions, k, threshold, intervals,
        remote=cluster not in (None, "local"))
    clean_work(work_url)
    return found


def _now() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = datetime.fromtimestamp(int(epoch), tz=timezone.utc) if epoch else datetime.now(timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


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
    generated_at: str | None = None,
    corpus_url: str | None = None,
    retrieval: dict[str, Any] | None = None,
    partitions: int = 0,
    cluster: str | None = None,
    workers: int = 2,
) -> dict[str, Any]:
    """Score one run of one suite and publish the report; returns the verdict and its URL.
    ``retrieval`` (from the eval flow: queries, errors, budget) adds the error budget gate.
    ``partitions`` > 0 scores in that many query partitions (goldkeeper.flows.scale), on
    threads or on Dask (``cluster``: "local" or a scheduler address): the same report."""
    storage_url = storage_url or default_root()
    # Keyed by the inputs' content: the same judgments, run, corpus and settings again (a
    # repeated event, a retried schedule) find the published report and do no work twice.
    key = evaluation_key(judgments=content_hash(judgments_url), run=content_hash(run_url),
                         corpus=content_hash(corpus_url) if corpus_url else None, k=k, threshold=threshold,
                         gates=gates, intervals=intervals, retrieval=retrieval)
    found = already_evaluated(storage_url, suite, key)
    if found is not None:
        print(f"{suite}: these inputs were evaluated already ({found['time']}): {found['verdict']}; "
              f"report at {found['report']}")
        return {"verdict": found["verdict"], "report_url": found["report"], "reasons": found.get("reasons", []),
                "cached": True}
    if partitions > 0:
        result, validation, judgments_sha, run_sha = _score_in_partitions(
            storage_url, suite, judgments_url, run_url, partitions, k, threshold, intervals, cluster, workers)
        rows = load_judgments(judgments_url)[0] if corpus_url else None
    else:
        rows, judgments_sha = load_judgments(judgments_url)
        run, run_sha = load_run(run_url, max(k))
        validation = check_judgments(rows)
        result = score_run(rows, run, k, threshold, intervals)
    inputs = {"judgments": {"url": judgments_url, "sha256": judgments_sha},
              "run": {"url": run_url, "sha256": run_sha}}
    drift = check_corpus(rows, corpus_url) if corpus_url else None
    if corpus_url:
        inputs["corpus"] = {"url": corpus_url}
    report = assemble_report(result, validation, generated_at or _now(), gates, inputs, drift, retrieval)
    report_url = publish(storage_url, suite, report.to_json_dict(), key)
    show(suite, report, report_url)
    print(f"{suite}: {report.verdict.status}; report at {report_url}")
    return {"verdict": report.verdict.status, "report_url": report_url, "reasons": report.verdict.reasons,
            "cached": False}
