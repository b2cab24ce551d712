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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SEQUENTIAL_SEED", "PairedVerdict", "betting_cs", "paired_cs", "paired_gate", "sequential_order"]

_TRUNCATION = 0.5  # the paper's c: bets at most c/m (above) and c/(1-m) (below)

#: The default seed of the order sequential gates watch queries in (``sequential_order``).
SEQUENTIAL_SEED = 0


def sequential_order(query_ids: Iterable[str], seed: int = SEQUENTIAL_SEED) -> list[str]:
    """The order sequential gates watch queries in: by sha256 of ``seed:query_id``. It owes
    nothing to the values, and any subset keeps its members' relative order, so an evaluation
    that asked only the first queries of this order watches them exactly as a full one would."""
    import hashlib

    return sorted(query_ids, key=lambda q: (hashlib.sha256(f"{seed}:{q}".encode()).digest(), q))


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


@dataclass(frozen=True)
class PairedVerdict:
    """An anytime-valid paired comparison, as ``paired_gate`` settles it: ``better`` (the
    candidate's mean is above the baseline's), ``worse``, or ``undecided`` when the pairs ran
    out first; the look it settled at, of how many; the mean difference and its confidence
    sequence's bounds then."""

    decision: str
    looked: int
    of: int
    difference: float
    lower: float
    upper: float
    alpha: float

    @property
    def passed(self) -> bool:
        """Undecided is not a pass, as rag-eval-gate's ``paired_gate`` has it."""
        return self.decision == "better"

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "looked": self.looked, "of": self.of, "saved": self.of - self.looked,
                "difference": self.difference, "cs": [self.lower, self.upper], "alpha": self.alpha}


def paired_cs(candidate: Sequence[float], baseline: Sequence[float], alpha: float = 0.05,
              ) -> tuple[list[float], list[float]]:
    """The anytime-valid confidence sequence of the mean paired difference (candidate minus
    baseline, values in [0, 1] so differences in [-1, 1]) after each pair: ``betting_cs`` on
    the differences rescaled to [0, 1], ``(d + 1) / 2``, mapped back. Pairing is what makes it
    cheap: the query-to-query spread both systems share cancels (rag-eval-gate's paired_gate)."""
    a, b = np.asarray(candidate, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired_gate: needs two sequences of one length, got {a.size} and {b.size}")
    lower, upper = betting_cs(((a - b + 1.0) / 2.0).tolist(), alpha=alpha)
    return [2.0 * low - 1.0 for low in lower], [2.0 * high - 1.0 for high in upper]


def paired_gate(candidate: Sequence[float], baseline: Sequence[float], alpha: float = 0.05,
                seed: int | None = None) -> PairedVerdict:
    """Watch the pairs in the order given, or with ``seed`` in ``core.gates.sequential_order``'s
    order of their positions (the confidence sequence is about the population the pairs are
    drawn from, so they must come in an order that owes nothing to their values), and settle
    at the first look where the confidence sequence of the mean difference excludes 0:
    ``better`` above it, ``worse`` below; ``undecided`` when the pairs run out first. Valid
    however often one looks (Waudby-Smith and Ramdas 2024), so stopping there is a decision,
    not a peek."""
    if seed is not None:
        if len(candidate) != len(baseline):
            raise ValueError(f"paired_gate: needs two sequences of one length, got {len(candidate)} and {len(baseline)}")
        order = [int(i) for i in sequential_order([str(i) for i in range(len(candidate))], seed)]
        candidate, baseline = [candidate[i] for i in order], [baseline[i] for i in order]
    lower, upper = paired_cs(candidate, baseline, alpha)
    differences = np.asarray(candidate, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    running = np.cumsum(differences) / np.arange(1, differences.size + 1)
    for look, (low, high) in enumerate(zip(lower, upper), 1):
        if low > 0 or high < 0:
            return PairedVerdict("better" if low > 0 else "worse", look, len(lower), float(running[look - 1]),
                                 low, high, alpha)
    return PairedVerdict("undecided", len(lower), len(lower), float(running[-1]), lower[-1], upper[-1], alpha)
