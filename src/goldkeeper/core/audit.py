"""Audit a published figure from its summary alone: the interval a mean on n queries supports,
whether a claimed lift over a baseline could ever have been significant, and how many queries
would resolve it.

Two bounds, and every audit says which it used (``bound``) and whether it was inferred from the
metric and the figures or forced (``bound_chosen``):

- **binary**: per-query values are 0 or 1 (hit rate, recall with one relevant document per
  query, P@1, MRR@1). The mean gives the successes exactly, the interval is the exact
  Clopper-Pearson one, and two means with s and s_b successes bound how many queries differ:
  at least |s - s_b| and at most min(s + s_b, 2n - s - s_b).
- **graded**: the per-query spread is unknown, so the interval is the widest the mean allows:
  a value in [0, 1] with mean m has variance at most m(1 - m) (Bhatia and Davis 2000), used in
  a normal interval and clipped to [0, 1]. A query moves a mean by at most 1/n, so two means
  differing by d need at least ceil(|d| n) differing queries, and at most all n differ.

The best case for significance is the most differing pairs: a paired sign-flip test on d pairs
cannot go below p = 2 / 2^d (Smucker, Allan and Carterette 2007 for the test). When even the
best case exceeds alpha the lift is ``unresolvable``; when only the fewest differing pairs the
means allow would leave it above alpha, ``possibly-unresolvable`` (a table does not say which
queries each system won). The queries that would resolve the lift come from the normal paired
formula with the widest spread of per-query differences the means allow, so they are enough
whatever that spread turns out to be. The browser calculator (goldkeeper/web/audit.html) does
the same arithmetic, and a test in Chromium holds the two equal.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from goldkeeper.core.intervals import clopper_pearson
from goldkeeper.core.metric_ids import METRIC_NAMES, METRICS, parse_metric_id
from goldkeeper.core.power import queries_to_resolve
from goldkeeper.core.significance import min_attainable_p

__all__ = ["WIDE", "audit", "is_binary_metric"]

#: A figure stands for k/n when it is within half a unit of the second decimal, as tables print.
_TWO_DECIMALS = 0.005 + 1e-12
#: An interval wider than ten points leaves even the first decimal unsettled, so a figure quoted
#: to two decimals claims a precision its queries do not have.
WIDE = 0.10

Bound = Literal["binary", "graded"]


def is_binary_metric(metric: str) -> bool:
    """Whether a metric can be 0/1 per query: hit rate, recall (one relevant document), @1."""
    parsed = parse_metric_id(metric)
    zero_one = METRICS[METRIC_NAMES.index(parsed.name)].zero_one
    return zero_one == "always" or (zero_one == "at 1" and parsed.k == 1)


def _as_count(value: float, n: int) -> int | None:
    """The whole number of successes a figure reported to two decimals stands for, or None."""
    count = min(n, max(0, math.floor(value * n + 0.5)))
    return count if abs(count / n - value) <= _TWO_DECIMALS else None


def _check(n: int, value: float, baseline: float | None, confidence: float, alpha: float, power: float) -> None:
    if n < 2:  # as rag-eval-gate refuses it: an interval from one query says nothing
        raise ValueError(f"audit: n must be at least 2 queries, got {n}")
    for what, level in (("confidence", confidence), ("alpha", alpha), ("power", power)):
        if not 0 < level < 1:  # NaN fails too
            raise ValueError(f"audit: {what} must be between 0 and 1, exclusive, got {level}")
    for what, number in (("value", value), ("baseline", baseline)):
        if number is not None and not 0 <= number <= 1:
            raise ValueError(f"audit: {what} must be from 0 to 1, got {number}")


def _choose_bound(metric: str, n: int, figures: dict[str, float], counts: dict[str, int | None],
                  bound: Bound | None) -> tuple[Bound, str, list[str]]:
    """The bound, whether it was forced or inferred, and notes saying why."""
    if bound == "binary":
        for what, count in counts.items():
            if count is None:
                raise ValueError(f"audit: --binary: {what} {figures[what]} is not k/{n} (to two decimals) "
                                 f"for any whole number k of queries")
        return "binary", "forced", []
    if bound == "graded":
        return "graded", "forced", []
    if bound is not None:
        raise ValueError(f"audit: bound must be 'binary' or 'graded', got {bound!r}")
    if not is_binary_metric(metric):
        return "graded", "inferred", [f"{metric} is graded per query, so the widest spread its mean allows is assumed"]
    odd = [what for what, count in counts.items() if count is None]
    if odd:
        return "graded", "inferred", [f"{odd[0]} {figures[odd[0]]} is not k/{n}, so the queries are not all "
                                      "0 or 1: treated as graded"]
    if parse_metric_id(metric).name == "recall":
        return "binary", "inferred", ["recall read as 0/1 per query (one relevant document per query); "
                                      "pass --graded if queries have several"]
    return "binary", "inferred", []


def audit(n: int, metric: str, value: float, baseline: float | None = None, confidence: float = 0.95,
          alpha: float = 0.05, *, bound: Bound | None = None, power: float = 0.8) -> dict[str, Any]:
    """The audit of ``value`` (a mean of ``metric`` on ``n`` queries), and of its lift over
    ``baseline`` when given. ``bound`` forces the binary or graded treatment; by default it is
    binary when the metric can be 0/1 per query and every figure is k/n to two decimals."""
    _check(n, value, baseline, confidence, alpha, power)
    figures = {"value": value} if baseline is None else {"value": value, "baseline": baseline}
    counts = {what: _as_count(number, n) for what, number in figures.items()}
    bound, chosen, notes = _choose_bound(metric, n, figures, counts, bound)
    out: dict[str, Any] = {"metric": metric, "n": n, "value": value, "confidence": confidence,
                           "bound": bound, "bound_chosen": chosen, "notes": notes}
    successes = counts["value"]
    if bound == "binary" and successes is not None:
        out["successes"] = successes
        out["interval"] = list(clopper_pearson(successes, n, confidence))
        out["interval_method"] = "clopper-pearson (exact)"
    else:
        from scipy.special import ndtri

        half = float(ndtri(0.5 + confidence / 2)) * math.sqrt(value * (1 - value) / n)
        out["interval"] = [max(0.0, value - half), min(1.0, value + half)]
        out["interval_method"] = "widest the mean allows (variance <= m(1-m), normal)"
    out["width"] = out["interval"][1] - out["interval"][0]
    out["width_points"] = math.floor(out["width"] * 100 + 0.5)
    out["wide"] = out["width"] > WIDE
    if baseline is not None:
        out["lift"] = _lift(n, value, baseline, counts, bound, alpha, power)
    return out


def _lift(n: int, value: float, baseline: float, counts: dict[str, int | None], bound: Bound,
          alpha: float, power: float) -> dict[str, Any]:
    s, sb = counts["value"], counts.get("baseline")
    if bound == "binary" and s is not None and sb is not None:
        least, most = abs(s - sb), min(s + sb, 2 * n - s - sb)
        effect = least / n
        # Differences are -1, 0 or +1, `most` of them non-zero: the largest variance the counts allow.
        variance = most / n - effect**2
        spread = "the most differing queries the two counts allow"
    else:
        effect = abs(value - baseline)
        least, most = min(n, math.ceil(effect * n - 1e-9)), n
        # A difference lies in [-1, 1] (Bhatia-Davis: variance <= 1 - d^2) and is the difference
        # of two variables whose spreads the means bound: the smaller of the two ceilings.
        spreads = math.sqrt(value * (1 - value)) + math.sqrt(baseline * (1 - baseline))
        variance = min(1 - effect**2, spreads**2)
        spread = "the widest per-query spread the two means allow"
    sd = math.sqrt(max(0.0, variance))
    best, worst = min_attainable_p(most), min_attainable_p(least)
    verdict = "unresolvable" if best > alpha else "possibly-unresolvable" if worst > alpha else "resolvable"
    return {"baseline": baseline, "difference": value - baseline, "alpha": alpha, "power": power,
            "differing_least": least, "differing_most": most, "determined": least == most,
            "min_attainable_p": best, "min_attainable_p_worst": worst, "verdict": verdict,
            "queries_to_resolve": queries_to_resolve(effect, sd, alpha, power),
            "assumed_sd": sd, "assumed_spread": spread}
