"""Confidence intervals for metrics averaged over queries.

``clopper_pearson``: the exact binomial interval (Clopper and Pearson, Biometrika 1934), from
the beta quantiles in scipy.stats, for metrics whose per-query values are all 0 or 1.

``bca_interval``: the bias-corrected and accelerated bootstrap (Efron, JASA 1987), as
scipy.stats.bootstrap(method="BCa") computes it (mid-rank bias correction, jackknife
acceleration, linear percentiles), vectorised so that many metrics over the same queries
share one set of resamples: each resample is a vector of counts, and every metric's
resampled means are one matrix product. A metric with few distinct values (precision,
recall or MRR at a small cutoff) is resampled instead through a multinomial over those values,
which gives the same bootstrap distribution of the mean at a fraction of the cost. For very
large query sets ``BootstrapSpec.for_queries`` caps the resamples (at least 2,000), and the
report states the number used. Degenerate samples (every value equal) get a
zero-width interval and say so, where scipy returns NaN.

From ``ANALYTIC_MIN_QUERIES`` queries on, a graded metric's bootstrap distribution is not
drawn but computed: the distribution of the mean of n draws from the sample is approximated
by the saddlepoint (Lugannani and Rice, Adv. Appl. Prob. 1980, as Davison and Hinkley,
Biometrika 1988, apply it to the bootstrap), whose relative error falls as n^-3/2, well
under the Monte Carlo error of 10,000 resamples at these sizes. BCa's bias correction and
bounds are then read from that distribution (``ci_method`` ``bca-saddlepoint``), at O(n) per
bound instead of O(n x resamples).

Both are seeded and deterministic: the same values, confidence and seed give the same bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ANALYTIC_MIN_QUERIES", "MAX_DRAWS", "MIN_RESAMPLES", "BootstrapSpec", "Interval", "bca_interval", "bca_intervals", "clopper_pearson", "metric_interval"]

#: Draws per block of resamples (bounded memory at any n), and bins one bincount may count
#: into: a block's draws and counts (384 KiB at most) stay in a core's cache, and arrays
#: this small are served again from the heap when the block before them is freed.
_COUNT_BINS = 1 << 15
#: Metrics with at most this many distinct values are resampled through a multinomial over
#: those values: the same bootstrap distribution of the mean, at O(resamples x distinct).
_FEW_DISTINCT = 64
#: Draws (queries x resamples) a scoring run may spend on resampling; past it, ``for_queries``
#: lowers the resamples (never below 2,000) and the report says how many were used.
MAX_DRAWS = 200_000_000
MIN_RESAMPLES = 2_000
#: From this many queries graded metrics get ``bca-saddlepoint`` intervals; below, the
#: resamples are drawn (cheap there, and exact where the distribution is coarse).
ANALYTIC_MIN_QUERIES = 500


@dataclass(frozen=True)
class BootstrapSpec:
    confidence: float = 0.95
    resamples: int = 10_000
    seed: int = 0

    def for_queries(self, n: int) -> BootstrapSpec:
        """This spec with resamples capped so that ``n`` queries cost at most MAX_DRAWS draws."""
        cap = max(MIN_RESAMPLES, MAX_DRAWS // max(n, 1))
        return self if self.resamples <= cap else BootstrapSpec(self.confidence, cap, self.seed)


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str
    note: str | None = None


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: must be between 0 and 1, got {confidence}")


def clopper_pearson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact two-sided binomial interval for ``successes`` out of ``n``.

    The beta quantiles come from scipy.special.betaincinv (what scipy.stats.beta.ppf calls),
    which spares the half second scipy.stats takes to import."""
    from scipy.special import betaincinv

    _check_confidence(confidence)
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"clopper_pearson: need 0 <= successes <= n and n >= 1, got {successes}/{n}")
    alpha = 1 - confidence
    low = 0.0 if successes == 0 else float(betaincinv(successes, n - successes + 1, alpha / 2))
    high = 1.0 if successes == n else float(betaincinv(successes + 1, n - successes, 1 - alpha / 2))
    return low, high


def _resampled_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """(resamples x metrics) means of bootstrap resamples of the rows of ``values`` (n x m).

    One or two metrics gather the drawn rows directly; more share one count matrix per block
    of resamples (a bincount), so the draws are paid once for every metric. Blocks are sized
    for the cache (``_COUNT_BINS``); each resample's sum is its own row's, so the floats are
    the same whatever the blocks, and so are the draws (SFC64, drawn in order).
    """
    n, m = values.shape
    rng = np.random.Generator(np.random.SFC64(seed))
    out = np.empty((resamples, m))
    step = max(1, _COUNT_BINS // max(n, 1))
    index = np.int32 if n < 2**31 else np.int64
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        picks = rng.integers(0, n, size=(rows, n), dtype=index)
        if m <= 2:
            for j in range(m):
                out[start:start + rows, j] = values[picks, j].sum(axis=1)
            continue
        picks += (np.arange(rows, dtype=index) * n)[:, None]  # rows * n <= max(n, _COUNT_BINS)
        out[start:start + rows] = np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n) @ values
    return out / n


def _multinomial_means(column: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap means of one column with few distinct values, via counts of those values."""
    distinct, counts = np.unique(column, return_counts=True)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(column.size, counts / column.size, size=resamples)
    return draws @ distinct / column.size


def bca_intervals(values: np.ndarray, spec: BootstrapSpec = BootstrapSpec()) -> list[Interval]:
    """BCa intervals for the mean of every column of ``values`` (n queries x m metrics)."""
    from scipy.special import ndtri

    _check_confidence(spec.confidence)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    n, m = values.shape
    if n == 0:
        raise ValueError("bca_interval: needs at least one value, got none")
    if not np.isfinite(values).all():
        raise ValueError("bca_interval: values must be finite numbers")
    theta = values.mean(axis=0)
    degenerate = np.ptp(values, axis=0) == 0
    note = "degenerate: every value is equal"
    if n == 1 or degenerate.all():
        return [Interval(float(v), float(v), "bca", note) for v in values[0]]
    # Jackknife acceleration from leave-one-out means (closed form for a mean).
    loo = (values.sum(axis=0) - values) / (n - 1)
    spread = loo.mean(axis=0) - loo
    num = (spread ** 3).sum(axis=0)
    den = 6.0 * ((spread ** 2).sum(axis=0) ** 1.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        accel = np.where(den > 0, num / den, 0.0)
    alpha = (1 - spec.confidence) / 2
    if n >= ANALYTIC_MIN_QUERIES:
        return [Interval(float(values[0, j]), float(values[0, j]), "bca", note) if degenerate[j]
                else _saddlepoint_bca(values[:, j], float(accel[j]), alpha) for j in range(m)]
    # Few distinct values (precision, recall, MRR at a small k): an exact multinomial shortcut.
    # The rest share one set of index resamples, capped in size for very large query sets.
    few = [j for j in range(m) if np.unique(values[:, j]).size <= _FEW_DISTINCT]
    many = [j for j in range(m) if j not in set(few)]
    boot = np.empty((spec.resamples, m))
    for j in few:
        boot[:, j] = _multinomial_means(values[:, j], spec.resamples, spec.seed)
    if many:
        boot[:, many] = _resampled_means(values[:, many], spec.resamples, spec.seed)
    # Mid-rank bias correction, as scipy: ties with the estimate count half.
    below = (boot < theta).sum(axis=0)
    at_or_below = (boot <= theta).sum(axis=0)
    z0 = ndtri((below + at_or_below) / (2.0 * spec.resamples))
    out = []
    for j in range(m):
        if degenerate[j]:
            out.append(Interval(float(values[0, j]), float(values[0, j]), "bca", note))
            continue
        bounds = _bca_levels(z0[j], accel[j], alpha)
        if not all(math.isfinite(b) for b in bounds):
            # Every resample on one side of the estimate: the percentiles are the edges.
            bounds = [0.0 if math.isnan(b) else b for b in bounds]
        low, high = np.percentile(boot[:, j], [100 * bounds[0], 100 * bounds[1]])
        out.append(Interval(float(low), float(high), "bca"))
    return out


def _bca_levels(z0: float, accel: float, alpha: float) -> list[float]:
    """BCa's adjusted levels of the bootstrap distribution for the two bounds (numpy's float
    arithmetic, so an infinite bias correction gives a level, not an exception)."""
    from scipy.special import ndtr, ndtri

    z0, accel = np.float64(z0), np.float64(accel)
    levels = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for z_alpha in (ndtri(alpha), ndtri(1 - alpha)):
            shifted = z0 + z_alpha
            levels.append(float(ndtr(z0 + shifted / (1 - accel * shifted))))
    return levels


class _BootstrapMean:
    """The bootstrap distribution of the mean of a sample (values standardised to mean 0,
    variance 1), by the saddlepoint: ``cdf(t)`` is P(mean of n draws <= K'(t)) at the
    saddlepoint t, by Lugannani and Rice's formula."""

    def __init__(self, column: np.ndarray) -> None:
        # A metric takes few distinct values over many queries: every sum is over the
        # distinct values, each weighted by how often it occurs.
        distinct, counts = np.unique(column, return_counts=True)
        self.n, self.counts = column.size, counts.astype(np.float64)
        self.center = float(self.counts @ distinct) / self.n
        self.scale = math.sqrt(float(self.counts @ (distinct - self.center) ** 2) / self.n)
        self.y = (distinct - self.center) / self.scale
        self.skew = float(self.counts @ self.y ** 3) / self.n

    def tilted(self, t: float) -> tuple[float, float, float]:
        """K(t), K'(t), K''(t) of one draw's cumulant generating function."""
        ty = t * self.y
        top = float(ty.max())
        weights = self.counts * np.exp(ty - top)
        total = float(weights.sum())
        first = float(weights @ self.y) / total
        second = float(weights @ (self.y * self.y)) / total - first * first
        return top + math.log(total / self.n), first, max(second, 0.0)

    def cdf(self, t: float) -> float:
        from scipy.special import ndtr

        root_n = math.sqrt(self.n)
        if abs(t) * root_n < 1e-6:  # the formula's limit at the mean
            return 0.5 + self.skew / (6.0 * math.sqrt(2.0 * math.pi) * root_n)
        k, first, second = self.tilted(t)
        w = math.copysign(math.sqrt(max(2.0 * self.n * (t * first - k), 0.0)), t)
        v = t * math.sqrt(self.n * second)
        if w == 0.0 or v == 0.0:
            return 0.0 if t < 0 else 1.0
        density = math.exp(-0.5 * w * w) / math.sqrt(2.0 * math.pi)
        return min(1.0, max(0.0, float(ndtr(w)) + density * (1.0 / w - 1.0 / v)))

    def quantile(self, level: float) -> float:
        """The value below which ``level`` of the bootstrap means fall: the saddlepoint
        where ``cdf`` reaches ``level``, bracketed, then found by regula falsi with the
        Illinois step (``cdf`` is increasing in t): what scipy.optimize.brentq would do,
        without its import, which costs more than every interval of a report."""
        step = 1.0 / math.sqrt(self.n)
        low, high = -step, step
        f_low, f_high = self.cdf(low) - level, self.cdf(high) - level
        while f_low > 0 and low > -1e6:
            low, high, f_high = 2.0 * low, low, f_low
            f_low = self.cdf(low) - level
        while f_high < 0 and high < 1e6:
            low, high, f_low = high, 2.0 * high, f_high
            f_high = self.cdf(high) - level
        side = 0
        for _ in range(200):
            t = high - f_high * (high - low) / (f_high - f_low) if f_high != f_low else 0.5 * (low + high)
            f_t = self.cdf(t) - level
            if f_t == 0.0 or high - low <= 1e-13 * max(1.0, abs(t)):
                break
            if (f_t < 0) == (f_low < 0):
                low, f_low = t, f_t
                if side == -1:
                    f_high /= 2.0
                side = -1
            else:
                high, f_high = t, f_t
                if side == 1:
                    f_low /= 2.0
                side = 1
        return self.center + self.scale * self.tilted(t)[1]


def _saddlepoint_bca(column: np.ndarray, accel: float, alpha: float) -> Interval:
    """BCa for the mean of ``column`` from its computed bootstrap distribution: the bias
    correction from the share of bootstrap means below the estimate, the bounds its
    quantiles at BCa's adjusted levels."""
    from scipy.special import ndtri

    distribution = _BootstrapMean(column)
    z0 = float(ndtri(distribution.cdf(0.0)))
    low, high = (distribution.quantile(level) for level in _bca_levels(z0, accel, alpha))
    return Interval(low, high, "bca-saddlepoint")


def bca_interval(values: Sequence[float], confidence: float = 0.95, resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float]:
    """BCa bootstrap interval for the mean of ``values`` (see ``bca_intervals``)."""
    (found,) = bca_intervals(np.asarray(values, dtype=np.float64), BootstrapSpec(confidence, resamples, seed))
    return found.low, found.high


def metric_interval(column: np.ndarray, spec: BootstrapSpec) -> Interval | None:
    """Clopper-Pearson when every value is 0 or 1, else None (the caller bootstraps)."""
    if column.size and np.isin(column, (0.0, 1.0)).all():
        low, high = clopper_pearson(int(column.sum()), int(column.size), spec.confidence)
        return Interval(low, high, "clopper-pearson")
    return None
