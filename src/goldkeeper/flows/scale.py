"""Drift on a cluster: the snapshot and the judgments partitioned by a hash of doc_uri, each
partition classified by its own task, on Prefect's thread pool or on Dask through prefect-dask
(spec/scaling.md). The result is exactly the one-process result.

    drift_partitioned = map_shards (per source shard group) -> write_manifests
        -> split_labels (per piece of the judgments file, as many pieces as partitions)
        -> classify_one (per partition: findings and queue items)
        -> [find_unsettled (per partition) -> classify_one again, where answers changed]
        -> merge

    score_partitioned = split_judgments + split_run_lines -> score_part (per query partition)
        -> merge values -> aggregate (means, strata, intervals) -> report

Choose where tasks run with ``task_runner(cluster, workers)``: None for threads, ``"local"``
for a Dask LocalCluster of ``workers`` processes, or a scheduler address (``tcp://...``) for
an existing cluster, whose workers must reach the storage (so ``file://`` is refused).
"""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from goldkeeper.core.evaluation import Settings
from goldkeeper.core.scoring import QueryValues, merge_query_values
from goldkeeper.flows.clock import now
from goldkeeper.flows.faults import step
from goldkeeper.flows.reports import evaluation
from goldkeeper.io.files import line_ranges
from goldkeeper.io.partitioned import (
    OUTPUTS,
    PartitionedDrift,
    classify_partition,
    find_in_partition,
    map_corpus,
    merge_counts,
    merge_outputs,
    partition_labels,
    remove_work,
    require_shared_storage,
    score_partition,
    source_corpus,
    source_groups,
    split_labels_by_query,
    split_run,
    write_partition_manifests,
)

__all__ = ["clean_work", "drift_partitioned", "score_in_partitions", "score_partitioned", "task_runner"]

def task_runner(cluster: str | None = None, workers: int = 2):
    """Prefect's thread pool (``cluster`` None), a Dask LocalCluster of ``workers`` worker
    processes (``"local"``), or an existing Dask scheduler (its address)."""
    if cluster is None:
        return ThreadPoolTaskRunner(max_workers=workers)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise RuntimeError("a Dask cluster needs the 'dask' extra: pip install 'goldkeeper[dask]'") from None
    if cluster == "local":
        return DaskTaskRunner(cluster_class="distributed.LocalCluster",
                              cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True,
                                              "dashboard_address": None})
    return DaskTaskRunner(address=cluster)


@step(cache_policy=NO_CACHE)
def map_shards(corpus_url: str, shards: list[int], work_url: str, partitions: int, mapper: int) -> list[dict[str, Any]]:
    return map_corpus(corpus_url, shards, work_url, partitions, mapper)


@step(cache_policy=NO_CACHE)
def write_manifests(corpus_url: str, work_url: str, partitions: int, pieces: list[list[dict[str, Any]]]) -> list[str]:
    return write_partition_manifests(corpus_url, work_url, partitions, pieces)


@step(cache_policy=NO_CACHE)
def label_pieces(judgments_url: str, pieces: int) -> list[tuple[int, int]]:
    return line_ranges(judgments_url, pieces)


@step(cache_policy=NO_CACHE)
def split_labels(judgments_url: str, work_url: str, partitions: int, piece: int, span: tuple[int, int]):
    return partition_labels(judgments_url, work_url, partitions, piece, span)


@step(cache_policy=NO_CACHE)
def classify_one(work_url: str, partition: int, counts: list[int], partitions: int | None = None):
    return classify_partition(work_url, partition, counts, partitions)


@step(cache_policy=NO_CACHE)
def find_unsettled(work_url: str, partition: int, partitions: int) -> list[int]:
    return find_in_partition(work_url, partition, partitions)


@step(cache_policy=NO_CACHE)
def merge_output(work_url: str, kind: str, partitions: int) -> str:
    return merge_outputs(work_url, kind, partitions)


@flow(name="goldkeeper-drift-partitioned", log_prints=True)
def drift_partitioned(judgments_url: str, corpus_url: str, work_url: str, partitions: int = 8,
                      remote: bool = False) -> PartitionedDrift:
    """Classify, queue and fix ``judgments_url`` against ``corpus_url`` in ``partitions``
    parts. Each partition writes its outputs to ``work_url``; they are merged in input order
    there, a line at a time: the flow process holds counts, never the findings."""
    if partitions < 1:
        raise ValueError(f"partitions: must be at least 1, got {partitions}")
    for url in (judgments_url, corpus_url, work_url):
        require_shared_storage(url, remote)
    groups = source_groups(corpus_url, partitions)
    mapped = [map_shards.submit(corpus_url, shards, work_url, partitions, mapper)
              for mapper, shards in enumerate(groups)]
    spans = label_pieces(judgments_url, partitions)
    split = [split_labels.submit(judgments_url, work_url, partitions, piece, span) for piece, span in enumerate(spans)]
    write_manifests(corpus_url, work_url, partitions, [future.result() for future in mapped])
    counts = [future.result() for future in split]
    first = [future.result() for future in [classify_one.submit(work_url, p, counts) for p in range(partitions)]]
    parts = [part for part, _ in first]
    if any(asked for _, asked in first):
        # Asks and answers go through the work directory: the flow process holds neither.
        again = set().union(*(future.result() for future in
                              [find_unsettled.submit(work_url, p, partitions) for p in range(partitions)]))
        for p, future in [(p, classify_one.submit(work_url, p, counts, partitions)) for p in sorted(again)]:
            parts[p], _ = future.result()
    urls = {kind: future.result() for kind, future in
            [(kind, merge_output.submit(work_url, kind, partitions)) for kind in OUTPUTS]}
    whole = merge_counts(parts)
    print(f"drift over {partitions} partitions: {whole['summary']}")
    return PartitionedDrift(whole["summary"], whole["labels"], whole["judgments_fingerprint"],
                            source_corpus(corpus_url).corpus_fingerprint, whole["corpus_chunks"],
                            whole["corpus_documents"], urls, whole["documents"])


@step(cache_policy=NO_CACHE)
def split_judgments(judgments_url: str, work_url: str, partitions: int, spans_resolved: bool = False):
    return split_labels_by_query(judgments_url, work_url, partitions, spans_resolved=spans_resolved)


@step(cache_policy=NO_CACHE)
def split_run_lines(run_url: str, work_url: str, partitions: int) -> tuple[str, str]:
    return split_run(run_url, work_url, partitions)


@step(cache_policy=NO_CACHE)
def score_part(work_url: str, partition: int, fmt: str, ks: list[int], threshold: int,
               partitions: int = 1) -> QueryValues:
    return score_partition(work_url, partition, fmt, ks, threshold, partitions)


@step(cache_policy=NO_CACHE)
def merge_values(qrels, parts: list[QueryValues]) -> QueryValues:
    return merge_query_values(parts, qrels)


@flow(name="goldkeeper-score-in-partitions", log_prints=True)
def score_in_partitions(judgments_url: str, run_url: str, work_url: str, partitions: int = 8,
                        k: list[int] = [10], threshold: int = 1, remote: bool = False,  # noqa: B006
                        spans_resolved: bool = False):
    """A run's per-query values in ``partitions`` query partitions, merged: the labels'
    grouping, the values, the judgments' validation and the sha256 of both inputs (what
    ``core.evaluation.evaluate`` makes a report of). ``spans_resolved``: the judgments' span
    labels are resolved to the run's chunks already (else one without a chunk_id is refused)."""
    if partitions < 1:
        raise ValueError(f"partitions: must be at least 1, got {partitions}")
    for url in (judgments_url, run_url, work_url):
        require_shared_storage(url, remote)
    run_split = split_run_lines.submit(run_url, work_url, partitions)
    qrels, validation, judgments_sha = split_judgments(judgments_url, work_url, partitions, spans_resolved)
    fmt, run_sha = run_split.result()
    parts = [future.result() for future in
             [score_part.submit(work_url, p, fmt, list(k), threshold, partitions) for p in range(partitions)]]
    values = merge_values(qrels, parts)
    print(f"scored {len(values.scored_ids)} queries over {partitions} partitions")
    return qrels, values, validation, judgments_sha, run_sha


@step(timeout_seconds=900)
def clean_work(work_url: str) -> None:
    remove_work(work_url)


@flow(name="goldkeeper-score-partitioned", log_prints=True)
def score_partitioned(judgments_url: str, run_url: str, work_url: str, partitions: int = 8,
                      k: list[int] = [10], threshold: int = 1, intervals: bool = True,  # noqa: B006
                      gates: list[str] = [], generated_at: str | None = None, remote: bool = False,  # noqa: B006
                      confidence: float = 0.95, resamples: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Score a run in ``partitions`` query partitions and merge: the same report as
    ``goldkeeper score`` on the same files (same bytes with the same ``generated_at``)."""
    qrels, values, validation, judgments_sha, run_sha = score_in_partitions(
        judgments_url, run_url, work_url, partitions, k, threshold, remote)
    inputs = {"judgments": {"url": judgments_url, "sha256": judgments_sha},
              "run": {"url": run_url, "sha256": run_sha}}
    settings = Settings.of(k, threshold, gates, intervals, confidence, resamples, seed)
    return evaluation(qrels, values, validation, settings, generated_at or now(), inputs)
