"""An anytime-valid confidence sequence for a mean in [0, 1]: watch it after every query.

A fixed-n 95% interval promises one look at a finished sample; checked after every query it
misses the truth far more often than 5%. ``betting_cs`` is the hedged betting confidence
sequence of Waudby-Smith and Ramdas ("Estimating means of bounded random variables by
betting", JRSS-B 2024) with their predictable plug-in bets: for each candidate mean m, two
gamblers bet that the mean is above and below m; m is ruled out once their hedged capital
reaches 1/alpha, and by Ville's inequality the truth is ruled out with probability at most
alpha at any time, however often one looks.

The candidates are a grid that always holds 0 and 1 exactly (a system whose true recall is 1.0
must not be excluded at every step), the reported bounds are widened by one grid step rather
than narrowed, and the sequence is the running intersection, so it never widens over time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["betting_cs"]

_TRUNCATION = 0.5  # the paper's c: bets at most c/m (above) and c/(1-m) (below)


def betting_cs(stream: Sequence[float], alpha: float = 0.05, grid: int = 1000) -> tuple[list[float], list[float]]:
    """Lower and upper bounds after each observation (values in [0, 1])."""
    x = np.asarray(stream, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("betting_cs: needs a non-empty sequence of numbers")
    if not np.isfinite(x).all() or (x < 0).any() or (x > 1).any():
        raise ValueError("betting_cs: every value must be a finite number in [0, 1]")
    if not 0 < alpha < 1:
        raise ValueError(f"betting_cs: alpha must be between 0 and 1, got {alpha}")
    t = np.arange(1, x.size + 1, dtype=np.float64)
    # Predictable plug-in bets (the paper's PrPl): the variance estimate behind bet t uses
    # observations 1..t-1 only, with mu_i = (1/2 + sum_{j<=i} x_j) / (i + 1).
    running_mean = (0.5 + np.cumsum(x)) / (t + 1)
    squares = np.cumsum((x - running_mean) ** 2)
    var_hat = (0.25 + np.concatenate(([0.0], squares[:-1]))) / t
    lam = np.sqrt(2 * math.log(2 / alpha) / (var_hat * t * np.log1p(t)))
    m = np.linspace(0.0, 1.0, grid + 1)  # holds 0 and 1 exactly
    with np.errstate(divide="ignore"):
        cap_up = np.where(m > 0, _TRUNCATION / m, np.inf)
        cap_down = np.where(m < 1, _TRUNCATION / (1 - m), np.inf)
    lam_up = np.minimum(lam[:, None], cap_up[None, :])
    lam_down = np.minimum(lam[:, None], cap_down[None, :])
    diff = x[:, None] - m[None, :]
    log_up = np.cumsum(np.log1p(lam_up * diff), axis=0)
    log_down = np.cumsum(np.log1p(-lam_down * diff), axis=0)
    # Hedged capital max(K+/2, K-/2), compared in logs.
    excluded = np.maximum(log_up, log_down) + math.log(0.5) >= math.log(1 / alpha)
    excluded = np.maximum.accumulate(excluded, axis=0)  # once ruled out, always ruled out
    step = 1.0 / grid
    lower, upper = [], []
    for row in ~excluded:
        kept = m[row]
        if kept.size == 0:  # cannot happen at level alpha < 1 unless the data break [0, 1]
            lower.append(lower[-1] if lower else 0.0)
            upper.append(upper[-1] if upper else 1.0)
            continue
        lower.append(max(0.0, float(kept.min()) - step))
        upper.append(min(1.0, float(kept.max()) + step))
    return lower, upper
