"""`goldkeeper drift` against a Parquet snapshot and against the same snapshot as gzip JSONL
shards, side by side (issue 45: no slower from Parquet).

The workload is drift_bench's (labels of every status over documents of 10 chunks), written
as a sharded gzip snapshot, then the very same chunks copied into one Parquet snapshot (zstd,
row groups of 65,536). Each drift is a whole process; prints the median of --repeats runs of
each, alternately, their peak memory and the ratio, and checks both drifts found the same.

    python bench/parquet_drift_bench.py [--labels 1000000] [--chunks 10000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from drift_bench import generate
from validate_bench import compile_goldkeeper, measure


def to_parquet(sharded: Path, out: Path) -> None:
    """The sharded snapshot's chunks, in order, streamed into a Parquet snapshot."""
    from goldkeeper.io.parquet import write_parquet
    from goldkeeper.io.snapshots import ShardedCorpus

    corpus = ShardedCorpus(str(sharded / "manifest.json"))
    rows = (raw for index in range(len(corpus.shards)) for _, _, raw in corpus.parsed_lines(index))
    write_parquet(str(out), "snapshot", rows, {"corpus_fingerprint": corpus.corpus_fingerprint or "",
                                                "chunker_fingerprint": corpus.chunker_fingerprint or ""},
                  columns=["chunk_id", "doc_uri", "doc_revision", "ordinal", "text", "text_sha"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--chunks", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", help="Where the generated files are kept (default: a temporary directory).")
    args = parser.parse_args()
    compile_goldkeeper()
    root = Path(args.dir or tempfile.mkdtemp(prefix="goldkeeper-parquet-drift-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    paths = generate(root, args.labels, args.chunks, 10, sharded=True)
    parquet = paths["corpus"].parent / "snapshot.parquet"
    if not parquet.exists():
        to_parquet(paths["corpus"], parquet)
    shards = sum(p.stat().st_size for p in paths["corpus"].iterdir()) / 2**20
    print(f"{args.labels:,} labels x {args.chunks:,} chunks: gzip shards {shards:,.0f} MiB, Parquet "
          f"{parquet.stat().st_size / 2**20:,.0f} MiB (generated in {time.perf_counter() - started:.0f} s); "
          f"median of {args.repeats}", flush=True)
    commands = {"gzip JSONL shards": paths["corpus"], "Parquet": parquet}
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}

    def drift(corpus: Path) -> list[str]:
        return [sys.executable, "-m", "goldkeeper", "drift", "-j", str(paths["judgments"]), "-c", str(corpus),
                "--format", "json"]

    for _ in range(args.repeats):
        for name, corpus in commands.items():  # alternately, so a noisy moment hits each
            seconds, peak, _ = measure(drift(corpus))
            found[name].append((seconds, peak))
    results = {}
    for name, corpus in commands.items():  # once more, untimed, to compare what each found
        payload = json.loads(subprocess.run(drift(corpus), capture_output=True, check=False).stdout)
        results[name] = (payload["summary"], payload["findings"])
    if results["Parquet"] != results["gzip JSONL shards"]:
        raise SystemExit("drift from Parquet and from the shards differ: a bug, not a figure")
    medians = {}
    for name, runs in found.items():
        times = [t for t, _ in runs]
        medians[name] = statistics.median(times)
        print(f"  drift from {name:<20} {medians[name]:8.2f} s  (range {min(times):.2f}-{max(times):.2f})  "
              f"peak {max(p for _, p in runs):,.0f} MiB")
    print(f"  Parquet / gzip shards: {medians['Parquet'] / medians['gzip JSONL shards']:.2f}x (target: at most 1)")
    print(f"  both found the same: {json.dumps(results['Parquet'][0])}")


if __name__ == "__main__":
    main()
