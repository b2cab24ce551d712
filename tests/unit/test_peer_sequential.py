"""rag-eval-gate's own tests/test_sequential.py (0.2.1, from its sdist), restated against
goldkeeper's confidence sequence (``goldkeeper.stats.betting_cs``) and its sequential gates
(``recall@5:sequential:0.6`` on a report's per-query values); each test names the peer test
it restates (PairedGateTest is in test_sequential.py). Not restated: CapitalProcessTest, the
peer's single-hypothesis book (goldkeeper keeps a grid of hypotheses; the sequence's tests
below cover what the book is for), and ShuffleTest (goldkeeper orders by sha256 of
seed:query id rather than shuffling, tested in test_sequential_eval.py)."""

from __future__ import annotations

import math
import random
from dataclasses import replace

from goldkeeper.core.gates import gate_results, parse_gate
from goldkeeper.stats import betting_cs


def _escapes(sampler, truth: float, seed: int, streams: int = 600, length: int = 150) -> tuple[float, float]:
    """Share of streams where the truth is ever outside the watched interval: the confidence
    sequence's, and a fixed-n normal interval's recomputed after every draw."""
    rng = random.Random(seed)
    anytime = fixed = 0
    for _ in range(streams):
        draws = [sampler(rng) for _ in range(length)]
        lower, upper = betting_cs(draws)
        anytime += any(not low <= truth <= high for low, high in zip(lower, upper))
        total = total_sq = 0.0
        for t, x in enumerate(draws, 1):
            total, total_sq = total + x, total_sq + x * x
            if t >= 2:
                mean = total / t
                half = 1.959963985 * math.sqrt(max(total_sq / t - mean * mean, 0.0) * t / (t - 1) / t)
                if not mean - half <= truth <= mean + half:
                    fixed += 1
                    break
    return anytime / streams, fixed / streams


def test_the_sequence_holds_under_continuous_inspection_and_the_fixed_interval_does_not():
    """AnytimeValidityTest::test_confidence_sequence_holds_up_under_continuous_inspection and ::test_the_fixed_n_interval_does_not."""
    anytime, fixed = _escapes(lambda r: r.betavariate(2, 3), 0.4, seed=11)
    assert anytime <= 0.07 and fixed > 0.15 and fixed > 3 * anytime, (anytime, fixed)


def test_validity_holds_for_a_discrete_skewed_metric():
    """AnytimeValidityTest::test_validity_holds_for_a_discrete_skewed_metric."""
    support, weights = [1.0, 0.5, 0.25], [0.6, 0.3, 0.1]
    truth = sum(s * w for s, w in zip(support, weights))
    assert _escapes(lambda r: r.choices(support, weights)[0], truth, seed=23)[0] <= 0.07


def test_interval_brackets_the_sample_mean_narrows_and_covers_the_truth():
    """ConfidenceSequenceTest::test_interval_brackets_the_sample_mean_and_narrows,
    ::test_interval_covers_the_truth_it_was_generated_from and ::test_starts_uninformative."""
    rng = random.Random(4)
    draws = [rng.betavariate(5, 2) for _ in range(200)]
    lower, upper = betting_cs(draws)
    mean = sum(draws) / len(draws)
    assert lower[-1] <= mean <= upper[-1] and upper[-1] - lower[-1] < upper[19] - lower[19]
    rng = random.Random(8)
    lower, upper = betting_cs([rng.betavariate(5, 2) for _ in range(300)])
    assert lower[-1] <= 5 / 7 <= upper[-1]
    first_low, first_high = betting_cs([0.5])
    assert first_low[0] < 0.2 and first_high[0] > 0.8


def _gate(values: list[float], floor: float, seed: int = 0) -> dict:
    report = {"per_query": {f"q{i:03d}": {"recall@5": v} for i, v in enumerate(values)},
              "metrics": {"recall@5": {"value": sum(values) / len(values)}}}
    return gate_results(report, [replace(parse_gate(f"recall@5:sequential:{floor}"), seed=seed)])[1][0]


def _bernoulli(rate: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [1.0 if rng.random() < rate else 0.0 for _ in range(n)]


def test_passes_early_when_the_system_is_clearly_above_the_line():
    """SequentialGateTest::test_passes_early_when_the_system_is_clearly_above_the_line."""
    found = _gate(_bernoulli(0.95, 300, 15), 0.60, seed=1)
    assert found["status"] == "PASS" and found["looked"] < 60 and 1 - found["looked"] / 300 > 0.7


def test_fails_early_when_it_is_clearly_below():
    """SequentialGateTest::test_fails_early_when_it_is_clearly_below."""
    found = _gate(_bernoulli(0.30, 300, 16), 0.85, seed=1)
    assert found["status"] == "FAIL" and found["looked"] < 60


def test_a_system_sitting_on_the_line_is_reported_undecided_not_passed():
    """SequentialGateTest::test_a_system_sitting_on_the_line_is_reported_undecided_not_passed."""
    values = _bernoulli(0.85, 120, 17)
    report = {"per_query": {f"q{i:03d}": {"recall@5": v} for i, v in enumerate(values)},
              "metrics": {"recall@5": {"value": sum(values) / 120}}}
    status, (found,), reasons = gate_results(report, ["recall@5:sequential:0.85"])
    assert status == "FAIL" and found["looked"] == found["of"] == 120 and "undecided" in reasons[0]


def test_type_one_error_stays_within_alpha_at_the_threshold():
    """SequentialGateTest::test_type_one_error_stays_within_alpha_at_the_threshold: a system
    exactly at the line is settled (either way) in at most 8% of 400 trials."""
    settled = 0
    for i in range(400):
        found = _gate(_bernoulli(0.7, 120, 2000 + i), 0.7)
        settled += found["looked"] < found["of"] or found["status"] == "PASS"
    assert settled / 400 <= 0.08, settled


def test_bigger_gaps_are_settled_sooner():
    """SequentialGateTest::test_bigger_gaps_are_settled_sooner."""
    assert _gate(_bernoulli(0.95, 400, 31), 0.5)["looked"] < _gate(_bernoulli(0.70, 400, 31), 0.5)["looked"]


def test_the_order_seed_is_recorded_and_reproducible_and_another_is_another_procedure():
    """SequentialGateTest::test_the_shuffle_seed_is_recorded_and_reproducible and
    ::test_file_order_and_shuffled_order_are_different_procedures."""
    values = [1.0] * 40 + [0.0] * 40
    first, second = _gate(values, 0.2, seed=7), _gate(values, 0.2, seed=7)
    assert first == second and first["seed"] == 7
    looks = {_gate(values, 0.2, seed=s)["looked"] for s in range(8)}
    assert len(looks) > 1  # the order is part of the procedure: seeds give different looks
