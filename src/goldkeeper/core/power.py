"""What can this query set resolve? Power of a paired comparison of two runs.

From the spread of per-query differences (two runs on the same judgments, or an assumed
spread when no run is given): the smallest effect detectable at the requested power, and the
number of queries needed to detect a target effect. Two approximations, each labelled:

- ``normal``: (z_{1-a/2} + z_{power}) sd / sqrt(n), the textbook formula (and the seed's);
- ``t``: the paired t-test's exact power from the noncentral t distribution (scipy.stats.nct),
  solved for the effect and for n, as statsmodels' TTestPower does. It needs a few more
  queries than the normal formula at small n (about 2 at n = 10).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["power_analysis"]


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
        out["note"] = "the runs agree on every query: any difference at all would be detected"
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
