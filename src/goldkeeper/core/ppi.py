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
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["PPIEstimate", "ppi_mean", "ppi_mean_ci"]


@dataclass(frozen=True)
class PPIEstimate:
    """A prediction-powered estimate beside what it improves on: the judge's own mean (no
    validity) and the hand labels' mean (valid, wide). ``judge_bias`` is the judge's mean
    minus the hand labels' on the items both scored: positive means the judge flatters.
    ``effective_labels`` is how many hand labels alone would give this precision, var(Y) / se^2."""

    estimate: float
    interval: tuple[float, float]
    alpha: float
    lam: float
    n_labeled: int
    n_unlabeled: int
    judge_mean: float
    judge_bias: float
    labels_mean: float
    labels_interval: tuple[float, float]
    effective_labels: float
    method: str = "PPI++, power-tuned (Angelopoulos, Duchi and Zrnic 2023)"

    def statement(self) -> str:
        """The estimate in words, as rag-eval-gate says it."""
        lo, hi = self.interval
        direction = "optimistic" if self.judge_bias > 0 else "pessimistic"
        return (f"The judge reports {self.judge_mean:.3f}. Measured against {self.n_labeled} hand labels it is "
                f"{direction} by {abs(self.judge_bias):.3f}, so the true value is {self.estimate:.3f} "
                f"[{lo:.3f}, {hi:.3f}], an interval worth about {self.effective_labels:,.0f} hand labels, "
                f"from {self.n_labeled}.")

    def to_dict(self) -> dict[str, object]:
        found = asdict(self)
        found.update(interval=list(self.interval), labels_interval=list(self.labels_interval),
                     statement=self.statement())
        return found


def ppi_mean(
    y: Sequence[float],
    yhat: Sequence[float],
    yhat_unlabeled: Sequence[float],
    alpha: float = 0.05,
) -> PPIEstimate:
    """The mean of the human labels' quantity over labeled and unlabeled items, from hand
    labels ``y``, the judge's ``yhat`` on the same items and its ``yhat_unlabeled`` on the rest."""
    from scipy.special import ndtri

    labeled = np.asarray(y, dtype=np.float64)
    judged = np.asarray(yhat, dtype=np.float64)
    unlabeled = np.asarray(yhat_unlabeled, dtype=np.float64)
    if labeled.shape != judged.shape or labeled.ndim != 1 or labeled.size < 2:
        raise ValueError("ppi_mean: y and yhat must be paired, with at least 2 labeled items")
    if unlabeled.ndim != 1 or unlabeled.size < 1:
        raise ValueError("ppi_mean: needs at least one unlabeled prediction")
    if not all(np.isfinite(a).all() for a in (labeled, judged, unlabeled)):
        raise ValueError("ppi_mean: values must be finite numbers")
    if not 0 < alpha < 1:
        raise ValueError(f"ppi_mean: alpha must be between 0 and 1, got {alpha}")
    n, big_n = labeled.size, unlabeled.size
    covariance = float(np.mean((labeled - labeled.mean()) * (judged - judged.mean())))
    pooled = float(np.var(np.concatenate([judged, unlabeled]), ddof=1))
    lam = 0.0 if pooled == 0 else min(1.0, max(0.0, covariance / ((1 + n / big_n) * pooled)))
    estimate = float(lam * unlabeled.mean() + (labeled - lam * judged).mean())
    variance = float(np.var(lam * unlabeled) / big_n + np.var(labeled - lam * judged) / n)
    z = float(ndtri(1 - alpha / 2))
    half = z * math.sqrt(variance)
    labels_mean, labels_var = float(labeled.mean()), float(np.var(labeled))
    labels_half = z * math.sqrt(labels_var / n)
    return PPIEstimate(
        estimate=estimate, interval=(estimate - half, estimate + half), alpha=alpha, lam=lam, n_labeled=n,
        n_unlabeled=big_n, judge_mean=float(np.concatenate([judged, unlabeled]).mean()),
        judge_bias=float(judged.mean() - labeled.mean()), labels_mean=labels_mean,
        labels_interval=(labels_mean - labels_half, labels_mean + labels_half),
        effective_labels=labels_var / variance if variance > 0 and labels_var > 0 else float(n))


def ppi_mean_ci(
    y: Sequence[float],
    yhat: Sequence[float],
    yhat_unlabeled: Sequence[float],
    alpha: float = 0.05,
) -> tuple[float, float]:
    """Two-sided (1 - alpha) interval for the mean of the human labels' quantity."""
    try:
        return ppi_mean(y, yhat, yhat_unlabeled, alpha).interval
    except ValueError as error:
        raise ValueError(str(error).replace("ppi_mean:", "ppi_mean_ci:", 1)) from None
