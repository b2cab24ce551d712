"""PPI++ against ppi_py 0.2.3, and its coverage by seeded simulation."""

from __future__ import annotations

import numpy as np
import pytest

from goldkeeper.stats import ppi_mean_ci


@pytest.mark.parametrize("seed", range(5))
def test_equals_ppi_py(seed):
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(seed)
    truth = rng.random(2000) < 0.6
    judge = np.clip(truth + rng.normal(0.15, 0.3, 2000), 0, 1)  # a flattering judge
    y, yhat, unlabeled = truth[:80].astype(float), judge[:80], judge[80:]
    theirs = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=0.05)
    assert ppi_mean_ci(y, yhat, unlabeled) == pytest.approx((float(theirs[0][0]), float(theirs[1][0])), abs=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("judge_kind", ["flattering", "uninformative"])
def test_coverage_and_width_by_simulation(judge_kind):
    """Covers the true mean at least 93% of the time, and is never much wider than the
    interval from the hand labels alone (lambda = 0 is always available to it)."""
    from scipy.special import ndtri

    rng = np.random.default_rng(11)
    trials, covered, wider = 500, 0, 0
    for _ in range(trials):
        truth = (rng.random(3000) < 0.7).astype(float)
        if judge_kind == "flattering":
            judge = np.clip(truth + rng.normal(0.1, 0.25, 3000), 0, 1)
        else:
            judge = rng.random(3000)
        y, yhat, unlabeled = truth[:100], judge[:100], judge[100:]
        lo, hi = ppi_mean_ci(y, yhat, unlabeled)
        covered += lo <= 0.7 <= hi
        classical = 2 * float(ndtri(0.975)) * y.std() / np.sqrt(100)
        wider += (hi - lo) > classical * 1.05
    assert covered / trials >= 0.93
    assert wider / trials <= 0.05


def test_the_estimate_says_what_the_seed_says_and_is_the_interval_ppi_mean_ci_gives():
    from goldkeeper.stats import ppi_mean

    rng = np.random.default_rng(3)
    truth = (rng.random(2100) < 0.8).astype(float)
    judge = np.clip(truth + rng.normal(0.08, 0.05, 2100), 0, 1)  # flattering and accurate
    y, yhat, rest = truth[:50], judge[:50], judge[50:]
    found = ppi_mean(y, yhat, rest)
    assert found.interval == ppi_mean_ci(y, yhat, rest)
    assert found.judge_mean == pytest.approx(judge.mean())
    assert found.judge_bias == pytest.approx(yhat.mean() - y.mean())
    assert found.labels_mean == y.mean() and found.n_labeled == 50 and found.n_unlabeled == 2050
    half = (found.interval[1] - found.interval[0]) / 2 / 1.959963984540054
    assert found.effective_labels == pytest.approx(y.var() / half**2)
    assert found.effective_labels > 50  # a good judge is worth more hand labels than were given
    lo, hi = found.interval
    assert found.statement() == (
        f"The judge reports {judge.mean():.3f}. Measured against 50 hand labels it is optimistic by "
        f"{yhat.mean() - y.mean():.3f}, so the true value is {found.estimate:.3f} [{lo:.3f}, {hi:.3f}], an interval "
        f"worth about {found.effective_labels:,.0f} hand labels, from 50.")
    assert found.to_dict()["statement"] == found.statement()


def test_an_uninformative_judge_costs_nothing():
    from goldkeeper.stats import ppi_mean

    rng = np.random.default_rng(5)
    truth = (rng.random(1000) < 0.5).astype(float)
    noise = rng.random(1000)
    found = ppi_mean(truth[:100], noise[:100], noise[100:])
    assert found.lam < 0.1
    assert found.effective_labels == pytest.approx(100, rel=0.1)
    assert "pessimistic" in found.statement() or "optimistic" in found.statement()


def test_agreement_prints_the_statement_from_one_file_of_human_and_judge_labels(tmp_path):
    import json

    from tests.conftest import run_cli

    rng = np.random.default_rng(8)
    lines = []
    for i in range(400):
        truth = int(rng.random() < 0.6)
        judged = int(truth or rng.random() < 0.3)  # calls a third of the irrelevant ones relevant
        lines.append({"query_id": f"q{i}", "doc_uri": "d", "relevance": judged, "labeled_by": "synthetic:gpt"})
        if i < 60:
            lines.append({"query_id": f"q{i}", "doc_uri": "d", "relevance": truth, "labeled_by": "human:ana"})
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in lines))
    text = run_cli("agreement", str(path))
    assert text.code == 0, text.stderr
    found = json.loads(run_cli("agreement", str(path), "--format", "json").stdout)["relevant_share"]["ppi"]
    assert found["statement"].startswith("The judge reports ") and "optimistic by" in found["statement"]
    assert found["statement"] in text.stdout
    assert found["n_labeled"] == 60 and found["n_unlabeled"] == 340
