"""People audit a sample of the judge's work, not the queue (issue 41): how many queries, which
ones, and each metric's PPI++ interval from the judge on every query and people on the sample.

- ``audit_size``: the stated rule. People alone on n queries give a metric whose per-query
  values lie in [0, 1] an interval at most ``z / sqrt(n)`` wide (variance at most 1/4), so n =
  ceil((z / width)^2) queries reach a target ``width`` whatever the judge does; PPI++ never does
  worse than people alone and does better when the judge is informative. Capped by
  ``at_most`` and by the queries there are.
- ``audit_sample``: a seeded, stratified sample: each stratum's share of the size by largest
  remainder (every stratum one query at least when the size allows), and within a stratum the
  queries in the order of sha256("<seed>:<query id>"), so a larger sample holds the smaller.
- ``ppi_metrics``: per metric, ``core.ppi.ppi_mean`` over the per-query values: people's on
  the sample (Y), the judge's on the sample (Yhat) and on every other query.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence

from goldkeeper.core.ppi import PPIEstimate, ppi_mean

__all__ = ["audit_sample", "audit_size", "ppi_metrics"]


def audit_size(queries: int, *, width: float | None = None, at_most: int | None = None,
               confidence: float = 0.95) -> tuple[int, str]:
    """How many of ``queries`` people audit, and the rule in words (see the module docstring)."""
    from scipy.special import ndtri

    if queries < 0:
        raise ValueError(f"audit_size: queries must be at least 0, got {queries}")
    if width is None and at_most is None:
        raise ValueError("audit_size: give a target interval width, a maximum count, or both")
    if width is not None and not 0 < width <= 1:
        raise ValueError(f"audit_size: width must be in (0, 1], got {width}")
    if at_most is not None and at_most < 2:
        raise ValueError(f"audit_size: at_most must be at least 2 (an interval needs two labels), got {at_most}")
    if not 0 < confidence < 1:
        raise ValueError(f"audit_size: confidence must be between 0 and 1, got {confidence}")
    words = []
    size = queries
    if width is not None:
        z = float(ndtri(1 - (1 - confidence) / 2))
        needed = math.ceil((z / width) ** 2)
        size = min(size, needed)
        words.append(f"{needed} queries give people alone a {confidence:.0%} interval at most {width:g} wide "
                     "(per-query values in [0, 1])")
    if at_most is not None and at_most < size:
        size = at_most
        words.append(f"at most {at_most} asked")
    if size == queries:
        words.append(f"all {queries} queries")
    return size, "; ".join(words)


def _order(seed: int, query_id: str) -> str:
    return hashlib.sha256(f"{seed}:{query_id}".encode()).hexdigest()


def audit_sample(query_ids: Sequence[str], strata: Mapping[str, str], size: int, seed: int = 0) -> list[str]:
    """``size`` of ``query_ids``, stratified by ``strata`` (query -> stratum; a query without one
    is in the stratum ""), seeded; in the order given."""
    if size < 0:
        raise ValueError(f"audit_sample: size must be at least 0, got {size}")
    groups: dict[str, list[str]] = {}
    for query_id in dict.fromkeys(query_ids):
        groups.setdefault(strata.get(query_id, ""), []).append(query_id)
    total = sum(map(len, groups.values()))
    size = min(size, total)
    if not size:
        return []
    names = sorted(groups)
    exact = {name: size * len(groups[name]) / total for name in names}
    share = {name: math.floor(exact[name]) for name in names}
    if size >= len(names):
        for name in names:
            share[name] = max(share[name], 1)
    while sum(share.values()) > size:  # the floor of one took too many: from the largest
        largest = max((n for n in names if share[n] > 1), key=lambda n: (share[n], n))
        share[largest] -= 1
    for name in sorted(names, key=lambda n: (-(exact[n] - math.floor(exact[n])), n)):
        if sum(share.values()) >= size:
            break
        if share[name] < len(groups[name]):
            share[name] += 1
    while sum(share.values()) < size:  # a stratum too small for its share: the rest from others
        name = next(n for n in names if share[n] < len(groups[n]))
        share[name] += 1
    chosen = {q for name in names for q in sorted(groups[name], key=lambda q: _order(seed, q))[:share[name]]}
    return [q for q in dict.fromkeys(query_ids) if q in chosen]


def ppi_metrics(judge: Mapping[str, Mapping[str, float]], people: Mapping[str, Mapping[str, float]],
                metrics: Sequence[str], alpha: float = 0.05) -> dict[str, PPIEstimate]:
    """Each metric's PPI++ estimate of its mean over the judge's queries: ``judge`` and
    ``people`` are per-query values (query -> metric -> value), people's on the audited
    queries. A metric people scored on fewer than 2 audited queries, or with no query left
    unaudited, gets none."""
    audited = [q for q in judge if q in people]
    rest = [q for q in judge if q not in people]
    found = {}
    for metric in metrics:
        pairs = [(people[q][metric], judge[q][metric]) for q in audited if metric in people[q] and metric in judge[q]]
        others = [judge[q][metric] for q in rest if metric in judge[q]]
        if len(pairs) < 2 or not others:
            continue
        found[metric] = ppi_mean([y for y, _ in pairs], [yhat for _, yhat in pairs], others, alpha)
    return found
