"""Scoring a run against judgments: per-query values, macro averages, strata.

The kernel is vectorised with numpy over a (queries x K) matrix of grades, where K is the
deepest cutoff asked for, so every cutoff comes out of one pass and the cost is
O(queries x K) whatever the depth of the rankings: a ranking is read only until K distinct
keys were found. Rows are processed in slices, so memory stays bounded at any query count.
Definitions (and which queries are averaged) are in spec/metrics.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from typing import Any

import numpy as np

from goldkeeper.core.intervals import BootstrapSpec, Interval, bca_intervals, metric_interval
from goldkeeper.core.metric_ids import METRIC_NAMES, MetricId
from goldkeeper.models.judgment import Judgment
from goldkeeper.models.report import Measurement, StratumScore
from goldkeeper.models.run import RunEntry

__all__ = [
    "DEFAULT_K",
    "DEFAULT_THRESHOLD",
    "UNSTRATIFIED",
    "Qrels",
    "QueryValues",
    "RunHeads",
    "ScoreResult",
    "build_qrels",
    "merge_qrels",
    "merge_query_values",
    "pack_run",
    "query_values",
    "score",
    "score_rows",
    "summarize",
    "top_keys",
    "worst_stratum",
]

DEFAULT_K = 10
DEFAULT_THRESHOLD = 1
UNSTRATIFIED = "_unstratified"
_ROUND = 12
_SLICE = 8192


@dataclass
class Qrels:
    """Judgments grouped for scoring: query -> {ranking key: grade}, and each query's stratum."""

    grades: dict[str, dict[str, int]] = field(default_factory=dict)
    stratum: dict[str, str] = field(default_factory=dict)
    #: Queries whose labels name more than one stratum: query -> the strata, sorted.
    stratum_conflicts: dict[str, list[str]] = field(default_factory=dict)
    stratified: bool = False


def build_qrels(judgments: Iterable[Judgment | Mapping[str, Any]], into: Qrels | None = None) -> Qrels:
    """Group labels (models or checked rows) by query. A query is put in the stratum of its
    first label; one whose labels disagree is recorded in ``stratum_conflicts`` so the report
    can say so. A key labeled twice keeps its last grade (``validate`` reports it).
    ``into`` extends an existing grouping, for labels that arrive a block at a time."""
    qrels = into if into is not None else Qrels()
    grades, stratum, conflicts = qrels.grades, qrels.stratum, qrels.stratum_conflicts
    for judgment in judgments:
        row = judgment if type(judgment) is dict or isinstance(judgment, Mapping) else judgment.__dict__
        query_id = row["query_id"]
        key = row.get("chunk_id") or row["doc_uri"]
        label_stratum = row.get("stratum")
        name = UNSTRATIFIED if label_stratum is None else label_stratum
        if label_stratum is not None:
            qrels.stratified = True
        per_query = grades.get(query_id)
        if per_query is None:
            grades[query_id] = {key: row["relevance"]}
            stratum[query_id] = name
            continue
        per_query[key] = row["relevance"]
        if stratum[query_id] != name:
            _note_stratum(conflicts, query_id, stratum[query_id], name)
    for query_id, names in conflicts.items():
        conflicts[query_id] = sorted(names)
    return qrels


def _note_stratum(conflicts: dict[str, list[str]], query_id: str, first: str, name: str) -> None:
    if name != first:
        seen = conflicts.setdefault(query_id, [first])
        if name not in seen:
            seen.append(name)


def merge_qrels(into: Qrels, later: Qrels) -> Qrels:
    """``into`` extended by ``later``, grouped from the labels that come after ``into``'s:
    exactly what one ``build_qrels`` over all of them gives (each key keeps its last grade
    and its first place, each query its first label's stratum, conflicts the union, sorted)."""
    grades, stratum, conflicts = into.grades, into.stratum, into.stratum_conflicts
    for query_id, per_query in later.grades.items():
        mine = grades.get(query_id)
        names = later.stratum_conflicts.get(query_id) or [later.stratum[query_id]]
        if mine is None:
            grades[query_id] = per_query
            stratum[query_id] = later.stratum[query_id]
            if len(names) > 1:
                conflicts[query_id] = list(names)
            continue
        mine.update(per_query)
        for name in names:
            _note_stratum(conflicts, query_id, stratum[query_id], name)
    into.stratified = into.stratified or later.stratified
    for query_id, names in conflicts.items():
        conflicts[query_id] = sorted(names)
    return into


def top_keys(ranking: Sequence[str], depth: int) -> tuple[list[str], bool]:
    """The first ``depth`` distinct keys of a ranking, and whether a key repeated among the
    keys read. Reads only as far as it must: O(depth) when the ranking has no repeats."""
    head = ranking[:depth]
    unique = list(dict.fromkeys(head))
    if len(unique) == len(head):
        return unique, False
    seen = set(unique)
    for key in ranking[depth:]:
        if len(unique) >= depth:
            break
        if key not in seen:
            seen.add(key)
            unique.append(key)
    return unique, True


class RunHeads:
    """A run cut to what scoring at cutoffs up to ``depth`` reads: each entry's query id, its
    first ``depth`` distinct keys (``top_keys``), flat, with their count, and the queries whose
    ranking repeated a key among the keys read.

    ``query_values`` reads it with C-level maps over the flat lists rather than a loop per
    query (100,000 queries: 0.12 s against 0.64 s). The CLI's readers build it a block at a
    time, in another process, and it crosses the pipe as two strings (``__getstate__``).
    """

    __slots__ = ("depth", "keys", "lengths", "query_ids", "repeated")

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.query_ids: list[str] = []
        self.keys: list[str] = []
        self.lengths: list[int] = []
        self.repeated: list[str] = []

    def add(self, query_id: str, ranking: Sequence[str]) -> None:
        keys, repeated = top_keys(ranking, self.depth)
        self.query_ids.append(query_id)
        self.keys += keys
        self.lengths.append(len(keys))
        if repeated:
            self.repeated.append(query_id)

    def extend(self, other: RunHeads) -> None:
        """``other``'s entries after this one's (both cut at the same depth)."""
        if other.depth != self.depth:
            raise ValueError(f"RunHeads: cannot join heads cut at depth {other.depth} to heads cut at {self.depth}")
        self.query_ids += other.query_ids
        self.keys += other.keys
        self.lengths += other.lengths
        self.repeated += other.repeated

    def __len__(self) -> int:
        return len(self.lengths)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunHeads):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __iter__(self) -> Iterator[tuple[str, list[str]]]:
        """Each entry as (query id, its distinct keys)."""
        keys, at = self.keys, 0
        for query_id, length in zip(self.query_ids, self.lengths):
            yield query_id, keys[at:at + length]
            at += length

    def __getstate__(self) -> tuple[Any, ...]:
        # Each list of strings as one UTF-8 blob, split again on the other side: 1.1 million
        # strings took 0.23 s to pickle and 0.11 s to unpickle as a list, against a join and a split.
        return (self.depth, _joined(self.query_ids), _joined(self.keys), self.lengths, self.repeated)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.depth, query_ids, keys, self.lengths, self.repeated = state
        self.query_ids, self.keys = _split(query_ids), _split(keys)


def _joined(strings: list[str]) -> bytes | list[str]:
    joined = "\x00".join(strings)
    if not strings or joined.count("\x00") != len(strings) - 1:  # none, or a string holds a NUL
        return strings
    return joined.encode("utf-8", "surrogatepass")


def _split(strings: bytes | list[str]) -> list[str]:
    return strings.decode("utf-8", "surrogatepass").split("\x00") if isinstance(strings, bytes) else strings


def pack_run(entries: Iterable[Any], depth: int, into: RunHeads | None = None) -> RunHeads:
    """``entries`` (anything with ``.query_id`` and ``.ranking``) cut to their heads at
    ``depth``, appended to ``into`` when given."""
    heads = RunHeads(depth) if into is None else into
    if heads.depth != depth:
        raise ValueError(f"pack_run: heads cut at depth {heads.depth}, asked for {depth}")
    query_ids, keys, lengths = heads.query_ids, heads.keys, heads.lengths
    for entry in entries:
        ranking = entry.ranking
        head = ranking[:depth]
        if len(set(head)) == len(head):  # the common case, inline: no key repeats
            query_ids.append(entry.query_id)
            keys += head
            lengths.append(len(head))
        else:
            heads.add(entry.query_id, ranking)
    return heads


@dataclass
class ScoreResult:
    """What ``score`` found. Metric values are rounded to 12 decimals, as the spec asks."""

    ks: list[int]
    threshold: int
    metrics: dict[str, Measurement]
    per_query: dict[str, dict[str, float]]
    queries: int
    queries_scored: int
    queries_without_positives: list[str]
    missing_queries: list[str]
    queries_with_duplicates: list[str]
    run_only_queries: list[str]
    run_queries: int
    per_stratum: dict[str, StratumScore] | None
    worst_stratum: dict | None
    stratum_conflicts: dict[str, list[str]]
    #: The interval settings used (resamples capped for very large query sets), or None.
    intervals: BootstrapSpec | None = None

    @property
    def coverage(self) -> float:
        """Share of judged queries that have an entry in the run (0 when nothing is judged)."""
        return (self.queries - len(self.missing_queries)) / self.queries if self.queries else 0.0


def metric_ids(ks: Sequence[int]) -> list[MetricId]:
    return [MetricId(name, k) for k in ks for name in METRIC_NAMES]


def score_rows(grade_rows: np.ndarray, ideal_rows: np.ndarray, n_relevant: np.ndarray,
               ks: Sequence[int], threshold: int) -> dict[MetricId, np.ndarray]:
    """The kernel: per-query values for every metric at every cutoff.

    ``grade_rows[q, i]`` is the grade of the key at rank i+1 (0 past the end of the ranking),
    ``ideal_rows[q]`` the query's judged grades sorted descending (0-padded), ``n_relevant[q]``
    how many keys reach the threshold. All three have K = max(ks) columns.
    """
    depth = grade_rows.shape[1]
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    discount = 1.0 / np.log2(ranks + 1.0)
    hits = grade_rows >= threshold
    cum_hits = np.cumsum(hits, axis=1, dtype=np.float64)
    cum_ap = np.cumsum(np.where(hits, cum_hits / ranks, 0.0), axis=1)
    grades = grade_rows.astype(np.float64)
    ideal = ideal_rows.astype(np.float64)
    dcg_exp = np.cumsum((np.exp2(grades) - 1.0) * discount, axis=1)
    idcg_exp = np.cumsum((np.exp2(ideal) - 1.0) * discount, axis=1)
    dcg_lin = np.cumsum(grades * discount, axis=1)
    idcg_lin = np.cumsum(ideal * discount, axis=1)
    any_hit = hits.any(axis=1)
    first = np.where(any_hit, np.argmax(hits, axis=1), max(ks))  # no hit: past every cutoff
    relevant = n_relevant.astype(np.float64)
    safe_relevant = np.where(relevant > 0, relevant, 1.0)
    out: dict[MetricId, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in ks:
            c = min(k, depth) - 1  # columns past the matrix width repeat the last one
            found = cum_hits[:, c]
            out[MetricId("precision", k)] = found / k
            out[MetricId("recall", k)] = np.where(relevant > 0, found / safe_relevant, 0.0)
            out[MetricId("ndcg", k)] = np.where(idcg_exp[:, c] > 0, dcg_exp[:, c] / idcg_exp[:, c], 0.0)
            out[MetricId("ndcg_linear", k)] = np.where(idcg_lin[:, c] > 0, dcg_lin[:, c] / idcg_lin[:, c], 0.0)
            out[MetricId("mrr", k)] = np.where(first < k, 1.0 / (first + 1.0), 0.0)
            out[MetricId("map", k)] = np.where(relevant > 0, cum_ap[:, c] / safe_relevant, 0.0)
            out[MetricId("hit_rate", k)] = (found > 0).astype(np.float64)
    return out


def _round(value: float) -> float:
    return round(float(value), _ROUND)


def _measurements(values: dict[MetricId, np.ndarray], rows: np.ndarray | slice,
                  intervals: BootstrapSpec | None) -> dict[str, Measurement]:
    """Mean of each metric over ``rows``, with its interval when ``intervals`` is given:
    Clopper-Pearson for 0/1 values, BCa for graded ones (one shared set of resamples)."""
    selected = {metric: column[rows] for metric, column in values.items()}
    found: dict[MetricId, Interval] = {}
    if intervals is not None:
        graded = []
        for metric, column in selected.items():
            exact = metric_interval(column, intervals)
            if exact is None:
                graded.append(metric)
            else:
                found[metric] = exact
        if graded:
            matrix = np.column_stack([selected[metric] for metric in graded])
            found.update(zip(graded, bca_intervals(matrix, intervals)))
    out = {}
    for metric, column in selected.items():
        measurement = Measurement(value=_round(column.mean()), n=int(column.size), deterministic=True)
        interval = found.get(metric)
        if interval is not None:
            measurement.ci = (_round(interval.low), _round(interval.high))
            measurement.ci_method = interval.method  # type: ignore[attr-defined]
            if interval.note:
                measurement.ci_note = interval.note  # type: ignore[attr-defined]
        out[str(metric)] = measurement
    return out


@dataclass
class QueryValues:
    """Per-query metric values of a run, before any mean: what ``score`` averages. Partitions
    of the queries (by a hash of query id) each give one; ``merge_query_values`` joins them."""

    ks: list[int]
    threshold: int
    scored_ids: list[str]
    values: dict[MetricId, np.ndarray]
    seen_in_run: set[str]
    duplicates: list[str]
    run_only: list[str]
    run_queries: int


def _check_settings(k: int | Sequence[int], threshold: int) -> list[int]:
    ks = [k] if isinstance(k, int) else list(dict.fromkeys(k))
    if not ks or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in ks):
        raise ValueError(f"k: every cutoff must be a positive integer, got {k!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ValueError(f"threshold: must be an integer >= 1, got {threshold!r}")
    return ks


def _ranks(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ... within each of consecutive runs of the given lengths, flat."""
    total = int(lengths.sum())
    return np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _scored_ids(qrels: Qrels, threshold: int) -> list[str]:
    grades = qrels.grades  # every query has a label (build_qrels), so max has a value
    return list(compress(grades, map(threshold.__le__, map(max, map(dict.values, grades.values())))))


def score(
    judgments: Iterable[Judgment] | Qrels,
    run: Iterable[RunEntry],  # or anything with .query_id and .ranking
    k: int | Sequence[int] = DEFAULT_K,
    threshold: int = DEFAULT_THRESHOLD,
    *,
    worst_metric: str | None = None,
    intervals: BootstrapSpec | None = None,
    parallel: Callable[[Callable[[Any], Any], list[Any], list[int]], list[Any]] | None = None,
) -> ScoreResult:
    """Score a run. ``k`` is one cutoff or several; every metric is computed at each.

    Queries with no label at the threshold are excluded and listed; judged queries the run
    lacks score 0 and are listed; run entries for unjudged queries are ignored and listed.
    When no query is scored, ``metrics`` is empty. ``worst_metric`` (default: recall at the
    first cutoff) names the metric ``worst_stratum`` compares. ``intervals`` adds a confidence
    interval to every mean, overall and per stratum (goldkeeper.core.intervals).
    ``parallel(fn, items, costs)``, when given, returns ``[fn(item) for item in items]``,
    possibly computed elsewhere (the CLI spreads the bootstraps of the overall set and of
    the strata over two processes); costs are each item's relative work.
    """
    ks = _check_settings(k, threshold)
    qrels = judgments if isinstance(judgments, Qrels) else build_qrels(judgments)
    return summarize(qrels, query_values(qrels, run, ks, threshold), worst_metric=worst_metric,
                     intervals=intervals, parallel=parallel)


def query_values(qrels: Qrels, run: Iterable[RunEntry] | RunHeads, k: int | Sequence[int] = DEFAULT_K,
                 threshold: int = DEFAULT_THRESHOLD) -> QueryValues:
    """Every metric's value for every scored query of ``qrels`` (rows in ``qrels`` order).
    Cost O(queries x cutoff), whatever the depth of the rankings. ``run`` is entries (a query
    at most once) or their heads cut at the deepest cutoff (``pack_run``)."""
    ks = _check_settings(k, threshold)
    depth = max(ks)
    heads = run if isinstance(run, RunHeads) else pack_run(run, depth)
    if heads.depth != depth:
        raise ValueError(f"query_values: the run's heads were cut at depth {heads.depth}, the cutoffs need {depth}")
    grades = qrels.grades
    scored_ids = _scored_ids(qrels, threshold)
    row_of = {q: i for i, q in enumerate(scored_ids)}
    n = len(scored_ids)
    query_ids = heads.query_ids
    seen_in_run = set(query_ids)
    if len(seen_in_run) != len(query_ids):
        twice = sorted({q for q in query_ids if query_ids.count(q) > 1})[:3]
        raise ValueError(f"query_values: the run has more than one entry for query {', '.join(twice)}")
    run_only = [q for q in query_ids if q not in grades]
    duplicates = [q for q in heads.repeated if q in grades]

    # Each key's grade, all at once: its query's labels repeated once per key, then looked up
    # with dict.get (0 for an unjudged key or an unjudged query).
    lengths = np.asarray(heads.lengths, dtype=np.int64)
    entry_rows = np.fromiter(map(row_of.get, query_ids, repeat(-1)), dtype=np.int64, count=len(query_ids))
    labels_of_key = chain.from_iterable(map(repeat, map(grades.get, query_ids, repeat(_NO_LABELS)), heads.lengths))
    key_grades = np.fromiter(map(dict.get, labels_of_key, heads.keys, repeat(0)), dtype=np.int64,
                             count=len(heads.keys))
    key_rows = np.repeat(entry_rows, lengths)
    scored_keys = key_rows >= 0

    # Past the longest ranking and the most labels of any query every column is zero, so the
    # matrices need be no wider than that, however large the cutoff asked for.
    labels_of = list(map(grades.__getitem__, scored_ids))
    label_counts = np.fromiter(map(len, labels_of), dtype=np.int64, count=n)
    longest = int(lengths[entry_rows >= 0].max(initial=0))
    most_labels = int(label_counts.max()) if n else 0
    depth = max(1, min(depth, max(longest, most_labels)))
    grade_rows = np.zeros((n, depth), dtype=np.int16)
    grade_rows[key_rows[scored_keys], _ranks(lengths)[scored_keys]] = key_grades[scored_keys]
    # Each query's grades in descending order are its ideal ranking: one lexsort for all.
    labels = np.fromiter(chain.from_iterable(map(dict.values, labels_of)), dtype=np.int64,
                         count=int(label_counts.sum()))
    label_rows = np.repeat(np.arange(n), label_counts)
    n_relevant = np.bincount(label_rows[labels >= threshold], minlength=n).astype(np.int64)
    ideal = labels[np.lexsort((-labels, label_rows))]  # rows stay in order: they are the first key
    ranks = _ranks(label_counts)
    head = ranks < depth
    ideal_rows = np.zeros((n, depth), dtype=np.int16)
    ideal_rows[label_rows[head], ranks[head]] = ideal[head]

    values: dict[MetricId, np.ndarray] = {m: np.empty(n) for m in metric_ids(ks)}
    for start in range(0, n, _SLICE):
        part = score_rows(grade_rows[start:start + _SLICE], ideal_rows[start:start + _SLICE],
                          n_relevant[start:start + _SLICE], ks, threshold)
        for metric, column in part.items():
            values[metric][start:start + _SLICE] = column

    return QueryValues(ks, threshold, scored_ids, values, seen_in_run, duplicates, run_only, len(query_ids))


_NO_LABELS: dict[str, int] = {}


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
    values = {metric: np.zeros(n) for metric in metric_ids(ks)}
    filled = 0
    merged = QueryValues(ks, threshold, scored_ids, values, set(), [], [], 0)
    for part in parts:
        if (part.ks, part.threshold) != (ks, threshold):
            raise ValueError("merge_query_values: the partitions were scored with different settings")
        rows = np.fromiter((row_of[q] for q in part.scored_ids), dtype=np.int64, count=len(part.scored_ids))
        for metric, column in part.values.items():
            values[metric][rows] = column
        filled += rows.size
        merged.seen_in_run |= part.seen_in_run
        merged.duplicates += part.duplicates
        merged.run_only += part.run_only
        merged.run_queries += part.run_queries
    if filled != n:
        raise ValueError(f"merge_query_values: {filled} rows from the partitions for {n} scored queries")
    return merged


def summarize(qrels: Qrels, found: QueryValues, *, worst_metric: str | None = None,
              intervals: BootstrapSpec | None = None,
              parallel: Callable[[Callable[[Any], Any], list[Any], list[int]], list[Any]] | None = None,
              ) -> ScoreResult:
    """Means, strata, intervals and the bookkeeping lists from per-query values (see ``score``)."""
    ks, threshold, scored_ids, values = found.ks, found.threshold, found.scored_ids, found.values
    grades = qrels.grades
    n = len(scored_ids)
    seen_in_run, duplicates, run_only, run_queries = found.seen_in_run, found.duplicates, found.run_only, found.run_queries
    if intervals is not None:
        intervals = intervals.for_queries(n)
    names = [str(metric) for metric in values]
    columns = [np.round(column, _ROUND).tolist() for column in values.values()]
    per_query = {query_id: dict(zip(names, row)) for query_id, row in zip(scored_ids, zip(*columns))}

    # The overall set first, then each stratum in name order (an empty one gets no metric):
    # its rows in order, from one stable sort of the rows by stratum.
    groups: list[Any] = [slice(None)]
    strata: list[tuple[str, int]] = []
    if qrels.stratified:
        stratum_names = sorted(set(qrels.stratum.values()))
        code_of = {name: code for code, name in enumerate(stratum_names)}
        codes = np.fromiter(map(code_of.__getitem__, map(qrels.stratum.__getitem__, scored_ids)),
                            dtype=np.int64, count=n)
        sizes = np.bincount(codes, minlength=len(stratum_names))
        members = np.split(np.argsort(codes, kind="stable"), np.cumsum(sizes)[:-1])
        for name, size, rows in zip(stratum_names, sizes.tolist(), members):
            strata.append((name, size))
            groups.append(rows)
    jobs = [(i, group) for i, group in enumerate(groups) if (n if i == 0 else group.size)]
    measure = lambda job: _measurements(values, job[1], intervals)
    # What each costs, in queries resampled, plus a fixed part for the multinomial shortcuts
    # (measured: 8 strata of 1,250 queries take 1.4x the 10,000 of the overall set).
    costs = [(n if i == 0 else int(group.size)) + 500 for i, group in jobs]
    # Only resampling is worth another process: means alone take less than a fork.
    spread = parallel if parallel is not None and intervals is not None else _in_order
    found = dict(zip((i for i, _ in jobs), spread(measure, jobs, costs)))
    metrics = found.get(0, {})

    per_stratum = None
    worst = None
    if qrels.stratified:
        per_stratum = {name: StratumScore(n=size, metrics=found.get(i, {}))
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


def _in_order(fn: Callable[[Any], Any], items: list[Any], costs: list[int]) -> list[Any]:
    return [fn(item) for item in items]


def worst_stratum(per_stratum: dict[str, StratumScore], metric: str) -> dict | None:
    """The lowest value of ``metric`` over strata with a scored query; ties go to the name
    first in code-point order. None when no stratum was scored."""
    candidates = [
        (stratum.metrics[metric].value, name)
        for name, stratum in per_stratum.items()
        if stratum.n > 0 and metric in stratum.metrics
    ]
    if not candidates:
        return None
    value, name = min(candidates)
    return {"metric": metric, "name": name, "value": value}
