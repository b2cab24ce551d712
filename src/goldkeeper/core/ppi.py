"""A valid interval for a mean when few items carry human labels and many an LLM judge's.

``ppi_mean_ci``: prediction-powered inference with power tuning, PPI++ (Angelopoulos, Duchi
and Zrnic, arXiv 2311.01453, 2023; PPI: Angelopoulos et al., Science 2023). The judge's mean
on the unlabeled items is corrected by its bias measured on the labeled ones, weighted by a
tuning factor lambda in [0, 1] that never lets the judge make the interval worse than the
human labels alone would (lambda = 0 is the classical interval).

Variance convention, as ppi_py 0.2.3 (the reference implementation): lambda =
cov(Y, Yhat) / ((1 + n / N) var(Yhat pooled over both sets)), with the covariance over n
(ddof 0) and the pooled variance over n + N - 1 (ddof 1); the standard errors use ddof 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["ppi_mean_ci"]


def ppi_mean_ci(
    y: Sequence[float],
    yhat: Sequence[float],
    yhat_unlabeled: Sequence[float],
    alpha: float = 0.05,
) -> tuple[float, float]:
    """Two-sided (1 - alpha) interval for the mean of the human labels' quantity."""
    from scipy.special import ndtri

    labeled = np.asarray(y, dtype=np.float64)
    judged = np.asarray(yhat, dtype=np.float64)
    unlabeled = np.asarray(yhat_unlabeled, dtype=np.float64)
    if labeled.shape != judged.shape or labeled.ndim != 1 or labeled.size < 2:
        raise ValueError("ppi_mean_ci: y and yhat must be paired, with at least 2 labeled items")
    if unlabeled.ndim != 1 or unlabeled.size < 1:
        raise ValueError("ppi_mean_ci: needs at least one unlabeled prediction")
    if not all(np.isfinite(a).all() for a in (labeled, judged, unlabeled)):
        raise ValueError("ppi_mean_ci: values must be finite numbers")
    if not 0 < alpha < 1:
        raise ValueError(f"ppi_mean_ci: alpha must be between 0 and 1, got {alpha}")
    n, big_n = labeled.size, unlabeled.size
    covariance = float(np.mean((labeled - labeled.mean()) * (judged - judged.mean())))
    pooled = float(np.var(np.concatenate([judged, unlabeled]), ddof=1))
    lam = 0.0 if pooled == 0 else min(1.0, max(0.0, covariance / ((1 + n / big_n) * pooled)))
    estimate = lam * unlabeled.mean() + (labeled - lam * judged).mean()
    se = math.sqrt(np.var(lam * unlabeled) / big_n + np.var(labeled - lam * judged) / n)
    half = float(ndtri(1 - alpha / 2)) * se
    return float(estimate - half), float(estimate + half)
