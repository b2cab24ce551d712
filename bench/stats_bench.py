"""Statistics speed: goldkeeper.stats side by side with retrieval-eval-gate 0.2.1 and scipy.

Part 1, one method at a time, each in its own process (so peak memory is the method's),
n = 10,000 per-query values from a fixed seed: a BCa interval with 10,000 resamples on a
graded metric and on a 0/1 one, and a paired permutation test (Monte Carlo, 10,000
resamples) on two graded vectors. Times are measured inside the process around the call
(imports excluded), medians of --repeats; memory is the process tree's peak PSS.

Part 2, whole processes on 10,000 queries x 100-deep rankings (bench/score_bench.py's
workload): `goldkeeper score` with intervals on every metric against the same without
(target: at most 3x), and `rag-eval-gate eval` with its default statistics and with
--no-stats on the same qrels and TREC run (target: goldkeeper at least 10x faster).

    python bench/stats_bench.py [--repeats 3] [--skip-eval]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from score_bench import generate
from validate_bench import compile_goldkeeper, measure, timed

SETUP = """
import time, numpy as np
rng = np.random.default_rng(0)
graded = rng.beta(0.6, 0.9, 10_000)
binary = (rng.random(10_000) < 0.7).astype(float)
other = np.clip(graded + rng.normal(0.01, 0.2, 10_000), 0, 1)
"""

METHODS = {
    ("BCa, graded", "goldkeeper"): """
        from goldkeeper.stats import bca_interval
        start = time.perf_counter(); bca_interval(graded, resamples=10_000, seed=0)
    """,
    ("BCa, graded", "retrieval-eval-gate"): """
        from rag_eval_gate.stats import bootstrap_ci
        values = graded.tolist()
        start = time.perf_counter(); bootstrap_ci(values, iters=10_000, seed=0)
    """,
    ("BCa, graded", "scipy.stats.bootstrap"): """
        from scipy.stats import bootstrap
        start = time.perf_counter(); bootstrap((graded,), np.mean, n_resamples=10_000, method="BCa", random_state=0)
    """,
    ("BCa, 0/1 (recall@5)", "goldkeeper"): """
        from goldkeeper.stats import bca_interval
        start = time.perf_counter(); bca_interval(binary, resamples=10_000, seed=0)
    """,
    ("BCa, 0/1 (recall@5)", "retrieval-eval-gate"): """
        from rag_eval_gate.stats import bootstrap_ci
        values = binary.tolist()
        start = time.perf_counter(); bootstrap_ci(values, iters=10_000, seed=0)
    """,
    ("paired permutation, Monte Carlo", "goldkeeper"): """
        from goldkeeper.stats import paired_permutation_test
        start = time.perf_counter(); paired_permutation_test(graded, other, resamples=10_000, seed=0)
    """,
    ("paired permutation, Monte Carlo", "retrieval-eval-gate"): """
        from rag_eval_gate.stats import paired_permutation_test
        a, b = graded.tolist(), other.tolist()
        start = time.perf_counter(); paired_permutation_test(a, b, iters=10_000, seed=0)
    """,
    ("paired permutation, Monte Carlo", "numpy sign flip"): """
        d = graded - other
        start = time.perf_counter()
        signs = np.random.default_rng(0).choice(np.array([-1.0, 1.0]), size=(10_000, d.size))
        (np.abs(signs @ d) >= abs(d.sum())).mean()
    """,
}


def run_method(code: str) -> tuple[float, float]:
    """(seconds inside the process around the call, peak MiB of the process)."""
    script = textwrap.dedent(SETUP) + textwrap.dedent(code) + "\nprint(time.perf_counter() - start)\n"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(script)
    try:
        _, peak, _ = measure([sys.executable, handle.name])
        inner = subprocess.run([sys.executable, handle.name], capture_output=True, text=True, check=True)
        return float(inner.stdout.strip().splitlines()[-1]), peak
    finally:
        os.unlink(handle.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-eval", action="store_true", help="skip part 2's rag-eval-gate eval runs")
    args = parser.parse_args()
    compile_goldkeeper()

    print("part 1: n = 10,000, 10,000 resamples (seconds inside the process; peak memory of the process)")
    for method in dict.fromkeys(m for m, _ in METHODS):
        results = {}
        for (name, tool), code in METHODS.items():
            if name != method:
                continue
            runs = [run_method(code) for _ in range(args.repeats)]
            results[tool] = (statistics.median(t for t, _ in runs), max(p for _, p in runs))
        ours = results["goldkeeper"][0]
        print(f"\n{method}")
        for tool, (seconds, peak) in results.items():
            ratio = "" if tool == "goldkeeper" else f"  goldkeeper is {seconds / ours:.1f}x faster"
            print(f"  {tool:<24} {seconds:7.3f} s  {peak:6.0f} MiB{ratio}", flush=True)

    cache = Path(os.environ.get("GOLDKEEPER_BENCH_CACHE", Path(tempfile.gettempdir()) / "goldkeeper-bench"))
    cache.mkdir(parents=True, exist_ok=True)
    paths = generate(cache, 10_000, 100)
    qrels = cache / "10000x100.qrels.tsv"  # rag-eval-gate picks its qrels reader by suffix
    if not qrels.exists():
        qrels.write_bytes(paths["qrels"].read_bytes())
    bindir = Path(sys.executable).parent
    score = [str(bindir / "goldkeeper"), "score", "--judgments", str(paths["judgments.jsonl"]), "--run",
             str(paths["run.trec"]), "-k", "5,10", "--format", "json"]
    commands = {"goldkeeper score, intervals on every metric": score,
                "goldkeeper score --no-intervals": [*score, "--no-intervals"]}
    if not args.skip_eval:
        out = cache / "rag-eval-gate.json"
        base = [str(bindir / "rag-eval-gate"), "eval", str(qrels), "--backend", "run-file", "--run-file",
                str(paths["run.trec"]), "--quiet", "--json", str(out)]
        commands["rag-eval-gate eval (default statistics)"] = base
        commands["rag-eval-gate eval --no-stats"] = [*base, "--no-stats"]
    print("\npart 2: whole processes, 10,000 queries x 100-deep rankings")
    times = {}
    for name, argv in commands.items():
        runs, peak, _ = timed(argv, args.repeats if "rag-eval-gate" not in name else 1)
        times[name] = statistics.median(runs)
        print(f"  {name:<44} {times[name]:7.2f} s  {peak:6.0f} MiB", flush=True)
    with_intervals = times["goldkeeper score, intervals on every metric"]
    print(f"  intervals cost {with_intervals / times['goldkeeper score --no-intervals']:.2f}x the time without (target 3x)")
    if not args.skip_eval:
        print(f"  goldkeeper with intervals is {times['rag-eval-gate eval (default statistics)'] / with_intervals:.1f}x "
              "faster than rag-eval-gate eval with statistics (target 10x)")


if __name__ == "__main__":
    main()
