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

In the lifecycle (spec/judge.md): ``fully_judged`` keeps the queue items whose every candidate
the judge graded (only those its answers replace; an item with one error waits for people
whole), ``plan_audit`` samples their queries, ``people_labels`` makes the audit form's grades
hand labels beside the judge's, ``set_aside`` puts the labels the judge replaced back when it
falls below the kappa floor (``core.evaluation.audit_for`` is the ``Audit`` an evaluation
applies).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from goldkeeper.core.ppi import PPIEstimate, ppi_mean

__all__ = ["audit_sample", "audit_size", "fully_judged", "judges", "people_labels", "plan_audit", "ppi_metrics", "replaced_item",
           "set_aside"]


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
                metrics: Sequence[str], alpha: float = 0.05, judged: Iterable[str] | None = None,
                ) -> dict[str, PPIEstimate]:
    """Each metric's PPI++ estimate of its mean over the judge's queries: ``judge`` and
    ``people`` are per-query values (query -> metric -> value), people's on the audited
    queries. ``judged``: the queries the judge labelled (None: all of them); on the others the
    judge's values are people's, known exactly, and the mean is stratified: those queries as
    they are, the judged ones PPI++ from the audited sample among them (people's own mean when
    all are audited). A metric people scored on fewer than 2 audited queries gets none."""
    from scipy.special import ndtri

    chosen = set(judge) if judged is None else set(judged) & set(judge)
    exact = [q for q in judge if q not in chosen]
    audited = [q for q in judge if q in chosen and q in people]
    rest = [q for q in judge if q in chosen and q not in people]
    z = float(ndtri(1 - alpha / 2))
    found = {}
    for metric in metrics:
        pairs = [(people[q][metric], judge[q][metric]) for q in audited if metric in people[q] and metric in judge[q]]
        others = [judge[q][metric] for q in rest if metric in judge[q]]
        known = [judge[q][metric] for q in exact if metric in judge[q]]
        if len(pairs) < 2 or not (others or known):
            continue
        if not known:
            found[metric] = ppi_mean([y for y, _ in pairs], [yhat for _, yhat in pairs], others, alpha)
            continue
        found[metric] = _stratified(pairs, others, known, alpha, z)
    return found


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    """A mean and the variance of it (0 for fewer than two values)."""
    n = len(values)
    mean = math.fsum(values) / n
    return mean, (math.fsum((v - mean) ** 2 for v in values) / (n - 1) / n if n > 1 else 0.0)


def _stratified(pairs: list[tuple[float, float]], others: list[float], known: list[float], alpha: float,
                z: float) -> PPIEstimate:
    """The mean over queries known exactly (``known``) and judged ones (PPI++ from ``pairs``,
    people against the judge, over ``others``, the judge alone), each weighted by its share."""
    people = [y for y, _ in pairs]
    if others:
        part = ppi_mean(people, [yhat for _, yhat in pairs], others, alpha)
        judged_mean, judged_var, lam = part.estimate, ((part.interval[1] - part.interval[0]) / (2 * z)) ** 2, part.lam
    else:
        (judged_mean, judged_var), lam = _mean_var(people), 0.0
    known_mean, known_var = _mean_var(known)
    n_judged, total = len(pairs) + len(others), len(pairs) + len(others) + len(known)
    w = n_judged / total
    estimate = (1 - w) * known_mean + w * judged_mean
    half = z * math.sqrt((1 - w) ** 2 * known_var + w ** 2 * judged_var)
    labelled = known + people
    # people's labels alone, stratified the same way: the audited mean stands for the judged
    people_mean, people_var = _mean_var(people)
    labels_mean = (1 - w) * known_mean + w * people_mean
    labels_var = (1 - w) ** 2 * known_var + w ** 2 * people_var
    labels_half = z * math.sqrt(labels_var)
    variance = (half / z) ** 2
    return PPIEstimate(
        estimate=estimate, interval=(estimate - half, estimate + half), alpha=alpha, lam=lam, n_labeled=len(labelled),
        n_unlabeled=len(others), judge_mean=math.fsum([*known, *(yhat for _, yhat in pairs), *others]) / total,
        judge_bias=math.fsum(yhat - y for y, yhat in pairs) / len(pairs), labels_mean=labels_mean,
        labels_interval=(labels_mean - labels_half, labels_mean + labels_half),
        effective_labels=len(labelled) * labels_var / variance if variance > 0 and labels_var > 0 else float(len(labelled)),
        method="PPI++ on the judged queries (Angelopoulos, Duchi and Zrnic 2023), stratified with the queries "
               "people labelled")


def fully_judged(items: Iterable[Mapping[str, Any]], answers: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The queue items whose every candidate has one of the judge's ``answers`` (queue-answer
    rows), in queue order; a pool item (``action`` judge, whose candidates stand alone) with
    the candidates the judge graded, when it graded any."""
    graded = {(answer["item_id"], answer["chunk_id"]) for answer in answers}
    found = []
    for item in items:
        done = [c for c in item.get("candidates") or [] if (item["item_id"], c["chunk_id"]) in graded]
        if item.get("action") == "judge" and done:
            found.append({**item, "candidates": done})
        elif done and len(done) == len(item["candidates"]):
            found.append(dict(item))
    return found


def plan_audit(items: Sequence[Mapping[str, Any]], *, width: float | None, at_most: int | None, seed: int = 0,
               confidence: float = 0.95, strata: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What people audit of the judge's work on ``items`` (``fully_judged``'s): a seeded sample
    of their queries stratified by ``strata`` (query -> stratum, the labels' ``stratum``) or
    else by the items' drift status, sized by ``audit_size`` (2 queries
    at least, an interval's least), and every judged item of those queries. Neither ``width``
    nor ``at_most``: every query."""
    queries = list(dict.fromkeys(item["query_id"] for item in items))
    strata = dict(strata or {})
    for item in items:
        strata.setdefault(item["query_id"], item.get("status") or "")
    if width is None and at_most is None:
        size, rule = len(queries), f"all {len(queries)} queries"
    else:
        size, rule = audit_size(len(queries), width=width, at_most=at_most, confidence=confidence)
    size = min(len(queries), max(size, 2))
    chosen = audit_sample(queries, strata, size, seed)
    kept = set(chosen)
    return {"queries": chosen, "rule": rule, "seed": seed,
            "items": [dict(item) for item in items if item["query_id"] in kept]}


def judges(row: Mapping[str, Any]) -> bool:
    return str(row.get("labeled_by") or "").startswith("synthetic:")


def people_labels(rows: Iterable[Mapping[str, Any]], items: Sequence[Mapping[str, Any]],
                  grades: Sequence[Sequence[int | None]], labeled_by: str, labeled_at: str) -> list[dict[str, Any]]:
    """The audit form's grades as hand labels: for item n's candidate j, the judge's label of it
    among ``rows`` with people's grade ``grades[n][j]`` (None, a switch left off: 0), provenance
    and time, and no prompt. A candidate the judge has no label on any more is refused: the
    audit is of labels that changed since."""
    judged = {(row["query_id"], row.get("chunk_id")): row for row in rows if judges(row)}
    out = []
    for item, given in zip(items, grades, strict=True):
        for candidate, grade in zip(item["candidates"], given, strict=True):
            row = judged.get((item["query_id"], candidate["chunk_id"]))
            if row is None:
                raise ValueError(f"the judge's label of query {item['query_id']} on chunk {candidate['chunk_id']} is "
                                 "gone from the judgments: the audit no longer matches them")
            label = {name: value for name, value in row.items() if name not in ("prompt_sha", "rejudged_from")}
            label.update(relevance=grade or 0, labeled_by=labeled_by, labeled_at=labeled_at)
            out.append(label)
    return out


def replaced_item(row: Mapping[str, Any]) -> str | None:
    before = row.get("rejudged_from")
    return before.get("item_id") if isinstance(before, dict) else None


def set_aside(rows: Iterable[Mapping[str, Any]], before: Iterable[Mapping[str, Any]], item_ids: Iterable[str]
              ) -> list[dict[str, Any]]:
    """``rows`` with the judge's labels of ``item_ids`` taken out and the labels they replaced
    (found in ``before``, the judgments the judge answered) put back, to wait for people; the
    labels it added to the pool (``pooled_from``) are removed. A label people have answered
    since is kept as they answered it."""
    from goldkeeper.core.rejudge import label_origin

    wanted = set(item_ids)
    rows = [row for row in rows if not (judges(row) and row.get("pooled_from") in wanted)]
    taken = {replaced_item(row) for row in rows if judges(row) and replaced_item(row) in wanted}
    kept = [dict(row) for row in rows if not (judges(row) and replaced_item(row) in taken)]
    return kept + [dict(row) for row in before if label_origin(row) in taken and not replaced_item(row)]
