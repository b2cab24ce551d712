"""What can this query set resolve? Power of a paired comparison of two runs.

From the spread of per-query differences (two runs on the same judgments, or an assumed
spread when no run is given): the smallest effect detectable at the requested power, and the
number of queries needed to detect a target effect. Two approximations, each labelled:

- ``normal``: (z_{1-a/2} + z_{power}) sd / sqrt(n), the textbook formula (and the seed's);
- ``t``: the paired t-test's exact power from the noncentral t distribution (scipy.stats.nct),
  solved for the effect and for n, as statsmodels' TTestPower does. It needs a few more
  queries than the normal formula at small n (about 2 at n = 10).

Without any run, ``resolution_ladders`` says what a gold set of n queries can resolve at all:
the smallest p a paired sign-flip test can reach by number of differing queries (2 / 2^d),
the widest interval a mean can have at n and at other sizes, and the queries a table of
spreads and effects would need (the normal formula, never fewer pairs than alpha demands).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["EFFECTS", "SDS", "power_analysis", "queries_to_resolve", "resolution_ladders"]

#: The spreads and effects of the gold-set table: per-query difference sds seen between
#: retrievers (0.1 for near-identical systems, 0.5 for a 0/1 metric's widest), and lifts from
#: one point to ten.
SDS = (0.1, 0.2, 0.3, 0.5)
EFFECTS = (0.01, 0.02, 0.05, 0.10)


def _t_power(n: int, effect: float, sd: float, alpha: float) -> float:
    from scipy import stats

    if n < 2 or sd <= 0:
        return 0.0
    df = n - 1
    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = effect * math.sqrt(n) / sd
    found = float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))
    return 1.0 if math.isnan(found) else found  # nct's tail underflows only far past 0.8


def power_analysis(
    differences: Sequence[float] | None = None,
    *,
    n: int | None = None,
    sd: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    target: float | None = None,
) -> dict[str, Any]:
    """Resolution of a paired comparison from per-query differences, or from n and an sd."""
    from scipy import optimize
    from scipy.special import ndtri

    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("power: alpha and power must be between 0 and 1")
    if differences is not None:
        values = [float(d) for d in differences]
        n = len(values)
        if n < 2:
            raise ValueError(f"power: needs at least 2 paired queries, got {n}")
        mean = math.fsum(values) / n
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
        source = "per-query differences of the two runs"
    else:
        if n is None or n < 2 or sd is None or not (math.isfinite(sd) and sd > 0):
            raise ValueError("power: needs differences, or n >= 2 and an sd > 0")
        source = "assumed"
    z = float(ndtri(1 - alpha / 2) + ndtri(power))
    out: dict[str, Any] = {"n": n, "sd": sd, "sd_source": source, "alpha": alpha, "power": power}
    if sd == 0:
        out["note"] = "the difference is the same on every query (sd 0): any effect at all would be detected"
        out["normal"] = {"mde": 0.0}
        out["t"] = {"mde": 0.0}
        return out
    normal = {"mde": z * sd / math.sqrt(n)}
    # Widen the bracket until the t power reaches the target (few queries have heavy tails).
    high = 4 * normal["mde"]
    while _t_power(n, high, sd, alpha) < power and high < 1e6 * sd:
        high *= 4
    t_mde = float(optimize.brentq(lambda e: _t_power(n, e, sd, alpha) - power, 1e-12, high))
    t: dict[str, Any] = {"mde": t_mde}
    if target is not None:
        if not (math.isfinite(target) and target > 0):
            raise ValueError(f"power: the target effect must be positive, got {target}")
        normal["queries_needed"] = math.ceil((z * sd / target) ** 2)
        needed = max(2, normal["queries_needed"])
        while _t_power(needed, target, sd, alpha) < power:
            needed += 1
        while needed > 2 and _t_power(needed - 1, target, sd, alpha) >= power:
            needed -= 1
        t["queries_needed"] = needed
        out["target"] = target
    out["normal"] = normal
    out["t"] = t
    return out


#: The effect ``eval`` sizes the gold set for, as rag-eval-gate's report does.
RESOLUTION_TARGET = 0.02
#: The spread of per-query differences assumed when one system leaves nothing to measure it on.
ASSUMED_SD = 0.5


def gold_set_resolution(per_query: Sequence[tuple[str, dict[str, dict[str, float]]]], metric: str,
                        alpha: float = 0.05, power: float = 0.8) -> dict[str, Any] | None:
    """What a gold set resolves, as ``eval`` reports it beside the scores: the smallest
    detectable paired effect on ``metric`` at its size, and the queries a +0.02 needs. With two
    systems or more, the spread is measured on the last against the first (rag-eval-gate's
    choice); with one it is assumed (0.5). None below two queries scored."""
    (base_name, base), *others = per_query
    queries = sorted(q for q, values in base.items() if metric in values)
    if others:
        cand_name, cand = others[-1]
        shared = [q for q in queries if metric in cand.get(q, {})]
        if len(shared) < 2:
            return None
        found = power_analysis([cand[q][metric] - base[q][metric] for q in shared], alpha=alpha, power=power,
                               target=RESOLUTION_TARGET)
        found["systems"] = [base_name, cand_name]
    else:
        if len(queries) < 2:
            return None
        found = power_analysis(n=len(queries), sd=ASSUMED_SD, alpha=alpha, power=power, target=RESOLUTION_TARGET)
        found["systems"] = [base_name]
    found["metric"] = metric
    return found


def queries_to_resolve(effect: float, sd: float, alpha: float, power: float) -> int | None:
    """Paired queries needed to detect ``effect`` when per-query differences have spread ``sd``:
    the two-sided normal formula, and never fewer than the differing pairs whose best case
    reaches alpha (a sign-flip test on d pairs cannot go below 2 / 2^d). None when there is no
    effect to detect."""
    from scipy.special import ndtri

    if effect <= 0:
        return None
    z = float(ndtri(1 - alpha / 2) + ndtri(power))
    return max(_pairs_for(alpha), math.ceil((z * sd / effect) ** 2 - 1e-9))


def _pairs_for(alpha: float) -> int:
    """The fewest differing pairs whose smallest attainable p, 2 / 2^d, is at most alpha."""
    return max(1, math.ceil(math.log2(2 / alpha) - 1e-9))


def resolution_ladders(n: int, *, alpha: float = 0.05, power: float = 0.8, confidence: float = 0.95) -> dict[str, Any]:
    """What a gold set of ``n`` queries can resolve, with no run: three ladders."""
    from scipy.special import ndtri

    from goldkeeper.core.intervals import clopper_pearson
    from goldkeeper.core.significance import min_attainable_p

    if n < 1:
        raise ValueError(f"power: the gold set needs at least 1 query, got {n}")
    if not 0 < alpha < 1 or not 0 < power < 1 or not 0 < confidence < 1:
        raise ValueError("power: alpha, power and confidence must be between 0 and 1")
    needed_pairs = _pairs_for(alpha)
    floors = [{"differing": d, "min_attainable_p": min_attainable_p(d), "can_reach_alpha": d >= needed_pairs}
              for d in range(1, max(needed_pairs + 3, 10) + 1)]
    z = float(ndtri(0.5 + confidence / 2))
    z_power = float(ndtri(1 - alpha / 2) + ndtri(power))
    sizes = sorted({size for size in (n // 4, n // 2, n, 2 * n, 4 * n, 10 * n) if size >= 1})
    widths = []
    for size in sizes:
        row: dict[str, Any] = {"n": size, "this_set": size == n}
        for mean in (0.5, 0.9):
            low, high = clopper_pearson(math.floor(mean * size + 0.5), size, confidence)
            row[f"binary_width_at_{mean}"] = high - low
        row["graded_width_at_0.5"] = min(1.0, 2 * z * 0.5 / math.sqrt(size))
        widths.append(row)
    table = []
    for sd in SDS:
        for effect in EFFECTS:
            needed = max(_pairs_for(alpha), math.ceil((z_power * sd / effect) ** 2 - 1e-9))
            table.append({"sd": sd, "effect": effect, "queries_needed": needed, "within_this_set": needed <= n})
    return {"n": n, "alpha": alpha, "power": power, "confidence": confidence,
            "min_differing_for_alpha": needed_pairs, "floor_ladder": floors, "width_ladder": widths,
            "queries_needed": table}
