"""A suite's trend: which past evaluations compare, how the gated metrics moved, how much of a
move the labels explain, and how much the stale labels could.

A mean that moves between two evaluations moved for one of three reasons: the retriever
changed, the judgments changed (a re-judgment, a fix after a re-chunk), or the two were
computed differently (other cutoffs, another relevance threshold). The third is no change at
all, so points compare only like with like; the second is real but is not the retriever's
doing, so a change of judgments or corpus is marked on the trend and, where the previous run
can be scored again, attributed (spec/trend.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from goldkeeper.core.gates import Gate, parse_gate

__all__ = ["attribute_change", "gate_thresholds", "gated_metrics", "latest_by_system", "systems", "trend_points",
           "with_queued_found"]

#: Gate kinds whose metric is a mean the trend can draw.
_DRAWN = ("absolute", "delta", "ci-lower", "sequential", "regression")


def _parsed(gates: Sequence[str]) -> list[Gate]:
    """The gates as parsed; one the grammar does not read (the eval flow's error budget,
    ``errors:<share>``, recorded in a report, or an older report's) names no metric."""
    found = []
    for raw in gates:
        try:
            found.append(parse_gate(raw))
        except ValueError:
            continue
    return found


def gated_metrics(gates: Sequence[str]) -> list[str]:
    """The metric ids the gates name, in gate order, once each (coverage and drift gates
    name no metric; a worst-stratum gate names a stratum's, not the mean's)."""
    found: dict[str, None] = {}
    for gate in _parsed(gates):
        if gate.kind in _DRAWN:
            found.setdefault(gate.metric)
    return list(found)


def gate_thresholds(gates: Sequence[str]) -> dict[str, float]:
    """The floor each metric is held to by an absolute, ci-lower or sequential gate (the
    highest, when several gates name one metric)."""
    floors: dict[str, float] = {}
    for gate in _parsed(gates):
        if gate.kind in ("absolute", "ci-lower", "sequential"):
            floors[gate.metric] = max(gate.threshold, floors.get(gate.metric, gate.threshold))
    return floors


def _settings(entry: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return (tuple(entry.get("k") or ()), entry.get("threshold"), entry.get("system"))


def trend_points(history: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """History entries (oldest first) as trend points: each with ``previous`` (the index of
    the last earlier point of the same system computed with the same cutoffs and threshold,
    or None),
    ``judgments_changed`` and ``corpus_changed`` against that point, and ``delta`` per metric
    (the change in value from it; None where either lacks the metric). Entries written
    before cutoffs were recorded compare with nothing."""
    points: list[dict[str, Any]] = []
    last_by_settings: dict[tuple[Any, Any], int] = {}
    for index, entry in enumerate(history):
        settings = _settings(entry)
        recorded = entry.get("k") is not None
        previous = last_by_settings.get(settings) if recorded else None
        before = history[previous] if previous is not None else None
        delta: dict[str, float | None] = {}
        for metric in metrics:
            now = (entry.get("metrics") or {}).get(metric)
            then = (before.get("metrics") or {}).get(metric) if before is not None else None
            delta[metric] = None if now is None or then is None else now["value"] - then["value"]
        points.append({
            **entry,
            "previous": previous,
            "judgments_changed": before is not None and before.get("judgments_sha256") != entry.get("judgments_sha256"),
            "corpus_changed": before is not None and before.get("corpus_fingerprint") != entry.get("corpus_fingerprint"),
            "delta": delta,
        })
        if recorded:
            last_by_settings[settings] = index
    return points


def systems(points: Sequence[Mapping[str, Any]]) -> list[str | None]:
    """The systems of a suite's points, in the order they first appear (None: a suite's
    only run, which has no system name)."""
    return list(dict.fromkeys(point.get("system") for point in points))


def latest_by_system(points: Sequence[Mapping[str, Any]]) -> dict[str | None, Mapping[str, Any]]:
    """Each system's newest point."""
    return {point.get("system"): point for point in points}


def attribute_change(before: float, previous_run_on_new_labels: float, now: float) -> dict[str, float]:
    """Split a change of a mean between two evaluations whose judgments differ into what the
    labels did (the previous run scored on the new judgments, minus its old value) and what
    the retriever did (the new run against the previous run, both on the new judgments). The
    two parts add up to the change exactly."""
    labels = previous_run_on_new_labels - before
    return {"change": now - before, "labels": labels, "retriever": now - previous_run_on_new_labels}


def with_queued_found(query_ids: Sequence[str], rankings: Sequence[Sequence[str]],
                      queued: Mapping[str, Sequence[str]]) -> list[tuple[str, list[str]]]:
    """The run as if every queued label had been found: each query's queued keys (its
    relevant ones, highest relevance first, as ``queued`` lists them) put at the top of its
    ranking, before anything it ranked; a query the run lacks gets a ranking of its queued
    keys alone. Scored, it is the upper end of the bracket: moving a relevant key up never
    lowers any goldkeeper metric, so no placement of those labels scores higher, and the gap
    to the real score is the most the stale labels can explain."""
    out = []
    seen = set()
    for query_id, ranking in zip(query_ids, rankings, strict=True):
        top = list(dict.fromkeys(queued.get(query_id, ())))
        out.append((query_id, top + [key for key in ranking if key not in set(top)]))
        seen.add(query_id)
    out += [(query_id, list(dict.fromkeys(keys))) for query_id, keys in queued.items() if query_id not in seen]
    return out
