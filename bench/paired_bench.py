"""The anytime-valid paired comparison: goldkeeper's ``paired_gate`` beside rag-eval-gate
0.2.1's ``paired_gate`` on the same seeded streams of 200 paired 0/1 queries (a baseline
hitting 60%, a candidate flipping misses up and hits down for a chosen true lift), both
watching the pairs in the order given. For each lift: how often each declares a direction
(at 0, a type I error; above 0, its power), how many pairs it watched before settling
(median), and for goldkeeper how often its 95% confidence sequence held the true
difference at every look. The peer's verdict exposes no interval, so its coverage is not
measured.

    python bench/paired_bench.py [--repetitions 500]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from rag_eval_gate import sequential as peer

from goldkeeper.stats import paired_cs, paired_gate

PAIRS = 200


def streams(lift: float, repetitions: int, seed: int):
    rng = np.random.default_rng(seed)
    up, down = 0.4, (0.16 - lift) / 0.6  # E[candidate - baseline] = 0.4 up - 0.6 down = lift
    for _ in range(repetitions):
        base = (rng.random(PAIRS) < 0.6).astype(float)
        flip_up = (base == 0) & (rng.random(PAIRS) < up)
        flip_down = (base == 1) & (rng.random(PAIRS) < down)
        yield np.where(flip_up, 1.0, np.where(flip_down, 0.0, base)), base


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repetitions", type=int, default=500)
    args = parser.parse_args()
    print(f"{args.repetitions} seeded repetitions of {PAIRS} pairs, alpha 0.05")
    print(f"{'lift':>5} {'tool':<16} {'declared':>9} {'median look':>12} {'held truth':>11}")
    for lift in (0.16, 0.10, 0.0):
        ours, theirs, ours_looks, their_looks, held = 0, 0, [], [], 0
        for cand, base in streams(lift, args.repetitions, seed=42):
            verdict = paired_gate(cand.tolist(), base.tolist())
            ours += verdict.decision != "undecided"
            ours_looks.append(verdict.looked)
            lower, upper = paired_cs(cand.tolist(), base.tolist())
            held += all(low <= lift <= high for low, high in zip(lower, upper))
            other = peer.paired_gate(cand.tolist(), base.tolist())
            theirs += other.decision != "undecided"
            their_looks.append(other.queries_used)
        n = args.repetitions
        print(f"{lift:>5.2f} {'goldkeeper':<16} {ours / n:>9.1%} {statistics.median(ours_looks):>12.0f} {held / n:>11.1%}")
        print(f"{lift:>5.2f} {'rag-eval-gate':<16} {theirs / n:>9.1%} {statistics.median(their_looks):>12.0f} "
              f"{'n/a':>11}")
        print(f"{'':>5} ratio of median looks, goldkeeper / rag-eval-gate: "
              f"{statistics.median(ours_looks) / statistics.median(their_looks):.2f}")


if __name__ == "__main__":
    main()
