"""Scoring a run against judgments: per-query values, macro averages, strata.

The kernel walks each ranking's head once with C-level maps and does Python work only at the
ranks that carry a grade, so its cost follows the graded keys, O(queries x K) whatever the
depth of the rankings: a ranking is read only until K distinct keys were found. Means are
``math.fsum`` over the per-query values, so they are the correctly rounded mean. Definitions
(and which queries are averaged) are in spec/metrics.md.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter, namedtuple
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, filterfalse, repeat
from typing import TYPE_CHECKING, Any

from goldkeeper.core.grouped import (
    UNSTRATIFIED,
    Qrels,
    RunHeads,
    build_qrels,
    merge_qrels,
    pack_run,
    top_keys,
)
from goldkeeper.core.judgments import MAX_RELEVANCE
from goldkeeper.core.metric_ids import MAX_CUTOFF, METRIC_NAMES, MetricId

if TYPE_CHECKING:

    from goldkeeper.core.intervals import BootstrapSpec, Interval
    from goldkeeper.models.judgment import Judgment
    from goldkeeper.models.run import RunEntry

__all__ = [
    "DEFAULT_K",
    "DEFAULT_THRESHOLD",
    "UNSTRATIFIED",
    "Qrels",
    "QueryValues",
    "RunHeads",
    "RunScorer",
    "ScoreResult",
    "aggregate",
    "build_qrels",
    "discounts",
    "merge_qrels",
    "merge_query_values",
    "pack_run",
    "query_values",
    "score",
    "top_keys",
    "worst_stratum",
]

DEFAULT_K = 10
DEFAULT_THRESHOLD = 1
_ROUND = 12
_SCALE = 10.0 ** _ROUND
#: Each grade's exponential gain, ``2^g - 1`` (numpy's ``exp2`` gives the same floats).
_GAIN = [2.0 ** grade - 1.0 for grade in range(MAX_RELEVANCE + 1)]
#: The metrics ``_python_rows`` fills at each cutoff, in its order.
#: The kernel's columns at one cutoff: the cutoff, then one per metric, by name.
_Columns = namedtuple("_Columns", ["k", *METRIC_NAMES])  # type: ignore[misc]


@dataclass
class ScoreResult:
    """What ``score`` found. Metric values are rounded to 12 decimals, as the spec asks.

    ``metrics`` maps a metric id to its measurement and ``per_stratum`` a stratum name to
    ``{"n", "metrics"}``, both as the report writes them (``goldkeeper.models.report``'s
    ``Measurement`` and ``StratumScore`` in JSON form: ``{"value", "n", "ci", "deterministic",
    "ci_method", "ci_note"}``, the interval's keys only with an interval). They are plain
    values, so that scoring loads no pydantic; ``build_report`` validates them into models.
    """

    ks: list[int]
    threshold: int
    metrics: dict[str, dict[str, Any]]
    per_query: dict[str, dict[str, float]]
    queries: int
    queries_scored: int
    queries_without_positives: list[str]
    missing_queries: list[str]
    queries_with_duplicates: list[str]
    run_only_queries: list[str]
    run_queries: int
    per_stratum: dict[str, dict[str, Any]] | None
    worst_stratum: dict | None
    stratum_conflicts: dict[str, list[str]]
    #: The interval settings used (resamples capped for very large query sets), or None.
    intervals: BootstrapSpec | None = None

    @property
    def coverage(self) -> float:
        """Share of judged queries that have an entry in the run (0 when nothing is judged)."""
        return (self.queries - len(self.missing_queries)) / self.queries if self.queries else 0.0

    def to_pandas(self, per_query: bool = False) -> Any:
        """The metrics as a DataFrame (``metric``, ``value``, ``ci_low``, ``ci_high``, ``n``,
        ``ci_method``), or with ``per_query`` one row per scored query and a column per metric."""
        from goldkeeper.models.frames import METRIC_COLUMNS, frame, metric_rows, per_query_frame

        if per_query:
            return per_query_frame(self.per_query)
        return frame(metric_rows(self.metrics), METRIC_COLUMNS, index="metric")

    def _repr_html_(self) -> str:
        from goldkeeper.models.frames import metrics_html

        return metrics_html(self.metrics, f"{len(self.per_query)} of {self.queries} judged queries scored, "
                                          f"run coverage {self.coverage:.1%}")


def metric_ids(ks: Sequence[int]) -> list[MetricId]:
    return [MetricId(name, k) for k in ks for name in METRIC_NAMES]


def discounts(depth: int) -> list[float]:
    """``1 / log2(i + 1)`` for ranks i = 1..depth, from the C library's ``log2``: both kernels
    take them from here, since numpy's own ``log2`` differs from it by an ulp at some ranks
    (the first is 1,620)."""
    return [1.0 / math.log2(rank + 1.0) for rank in range(1, depth + 1)]


def _python_rows(labels_of: list[dict[str, int]], keys: list[str], entry_rows: list[int], lengths: list[int],
                 ks: list[int], threshold: int, columns: dict[MetricId, list[float]], most_labels: int) -> None:
    """The kernel: every metric of ``METRICS`` for each query, in one pass over its graded
    ranks (sums run over the ranks in order; a rank whose grade is 0 adds 0.0, which changes
    no sum, and is skipped). A new metric writes its column here, by name.

    ``labels_of[i]`` is scored query i's labels; the run's entries follow one another in
    ``keys``, entry j's ``lengths[j]`` keys for row ``entry_rows[j]`` (-1: not a scored
    query). Values are written into ``columns`` (metric -> one float per scored query, 0.0
    until written): only those of the rows with a grade in their head. A scored query
    without an entry scores 0.
    """
    # No rank past the longest head, nor past the ``most_labels`` a query has, is looked up.
    depth = min(max(ks), max(max(lengths, default=0), most_labels))
    discount = discounts(depth)
    per_cutoff = [_Columns(k, *(columns[MetricId(name, k)] for name in METRIC_NAMES)) for k in ks]
    # Each query's ideal ranking is its grades sorted: (|R|, IDCG at each rank, exponential
    # and linear gain), shared by every query whose grades came in the same order.
    ideals: dict[tuple[int, ...], tuple[int, list[float], list[float], list[int] | None]] = {}
    for row, length, end in zip(entry_rows, lengths, accumulate(lengths)):
        if row < 0:
            continue
        labels = labels_of[row]
        head = keys[end - length:end]
        judged = list(compress(range(length), map(labels.__contains__, head)))  # ranks with any label
        if judged:
            for cutoff in per_cutoff:
                k = cutoff.k
                cutoff.judged[row] = (bisect_left(judged, k) if judged[-1] >= k else len(judged)) / min(k, length)
        graded = list(compress(range(length), map(labels.get, head)))  # ranks with a grade > 0
        if not graded:
            continue  # every other value is 0
        own = tuple(labels.values())
        ideal = ideals.get(own)
        if ideal is None:
            ideal = ideals[own] = _ideal(own, threshold, discount)
        relevant, idcg_exp, idcg_lin, overflowed = ideal
        hits, ap, dcg_exp, dcg_lin, first = 0, 0.0, 0.0, 0.0, -1
        marks = []  # after each rank with a grade: (rank, hits, AP sum, DCG exp, DCG linear)
        for rank in graded:
            grade = labels[head[rank]]
            if grade >= threshold:
                hits += 1
                ap += hits / (rank + 1.0)
                if first < 0:
                    first = rank
            dcg_exp += _GAIN[grade] * discount[rank]
            dcg_lin += grade * discount[rank]
            marks.append((rank, hits, ap, dcg_exp, dcg_lin))
        last = marks[-1]
        for cutoff in per_cutoff:
            k = cutoff.k
            if last[0] < k:  # every graded rank is within the cutoff
                _, found, sum_ap, gain_exp, gain_lin = last
            else:
                found, sum_ap, gain_exp, gain_lin = 0, 0.0, 0.0, 0.0
                for mark in marks:
                    if mark[0] >= k:
                        break
                    _, found, sum_ap, gain_exp, gain_lin = mark
            c = min(k, len(idcg_exp)) - 1  # past the query's labels the ideal adds nothing
            if gain_exp:
                cutoff.ndcg[row] = gain_exp / idcg_exp[c]
            if gain_lin:
                cutoff.ndcg_linear[row] = gain_lin / idcg_lin[c]
            if found:
                cutoff.precision[row] = found / k
                cutoff.recall[row] = found / relevant
                cutoff.map[row] = sum_ap / relevant
                cutoff.mrr[row] = 1.0 / (first + 1.0)
                cutoff.hit_rate[row] = 1.0
        if overflowed is not None:
            ranked = [(rank, labels[head[rank]]) for rank in graded]
            for cutoff, value in zip(per_cutoff, _scaled_ndcg(ranked, overflowed, ks, discount)):
                cutoff.ndcg[row] = value


def _ideal(grades: tuple[int, ...], threshold: int, discount: list[float]
           ) -> tuple[int, list[float], list[float], list[int] | None]:
    """|R|, the IDCG at each rank (exponential and linear gain) and, when the exponential one
    overflows a float, the grades in ideal order (for ``_scaled_ndcg``); else None."""
    ordered = sorted(grades, reverse=True)[:len(discount)]
    relevant = sum(grade >= threshold for grade in grades)
    idcg_exp, idcg_lin, exp_sum, lin_sum = [], [], 0.0, 0.0
    for rank, grade in enumerate(ordered):
        exp_sum += _GAIN[grade] * discount[rank]
        lin_sum += grade * discount[rank]
        idcg_exp.append(exp_sum)
        idcg_lin.append(lin_sum)
    return relevant, idcg_exp, idcg_lin, ordered if math.isinf(exp_sum) else None


def _scaled_ndcg(ranked: list[tuple[int, int]], ordered: list[int], ks: list[int], discount: list[float]
                 ) -> list[float]:
    """ndcg at each cutoff for a query whose exponential IDCG overflows a float (grades near
    the schema's 1,023: three labels of 1,023 sum past 1.8e308, and the ratio came out NaN).
    Every gain ``2^g - 1`` is scaled by ``2^-top``, ``top`` the query's highest grade: the
    ratio stays what it is and no term exceeds 1. ``ranked`` is (rank, grade) for each rank
    with a grade, in rank order; ``ordered`` the query's grades sorted, descending."""
    top = ordered[0]
    floor = math.ldexp(1.0, -top)
    out = []
    for k in ks:
        dcg = sum((math.ldexp(1.0, grade - top) - floor) * discount[rank] for rank, grade in ranked if rank < k)
        idcg = sum((math.ldexp(1.0, grade - top) - floor) * discount[rank] for rank, grade in enumerate(ordered[:k]))
        out.append(dcg / idcg if idcg > 0 else 0.0)
    return out


def _round(value: float) -> float:
    return round(float(value), _ROUND)


def _round_values(column: Sequence[float]) -> list[float]:
    """Per-query values to 12 decimals as numpy's ``round`` does it (times 1e12, to the
    nearest integer, ties to even, over 1e12), which reports have always shown."""
    import numpy as np

    return (np.rint(np.asarray(column, dtype=np.float64) * _SCALE) / _SCALE).tolist()


def _mean(column: Sequence[float]) -> float:
    return math.fsum(column) / len(column)


def _measurements(values: dict[MetricId, list[float]], rows: list[int] | None,
                  intervals: BootstrapSpec | None) -> dict[str, dict[str, Any]]:
    """Mean of each metric over ``rows`` (None: all), with its interval when ``intervals`` is
    given: Clopper-Pearson for 0/1 values, BCa for graded ones (one shared set of resamples)."""
    selected = values if rows is None else {metric: list(map(column.__getitem__, rows))
                                            for metric, column in values.items()}
    found: dict[MetricId, Interval] = {}
    if intervals is not None:
        import numpy as np

        from goldkeeper.core.intervals import bca_intervals, metric_interval

        arrays = {metric: np.array(column, dtype=np.float64) for metric, column in selected.items()}
        graded = []
        for metric, column in arrays.items():
            exact = metric_interval(column, intervals)
            if exact is None:
                graded.append(metric)
            else:
                found[metric] = exact
        if graded:
            matrix = np.column_stack([arrays[metric] for metric in graded])
            found.update(zip(graded, bca_intervals(matrix, intervals)))
    out = {}
    for metric, column in selected.items():
        measurement: dict[str, Any] = {"value": _round(_mean(column)), "n": len(column)}
        interval = found.get(metric)
        if interval is not None:
            measurement["ci"] = [_round(interval.low), _round(interval.high)]
        measurement["deterministic"] = True
        if interval is not None:
            measurement["ci_method"] = interval.method
            if interval.note:
                measurement["ci_note"] = interval.note
        out[str(metric)] = measurement
    return out


@dataclass
class QueryValues:
    """Per-query metric values of a run, before any mean: what ``score`` averages. Partitions
    of the queries (by a hash of query id) each give one; ``merge_query_values`` joins them.
    ``values`` maps each metric to one float per scored query, in ``scored_ids`` order."""

    ks: list[int]
    threshold: int
    scored_ids: list[str]
    values: dict[MetricId, list[float]]
    seen_in_run: set[str]
    duplicates: list[str]
    run_only: list[str]
    run_queries: int


def _check_settings(k: int | Sequence[int], threshold: int) -> list[int]:
    ks = [k] if isinstance(k, int) else list(dict.fromkeys(k))
    if not ks or any(isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_CUTOFF for c in ks):
        raise ValueError(f"k: every cutoff must be an integer from 1 to {MAX_CUTOFF:,}, got {k!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ValueError(f"threshold: must be an integer >= 1, got {threshold!r}")
    return ks


def _scored_ids(qrels: Qrels, threshold: int) -> list[str]:
    grades = qrels.grades  # every query has a label (build_qrels), so max has a value
    return list(compress(grades, map(threshold.__le__, map(max, map(dict.values, grades.values())))))


def score(
    judgments: Iterable[Judgment | Mapping[str, Any]] | Qrels,
    run: Iterable[RunEntry | Mapping[str, Any]] | RunHeads,
    k: int | Sequence[int] = DEFAULT_K,
    threshold: int = DEFAULT_THRESHOLD,
    *,
    worst_metric: str | None = None,
    intervals: BootstrapSpec | bool | None = True,
) -> ScoreResult:
    """Score a run. ``k`` is one cutoff or several; every metric is computed at each.
    ``judgments`` are ``Judgment`` models, mappings of their fields (each checked as the
    judgments reader checks a line: ``InputError``), or a grouping (``build_qrels``) of rows
    already checked; ``run`` is ``RunEntry`` models (or anything with ``.query_id`` and
    ``.ranking``), mappings checked as ``RunEntry``, or heads (``pack_run``).

    Queries with no label at the threshold are excluded and listed; judged queries the run
    lacks score 0 and are listed; run entries for unjudged queries are ignored and listed.
    When no query is scored, ``metrics`` is empty. ``worst_metric`` (default: recall at the
    first cutoff) names the metric ``worst_stratum`` compares. ``intervals`` puts a confidence
    interval on every mean, overall and per stratum (goldkeeper.core.intervals): by default
    the CLI's, 95% with 10,000 resamples and seed 0 (``True``), or a ``BootstrapSpec``;
    ``False`` or None for none.

    ``judgments`` and ``run`` may also be other libraries' values (``goldkeeper.core.adapters``):
    nested dicts as pytrec_eval takes them, ranx ``Qrels``/``Run``, pandas DataFrames in
    TREC columns, or ir_datasets' and ir_measures' records.
    """
    from goldkeeper.core.adapters import judgment_rows, run_rows

    ks = _check_settings(k, threshold)
    qrels = judgments if isinstance(judgments, Qrels) else _grouped(judgment_rows(judgments))
    entries = run if isinstance(run, RunHeads) else _run_entries(run_rows(run))
    if intervals is True:
        from goldkeeper.core.intervals import BootstrapSpec

        intervals = BootstrapSpec()
    elif intervals is False:
        intervals = None
    return aggregate(qrels, query_values(qrels, entries, ks, threshold), worst_metric=worst_metric,
                     intervals=intervals)


def _grouped(judgments: Iterable[Any]) -> Qrels:
    """``build_qrels`` of ``score``'s labels: ``Judgment`` models, or mappings (parsed JSON
    lines) checked as the judgments reader checks a line, so a bad one is an ``InputError``
    naming its position (``judgments:3: relevance: ...``) and field, never a wrong number."""
    from goldkeeper.core.judgments import check_row

    rows, model = [], None  # the Judgment model, imported at the first row that is not a mapping
    for number, row in enumerate(judgments, start=1):
        if isinstance(row, Mapping):
            row = check_row(row if type(row) is dict else dict(row), "judgments", number)
            rows.append(row)
            continue
        if model is None:
            from goldkeeper.models.judgment import Judgment as model
        if not isinstance(row, model):
            raise TypeError(f"score: judgments row {number} is of type {type(row).__name__}; "
                            "a Judgment or a mapping of its fields is needed")
        rows.append(row)
    return build_qrels(rows)


def _run_entries(entries: Iterable[Any]) -> Iterator[Any]:
    """Run entries as ``score`` takes them: ``RunEntry`` models (or anything with
    ``.query_id`` and ``.ranking``), or mappings checked as a run line is (``InputError``)."""
    from goldkeeper.core.runs import check_run_row

    for number, entry in enumerate(entries, start=1):
        if hasattr(entry, "ranking"):
            yield entry
        elif isinstance(entry, Mapping):
            yield check_run_row(dict(entry), "run", number)
        else:
            raise TypeError(f"score: run row {number} is of type {type(entry).__name__}; "
                            "a RunEntry or a mapping of its fields is needed")


def query_values(qrels: Qrels, run: Iterable[RunEntry] | RunHeads, k: int | Sequence[int] = DEFAULT_K,
                 threshold: int = DEFAULT_THRESHOLD) -> QueryValues:
    """Every metric's value for every scored query of ``qrels`` (rows in ``qrels`` order).
    Cost O(queries x cutoff), whatever the depth of the rankings. ``run`` is entries (a query
    at most once) or their heads cut at the deepest cutoff (``pack_run``)."""
    scorer = RunScorer(qrels, k, threshold)
    scorer.add(run)
    return scorer.result()


class RunScorer:
    """``query_values`` over a run given in parts, one after another (``add``): a reader
    scores each block of a large run once read and frees its keys, so memory holds one
    block's heads, not the run's (7,000 queries at k = 1,000: 7 million keys). The values
    are those of the whole run; a query in two parts is refused, as in one."""

    def __init__(self, qrels: Qrels, k: int | Sequence[int] = DEFAULT_K, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.ks = _check_settings(k, threshold)
        self.threshold = threshold
        self._grades = grades = qrels.grades
        self.scored_ids = _scored_ids(qrels, threshold)
        self._row_of = {q: i for i, q in enumerate(self.scored_ids)}
        self._labels_of = list(map(grades.__getitem__, self.scored_ids))
        self._most_labels = max(map(len, self._labels_of), default=0)
        self.values = {metric: [0.0] * len(self.scored_ids) for metric in metric_ids(self.ks)}
        self.seen_in_run: set[str] = set()
        self.duplicates: list[str] = []
        self.run_only: list[str] = []
        self.run_queries = 0

    def add(self, run: Iterable[RunEntry] | RunHeads) -> None:
        """Score more of the run: entries, or their heads cut at the deepest cutoff."""
        depth = max(self.ks)
        heads = run if isinstance(run, RunHeads) else pack_run(run, depth)
        if heads.depth != depth:
            raise ValueError(f"query_values: the run's heads were cut at depth {heads.depth}, the cutoffs need {depth}")
        grades, query_ids = self._grades, heads.query_ids
        new = set(query_ids)
        if len(new) != len(query_ids) or not self.seen_in_run.isdisjoint(new):
            counts = Counter(query_ids)
            twice = sorted(q for q, times in counts.items() if times > 1 or q in self.seen_in_run)[:3]
            raise ValueError(f"query_values: the run has more than one entry for query {', '.join(twice)}")
        self.seen_in_run |= new
        self.run_only += filterfalse(grades.__contains__, query_ids)  # (in C: 2x the list comprehension)
        self.duplicates += [q for q in heads.repeated if q in grades]
        self.run_queries += len(query_ids)
        entry_rows = list(map(self._row_of.get, query_ids, repeat(-1)))
        _python_rows(self._labels_of, heads.keys, entry_rows, heads.lengths, self.ks, self.threshold, self.values,
                     self._most_labels)

    def result(self) -> QueryValues:
        return QueryValues(self.ks, self.threshold, self.scored_ids, self.values, self.seen_in_run,
                           self.duplicates, self.run_only, self.run_queries)


def merge_query_values(parts: Iterable[QueryValues], qrels: Qrels) -> QueryValues:
    """The values of the whole query set from those of its partitions: rows back in ``qrels``
    order, so everything computed from them (means, strata, intervals) is exactly what one
    process computes. ``qrels`` holds every query; each query is in one partition."""
    parts = list(parts)
    if not parts:
        raise ValueError("merge_query_values: no partition")
    ks, threshold = parts[0].ks, parts[0].threshold
    scored_ids = _scored_ids(qrels, threshold)
    row_of = {q: i for i, q in enumerate(scored_ids)}
    n = len(scored_ids)
    values = {metric: [0.0] * n for metric in metric_ids(ks)}
    filled = 0
    merged = QueryValues(ks, threshold, scored_ids, values, set(), [], [], 0)
    for part in parts:
        if (part.ks, part.threshold) != (ks, threshold):
            raise ValueError("merge_query_values: the partitions were scored with different settings")
        rows = list(map(row_of.__getitem__, part.scored_ids))
        for metric, column in part.values.items():
            target = values[metric]
            for row, value in zip(rows, column):
                target[row] = value
        filled += len(rows)
        merged.seen_in_run |= part.seen_in_run
        merged.duplicates += part.duplicates
        merged.run_only += part.run_only
        merged.run_queries += part.run_queries
    if filled != n:
        raise ValueError(f"merge_query_values: {filled} rows from the partitions for {n} scored queries")
    return merged


def aggregate(qrels: Qrels, found: QueryValues, *, worst_metric: str | None = None,
              intervals: BootstrapSpec | None = None) -> ScoreResult:
    """Means, strata, intervals and the bookkeeping lists from per-query values (see ``score``)."""
    ks, threshold, scored_ids, values = found.ks, found.threshold, found.scored_ids, found.values
    grades = qrels.grades
    n = len(scored_ids)
    seen_in_run, duplicates, run_only, run_queries = found.seen_in_run, found.duplicates, found.run_only, found.run_queries
    if intervals is not None:
        intervals = intervals.for_queries(n)
    names = [str(metric) for metric in values]
    columns = [_round_values(column) for column in values.values()]
    per_query = {query_id: dict(zip(names, row)) for query_id, row in zip(scored_ids, zip(*columns))}

    # The overall set first, then each stratum in name order (an empty one gets no metric):
    # its rows in order.
    groups: list[list[int] | None] = [None]
    strata: list[tuple[str, int]] = []
    if qrels.stratified:
        members: dict[str, list[int]] = {name: [] for name in sorted(set(qrels.stratum.values()))}
        for row, name in enumerate(map(qrels.stratum.__getitem__, scored_ids)):
            members[name].append(row)
        for name, rows in members.items():
            strata.append((name, len(rows)))
            groups.append(rows)
    found = {i: _measurements(values, group, intervals)
             for i, group in enumerate(groups) if (n if group is None else group)}
    metrics = found.get(0, {})

    per_stratum = None
    worst = None
    if qrels.stratified:
        per_stratum = {name: {"n": size, "metrics": found.get(i, {})}
                       for i, (name, size) in enumerate(strata, start=1)}
        worst = worst_stratum(per_stratum, worst_metric or str(MetricId("recall", ks[0])))

    missing = sorted(set(grades).difference(seen_in_run))
    return ScoreResult(
        ks=ks,
        threshold=threshold,
        metrics=metrics,
        per_query=per_query,
        queries=len(grades),
        queries_scored=n,
        queries_without_positives=sorted(set(grades).difference(scored_ids)),
        missing_queries=missing,
        queries_with_duplicates=sorted(duplicates),
        run_only_queries=sorted(run_only),
        run_queries=run_queries,
        per_stratum=per_stratum,
        worst_stratum=worst,
        stratum_conflicts=dict(sorted(qrels.stratum_conflicts.items())),
        intervals=intervals,
    )


def worst_stratum(per_stratum: dict[str, dict[str, Any]], metric: str) -> dict | None:
    """The lowest value of ``metric`` over strata with a scored query (``per_stratum`` as
    a report writes it); ties go to the name first in code-point order. None when no stratum
    was scored."""
    candidates = [
        (stratum["metrics"][metric]["value"], name)
        for name, stratum in per_stratum.items()
        if stratum["n"] > 0 and metric in stratum["metrics"]
    ]
    if not candidates:
        return None
    value, name = min(candidates)
    return {"metric": metric, "name": name, "value": value}
