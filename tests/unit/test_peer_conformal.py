"""rag-eval-gate's own tests/test_conformal.py (0.2.1, from its sdist), restated against
goldkeeper's calibration core where the two share a piece: the (n+1)-corrected conformal rank
and the Hoeffding-Bentkus bound; each test names the peer test it restates. The rest of the
peer's file (AdaptiveSetSizerTest, RiskControlTest, on its internal sizer and threshold
search) is what goldkeeper's own tests/unit/test_calibration.py checks end to end, including
the guarantee over repeated calibrate-then-deploy and parity with the peer where it is right.
BinomialCDF tests are not restated: goldkeeper takes the binomial CDF from SciPy."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binom

from goldkeeper.core.calibration import conformal_rank, hoeffding_bentkus_p


def test_uses_the_n_plus_one_corrected_rank():
    """ConformalQuantileTest::test_uses_the_n_plus_one_corrected_rank: ceil(11 * 0.9) = 10 and
    ceil(11 * 0.7) = 8, in exact arithmetic (0.1 and 0.3 as typed, not their binary floats)."""
    assert conformal_rank(10, 0.10) == 10 and conformal_rank(10, 0.30) == 8


def test_refuses_to_certify_what_the_sample_cannot_support():
    """ConformalQuantileTest::test_refuses_to_certify_what_the_sample_cannot_support."""
    assert conformal_rank(10, 0.01) is None and conformal_rank(0, 0.1) is None


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.2])
def test_minimum_calibration_size_matches_the_rank_condition(alpha):
    """ConformalQuantileTest::test_minimum_calibration_size_matches_the_rank_condition."""
    n = next(n for n in range(1, 1000) if conformal_rank(n, alpha) is not None)
    assert conformal_rank(n, alpha) is not None and conformal_rank(n - 1, alpha) is None
    assert n == math.ceil(1 / alpha) - 1


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_rejects_an_impossible_alpha(alpha):
    """ConformalQuantileTest::test_rejects_an_impossible_alpha."""
    with pytest.raises(ValueError, match="alpha must be in"):
        conformal_rank(10, alpha)


def test_no_evidence_when_the_observed_risk_already_exceeds_alpha():
    """ConcentrationBoundTest::test_no_evidence_when_the_observed_risk_already_exceeds_alpha."""
    assert hoeffding_bentkus_p(0.10, 500, 0.05) == 1.0 and hoeffding_bentkus_p(0.05, 500, 0.05) == 1.0


def test_evidence_strengthens_with_more_data_and_as_the_risk_falls():
    """ConcentrationBoundTest::test_evidence_strengthens_with_more_calibration_data and
    ::test_evidence_strengthens_as_the_observed_risk_falls."""
    small, large = hoeffding_bentkus_p(0.02, 100, 0.05), hoeffding_bentkus_p(0.02, 2000, 0.05)
    assert large < small and large < 0.001
    assert hoeffding_bentkus_p(0.01, 400, 0.05) < hoeffding_bentkus_p(0.04, 400, 0.05)


@pytest.mark.parametrize(("risk", "n", "alpha"), [(0.01, 200, 0.05), (0.03, 800, 0.05), (0.002, 150, 0.02)])
def test_is_never_looser_than_either_bound_alone(risk, n, alpha):
    """ConcentrationBoundTest::test_is_never_looser_than_either_bound_alone."""
    kl = risk * math.log(risk / alpha) + (1 - risk) * math.log((1 - risk) / (1 - alpha))
    hoeffding = math.exp(-n * kl)
    bentkus = math.e * float(binom.cdf(math.ceil(n * risk), n, alpha))
    assert hoeffding_bentkus_p(risk, n, alpha) <= min(1.0, hoeffding, bentkus) + 1e-15
