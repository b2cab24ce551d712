"""Human-vs-judge agreement: Cohen's kappa with base rates, against scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pytest

from goldkeeper.core.agreement import agreement
from tests.conftest import run_cli


def _rows(rng, n, flatter=0.0):
    human, judge = [], []
    for i in range(n):
        grade = int(rng.choice([0, 0, 1, 2, 3]))
        guess = int(np.clip(grade + rng.choice([-1, 0, 0, 0, 1]) + (rng.random() < flatter), 0, 3))
        key = {"query_id": f"q{i % 40}", "doc_uri": f"d{i}"}
        human.append({**key, "relevance": grade, "labeled_by": "human:ana"})
        judge.append({**key, "relevance": guess, "labeled_by": "synthetic:judge-v1"})
    return human, judge


@pytest.mark.parametrize("seed", range(5))
def test_kappa_and_weighted_kappa_match_scikit_learn(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    human, judge = _rows(rng, 300, flatter=0.3)
    found = agreement(human + judge[:250] + [{"query_id": "x", "doc_uri": "y", "relevance": 1, "labeled_by": None}])
    assert (found["pairs"], found["human_only"], found["judge_only"]) == (250, 50, 0)
    h = [r["relevance"] for r in human[:250]]
    j = [r["relevance"] for r in judge[:250]]
    assert found["kappa"] == pytest.approx(metrics.cohen_kappa_score([g >= 1 for g in h], [g >= 1 for g in j]), abs=1e-12)
    assert found["weighted_kappa"] == pytest.approx(metrics.cohen_kappa_score(h, j, weights="quadratic"), abs=1e-12)
    assert found["base_rate"]["judge"] - found["base_rate"]["human"] == pytest.approx(found["judge_bias"])


def test_a_judge_that_says_yes_to_everything_agrees_often_and_earns_kappa_zero():
    human = [{"query_id": "q", "doc_uri": f"d{i}", "relevance": int(i % 10 != 0), "labeled_by": "human:a"} for i in range(100)]
    judge = [{**r, "relevance": 1, "labeled_by": "synthetic:yes"} for r in human]
    found = agreement(human + judge)
    assert found["observed_agreement"] == 0.9 and found["kappa"] == pytest.approx(0.0)


def test_the_cli_reads_two_files_and_says_when_nothing_overlaps(tmp_path):
    human, judge = _rows(np.random.default_rng(1), 120)
    a, b = tmp_path / "human.jsonl", tmp_path / "judge.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in human))
    b.write_text("".join(json.dumps(r) + "\n" for r in judge))
    result = run_cli("agreement", str(a), str(b), "--format", "json")
    assert result.code == 0 and json.loads(result.stdout)["pairs"] == 120
    text = run_cli("agreement", str(a), str(b))
    assert "Cohen's kappa" in text.stdout and "base" not in text.stderr
    alone = run_cli("agreement", str(a))
    assert alone.code == 1 and "no (query, target) pair carries both" in alone.stdout


def test_with_judge_only_pairs_the_relevant_share_gets_a_ppi_interval_that_corrects_a_flattering_judge():
    from goldkeeper.core.ppi import ppi_mean_ci

    rng = np.random.default_rng(9)
    truth = rng.random(3000) < 0.5
    says = np.where(truth, True, rng.random(3000) < 0.4)  # flattering: calls 40% of the irrelevant relevant
    rows = [{"query_id": f"q{i}", "doc_uri": f"d{i}", "relevance": int(s), "labeled_by": "synthetic:j"}
            for i, s in enumerate(says)]
    rows += [{"query_id": f"q{i}", "doc_uri": f"d{i}", "relevance": int(truth[i]), "labeled_by": "human:a"}
             for i in range(300)]
    found = agreement(rows)["relevant_share"]
    low, high = found["ppi"]["ci"]
    assert (low, high) == ppi_mean_ci(truth[:300].astype(float), says[:300].astype(float), says[300:].astype(float))
    assert low <= truth.mean() <= high < found["judge_only"]  # the judge alone overstates it
