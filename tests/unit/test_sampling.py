"""The audit sample and the PPI++ metric intervals (issue 41, item 2): the size rule, a seeded
stratified sample, and over 500 seeded repetitions with known truth an interval that covers
it at least 94% of the time at 95%, narrower than people alone when the judge is informative."""

from __future__ import annotations

import numpy as np
import pytest

from goldkeeper.core.sampling import audit_sample, audit_size, ppi_metrics


def test_the_size_rule_is_stated_and_capped():
    assert audit_size(10_000, width=0.2) == (97, "97 queries give people alone a 95% interval at most 0.2 wide "
                                                 "(per-query values in [0, 1])")
    size, rule = audit_size(10_000, width=0.2, at_most=50)
    assert size == 50 and rule.endswith("at most 50 asked")
    assert audit_size(40, width=0.1)[0] == 40  # fewer queries than the rule asks: all of them
    with pytest.raises(ValueError):
        audit_size(10)


def test_the_sample_is_seeded_stratified_and_nested():
    queries = [f"q{i}" for i in range(100)]
    strata = {q: ("billing" if i < 70 else "legal" if i < 95 else "sso") for i, q in enumerate(queries)}
    sample = audit_sample(queries, strata, 20, seed=1)
    assert len(sample) == 20 and sample == audit_sample(queries, strata, 20, seed=1)
    counts = {name: sum(strata[q] == name for q in sample) for name in ("billing", "legal", "sso")}
    assert counts == {"billing": 14, "legal": 5, "sso": 1}  # 70% / 25% / 5%, every stratum in it
    assert set(sample) <= set(audit_sample(queries, strata, 40, seed=1))  # a larger sample holds it
    assert audit_sample(queries, strata, 20, seed=2) != sample
    assert sample == [q for q in queries if q in set(sample)]  # in the order given
    assert audit_sample(queries, strata, 500) == queries


def _world(rng, n_queries: int, n_audit: int, flip: float, flatter: float):
    truth = (rng.random(n_queries) < 0.6).astype(float)  # a 0/1 metric per query, mean 0.6
    judge = truth.copy()
    wrong = rng.random(n_queries) < flip
    judge[wrong] = 1 - judge[wrong]
    judge[(judge == 0) & (rng.random(n_queries) < flatter)] = 1.0  # a judge that flatters
    ids = [f"q{i}" for i in range(n_queries)]
    audited = set(audit_sample(ids, {}, n_audit, seed=int(rng.integers(1 << 30))))
    judge_values = {q: {"recall@5": float(judge[i])} for i, q in enumerate(ids)}
    people = {q: {"recall@5": float(truth[i])} for i, q in enumerate(ids) if q in audited}
    return judge_values, people


def test_ppi_covers_the_truth_and_beats_people_alone_when_the_judge_is_informative():
    rng = np.random.default_rng(20261204)
    covered = narrower = 0
    widths, alone = [], []
    reps = 500
    for _ in range(reps):
        judge, people = _world(rng, 400, 60, flip=0.1, flatter=0.15)
        estimate = ppi_metrics(judge, people, ["recall@5"])["recall@5"]
        lo, hi = estimate.interval
        covered += lo <= 0.6 <= hi
        widths.append(hi - lo)
        alone.append(estimate.labels_interval[1] - estimate.labels_interval[0])
        narrower += (hi - lo) < alone[-1]
        assert estimate.judge_bias > -0.2  # it flatters, it does not undersell
    assert covered / reps >= 0.94, covered / reps
    assert np.median(widths) < 0.85 * np.median(alone), (np.median(widths), np.median(alone))
    assert narrower / reps > 0.9


def test_an_uninformative_judge_costs_nothing_beyond_people_alone():
    rng = np.random.default_rng(7)
    covered, ratios = 0, []
    for _ in range(500):
        judge, people = _world(rng, 400, 120, flip=0.5, flatter=0.0)  # a coin, no information
        estimate = ppi_metrics(judge, people, ["recall@5"])["recall@5"]
        lo, hi = estimate.interval
        covered += lo <= 0.6 <= hi
        ratios.append((hi - lo) / (estimate.labels_interval[1] - estimate.labels_interval[0]))
    assert covered / 500 >= 0.94
    assert np.median(ratios) <= 1.02  # power tuning: lambda near 0, the people's interval


def test_a_metric_people_did_not_score_gets_no_estimate():
    judge = {"q1": {"m": 1.0}, "q2": {"m": 0.0}, "q3": {"m": 1.0}}
    assert ppi_metrics(judge, {"q1": {"m": 1.0}}, ["m"]) == {}  # one audited query: no interval
    assert set(ppi_metrics(judge, {"q1": {"m": 1.0}, "q2": {"m": 1.0}}, ["m", "other"])) == {"m"}


def test_stratified_with_the_queries_people_labelled_before_covers_the_truth():
    """The lifecycle's case: 150 queries keep people's labels (the judge's values there are
    theirs), 250 the judge labelled, 60 of those audited. The truth is the population mean,
    0.6 on the judged queries and 0.8 on the others; the estimate covers it, and is narrower
    than people's labels alone (the 150 and the 60, stratified alike)."""
    rng = np.random.default_rng(41)
    covered, widths, alone, reps = 0, [], [], 500
    truth = (150 * 0.8 + 250 * 0.6) / 400
    for _ in range(reps):
        judge, people = _world(rng, 250, 60, flip=0.1, flatter=0.15)
        known = {f"k{i}": {"recall@5": float(rng.random() < 0.8)} for i in range(150)}
        estimate = ppi_metrics({**judge, **known}, {**people, **known}, ["recall@5"], judged=set(judge))["recall@5"]
        lo, hi = estimate.interval
        covered += lo <= truth <= hi
        widths.append(hi - lo)
        alone.append(estimate.labels_interval[1] - estimate.labels_interval[0])
        assert estimate.n_labeled == 210 and estimate.n_unlabeled == 190
    assert covered / reps >= 0.94, covered / reps
    assert np.median(widths) < np.median(alone), (np.median(widths), np.median(alone))
    print(f"coverage {covered / reps:.1%}, median width {np.median(widths):.3f}, people's labels alone "
          f"{np.median(alone):.3f}")


def test_every_judged_query_audited_is_people_s_own_mean():
    judge = {"a": {"m": 1.0}, "b": {"m": 1.0}, "c": {"m": 0.0}, "d": {"m": 1.0}}
    people = {"a": {"m": 0.0}, "b": {"m": 1.0}, "c": {"m": 0.0}, "d": {"m": 1.0}}
    estimate = ppi_metrics(judge, people, ["m"], judged={"a", "b"})["m"]
    assert estimate.estimate == pytest.approx(0.5) and estimate.n_unlabeled == 0
    assert estimate.judge_bias == pytest.approx(0.5)
