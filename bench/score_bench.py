"""`goldkeeper score` against retrieval-eval, ranx, pytrec_eval and ir_measures, side by side.

Workloads from a fixed seed (about 5 graded labels per query, 8 strata): 10,000 queries x
100-deep rankings, 7,000 x 1,000 (MS MARCO dev scale), 100,000 x 100. Each tool runs as a
whole process, imports, parsing and (for ranx) JIT compilation included, since a user pays
them; each reads the same data (run JSONL for goldkeeper and retrieval-eval, which read it;
the same run as a TREC file for the others, which read that) and computes P, recall, nDCG,
MRR and MAP at k (goldkeeper without intervals, like its peers; its default intervals are
timed on a line of their own). The floor is the time to parse the run JSONL alone with orjson
for reference; a second floor parses the judgments too, which goldkeeper must also read.
A peer that is not installed, or that fails, stops the bench (``pip install -e '.[bench]'``). Prints the median of --repeats runs per tool (at least 7
for a tool under 2 s) and their range, and every ratio. A size may name its own cutoff
(``7000x1000@1000``: the issue's reference took 15.3 s there against 7.2 s at k = 10).

    python bench/score_bench.py [--repeats 3] [--sizes 10000x100,7000x1000,100000x100,7000x1000@1000] [--k 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from validate_bench import compile_goldkeeper, measure

#: Tools faster than this are timed at least QUICK_RUNS times, whatever --repeats says.
QUICK_S, QUICK_RUNS = 2.0, 7

STRATA = ["billing", "legal", "onboarding", "support", "security", "api", "mobile", "sso"]


def generate(root: Path, queries: int, depth: int, seed: int = 0) -> dict[str, Path]:
    """Judgments JSONL + qrels, and the same run as JSONL and as TREC; cached by size."""
    paths = {name: root / f"{queries}x{depth}.{name}" for name in ("judgments.jsonl", "qrels", "run.jsonl", "run.trec")}
    if all(p.exists() for p in paths.values()):
        return paths
    rng = random.Random(seed)
    docs = max(50_000, queries * 10)
    with paths["judgments.jsonl"].open("w") as jf, paths["qrels"].open("w") as qf, \
            paths["run.jsonl"].open("w") as rf, paths["run.trec"].open("w") as tf:
        for q in range(queries):
            qid = f"q{q}"
            labeled = rng.sample(range(docs), 5)
            for d in labeled:
                grade = rng.choice([0, 1, 1, 2, 3])
                jf.write(json.dumps({"query_id": qid, "query": f"query {q}", "doc_uri": f"d{d}",
                                     "relevance": grade, "labeled_by": "human:bench",
                                     "stratum": STRATA[q % 8]}, separators=(",", ":")) + "\n")
                qf.write(f"{qid} 0 d{d} {grade}\n")
            ranking = rng.sample(range(docs), depth)
            for d in labeled:
                if rng.random() < 0.6:
                    ranking[rng.randrange(min(depth, 30))] = d
            ranking = list(dict.fromkeys(ranking))
            rf.write(json.dumps({"query_id": qid, "ranking": [f"d{d}" for d in ranking]}, separators=(",", ":")) + "\n")
            tf.write("".join(f"{qid} Q0 d{d} {i + 1} {depth - i} bench\n" for i, d in enumerate(ranking)))
    return paths


PEERS = {
    "ranx": """
        from ranx import Qrels, Run, evaluate
        qrels = Qrels.from_file({qrels!r}, kind="trec")
        run = Run.from_file({run!r}, kind="trec")
        evaluate(qrels, run, ["precision@{k}", "recall@{k}", "ndcg@{k}", "mrr@{k}", "map@{k}"])
    """,
    "pytrec_eval": """
        import pytrec_eval
        qrels, run = {{}}, {{}}
        for line in open({qrels!r}):
            q, _, d, g = line.split()
            qrels.setdefault(q, {{}})[d] = int(g)
        for line in open({run!r}):
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {{}})[d] = float(s)
        ev = pytrec_eval.RelevanceEvaluator(qrels, {{"P.{k}", "recall.{k}", "ndcg_cut.{k}", "recip_rank", "map_cut.{k}"}})
        ev.evaluate(run)
    """,
    "ir_measures": """
        import ir_measures
        from ir_measures import P, R, nDCG, RR, AP
        qrels = list(ir_measures.read_trec_qrels({qrels!r}))
        run = list(ir_measures.read_trec_run({run!r}))
        ir_measures.calc_aggregate([P@{k}, R@{k}, nDCG@{k}, RR@{k}, AP@{k}], qrels, run)
    """,
    "orjson floor": """
        import orjson
        with open({run_jsonl!r}, "rb") as fh:
            for line in fh:
                orjson.loads(line)
    """,
    # The floor parses the run alone; goldkeeper must also read the judgments, 40% of
    # the bytes at 10k x 100 and 100k x 100. This floor parses both, and nothing else.
    "orjson floor + labels": """
        import orjson
        for path in ({run_jsonl!r}, {judgments_jsonl!r}):
            with open(path, "rb") as fh:
                for line in fh:
                    orjson.loads(line)
    """,
}


#: The module each peer needs; all come with ``pip install -e '.[bench]'``.
PEER_MODULES = {"retrieval-eval": "retrieval_eval", "ranx": "ranx", "pytrec_eval": "pytrec_eval",
                "ir_measures": "ir_measures"}


def require_peers(wanted: set[str]) -> None:
    """Stop before timing anything when a peer asked for is not installed or not runnable."""
    import importlib.util
    import shutil

    missing = [name for name in sorted(wanted) if name in PEER_MODULES
               and importlib.util.find_spec(PEER_MODULES[name]) is None]
    if "retrieval-eval" in wanted and not shutil.which("retrieval-eval"):
        missing.append("retrieval-eval (its command)")
    if missing:
        raise SystemExit(f"score_bench: peers not installed: {', '.join(missing)}; "
                         "pip install -e '.[bench]', or leave them out with --peers")
    unknown = wanted - set(PEER_MODULES)
    if unknown:
        raise SystemExit(f"score_bench: unknown peers {sorted(unknown)}; known: {sorted(PEER_MODULES)}")


def ok_codes(name: str) -> tuple[int, ...]:
    """goldkeeper exits 1 on a FAIL verdict, a valid answer; every other tool must exit 0."""
    return (0, 1) if name.startswith("goldkeeper") else (0,)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="10000x100,7000x1000,100000x100,7000x1000@1000")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--peers", default="retrieval-eval,ranx,pytrec_eval,ir_measures")
    args = parser.parse_args()
    require_peers(set(args.peers.split(",")))
    compile_goldkeeper()
    cache = Path(os.environ.get("GOLDKEEPER_BENCH_CACHE", Path(tempfile.gettempdir()) / "goldkeeper-bench"))
    cache.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    wanted = set(args.peers.split(","))
    for size in args.sizes.split(","):
        size, _, cutoff = size.partition("@")
        k = int(cutoff) if cutoff else args.k
        queries, depth = (int(x) for x in size.split("x"))
        paths = generate(cache, queries, depth)
        print(f"\n{queries:,} queries x {depth:,}-deep rankings, k={k}", flush=True)
        base = [str(bindir / "goldkeeper"), "score", "--judgments", str(paths["judgments.jsonl"]),
                "--run", str(paths["run.jsonl"]), "-k", str(k), "--format", "json"]
        # Like for like: the peers compute no intervals, so the comparison runs without them;
        # the cost of goldkeeper's default intervals is printed on its own line.
        commands = {"goldkeeper": [*base, "--no-intervals"], "goldkeeper + intervals": base}
        if "retrieval-eval" in wanted:
            commands["retrieval-eval 0.1.1"] = [str(bindir / "retrieval-eval"), "score", "--judgments",
                                               str(paths["judgments.jsonl"]), "--run", str(paths["run.jsonl"]),
                                               "-k", str(k), "--json"]
        for name, code in PEERS.items():
            if name in wanted or name.startswith("orjson floor"):
                script = textwrap.dedent(code).format(qrels=str(paths["qrels"]), run=str(paths["run.trec"]),
                                                      run_jsonl=str(paths["run.jsonl"]),
                                                      judgments_jsonl=str(paths["judgments.jsonl"]), k=k)
                commands[name] = [sys.executable, "-c", script]
        times: dict[str, list[float]] = {name: [] for name in commands}
        peaks: dict[str, float] = dict.fromkeys(commands, 0.0)
        order = list(commands)
        for repeat in range(args.repeats):  # timed without memory sampling, which takes CPU (measure)
            # Each repeat starts one tool later, so that no tool always runs after the same one
            # (a median of few repeats does not average an order effect away).
            for name in order[repeat % len(order):] + order[:repeat % len(order)]:
                times[name].append(measure(commands[name], sample=False, ok=ok_codes(name))[0])
        # Tools that take under QUICK_S seconds run until each has QUICK_RUNS times, in the
        # same rotation: a few seconds more buys medians that one slow moment moves less.
        quick = [name for name in order if statistics.median(times[name]) < QUICK_S]
        for repeat in range(args.repeats, QUICK_RUNS):
            for name in quick[repeat % len(quick):] + quick[:repeat % len(quick)]:
                times[name].append(measure(commands[name], sample=False, ok=ok_codes(name))[0])
        for name, argv in commands.items():
            peaks[name] = measure(argv, ok=ok_codes(name))[1]
        ours = statistics.median(times["goldkeeper"])
        for name in commands:
            median = statistics.median(times[name])
            if name == "goldkeeper":
                ratio = ""
            elif name == "goldkeeper + intervals":
                ratio = f"  {median / ours:5.2f}x the time without intervals"
            elif name.startswith("orjson floor"):
                ratio = f"  goldkeeper / floor = {ours / median:.2f}"
            else:
                ratio = f"  goldkeeper is {median / ours:5.2f}x faster"
            spread = f"{min(times[name]):.2f}-{max(times[name]):.2f}"  # a noisy machine shows here
            print(f"  {name:22s} {median:8.2f} s ({spread:>11s}) {peaks[name]:6.0f} MiB{ratio}", flush=True)
        if "retrieval-eval 0.1.1" in peaks:
            print(f"  peak memory ratio goldkeeper / retrieval-eval = {peaks['goldkeeper'] / peaks['retrieval-eval 0.1.1']:.3f}")


if __name__ == "__main__":
    main()
