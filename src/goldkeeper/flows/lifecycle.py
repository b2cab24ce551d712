"""After a corpus re-index: find which labels drifted, repair what is sound, queue the rest,
and score the runs on the repaired judgments.

    on_reindex = read_suite_config -> [snapshot_corpus] -> check_drift -> fix_recoverable
                 -> open_rejudgment_queue -> [judge_queue: the judge answers, an audit opens]
                 -> record_corpus -> evaluate (per configured run)
    evaluate_suite = read_suite_config -> evaluate (per configured run)

A suite configured on storage (suites/<suite>.json, ``goldkeeper suite init``) names its runs,
cutoffs, gates and live corpus, so an event or a schedule has only to name the suite;
parameters given to a flow override the configuration.

A suite with a judge configured (``goldkeeper suite set --judge-url``) has it answer the queue
first (goldkeeper.flows.judging): people audit a sample of its work instead of the whole
queue, and until they do, its evaluations are INDETERMINATE.

With ``partitions``, drift and the queue run as the drift_partitioned subflow instead, and
each evaluation in query partitions (goldkeeper.flows.scale), on threads or on Dask
(``cluster``: "local" or a scheduler address).

The suite's judgments live on storage (judgments/<suite>/current.jsonl, every version kept);
a fix is written with compare-and-swap against the version read, so two flows on one suite
cannot interleave a rewrite: the one that loses starts over on the other's version. Each
re-index keeps a record on storage (reindex/<suite>/<corpus sha16>.json: when it began, which
version it read), so a run killed anywhere and run again, or the same event delivered twice,
repeats the first attempt's writes byte for byte and makes no version twice.
"""

from __future__ import annotations

import hashlib
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.states import State

from goldkeeper.core.drift import classify, fixed_rows, rejudgment_queue
from goldkeeper.core.judgments import dump_rows
from goldkeeper.core.rejudge import Waiting
from goldkeeper.dashboard import drift_markdown
from goldkeeper.errors import ChangedError, GoldkeeperError
from goldkeeper.flows.clock import now
from goldkeeper.flows.evaluate import content_hash, evaluate, outcome_of, rolled_up
from goldkeeper.flows.faults import step, storage_root
from goldkeeper.flows.judging import judge_queue, take_up_judge, workload_line
from goldkeeper.flows.scale import clean_work, drift_partitioned, task_runner
from goldkeeper.flows.signals import signal
from goldkeeper.io.files import exists, read_bytes
from goldkeeper.io.loading import judgment_rows_of
from goldkeeper.io.partitioned import stage_judgments
from goldkeeper.io.snapshots import open_corpus
from goldkeeper.io.storage import (
    check_reindex_inputs,
    current_judgments_url,
    publish_queue,
    publish_sharded_snapshot,
    publish_store_snapshot,
    read_current_judgments,
    read_judge_step,
    read_judgments_version,
    read_latest_queue,
    read_suite,
    reindex_record,
    suite_slug,
    system_name,
    version_url,
    work_url,
    write_judgments_version,
    write_suite,
)

__all__ = ["CONFLICTS", "REINDEX_EVENT", "REINDEX_MATCH", "REINDEX_PARAMETERS", "evaluate_suite", "on_reindex",
           "snapshot_corpus"]

#: What an indexing pipeline emits after a re-index (``goldkeeper emit-reindex`` does it too),
#: about the resource ``goldkeeper.corpus.<name>``.
REINDEX_EVENT = "goldkeeper.corpus.reindexed"
REINDEX_MATCH = {"prefect.resource.id": "goldkeeper.corpus.*"}
#: The on_reindex parameters, templated from the event (Prefect's Jinja). Every key has a
#: default, so a missing one never silently drops the run: the suite falls back to the
#: corpus name, and missing URLs arrive as None, which on_reindex refuses with a message.
REINDEX_PARAMETERS = {
    "suite": "{{ event.resource['goldkeeper.suite'] | default(event.resource.id | replace('goldkeeper.corpus.', ''), true) }}",
    "corpus_url": "{{ event.resource['goldkeeper.snapshot_url'] | default(none, true) }}",
    "chunks_url": "{{ event.resource['goldkeeper.chunks_url'] | default(none, true) }}",
    "chunker": "{{ event.resource['goldkeeper.chunker'] | default(none, true) }}",
    "store_url": "{{ event.resource['goldkeeper.store_url'] | default(none, true) }}",
    "store_fields": "{{ event.resource['goldkeeper.store_fields'] | default(none, true) }}",
}
#: How many times a re-index starts over when another re-index of the suite made its
#: judgments version first (two events together): then it fails, saying so.
CONFLICTS = 3


@step(timeout_seconds=600)
def read_judgments(storage_url: str, suite: str) -> tuple[bytes, str]:
    return read_current_judgments(storage_url, suite)


@step(timeout_seconds=300)
def begin_reindex(storage_url: str, suite: str, corpus_sha: str, corpus_url: str, stamp: str, judgments_sha: str,
                  replace: bool = False) -> dict[str, Any]:
    return reindex_record(storage_url, suite, corpus_sha, corpus_url, stamp, judgments_sha, replace=replace)


@step(timeout_seconds=600)
def read_version(storage_url: str, suite: str, sha: str) -> bytes | None:
    return read_judgments_version(storage_url, suite, sha)


@step(timeout_seconds=300)
def judge_step(storage_url: str, suite: str, corpus_sha: str) -> dict[str, Any] | None:
    return read_judge_step(storage_url, suite, corpus_sha)


@step(timeout_seconds=300)
def judgments_at(storage_url: str, suite: str, sha: str) -> str:
    """The kept version with this sha256 (versions/<sha>.jsonl), else current.jsonl."""
    kept = version_url(storage_url, suite, sha)
    return kept if exists(kept) else current_judgments_url(storage_url, suite)


@step(timeout_seconds=300)
def check_reindex(storage_url: str, suite: str, corpus_url: str | None, chunks_url: str | None) -> None:
    check_reindex_inputs(storage_url, suite, corpus_url, chunks_url)


@step(timeout_seconds=300)
def read_suite_config(storage_url: str, suite: str, required: bool = False):
    return read_suite(storage_url, suite, required=required)


@step(timeout_seconds=300)
def record_corpus(storage_url: str, config, corpus_url: str) -> str:
    """The suite's configuration now names the new snapshot as its live corpus."""
    return write_suite(storage_url, config.model_copy(update={"corpus_url": corpus_url}))


@step(timeout_seconds=300)
def latest_queue_url(storage_url: str, suite: str) -> str | None:
    try:
        return read_latest_queue(storage_url, suite)[0]
    except GoldkeeperError:
        return None


@step(timeout_seconds=300)
def latest_audit_url(storage_url: str, suite: str) -> str | None:
    """The suite's newest audit of its judge, if it has one."""
    from goldkeeper.io.storage import read_latest_audit

    found = read_latest_audit(storage_url, suite)
    return found[0] if found else None


@step(timeout_seconds=900)
def read_corpus(corpus_url: str):
    return open_corpus(corpus_url)


@step(timeout_seconds=3600)
def publish_corpus_snapshot(storage_url: str, corpus: str, chunks_url: str, chunker: str) -> dict[str, Any]:
    return publish_sharded_snapshot(storage_url, corpus, chunks_url, chunker)


@step(timeout_seconds=3600)
def publish_store_corpus(storage_url: str, corpus: str, store_url: str, chunker: str,
                         fields: list[str]) -> dict[str, Any]:
    return publish_store_snapshot(storage_url, corpus, store_url, chunker, fields)


@flow(name="goldkeeper-snapshot-store", log_prints=True)
def snapshot_store(corpus: str, store_url: str, chunker: str, fields: list[str] | None = None,
                   storage_url: str | None = None) -> str:
    """The chunks of a vector store (spec/stores.md) to a stored, sharded snapshot; the same
    chunks twice are stored once. Credentials come from the worker's environment."""
    storage_url = storage_root(storage_url)
    published = publish_store_corpus(storage_url, corpus, store_url, chunker, list(fields or []))
    counts = published["manifest"]["counts"]
    print(f"{corpus}: snapshot of {counts['chunks']} chunks from the store at {published['url']}"
          + (" (already stored)" if published["reused"] else ""))
    return published["url"]


@flow(name="goldkeeper-snapshot-corpus", log_prints=True)
def snapshot_corpus(corpus: str, chunks_url: str, chunker: str, storage_url: str | None = None) -> str:
    """Chunker output ({doc_uri, doc_revision, ordinal, text} per line) to a stored, sharded
    snapshot, streamed; the same chunker output twice is stored once."""
    storage_url = storage_root(storage_url)
    published = publish_corpus_snapshot(storage_url, corpus, chunks_url, chunker)
    counts = published["manifest"]["counts"]
    print(f"{corpus}: snapshot of {counts['chunks']} chunks at {published['url']}"
          + (" (already stored)" if published["reused"] else ""))
    return published["url"]


@step(timeout_seconds=1800)
def check_drift(labels, corpus):
    """Classify, with a progress artifact when the snapshot says how many chunks it holds."""
    total = (getattr(corpus, "counts", None) or {}).get("chunks")
    if not total:
        return classify(labels, corpus)
    artifact = create_progress_artifact(progress=0.0, description=f"drift: reading {total:,} chunks")
    return classify(labels, corpus, progress=lambda done: update_progress_artifact(
        artifact_id=artifact, progress=min(100.0, 100.0 * done / total)))


@step(timeout_seconds=900)
def fix_recoverable(labels, result) -> bytes:
    return b"".join(dump_rows(fixed_rows(labels, result)))


@step(timeout_seconds=300)
def write_version(storage_url: str, suite: str, data: bytes, expected_sha: str) -> tuple[str, str]:
    return write_judgments_version(storage_url, suite, data, expected_sha)


@step(timeout_seconds=600)
def open_rejudgment_queue(labels, result, corpus) -> list[dict[str, Any]]:
    return rejudgment_queue(labels, result, corpus)


@step(timeout_seconds=300)
def publish_rejudgment_queue(storage_url: str, suite: str, items: list[dict[str, Any]], stamp: str):
    return publish_queue(storage_url, suite, items, stamp)


@step(timeout_seconds=900)
def stage_labels(work_url: str, data: bytes) -> str:
    return stage_judgments(work_url, data)


def _partitioned_drift(storage_url: str, suite: str, data: bytes, corpus_url: str, corpus_sha: str, partitions: int,
                       cluster: str | None, workers: int,
                       ) -> tuple[dict[str, Any], list[dict[str, Any]], bytes, list[dict[str, Any]]]:
    """Partitioned drift's summary, queue items, fixed judgments (read from the run's work
    directory before it is removed) and document map."""

    work = work_url(storage_url, suite, "drift", hashlib.sha256(data).hexdigest(), corpus_sha, str(partitions))
    staged = stage_labels(work, data)
    outcome = drift_partitioned.with_options(task_runner=task_runner(cluster, workers))(
        staged, corpus_url, work, partitions, remote=cluster not in (None, "local"))
    items, fixed = list(outcome.rows("queue")), read_bytes(outcome.urls["fixed"])
    clean_work(work)
    return outcome.summary, items, fixed, outcome.documents


def _drift(storage_url: str, suite: str, data: bytes, judgments_url: str, corpus_url: str, corpus_sha: str,
           partitions: int, cluster: str | None, workers: int) -> dict[str, Any]:
    """The judgments ``data`` against the corpus: drift's summary and document map, the queue's
    items, how many labels move, and the fixed judgments when any does."""
    if partitions > 0:
        summary, items, fixed, documents = _partitioned_drift(storage_url, suite, data, corpus_url, corpus_sha, partitions,
                                                              cluster, workers)
    else:
        labels = judgment_rows_of(data, judgments_url)
        corpus = read_corpus(corpus_url)
        result = check_drift(labels, corpus)
        items = open_rejudgment_queue(labels, result, corpus)
        summary, documents, fixed = result.summary, result.documents, None
    moved = summary["re_anchorable"] + summary["merged"]  # every one of them moves
    if moved and fixed is None:
        fixed = fix_recoverable(labels, result)
    return {"summary": summary, "items": items, "documents": documents, "moved": moved, "fixed": fixed}


def _begin(storage_url: str, suite: str, corpus_sha: str, corpus_url: str, partitions: int, cluster: str | None,
           workers: int) -> tuple[str, bytes, str, dict[str, Any]]:
    """This re-index's time, the judgments it works from (bytes and sha256), and their drift
    (``made_before``: an earlier attempt made the fixed version current already).

    A re-index of this corpus begun before (a run killed and retried, the same event delivered
    again) is taken up as it began, at its time and from the version it read, as long as that
    version or the one it made is current: every write it repeats is then the same bytes, and
    the version it made is not made twice. Once the suite's judgments moved on (people
    answered, another re-index came between), it is a new re-index of this corpus."""
    data, sha = read_judgments(storage_url, suite)
    record = begin_reindex(storage_url, suite, corpus_sha, corpus_url, now(), sha)
    if record["judgments_sha256"] != sha:
        read_before = record["judgments_sha256"]
        earlier = read_version(storage_url, suite, read_before)
        if earlier is not None:
            drifted = _drift(storage_url, suite, earlier, version_url(storage_url, suite, read_before), corpus_url,
                             corpus_sha, partitions, cluster, workers)
            made = hashlib.sha256(drifted["fixed"]).hexdigest() if drifted["moved"] else read_before
            # The version current now is the one this re-index made, or the one its judge made from it.
            judged = judge_step(storage_url, suite, corpus_sha)
            judged = judged if judged and (judged["from_sha256"], judged["judgments_sha256"]) == (made, sha) else None
            if made == sha != read_before or judged:
                print(f"{suite}: taking up the re-index of {corpus_url} begun at {record['started_at']}")
                return record["started_at"], earlier, read_before, {**drifted, "made_before": bool(drifted["moved"]),
                                                                    "judged": judged}
        record = begin_reindex(storage_url, suite, corpus_sha, corpus_url, now(), sha, replace=True)
    drifted = _drift(storage_url, suite, data, current_judgments_url(storage_url, suite), corpus_url, corpus_sha,
                     partitions, cluster, workers)
    return record["started_at"], data, sha, {**drifted, "made_before": False, "judged": None}


@flow(name="goldkeeper-on-reindex", log_prints=True)
def on_reindex(
    suite: str,
    corpus_url: str | None = None,
    run_urls: list[str] | None = None,
    storage_url: str | None = None,
    k: list[int] | None = None,
    gates: list[str] | None = None,
    chunks_url: str | None = None,
    chunker: str | None = None,
    partitions: int = 0,
    cluster: str | None = None,
    workers: int = 2,
    store_url: str | None = None,
    store_fields: str | None = None,
) -> State:
    """The lifecycle after a re-index: [snapshot], drift, fix, queue, then evaluate each run;
    Failed when an evaluation did not pass (``rolled_up``).

    Give ``corpus_url`` (a snapshot), ``chunks_url`` and ``chunker`` (chunker output, which
    is snapshotted to storage first; the suite's configured chunker when none is given), or
    ``store_url`` and ``chunker`` (the vector store holding the chunks; ``store_fields`` the
    ``snapshot --field`` assignments, comma-separated; spec/stores.md). The
    runs, ``k`` and ``gates`` default to the suite's configuration (none configured: nothing
    is scored, k 10, no gates), and a configured suite records the new snapshot as its live
    corpus. ``partitions`` > 0 splits drift by doc_uri (and each evaluation by query id) over
    that many tasks, on threads, or on Dask: ``cluster`` "local" (a LocalCluster of ``workers``
    processes) or a scheduler address (storage must then be shared, s3://...)."""
    storage_url = storage_root(storage_url)
    config = read_suite_config(storage_url, suite)
    chunker = chunker or (config.chunker if config else None)
    if corpus_url is None and not ((chunks_url or store_url) and chunker):
        raise ValueError("on_reindex: give corpus_url, or chunks_url or store_url with chunker (or configure the "
                         "suite's chunker)")
    check_reindex(storage_url, suite, corpus_url, chunks_url)  # before anything is written
    if corpus_url is None and store_url:
        corpus_url = snapshot_store(suite, store_url, chunker, [f for f in (store_fields or "").split(",") if f],
                                    storage_url)
    elif corpus_url is None:
        corpus_url = snapshot_corpus(suite, chunks_url, chunker, storage_url)
    run_urls, k, gates = _configured(config, run_urls, k, gates)
    corpus_sha = content_hash(corpus_url)
    for attempt in range(1, CONFLICTS + 2):
        stamp, data, sha, drifted = _begin(storage_url, suite, corpus_sha, corpus_url, partitions, cluster, workers)
        summary, items, documents, moved = drifted["summary"], drifted["items"], drifted["documents"], drifted["moved"]
        version = None
        if not moved:
            break
        if drifted["made_before"]:  # an earlier attempt of this re-index made it current
            data, sha = drifted["fixed"], hashlib.sha256(drifted["fixed"]).hexdigest()
            break
        try:
            version, sha = write_version(storage_url, suite, drifted["fixed"], sha)
        except ChangedError:
            # Another re-index of the suite made its version current after this one read
            # its judgments: this one starts over on that version, and is applied after it.
            if attempt > CONFLICTS:
                raise
            get_run_logger().warning(f"{suite}: another re-index made a judgments version meanwhile; "
                                     "starting over on it")
            continue
        data = drifted["fixed"]
        break
    queue_url = publish_rejudgment_queue(storage_url, suite, items, stamp)
    judged = None
    if drifted["judged"]:  # an earlier attempt's judge answered, and its version is current: nothing is asked again
        judged = take_up_judge(storage_url, suite, drifted["judged"])
    elif config is not None and config.judge is not None and (items or run_urls):
        judged = judge_queue(storage_url, suite, config.judge.model_dump(), config.max_grade, items,
                             judgment_rows_of(data, current_judgments_url(storage_url, suite)), sha, corpus_url,
                             corpus_sha, stamp, queue_url, run_urls, max(k))
    if config is not None and config.corpus_url != corpus_url:
        record_corpus(storage_url, config, corpus_url)
    waiting = Waiting.of(items)
    # The judge's labels of an earlier re-index (or of this one, run again) are audited too.
    audit_url = (judged or {}).get("audit_url") or latest_audit_url(storage_url, suite)
    show_drift(suite, summary, moved, waiting, version, queue_url, documents)
    signal_lifecycle(suite, summary, moved, waiting, version, queue_url)
    if not run_urls:
        get_run_logger().warning(f"{suite}: no run to score (configure them: goldkeeper suite set {suite} --run URL)")
    # Scored on the version this re-index made (or read), by its content's name: a re-index of
    # the suite that comes after it cannot change what this one scores.
    scored = (judged or {}).get("version") or judgments_at(storage_url, suite, sha)
    states = _evaluate_runs(suite, run_urls, storage_url, scored, k, gates, corpus_url, queue_url, partitions, cluster,
                            workers, stamp, audit_url)
    print(f"{suite}: {summary}; re-anchored {moved}; {waiting}"
          + (f"; {workload_line(judged['workload'])}" if judged else ""))
    outcome = {"suite": suite, "corpus_url": corpus_url, "drift": summary, "reanchored": moved,
               "judgments_version": version, "queue_url": queue_url,
               "waiting": {"to_rejudge": waiting.rejudge, "to_confirm": waiting.review}, "judge": judged,
               "evaluations": {url: outcome_of(state) for url, state in states.items()}}
    return _rolled_up(suite, outcome)


@flow(name="goldkeeper-evaluate-suite", log_prints=True)
def evaluate_suite(suite: str, storage_url: str | None = None, partitions: int = 0, cluster: str | None = None,
                   workers: int = 2, generated_at: str | None = None) -> State:
    """Score every run configured for the suite (suites/<suite>.json) with its cutoffs and
    gates, on its current judgments and live corpus: the nightly evaluation, and the one after
    a re-judgment (stamped ``generated_at``, when the answers were given, so that a re-judgment
    run again after a crash publishes the report it would have). Failed when an evaluation
    did not pass."""
    storage_url = storage_root(storage_url)
    config = read_suite_config(storage_url, suite, required=True)
    if not config.runs:
        raise ValueError(f"suite '{suite}' has no run to score: goldkeeper suite set {suite} --run URL")
    states = _evaluate_runs(suite, config.runs, storage_url, current_judgments_url(storage_url, suite), config.k,
                            config.gates, config.corpus_url,
                            latest_queue_url(storage_url, suite), partitions, cluster, workers, generated_at or now(),
                            latest_audit_url(storage_url, suite))
    return _rolled_up(suite, {"suite": suite, "corpus_url": config.corpus_url,
                              "evaluations": {url: outcome_of(state) for url, state in states.items()}})


def _configured(config, run_urls: list[str] | None, k: list[int] | None, gates: list[str] | None):
    """Runs, cutoffs and gates: as given, else as configured, else none, [10] and none."""
    return (run_urls if run_urls is not None else (config.runs if config else []),
            k if k is not None else (config.k if config else [10]),
            gates if gates is not None else (config.gates if config else []))


def _evaluate_runs(suite: str, run_urls: list[str], storage_url: str, judgments_url: str, k: list[int],
                   gates: list[str], corpus_url: str | None, queue_url: str | None, partitions: int, cluster: str | None,
                   workers: int, stamp: str, audit_url: str | None = None) -> dict[str, State]:
    """Each run scored on the suite's judgments at ``judgments_url``, as its own evaluation (subflow) of
    the suite: a system of it when there are several (``system_name``), all at one time, so
    the trend draws them side by side."""
    return {run_url: evaluate(suite=suite, system=system_name(run_url) if len(run_urls) > 1 else None,
                              judgments_url=judgments_url, run_url=run_url,
                              storage_url=storage_url, k=k, gates=gates, corpus_url=corpus_url, partitions=partitions,
                              cluster=cluster, workers=workers, queue_url=queue_url, generated_at=stamp,
                              audit_url=audit_url, return_state=True)
            for run_url in run_urls}


def _rolled_up(suite: str, outcome: dict[str, Any]) -> State:
    state = rolled_up(outcome)
    if state.is_failed():
        get_run_logger().error(f"{suite}: {state.message}")
    return state


@step(timeout_seconds=60)
def show_drift(suite: str, summary: dict[str, Any], moved: int, waiting: Waiting, version: str | None,
               queue_url: str | None, documents: list[dict[str, Any]]) -> None:
    create_markdown_artifact(key=f"goldkeeper-{suite_slug(suite)}-drift",
                             markdown=drift_markdown(suite, summary, moved, waiting, version, queue_url, documents),
                             description=f"{suite}: drift after re-index")


@step(timeout_seconds=60)
def signal_lifecycle(suite: str, summary: dict[str, Any], moved: int, waiting: Waiting, version: str | None,
                     queue_url: str | None) -> None:
    """Events for what the re-index found: drift (always), a queue opened, a new version."""
    kinds = {"to_rejudge": waiting.rejudge, "to_confirm": waiting.review}
    signal("goldkeeper.drift.found", suite, {**summary, "reanchored": moved, "queued": waiting.total, **kinds})
    if waiting.total:
        signal("goldkeeper.queue.opened", suite, {"items": waiting.total, **kinds, "queue_url": queue_url})
    if version:
        signal("goldkeeper.judgments.versioned", suite, {"version_url": version, "reanchored": moved})
