"""People's workload before and after the judge, on a simulated queue of 1,000 labels.

A re-chunk splits 1,000 labelled paragraphs (one per query) in two, so 1,000 items wait for
people, each with two candidate chunks. The lifecycle's judge step runs on them as the flow
runs it, without Prefect: the stub endpoint (goldkeeper.examples.stub_judge, real HTTP on
loopback; it grades by a rule, with --noise wrong grades and --failures of each kind) grades
every candidate through io.judge.judge_queue, core.sampling.fully_judged keeps the items it
answered whole, and plan_audit sizes and draws the audit at the suite's default rule (people
alone would reach a 95% interval 0.2 wide). People then answer the audit's items and the
items the judge could not answer.

    python bench/judge_workload.py [--labels 1000] [--noise 0.1] [--failure 0.01] [--width 0.2]
"""

from __future__ import annotations

import argparse

from goldkeeper.core.judge import DEFAULT_PROMPT
from goldkeeper.core.sampling import fully_judged, plan_audit
from goldkeeper.examples.stub_judge import StubJudge
from goldkeeper.io.judge import judge_queue


def queue(labels: int) -> list[dict]:
    items = []
    for n in range(labels):
        query = f"how do I configure feature {n} of the product"
        items.append({"item_id": f"rq1:{n:024x}", "action": "rejudge", "status": "SPLIT", "query_id": f"q{n:04d}",
                      "query": query, "doc_uri": f"kb://doc/{n}", "relevance": 1,
                      "candidates": [{"chunk_id": f"c1:{2 * n:032x}", "doc_uri": f"kb://doc/{n}",
                                      "text": f"To configure feature {n} of the product, open its settings page."},
                                     {"chunk_id": f"c1:{2 * n + 1:032x}", "doc_uri": f"kb://doc/{n}",
                                      "text": "Release notes for an older version follow here."}]})
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--failure", type=float, default=0.01, help="share of calls per failure kind")
    parser.add_argument("--width", type=float, default=0.2)
    args = parser.parse_args()
    failures = dict.fromkeys(("http500", "http429", "malformed", "refusal", "out-of-scale"), args.failure)
    stub = StubJudge(noise=args.noise, failures=failures)
    url = stub.start()
    try:
        items = queue(args.labels)
        judged = judge_queue(items, base_url=url, model="stub-judge", prompt=DEFAULT_PROMPT, top=1,
                             labeled_at="2026-12-04T00:00:00Z", concurrency=32, retries=3)
    finally:
        stub.stop()
    taken = fully_judged(items, judged["answers"])
    plan = plan_audit(taken, width=args.width, at_most=None)
    summary = judged["summary"]
    left = len(items) - len(taken)
    print(f"{args.labels} queued labels, {summary['pairs']} candidates; the stub: noise {args.noise}, "
          f"{args.failure:.0%} of calls failing per kind ({', '.join(failures)})")
    print(f"judge: {summary['graded']} graded, {summary['errors']} errors {summary['error_kinds']}, "
          f"{summary['calls']} calls in {summary['seconds']:.1f} s")
    print(f"audit: {len(plan['queries'])} queries ({plan['rule']})")
    print(f"people's workload: {len(items)} items before the judge; after it {len(plan['items']) + left} "
          f"({len(plan['items'])} to audit, {left} the judge could not answer): "
          f"{(len(plan['items']) + left) / len(items):.1%} of the queue")


if __name__ == "__main__":
    main()
