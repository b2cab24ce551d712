"""Compare runs on the same judgments: better, worse, no difference detected, or unresolvable.

Each challenger is paired with the baseline strictly by query id over the scored queries
(a judged query a run lacks scores 0 for that run, so every run covers the same set), per
metric, by ``paired_permutation_test``; p-values are Holm-adjusted across challengers within
each metric. A comparison whose smallest attainable p exceeds alpha is *unresolvable*.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from goldkeeper.core.scoring import ScoreResult
from goldkeeper.core.significance import holm, min_attainable_p, paired_permutation_test

__all__ = ["Comparison", "compare_scores"]

_ROUND = 12


@dataclass(frozen=True)
class _Pair:
    metric: str
    challenger: str
    base: np.ndarray
    other: np.ndarray


def compare_scores(
    named: list[tuple[str, ScoreResult | dict[str, Any]]],
    metrics: list[str] | None = None,
    alpha: float = 0.05,
    resamples: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """The first run is the baseline; every other is compared with it on every metric. Each
    run's scores are a ``ScoreResult`` or a report document (``core.evaluation.evaluate``'s)."""
    if len(named) < 2:
        raise ValueError("compare: needs a baseline and at least one challenger run")
    if not 0 < alpha < 1:
        raise ValueError(f"compare: alpha must be between 0 and 1, got {alpha}")
    named = [(name, _per_query(result)) for name, result in named]
    base_name, base = named[0]
    queries = list(base)
    for name, per_query in named[1:]:
        if list(per_query) != queries:
            raise ValueError(f"compare: run '{name}' was scored on other queries than '{base_name}'")
    chosen = metrics or list(base[queries[0]] if queries else [])
    comparisons: list[dict[str, Any]] = []
    for metric in chosen:
        if queries and metric not in base[queries[0]]:
            raise ValueError(f"compare: metric '{metric}' was not computed")
        base_values = np.array([base[q][metric] for q in queries])
        rows = []
        for name, per_query in named[1:]:
            other = np.array([per_query[q][metric] for q in queries])
            differing = int((np.abs(other - base_values) > 1e-12).sum())
            rows.append({
                "metric": metric,
                "challenger": name,
                "baseline_mean": round(float(base_values.mean()), _ROUND) if queries else None,
                "challenger_mean": round(float(other.mean()), _ROUND) if queries else None,
                "difference": round(float((other - base_values).mean()), _ROUND) if queries else None,
                "differing_pairs": differing,
                "p": paired_permutation_test(base_values, other, resamples=resamples, seed=seed),
                "min_attainable_p": min_attainable_p(differing),
            })
        for row, adjusted in zip(rows, holm([r["p"] for r in rows])):
            row["p_holm"] = adjusted
            if row["min_attainable_p"] > alpha:
                row["verdict"] = "unresolvable"
            elif adjusted <= alpha:
                row["verdict"] = "better" if row["difference"] > 0 else "worse"
            else:
                row["verdict"] = "no difference detected"
        comparisons.extend(rows)
    return Comparison({
        "baseline": base_name,
        "queries": len(queries),
        "alpha": alpha,
        "method": {
            "test": "paired randomization (sign-flip) test on per-query differences; exact up to "
                    "20 differing pairs, Monte Carlo with the add-one correction beyond",
            "correction": "Holm across challengers within each metric",
            "resamples": resamples,
            "seed": seed,
        },
        "comparisons": comparisons,
    })


def _per_query(result: Any) -> dict[str, dict[str, float]]:
    return result["per_query"] if isinstance(result, dict) else result.per_query


class Comparison(dict):
    """``compare_scores``'s result: its JSON document (a dict, as ``compare --format json``
    writes it), with a DataFrame and a notebook display of the comparisons."""

    def to_pandas(self) -> Any:
        """One row per (metric, challenger): means, difference, p, Holm's p, verdict."""
        from goldkeeper.models.frames import COMPARISON_COLUMNS, frame

        return frame(self["comparisons"], COMPARISON_COLUMNS)

    def _repr_html_(self) -> str:
        from goldkeeper.models.frames import COMPARISON_COLUMNS, html_table

        return html_table(self["comparisons"], COMPARISON_COLUMNS,
                          f"against {self['baseline']} on {self['queries']} queries, alpha {self['alpha']}")
