"""`goldkeeper drift` against a Parquet snapshot and against the same snapshot as gzip JSONL
shards, side by side (issue 45: no slower from Parquet).

The workload is drift_bench's (labels of every status over documents of 10 chunks), written
as a sharded gzip snapshot, then the very same chunks copied into one Parquet snapshot (zstd,
row groups of 65,536). Each drift is a whole process; prints the median of --repeats runs of
each, alternately, their peak memory and the ratio, and checks both drifts found the same.
Then the same two drifts as the partitioned flow (drift_partitioned, --partitions over a Dask
LocalCluster of two workers, on a temporary Prefect server): the seconds of the flow and the
flow process's own peak memory (its workers are other processes), from each snapshot.

    python bench/parquet_drift_bench.py [--labels 1000000] [--chunks 10000000] [--repeats 3] [--partitions 8]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from drift_bench import generate
from parquet_bench import alternate, setup
from validate_bench import own_peak_mib


def to_parquet(sharded: Path, out: Path) -> None:
    """The sharded snapshot's chunks, in order, streamed into a Parquet snapshot."""
    from goldkeeper.io.parquet import write_parquet
    from goldkeeper.io.snapshots import ShardedCorpus

    corpus = ShardedCorpus(str(sharded / "manifest.json"))
    rows = (raw for index in range(len(corpus.shards)) for _, _, raw in corpus.parsed_lines(index))
    write_parquet(str(out), "snapshot", rows, {"corpus_fingerprint": corpus.corpus_fingerprint or "",
                                                "chunker_fingerprint": corpus.chunker_fingerprint or ""},
                  columns=["chunk_id", "doc_uri", "doc_revision", "ordinal", "text", "text_sha"])


def flow_run(judgments: str, corpus: str, work: str, partitions: int) -> None:
    """One partitioned drift flow on a LocalCluster of two workers: prints its seconds, this
    (the flow) process's peak RSS and the summary, as JSON."""
    import shutil

    from goldkeeper.flows.scale import drift_partitioned, task_runner

    started = time.perf_counter()
    merged = drift_partitioned.with_options(task_runner=task_runner("local", 2))(judgments, corpus, work, partitions)
    seconds = time.perf_counter() - started
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"seconds": seconds, "flow_peak_mib": own_peak_mib(),
                      "summary": merged.summary}))


def flows(paths: dict[str, Path], snapshots: dict[str, Path], root: Path, repeats: int, partitions: int) -> None:
    found: dict[str, list[dict]] = {name: [] for name in snapshots}
    for _ in range(repeats):
        for name, corpus in snapshots.items():
            done = subprocess.run([sys.executable, __file__, "--flow-run", str(paths["judgments"]), str(corpus),
                                   str(root / "flow-work"), str(partitions)], capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"the partitioned flow from {corpus} failed: {done.stderr.strip()[-2000:]}")
            found[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    if len({json.dumps(runs[0]["summary"], sort_keys=True) for runs in found.values()}) != 1:
        raise SystemExit("the partitioned flows from Parquet and from the shards differ: a bug, not a figure")
    medians = {}
    for name, runs in found.items():
        medians[name] = statistics.median(run["seconds"] for run in runs)
        peak = max(run["flow_peak_mib"] for run in runs)
        print(f"  partitioned flow, {name.removeprefix('drift ')}: {medians[name]:.2f} s, flow process peak "
              f"{peak:,.0f} MiB (target: under 1,024)", flush=True)
    shards, table = medians.values()
    print(f"  partitioned flow, Parquet / gzip shards: {table / shards:.2f}x (target: at most 1)")


def main() -> None:
    if sys.argv[1:2] == ["--flow-run"]:
        judgments, corpus, work, partitions = sys.argv[2:6]
        return flow_run(judgments, corpus, work, int(partitions))
    args, root = setup(__doc__, {"labels": 1_000_000, "chunks": 10_000_000, "partitions": 8},
                       "goldkeeper-parquet-drift-")
    started = time.perf_counter()
    paths = generate(root, args.labels, args.chunks, 10, sharded=True)
    parquet = paths["corpus"].parent / "snapshot.parquet"
    if not parquet.exists():
        to_parquet(paths["corpus"], parquet)
    shards = sum(p.stat().st_size for p in paths["corpus"].iterdir()) / 2**20
    print(f"{args.labels:,} labels x {args.chunks:,} chunks: gzip shards {shards:,.0f} MiB, Parquet "
          f"{parquet.stat().st_size / 2**20:,.0f} MiB (generated in {time.perf_counter() - started:.0f} s); "
          f"median of {args.repeats}", flush=True)

    def drift(corpus: Path) -> list[str]:
        return [sys.executable, "-m", "goldkeeper", "drift", "-j", str(paths["judgments"]), "-c", str(corpus),
                "--format", "json"]

    snapshots = {"drift from gzip JSONL shards": paths["corpus"], "drift from Parquet": parquet}
    medians = alternate({name: drift(corpus) for name, corpus in snapshots.items()}, args.repeats)
    results = {}
    for name, corpus in snapshots.items():  # once more, untimed, to compare what each found
        payload = json.loads(subprocess.run(drift(corpus), capture_output=True, check=False).stdout)
        results[name] = (payload["summary"], payload["findings"])
    if len({json.dumps(found, sort_keys=True) for found in results.values()}) != 1:
        raise SystemExit("drift from Parquet and from the shards differ: a bug, not a figure")
    print(f"  Parquet / gzip shards: {medians['drift from Parquet'] / medians['drift from gzip JSONL shards']:.2f}x "
          "(target: at most 1)")
    print(f"  both found the same: {json.dumps(results['drift from Parquet'][0])}", flush=True)
    flows(paths, snapshots, root, args.repeats, args.partitions)


if __name__ == "__main__":
    main()
