"""Write `goldkeeper score` reports for a fixed set of cases into a folder, to compare two
versions of goldkeeper byte for byte (`diff -r BEFORE AFTER`).

The cases are the score bench's workloads (bench/score_bench.py's generator and cache) read
every way score reads them: run JSONL and TREC runs, judgments JSONL and TREC qrels, with and
without intervals, shallow and deep cutoffs, a gate and strata.

    python bench/report_cases.py OUT_DIR [--sizes 10000x100,7000x1000,100000x100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from score_bench import generate


def cases(paths: dict[str, Path], tag: str) -> dict[str, list[str]]:
    j, q, rj, rt = (str(paths[n]) for n in ("judgments.jsonl", "qrels", "run.jsonl", "run.trec"))
    return {
        f"{tag}-jsonl-k10": ["-j", j, "-r", rj, "-k", "10"],
        f"{tag}-jsonl-k10-plain": ["-j", j, "-r", rj, "-k", "10", "--no-intervals"],
        f"{tag}-trec-run-k5,100": ["-j", j, "-r", rt, "-k", "5,100", "--no-intervals"],
        f"{tag}-qrels-k1000": ["-j", q, "-r", rj, "-k", "1000", "--no-intervals"],
        f"{tag}-gate": ["-j", j, "-r", rj, "--gate", "ndcg@10:0.2", "--gate", "recall@30:0.1",
                        "--resamples", "1000"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--sizes", default="10000x100,7000x1000")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cache = Path(os.environ.get("GOLDKEEPER_BENCH_CACHE", Path(tempfile.gettempdir()) / "goldkeeper-bench"))
    cache.mkdir(parents=True, exist_ok=True)
    goldkeeper = shutil.which("goldkeeper") or str(Path(sys.executable).parent / "goldkeeper")
    for size in args.sizes.split(","):
        queries, depth = (int(x) for x in size.split("x"))
        for name, argv in cases(generate(cache, queries, depth), size).items():
            done = subprocess.run([goldkeeper, "score", *argv, "--format", "json", "--now", "2026-01-01T00:00:00Z"],
                                  capture_output=True, check=False)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.decode().strip()}")
            (args.out / f"{name}.json").write_bytes(done.stdout)
            print(f"{name}: exit {done.returncode}, {len(done.stdout):,} bytes", flush=True)


if __name__ == "__main__":
    main()
