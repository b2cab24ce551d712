"""The judge's throughput against what the stub endpoint can serve, side by side in one run.

The stub (goldkeeper.examples.stub_judge, real HTTP on loopback) answers each call after
--latency seconds. "What it can serve" is a bare httpx client at the same concurrency posting
the same requests; the judge (goldkeeper.io.judge.judge_pairs: prompt, rate limit, retries,
strict parsing) must come within 10% of it. Medians of --repeats runs.

    python bench/judge_bench.py [--pairs 2000] [--latency 0.05] [--concurrency 16,32,64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from goldkeeper.core.judge import DEFAULT_PROMPT, messages
from goldkeeper.examples.stub_judge import StubJudge
from goldkeeper.io.judge import ChatJudge, Pair, judge_pairs


def bare(url: str, pairs: list[Pair], concurrency: int) -> float:
    """Calls a second a plain client gets from the stub."""
    client = httpx.Client(limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency))
    bodies = [{"model": "stub-judge", "messages": messages(DEFAULT_PROMPT, p.query, p.text, 3), "temperature": 0}
              for p in pairs]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for response in pool.map(lambda body: client.post(f"{url}/chat/completions", json=body), bodies):
            response.raise_for_status()
    client.close()
    return len(pairs) / (time.perf_counter() - started)


def judged(url: str, pairs: list[Pair], concurrency: int) -> float:
    client = ChatJudge(url, "stub-judge", concurrency=concurrency)
    started = time.perf_counter()
    found = judge_pairs(client, pairs, DEFAULT_PROMPT, 3, concurrency=concurrency)
    rate = len(pairs) / (time.perf_counter() - started)
    client.close()
    if any(j.grade is None for j in found):
        raise SystemExit("judge_bench: the judge got errors from the stub")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", default="16,32,64")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    stub = StubJudge(latency=args.latency)
    url = stub.start()
    print(f"{args.pairs} pairs, stub latency {args.latency * 1000:.0f} ms, median of {args.repeats}")
    for concurrency in map(int, args.concurrency.split(",")):
        base, ours = [], []
        for run in range(args.repeats):
            # Each run its own texts: the judge's answers are not cached between runs.
            pairs = [Pair(f"rq1:{i:024x}", f"c1:{i:032x}", f"query {run} {concurrency} {i}", f"passage {i}")
                     for i in range(args.pairs)]
            base.append(bare(url, pairs, concurrency))
            ours.append(judged(url, pairs, concurrency))
        b, o = statistics.median(base), statistics.median(ours)
        print(f"  concurrency {concurrency:>3}: stub serves {b:7.1f} calls/s, the judge gets {o:7.1f} calls/s "
              f"({o / b:.1%} of it)")
    stub.stop()


if __name__ == "__main__":
    main()
