"""rag-eval-gate's own tests/test_ppi.py (0.2.1, from its sdist), restated against
``goldkeeper.stats.ppi_mean``; each test names the peer test it restates. Not restated:
EstimatorTest::test_lambda_zero_reduces_to_the_hand_label_mean and ::test_lambda_one_is_the_
original_untuned_estimator (goldkeeper always power-tunes lambda; there is no lam= to force),
and the peer's classical_interval helper."""

from __future__ import annotations

import random

import pytest

from goldkeeper.stats import ppi_mean


def population(rng: random.Random, size: int, bias: float, noise: float, signal: float = 1.0):
    """(truth, judge) pairs: the truth Beta(5, 2), the judge signal * truth + bias + noise, clipped."""
    pairs = []
    for _ in range(size):
        truth = rng.betavariate(5, 2)
        pairs.append((truth, min(1.0, max(0.0, signal * truth + bias + rng.gauss(0.0, noise)))))
    return pairs


def split(pairs, n_labeled: int):
    labeled, unlabeled = pairs[:n_labeled], pairs[n_labeled:]
    return [y for y, _ in labeled], [f for _, f in labeled], [f for _, f in unlabeled]


def trials(bias: float, noise: float, signal: float = 1.0, seed: int = 7, count: int = 400):
    """PPI coverage, labels-only coverage, judge-only coverage, mean widths (PPI, labels)."""
    truth = 5 / 7
    covered = covered_labels = covered_judge = 0
    widths, label_widths = [], []
    for trial in range(count):
        rng = random.Random(seed * 1000 + trial)
        labels, labeled_pred, unlabeled_pred = split(population(rng, 60 + 1200, bias, noise, signal), 60)
        found = ppi_mean(labels, labeled_pred, unlabeled_pred)
        covered += found.interval[0] <= truth <= found.interval[1]
        widths.append(found.interval[1] - found.interval[0])
        low, high = found.labels_interval
        covered_labels += low <= truth <= high
        label_widths.append(high - low)
        judge = labeled_pred + unlabeled_pred
        mean = sum(judge) / len(judge)
        half = 1.96 * (sum((j - mean) ** 2 for j in judge) / (len(judge) - 1) / len(judge)) ** 0.5
        covered_judge += mean - half <= truth <= mean + half
    return (covered / count, covered_labels / count, covered_judge / count,
            sum(widths) / count, sum(label_widths) / count)


@pytest.fixture(scope="module")
def optimistic():
    return trials(bias=0.08, noise=0.10)


def test_holds_when_the_judge_is_optimistic(optimistic):
    """CoverageTest::test_holds_when_the_judge_is_optimistic."""
    assert optimistic[0] >= 0.90 and optimistic[1] >= 0.90, optimistic


def test_holds_when_the_judge_is_pessimistic():
    """CoverageTest::test_holds_when_the_judge_is_pessimistic."""
    assert trials(bias=-0.12, noise=0.15, seed=11)[0] >= 0.90


def test_quoting_the_judge_directly_is_the_failure_this_replaces(optimistic):
    """CoverageTest::test_quoting_the_judge_directly_is_the_failure_this_replaces."""
    assert optimistic[2] < 0.10


def test_an_informative_judge_narrows_the_interval():
    """CoverageTest::test_an_informative_judge_narrows_the_interval."""
    _, _, _, width, label_width = trials(bias=0.08, noise=0.05)
    assert width < 0.8 * label_width


def test_a_useless_judge_costs_nothing():
    """CoverageTest::test_a_useless_judge_costs_nothing."""
    coverage, _, _, width, label_width = trials(bias=0.0, noise=0.30, signal=0.0, seed=23)
    assert coverage >= 0.90 and width <= label_width * 1.05


def _lam(labels, preds, unlabeled):
    return ppi_mean(labels, preds, unlabeled).lam


def test_a_noise_predictor_gets_weight_zero_and_a_perfect_one_near_one():
    """LambdaTest::test_a_noise_predictor_gets_weight_zero and ::test_a_perfect_predictor_gets_weight_near_one."""
    rng = random.Random(3)
    labels = [rng.betavariate(5, 2) for _ in range(200)]
    assert _lam(labels, [rng.random() for _ in range(200)], [rng.random() for _ in range(2000)]) < 0.2
    rng = random.Random(4)
    labels = [rng.betavariate(5, 2) for _ in range(200)]
    unlabeled = [rng.betavariate(5, 2) + 0.1 for _ in range(20000)]
    assert _lam(labels, [y + 0.1 for y in labels], unlabeled) > 0.9


def test_a_constant_predictor_explains_nothing_and_the_weight_stays_in_the_unit_interval():
    """LambdaTest::test_a_constant_predictor_explains_nothing and ::test_weight_stays_inside_the_unit_interval."""
    assert _lam([0.1, 0.9, 0.5], [0.5, 0.5, 0.5], [0.5] * 100) == 0.0
    rng = random.Random(5)
    for _ in range(50):
        labels = [rng.betavariate(2, 2) for _ in range(30)]
        preds = [rng.gauss(y, 0.3) for y in labels]
        assert 0.0 <= _lam(labels, preds, [rng.gauss(rng.betavariate(2, 2), 0.3) for _ in range(300)]) <= 1.0


def test_more_unlabelled_data_raises_the_weight():
    """LambdaTest::test_more_unlabelled_data_raises_the_weight."""
    rng = random.Random(6)
    labels = [rng.betavariate(5, 2) for _ in range(100)]
    preds = [0.9 * y + 0.05 for y in labels]
    few = [0.9 * rng.betavariate(5, 2) + 0.05 for _ in range(100)]
    many = [0.9 * rng.betavariate(5, 2) + 0.05 for _ in range(100_000)]
    assert _lam(labels, preds, few) < _lam(labels, preds, many)


def _made(n=50, big_n=500, bias=0.1, seed=9, **options):
    labels, labeled_pred, unlabeled_pred = split(population(random.Random(seed), n + big_n, bias, 0.05), n)
    return ppi_mean(labels, labeled_pred, unlabeled_pred, **options)


def test_reports_the_judge_bias_it_corrected_for():
    """EstimatorTest::test_reports_the_judge_bias_it_corrected_for."""
    found = _made(bias=0.10)
    assert found.judge_bias > 0 and found.estimate < found.judge_mean


def test_effective_sample_size_exceeds_the_labels_actually_written():
    """EstimatorTest::test_effective_sample_size_exceeds_the_labels_actually_written."""
    found = _made(n=50, big_n=5000)
    low, high = found.labels_interval
    assert found.effective_labels > found.n_labeled and found.interval[1] - found.interval[0] < high - low


def test_the_interval_brackets_its_own_estimate_and_a_tighter_alpha_widens_it():
    """EstimatorTest::test_the_interval_brackets_its_own_estimate and ::test_a_tighter_alpha_widens_the_interval."""
    found = _made()
    assert found.interval[0] < found.estimate < found.interval[1]
    width = lambda e: e.interval[1] - e.interval[0]  # noqa: E731
    assert width(_made(alpha=0.01)) > width(_made(alpha=0.10))


def test_the_statement_names_the_direction_of_the_bias_and_it_serialises():
    """EstimatorTest::test_the_statement_names_the_direction_of_the_bias and ::test_serialises."""
    assert "optimistic" in _made(bias=0.10).statement() and "pessimistic" in _made(bias=-0.10).statement()
    payload = _made().to_dict()
    assert {"estimate", "interval", "lam", "judge_bias", "effective_labels", "statement"} <= set(payload)


@pytest.mark.parametrize(("y", "yhat", "unlabeled"), [([0.1, 0.2], [0.1], [0.3, 0.4]), ([0.5], [0.6], [0.7, 0.8]),
                                                      ([0.5, 0.6], [0.5, 0.6], [])],
                         ids=["misaligned", "too-few-hand-labels", "no-unlabelled-predictions"])
def test_input_the_estimate_cannot_stand_on_is_refused(y, yhat, unlabeled):
    """InputValidationTest::test_misaligned_labels_and_predictions_are_refused,
    ::test_too_few_hand_labels_is_refused_rather_than_guessed and
    ::test_no_unlabelled_predictions_points_at_the_classical_interval."""
    with pytest.raises(ValueError, match="ppi_mean"):
        ppi_mean(y, yhat, unlabeled)
