"""Audit a published figure from its summary alone: the interval a mean on n queries supports,
and whether a claimed lift over a baseline could ever have been significant.

For a metric whose per-query values are 0 or 1 (hit rate, recall with one relevant document
per query, precision@1, MRR@1) the mean gives the successes exactly, the interval is the
exact Clopper-Pearson one, and the two means bound how many queries can differ: at least
|s - s_b| and at most min(s + s_b, 2n - s - s_b). The best case for significance is the
most differing pairs, so the smallest attainable two-sided p of a paired test is 2 / 2^d_max;
when it exceeds alpha, no outcome of that comparison could have been significant.

For a graded metric the per-query spread is unknown, so the interval is the widest the mean
allows: a value in [0, 1] with mean m has variance at most m(1 - m) (Bhatia-Davis), used in
a normal interval and clipped to [0, 1].
"""

from __future__ import annotations

import math
from typing import Any

from goldkeeper.core.intervals import clopper_pearson
from goldkeeper.core.metric_ids import parse_metric_id
from goldkeeper.core.significance import min_attainable_p

__all__ = ["audit", "is_binary_metric"]


def is_binary_metric(metric: str) -> bool:
    parsed = parse_metric_id(metric)
    return parsed.name in ("hit_rate", "recall") or (parsed.k == 1 and parsed.name in ("precision", "mrr", "map"))


def _successes(value: float, n: int, what: str) -> int:
    """The whole number of successes a figure reported to two decimals stands for."""
    count = min(n, max(0, math.floor(value * n + 0.5)))
    if abs(count / n - value) > 0.005 + 1e-12:
        raise ValueError(
            f"audit: {what} {value} is not k/{n} (to two decimals) for any whole number k of queries"
        )
    return count


def audit(n: int, metric: str, value: float, baseline: float | None = None,
          confidence: float = 0.95, alpha: float = 0.05) -> dict[str, Any]:
    if n < 1:
        raise ValueError(f"audit: n must be at least 1, got {n}")
    for what, level in (("confidence", confidence), ("alpha", alpha)):
        if not 0 < level < 1:  # NaN fails too
            raise ValueError(f"audit: {what} must be between 0 and 1, exclusive, got {level}")
    for what, number in (("value", value), ("baseline", baseline)):
        if number is not None and not 0 <= number <= 1:
            raise ValueError(f"audit: {what} must be from 0 to 1, got {number}")
    binary = is_binary_metric(metric)
    out: dict[str, Any] = {"metric": metric, "n": n, "value": value, "confidence": confidence}
    if binary:
        s = _successes(value, n, "value")
        out["successes"] = s
        out["interval"] = list(clopper_pearson(s, n, confidence))
        out["interval_method"] = "clopper-pearson (exact)"
    else:
        from scipy.special import ndtri

        half = float(ndtri(0.5 + confidence / 2)) * math.sqrt(value * (1 - value) / n)
        out["interval"] = [max(0.0, value - half), min(1.0, value + half)]
        out["interval_method"] = "widest the mean allows (variance <= m(1-m), normal)"
    out["width"] = out["interval"][1] - out["interval"][0]
    if baseline is not None:
        lift: dict[str, Any] = {"baseline": baseline, "difference": value - baseline, "alpha": alpha}
        if binary:
            sb = _successes(baseline, n, "baseline")
            s = out["successes"]
            least, most = abs(s - sb), min(s + sb, 2 * n - s - sb)
            lift.update(differing_least=least, differing_most=most, min_attainable_p=min_attainable_p(most))
            lift["verdict"] = "unresolvable" if lift["min_attainable_p"] > alpha else "resolvable"
        else:
            lift["verdict"] = "unknown"
            lift["note"] = "a graded metric's differing queries are not determined by the means"
        out["lift"] = lift
    return out
