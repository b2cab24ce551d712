"""eval throughput: `goldkeeper eval` and `rag-eval-gate eval` (0.2.1) against one local HTTP retriever.

The retriever is a small ASGI app served by uvicorn (already installed with Prefect) in its
own process on loopback. Each search answers 10 hits after a fixed latency (default 5 ms, a
fast real retriever), so what is measured is how a client keeps a retriever busy. Both tools
score the same 10,000 queries without statistics; the bench prints each one's queries per
second, medians of --repeats, and the ratio (target: goldkeeper at least 10x).

    python bench/eval_bench.py [--queries 10000] [--latency-ms 5] [--concurrency 32] [--repeats 3] [--no-peer]

``--no-peer`` measures goldkeeper alone (to compare two goldkeeper versions); without it, a
peer that is not installed fails the bench instead of being left out of the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from validate_bench import compile_goldkeeper, measure

APP = """
import asyncio, json, os, urllib.parse
LATENCY = float(os.environ["BENCH_LATENCY"])

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    query = urllib.parse.parse_qs(scope["query_string"].decode()).get("q", [""])[0]
    await asyncio.sleep(LATENCY)
    number = int(query.split()[-1]) if query.split() and query.split()[-1].isdigit() else 0
    hits = [{"id": f"d{(number * 7 + i) % 50000}", "score": 10.0 - i} for i in range(10)]
    body = json.dumps({"hits": hits}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-peer", action="store_true", help="goldkeeper alone, no ratio")
    args = parser.parse_args()
    bindir = Path(sys.executable).parent
    if not args.no_peer and not (bindir / "rag-eval-gate").exists():
        sys.exit(f"the peer is not installed: no {bindir / 'rag-eval-gate'} (pip install retrieval-eval-gate==0.2.1, the seed's distribution; its command is rag-eval-gate), "
                 "or measure goldkeeper alone with --no-peer")
    compile_goldkeeper()
    work = Path(tempfile.mkdtemp(prefix="goldkeeper-eval-bench-"))
    rng = random.Random(0)
    with open(work / "judgments.jsonl", "w") as ours, open(work / "gold.jsonl", "w") as theirs:
        for q in range(args.queries):
            text = f"how do refunds work for plan {q}"
            relevant = [f"d{(q * 7 + rng.randrange(12)) % 50000}"]
            ours.write(json.dumps({"query_id": f"q{q}", "query": text, "doc_uri": relevant[0], "relevance": 1}) + "\n")
            theirs.write(json.dumps({"id": f"q{q}", "query": text, "relevant_doc_ids": relevant}) + "\n")
    (work / "app.py").write_text(APP)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app:app", "--port", str(port), "--log-level", "warning", "--no-access-log",
         "--loop", "asyncio", "--http", "h11"],
        cwd=work, env={**os.environ, "BENCH_LATENCY": str(args.latency_ms / 1000)},
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/search?q=x", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/search?q={{query}}"
        print(f"{args.queries:,} queries, retriever latency {args.latency_ms:g} ms, loopback HTTP", flush=True)
        rates = {}
        for name in ("goldkeeper",) if args.no_peer else ("goldkeeper", "rag-eval-gate"):
            times = []
            for repeat in range(args.repeats):
                out = work / f"out-{name}-{repeat}"
                if name == "goldkeeper":
                    argv = [str(bindir / "goldkeeper"), "eval", "-j", str(work / "judgments.jsonl"), "--url-template",
                            url, "--results-path", "hits", "--concurrency", str(args.concurrency), "-k", "10",
                            "--no-intervals", "--out", str(out), "--format", "json"]
                else:
                    argv = [str(bindir / "rag-eval-gate"), "eval", str(work / "gold.jsonl"), "--backend", "http",
                            "--url-template", url, "--results-path", "hits", "--id-field", "id", "--no-stats",
                            "--quiet", "--json", str(out) + ".json"]
                elapsed, _, _ = measure(argv, sample=False)
                times.append(elapsed)
                shutil.rmtree(out, ignore_errors=True)
            rates[name] = args.queries / statistics.median(times)
            print(f"  {name:<14} {statistics.median(times):8.2f} s  {rates[name]:8.0f} queries/s", flush=True)
        if not args.no_peer:
            print(f"  goldkeeper is {rates['goldkeeper'] / rates['rag-eval-gate']:.1f}x rag-eval-gate's queries per "
                  f"second (target 10x; --concurrency {args.concurrency})")
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
