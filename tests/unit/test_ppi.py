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
