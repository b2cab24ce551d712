"""Is run B better than run A on these queries, or can this query set not tell?

``paired_permutation_test``: the paired randomization (sign-flip) test on per-query
differences (Fisher 1935; Smucker, Allan and Carterette, CIKM 2007, for IR). Only differing
pairs can change sign, so only they are enumerated: exactly while there are at most
``EXACT_MAX`` of them, by Monte Carlo with the add-one correction beyond (Phipson and Smyth,
2010), vectorised and chunked so memory stays small at any query count.

``min_attainable_p``: the smallest two-sided p any outcome could give with d differing pairs,
2 / 2^d. When it exceeds alpha the comparison is *unresolvable*: not "no difference", but a
question this query set cannot answer (3 of 10 queries differing: the floor is 0.25).

``holm``: Holm's step-down adjustment (Holm, Scand. J. Statist. 1979) across challengers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = ["EXACT_MAX", "holm", "min_attainable_p", "paired_permutation_test"]

EXACT_MAX = 20
_CHUNK_CELLS = 4_000_000
_TOLERANCE = 1e-12


def min_attainable_p(differing_pairs: int) -> float:
    """Smallest two-sided p of a paired sign-flip test with this many differing pairs."""
    if differing_pairs < 0:
        raise ValueError(f"min_attainable_p: differing_pairs must be >= 0, got {differing_pairs}")
    return min(1.0, 2.0 / 2.0**differing_pairs) if differing_pairs else 1.0


def paired_permutation_test(
    a: Sequence[float],
    b: Sequence[float],
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
    resamples: int = 10_000,
    seed: int = 0,
) -> float:
    """p-value for the mean of ``b - a`` under random sign flips of each pair's difference.

    ``greater`` tests whether b is better than a. Exact when at most ``EXACT_MAX`` pairs
    differ (all 2^d sign patterns), Monte Carlo otherwise with p = (1 + hits) / (resamples + 1).
    """
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.shape != right.shape or left.ndim != 1:
        raise ValueError(f"paired_permutation_test: a and b must be paired 1-d sequences, got {left.shape} and {right.shape}")
    if not (np.isfinite(left).all() and np.isfinite(right).all()):
        raise ValueError("paired_permutation_test: values must be finite numbers")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        # With none, (1 + hits) / (resamples + 1) is 1 whatever the data: an answer, and wrong
        raise ValueError(f"paired_permutation_test: resamples must be a whole number of at least 1, got {resamples!r}")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"paired_permutation_test: alternative must be two-sided, greater or less, got {alternative!r}")
    diffs = right - left
    diffs = diffs[np.abs(diffs) > _TOLERANCE]
    d = diffs.size
    if d == 0:
        return 1.0
    observed = diffs.sum()

    def extreme(totals: np.ndarray) -> np.ndarray:
        if alternative == "two-sided":
            return np.abs(totals) >= abs(observed) - _TOLERANCE
        if alternative == "greater":
            return totals >= observed - _TOLERANCE
        return totals <= observed + _TOLERANCE

    if d <= EXACT_MAX:
        hits = 0
        patterns = 1 << d
        bits = np.arange(d, dtype=np.int64)
        step = max(1, _CHUNK_CELLS // d)
        for start in range(0, patterns, step):
            codes = np.arange(start, min(patterns, start + step), dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> bits) & 1)
            hits += int(extreme(signs @ diffs).sum())
        return hits / patterns
    rng = np.random.default_rng(seed)
    hits = 0
    step = max(1, _CHUNK_CELLS // d)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        # A flipped pair moves the total by -2 d_i: total = sum(d) - 2 * (flips @ d), with the
        # flips drawn as random bytes unpacked to bits (8 draws per byte).
        flips = np.unpackbits(rng.integers(0, 256, size=(rows, (d + 7) // 8), dtype=np.uint8), axis=1, count=d)
        hits += int(extreme(observed - 2.0 * (flips.astype(np.float64) @ diffs)).sum())
    return (1 + hits) / (resamples + 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (monotone, capped at 1)."""
    values = [float(p) for p in pvalues]
    if any(not 0 <= p <= 1 for p in values):
        raise ValueError("holm: p-values must be between 0 and 1")
    m = len(values)
    order = sorted(range(m), key=lambda i: values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * values[index]))
        adjusted[index] = running
    return adjusted
