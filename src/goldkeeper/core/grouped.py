"""Judgments and runs grouped for scoring: pure Python, without numpy or pydantic.

``Qrels`` holds the labels by query and ``RunHeads`` a run cut to what scoring reads; the
readers (io.loading) build both a block at a time. ``goldkeeper.core.scoring`` re-exports
every name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment

__all__ = ["UNSTRATIFIED", "Qrels", "RunHeads", "build_qrels", "label_target", "merge_qrels", "note_stratum", "pack_run",
           "top_keys"]

UNSTRATIFIED = "_unstratified"


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
        key = label_target(row)
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
            note_stratum(conflicts, query_id, stratum[query_id], name)
    for query_id, names in conflicts.items():
        conflicts[query_id] = sorted(names)
    return qrels


def label_target(row: Mapping[str, Any]) -> str:
    """What a label judges, and so the ranking key it matches: its chunk when it names one,
    else its document. A duplicate label is a second label of the same query and target."""
    chunk = row.get("chunk_id")
    return row["doc_uri"] if chunk is None else chunk


def note_stratum(conflicts: dict[str, list[str]], query_id: str, first: str, name: str) -> None:
    """Record that a label of ``query_id`` names stratum ``name`` where its first named ``first``."""
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
            note_stratum(conflicts, query_id, stratum[query_id], name)
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

    Flat lists, so that ``query_values`` reads them with maps over the lists rather than a
    loop per query; the readers build it a block at a time.
    """

    __slots__ = ("depth", "keys", "lengths", "query_ids", "repeated")

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.query_ids: list[str] = []
        self.keys: list[str] = []
        self.lengths: list[int] = []
        self.repeated: list[str] = []

    @classmethod
    def of_distinct(cls, depth: int, query_ids: list[str], keys: list[str], lengths: list[int]) -> RunHeads:
        """Heads from flat lists already cut: each query's first ``depth`` keys, none of them
        repeated (a columnar reader's, which checked that)."""
        heads = cls(depth)
        heads.query_ids, heads.keys, heads.lengths = query_ids, keys, lengths
        return heads

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
