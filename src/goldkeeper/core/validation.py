"""Is this judgment set sound enough to compute a metric from?

``Validator`` is an accumulator: feed it labels one at a time (from a stream of any length)
and ask for the ``ValidationResult`` at the end. It keeps only what the checks need (the
(query, target) pairs, one query text per query, counters), never the labels themselves.
Given a ``Qrels``, it groups the labels into it too and takes the pairs seen from there
instead of keeping a set of its own (score's readers, which group the labels anyway).

Issue codes, severities, messages and their order are the reference implementation's
(retrieval-eval 0.1.1), which the ``unsorted-queries`` fixture makes normative: per-label
findings in file order, then set-level findings, each sorted by code point. goldkeeper adds
checks the reference misses; they are listed in spec/validation.md and come after the
reference's findings of the same kind.
"""

from __future__ import annotations

import functools
import operator
import re
from collections import Counter
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat
from typing import TYPE_CHECKING, Any, Literal

from goldkeeper.core.grouped import Qrels, build_qrels, group_labels, join_strings, split_strings
from goldkeeper.core.identity import text_sha

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment

__all__ = ["Issue", "Severity", "ValidationResult", "Validator", "is_iso8601", "validate"]


_CHUNK_ID = re.compile(r"c1:[0-9a-f]{32}")
_TEXT_SHA = re.compile(r"t1:[0-9a-f]{32}")
_UNSTRATIFIED = "_unstratified"
_QUERY_ID = operator.itemgetter("query_id")
_DOC_URI = operator.itemgetter("doc_uri")
_RELEVANCE = operator.itemgetter("relevance")
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)
_PROVENANCE = ("human:", "synthetic:")
_THIN_STRATUM = 5


Severity = Literal["error", "warning"]


# Results, not a wire format: plain dataclasses, so that scoring, which reports them, loads
# no pydantic (with the report's models and the label decoder, pydantic's import and model
# builds took 0.08 s of a 10k-query score's 0.42 s).
@dataclass
class Issue:
    """One finding about a judgment set."""

    severity: Severity
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "code": self.code, "message": self.message}


@dataclass
class ValidationResult:
    """Findings plus the counts a report needs."""

    issues: list[Issue] = field(default_factory=list)
    queries: int = 0
    labels: int = 0
    human_labels: int = 0
    synthetic_labels: int = 0
    fingerprint: str | None = None
    strata: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no finding is an error; warnings do not fail validation."""
        return not any(issue.severity == "error" for issue in self.issues)

    @property
    def error_codes(self) -> list[str]:
        return sorted({i.code for i in self.issues if i.severity == "error"})

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON values, in order (``goldkeeper validate --format json``)."""
        return {"issues": [issue.to_dict() for issue in self.issues], "queries": self.queries,
                "labels": self.labels, "human_labels": self.human_labels,
                "synthetic_labels": self.synthetic_labels, "fingerprint": self.fingerprint,
                "strata": dict(self.strata)}


def _column(rows: list[Mapping[str, Any]], name: str) -> list[Any]:
    """An optional field's value on each row, None where absent: ``dict.get`` mapped in C, twice
    as fast as ``operator.methodcaller`` (500,000 rows: 0.022 s against 0.046); a row that is
    not a dict raises TypeError."""
    return list(map(dict.get, rows, repeat(name)))


@functools.lru_cache(maxsize=4096)  # labels made in one session share their timestamps
def is_iso8601(value: str) -> bool:
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    if len(text) < 10:
        return False
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _id_form(value: str) -> str:
    return unicodedata.normalize("NFKC", value).strip()


_NOTHING: dict[str, Any] = {}


class Validator:
    """Streaming accumulator behind ``validate``.

    With ``qrels`` it also groups every label it is fed into them (``build_qrels``), and a
    (query, target) pair counts as seen when the grouping has it: the pairs are kept once,
    as score needs them, not also as a set of tuples here (at 50,000 labels 7 MB, and 10 ms
    of the 43 ms validation took). The findings are the same either way: the grouping's key
    of a label is its target (``label_target``)."""

    def __init__(self, qrels: Qrels | None = None) -> None:
        self._qrels = qrels
        #: (severity, code, message) of each finding: the models are built by ``result``.
        self._issues: list[tuple[Severity, str, str]] = []
        self._labels = 0
        self._positives = 0
        self._human = 0
        self._synthetic = 0
        self._with_chunk_id = 0
        #: Every query seen, when no grouping holds them (``_query_ids``).
        self._queries: set[str] = set()
        self._fingerprints: set[str] = set()
        self._seen: set[tuple[str, str]] = set()
        self._query_text: dict[str, str] = {}
        #: Queries whose text changed among this validator's labels (for ``absorb``).
        self._text_changed: set[str] = set()
        self._strata: dict[str, int] = {}
        self._doc_uris: set[str] = set()

    # A worker's validator travels back to be absorbed: its sets of strings cross as UTF-8
    # blobs (``join_strings``). 47,000 labels' state took 0.035 s to pickle and 0.016 s to
    # unpickle as objects, against 0.023 s and 0.014 s (walking the pairs is most of it).
    _STRING_SETS = ("_queries", "_fingerprints", "_doc_uris")

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._STRING_SETS:
            state[name] = join_strings(list(state[name]))
        pairs = list(self._seen)
        state["_seen"] = (join_strings(list(map(_FIRST, pairs))), join_strings(list(map(_SECOND, pairs))))
        texts = self._query_text
        state["_query_text"] = (join_strings(list(texts)), join_strings(list(texts.values())))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name in self._STRING_SETS:
            state[name] = set(split_strings(state[name]))
        firsts, seconds = state["_seen"]
        state["_seen"] = set(zip(split_strings(firsts), split_strings(seconds)))
        keys, values = state["_query_text"]
        state["_query_text"] = dict(zip(split_strings(keys), split_strings(values)))
        self.__dict__.update(state)

    @property
    def labels(self) -> int:
        return self._labels

    def _issue(self, severity: Severity, code: str, message: str) -> None:
        self._issues.append((severity, code, message))

    def add(self, row: Mapping[str, Any]) -> None:
        """Account for one label, given as a parsed row or a ``Judgment``'s field values."""
        self.add_many((row,))

    def add_many(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Account for many labels.

        A batch that raises no per-label finding (the common case) is accounted for column
        by column with C-level builtins; any batch that might is replayed label by label,
        which is the definition, so findings and their order are the same either way.
        """
        batch = rows if isinstance(rows, list) else list(rows)
        try:
            done = self._add_columns(batch)
        except TypeError:  # a mapping that is not a dict: _column's dict.get refused it
            batch = [dict(row) for row in batch]
            done = self._add_columns(batch)
        if not done:  # (done, the column path grouped the labels too)
            self._add_rows(batch)
            if self._qrels is not None:
                build_qrels(batch, self._qrels)

    def _add_columns(self, rows: list[Mapping[str, Any]]) -> bool:
        """The fast path: True when done, False (nothing changed) when a label needs a finding."""
        qids = list(map(_QUERY_ID, rows))
        docs = list(map(_DOC_URI, rows))
        relevance = list(map(_RELEVANCE, rows))
        queries = _column(rows, "query")
        labeled_by = _column(rows, "labeled_by")
        named = _column(rows, "stratum")
        # The other fields are read only when some row has one: when the rows' keys are just
        # the three required ones and those read, every other field is absent (add_many of the
        # score bench's 50,000 labels, none with those fields, took 42 ms against 45 ms).
        read = 6 * len(rows) - queries.count(None) - labeled_by.count(None) - named.count(None)
        nothing = [None] * len(rows)
        column = (lambda name: _column(rows, name)) if sum(map(len, rows)) != read else (lambda name: nothing)
        chunks = column("chunk_id")
        without_chunk = chunks.count(None)
        # Each label's target: its chunk, else its document (all documents: the common case).
        targets = docs if without_chunk == len(rows) else [d if c is None else c for c, d in zip(chunks, docs)]
        if self._qrels is None:
            key_set = set(zip(qids, targets))
            if len(key_set) != len(rows) or not key_set.isdisjoint(self._seen):
                return False
        else:  # the batch grouped is the pairs' set; it joins the grouping at the end
            batch = group_labels(qids, targets, relevance)
            if sum(map(len, batch.values())) != len(rows) or not self._qrels.can_join(batch):
                return False
        if None in queries:
            pairs = [(q, t) for q, t in zip(qids, queries) if t is not None]
            texts = dict(pairs)
            consistent = len(set(pairs)) == len(texts)
        else:  # every label carries its query text: each must be its query's last one
            texts = dict(zip(qids, queries))
            consistent = list(map(texts.__getitem__, qids)) == queries
        if not consistent:
            return False
        known = self._query_text
        if known and any(map(operator.ne, map(known.get, texts, texts.values()), texts.values())):
            return False
        present = [c for c in chunks if c is not None] if without_chunk else chunks
        if not all(map(_CHUNK_ID.fullmatch, present)):
            return False
        shas = column("text_sha")
        if shas.count(None) != len(shas):  # else no hash to check or to compare with a text
            if not all(map(_TEXT_SHA.fullmatch, [s for s in shas if s is not None])):
                return False
            for chunk_text, sha in zip(column("chunk_text"), shas):
                if chunk_text is not None and sha is not None and text_sha(chunk_text) != sha:
                    return False
        labelers = Counter(labeled_by)
        if any(v is not None and not v.startswith(_PROVENANCE) for v in labelers):
            return False
        if any(v is not None and not is_iso8601(v) for v in set(column("labeled_at"))):
            return False
        self._labels += len(rows)
        self._positives += len(relevance) - relevance.count(0)
        self._human += sum(n for v, n in labelers.items() if v and v.startswith("human:"))
        self._synthetic += sum(n for v, n in labelers.items() if v and v.startswith("synthetic:"))
        self._with_chunk_id += len(present)
        self._fingerprints.update(filter(None, set(column("corpus_fingerprint"))))
        strata = self._strata
        for name, count in Counter(named).items():
            name = name or _UNSTRATIFIED
            strata[name] = strata.get(name, 0) + count
        if self._qrels is None:
            self._queries.update(qids)
            self._seen |= key_set
        else:
            self._qrels.join(batch, qids, named)
        self._doc_uris.update(docs)
        known.update(texts)
        return True

    def _add_rows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """The definition: one label at a time, findings in file order."""
        issue = self._issue
        queries = self._queries if self._qrels is None else set()  # (the grouping has them)
        doc_uris = self._doc_uris
        fingerprints = self._fingerprints
        # The pairs seen before: this validator's, or the grouping's (which this batch joins
        # only after) and the batch's own so far.
        seen = self._seen if self._qrels is None else set()
        grouped = _NOTHING if self._qrels is None else self._qrels.grades
        query_text = self._query_text
        strata = self._strata
        labels = positives = human = synthetic = with_chunk_id = 0
        chunk_re = _CHUNK_ID.fullmatch
        sha_re = _TEXT_SHA.fullmatch
        for row in rows:
            get = row.get
            query_id: str = row["query_id"]
            doc_uri: str = row["doc_uri"]
            chunk = get("chunk_id")
            labels += 1
            queries.add(query_id)
            doc_uris.add(doc_uri)
            if row["relevance"] >= 1:
                positives += 1
            fingerprint = get("corpus_fingerprint")
            if fingerprint:
                fingerprints.add(fingerprint)
            labeled_by = get("labeled_by")
            if labeled_by:
                if labeled_by.startswith("human:"):
                    human += 1
                elif labeled_by.startswith("synthetic:"):
                    synthetic += 1
            stratum = get("stratum") or _UNSTRATIFIED
            strata[stratum] = strata.get(stratum, 0) + 1

            target = doc_uri if chunk is None else chunk
            key = (query_id, target)
            if key in seen or target in grouped.get(query_id, _NOTHING):
                issue(
                    "error",
                    "duplicate-label",
                    f"duplicate judgment for query {query_id} and target {target}",
                )
            else:
                seen.add(key)

            query = get("query")
            if query is not None:
                existing = query_text.get(query_id)
                if existing is None:
                    query_text[query_id] = query
                elif existing != query:
                    issue(
                        "error",
                        "inconsistent-query-text",
                        f"query {query_id} has two different query strings",
                    )
                    query_text[query_id] = query
                    self._text_changed.add(query_id)

            if chunk is not None:
                with_chunk_id += 1
                if chunk_re(chunk) is None:
                    issue("error", "bad-chunk-id", f"malformed chunk_id on query {query_id}: {chunk}")
            sha = get("text_sha")
            if sha is not None and sha_re(sha) is None:
                issue("error", "bad-text-sha", f"malformed text_sha on query {query_id}: {sha}")
                sha = None
            # goldkeeper's per-label checks, after the reference's.
            chunk_text = get("chunk_text")
            if sha is not None and chunk_text is not None:
                actual = text_sha(chunk_text)
                if actual != sha:
                    issue(
                        "error",
                        "text-sha-mismatch",
                        f"text_sha on query {query_id} and target {target} is {sha}, but its "
                        f"chunk_text hashes to {actual}",
                    )
            if labeled_by is not None and not labeled_by.startswith(_PROVENANCE):
                issue(
                    "warning",
                    "bad-labeled-by",
                    f"labeled_by on query {query_id} and target {target} has no human: or "
                    f"synthetic: prefix: {labeled_by}",
                )
            labeled_at = get("labeled_at")
            if labeled_at is not None and not is_iso8601(labeled_at):
                issue(
                    "warning",
                    "bad-labeled-at",
                    f"labeled_at on query {query_id} and target {target} is not an ISO 8601 "
                    f"date-time: {labeled_at}",
                )
        self._labels += labels
        self._positives += positives
        self._human += human
        self._synthetic += synthetic
        self._with_chunk_id += with_chunk_id

    def _query_ids(self) -> Collection[str]:
        """Every query seen: the grouping's, when this validator groups (a set of them, kept
        besides, took 2.5 ms of 50,000 labels' 55 ms, and crossed the pipe), else its own."""
        return self._queries if self._qrels is None else self._qrels.grades.keys()

    def absorb(self, later: Validator) -> bool:
        """Take in a validator that saw the labels *after* this one's, as one pass would have.

        Returns False, changing nothing, when the two halves interact (a label of the later
        one repeats a target or a query text of this one's): only re-feeding the later labels
        gives the per-label findings in their right place then. That is rare, and the caller
        falls back to it.
        """
        if (self._qrels is None) != (later._qrels is None):
            raise ValueError("Validator.absorb: one validator groups its labels and the other does not")
        if self._qrels is None:
            if not self._seen.isdisjoint(later._seen):
                return False
        else:  # the later labels' grouping is merged by the caller, after
            grades = self._qrels.grades
            for query_id, targets in later._qrels.grades.items():
                mine = grades.get(query_id)
                if mine is not None and not mine.keys().isdisjoint(targets):
                    return False
        # A query with text on both sides interacts unless every later text of it is the
        # earlier side's last one: only the later side's last text is kept, so one that
        # changed there interacts too (the later side's first text may differ from ours).
        text = self._query_text
        for query_id, query in later._query_text.items():
            if query_id in text and (text[query_id] != query or query_id in later._text_changed):
                return False
        self._issues.extend(later._issues)
        self._labels += later._labels
        self._positives += later._positives
        self._human += later._human
        self._synthetic += later._synthetic
        self._with_chunk_id += later._with_chunk_id
        self._queries |= later._queries
        self._fingerprints |= later._fingerprints
        self._seen |= later._seen
        self._doc_uris |= later._doc_uris
        text.update(later._query_text)
        self._text_changed |= later._text_changed
        for name, count in later._strata.items():
            self._strata[name] = self._strata.get(name, 0) + count
        return True

    def result(self) -> ValidationResult:
        """The findings so far, in the normative order."""
        issues = [Issue(severity=severity, code=code, message=message) for severity, code, message in self._issues]

        def issue(severity: Severity, code: str, message: str) -> None:
            issues.append(Issue(severity=severity, code=code, message=message))

        query_ids = self._query_ids()
        # Texts are kept only for queries seen: as many as queries, every query has one (a set
        # difference of 100,000 queries took 0.02 s).
        if len(self._query_text) != len(query_ids):
            for query_id in sorted(query_ids - self._query_text.keys()):
                issue("warning", "missing-query-text", f"query {query_id} has no query text on any row")
        if self._labels == 0:
            issue("error", "empty", "no judgments")
        if self._positives == 0 and self._labels:
            issue(
                "error",
                "no-positives",
                "no judgment has relevance >= 1, so recall is undefined for every query",
            )
        if self._human == 0 and self._synthetic > 0:
            issue(
                "warning",
                "no-human-labels",
                "every label is synthetic. Without human labels you cannot measure judge "
                "calibration, and synthetic labels quietly become ground truth",
            )
        if len(self._fingerprints) > 1:
            issue(
                "warning",
                "mixed-fingerprints",
                f"judgments span {len(self._fingerprints)} corpus fingerprints; "
                "run 'drift' before trusting any metric",
            )
        for name, count in sorted(self._strata.items()):
            if name != _UNSTRATIFIED and count < _THIN_STRATUM:
                issue(
                    "warning",
                    "thin-stratum",
                    f"stratum '{name}' has only {count} labels, too few to gate on",
                )
        if 0 < self._with_chunk_id < self._labels:
            issue(
                "warning",
                "mixed-granularity",
                f"{self._with_chunk_id}/{self._labels} labels have chunk_id; "
                "the rest are document-level",
            )
        if self._with_chunk_id == 0 and self._labels:
            issue(
                "warning",
                "no-chunk-ids",
                "no label has a chunk_id, so drift can only work at document granularity. "
                "See spec/chunk-id.md",
            )
        for kind, ids in (("query_id", query_ids), ("doc_uri", self._doc_uris)):
            for group in _lookalikes(ids):
                shown = ", ".join(repr(i) for i in group)
                issue(
                    "warning",
                    "lookalike-ids",
                    f"{kind} values differ only by Unicode form or surrounding whitespace: {shown}",
                )
        fingerprint = next(iter(self._fingerprints)) if len(self._fingerprints) == 1 else None
        return ValidationResult(
            issues=issues,
            queries=len(query_ids),
            labels=self._labels,
            human_labels=self._human,
            synthetic_labels=self._synthetic,
            fingerprint=fingerprint,
            strata=dict(self._strata),
        )


_EDGE_SPACE = re.compile(r"(?:^|\x00)\s|\s(?:\x00|$)")
#: The ASCII characters ``\s`` matches: when none occurs at all (one memchr each), the
#: regex, 22 ns a character, need not run (0.07 s over 500k document ids).
_ASCII_SPACES = tuple(c for c in map(chr, range(128)) if c.isspace())


def _lookalikes(ids: Iterable[str]) -> list[list[str]]:
    ids = list(ids)
    joined = "\x00".join(ids)
    # ASCII ids without edge whitespace are their own NFKC form: one C-level pass over all of
    # them settles the common case.
    if joined.isascii() and not (any(space in joined for space in _ASCII_SPACES) and _EDGE_SPACE.search(joined)):
        return []
    groups: dict[str, list[str]] = {}
    for value in ids:
        # ASCII without edge whitespace is its own NFKC form: skip the costly part.
        form = value if value.isascii() and value == value.strip() else _id_form(value)
        groups.setdefault(form, []).append(value)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def validate(judgments: Iterable[Judgment | Mapping[str, Any]]) -> ValidationResult:
    """Check a judgment set; see ``Validator`` for what is checked and in what order."""
    from goldkeeper.models.judgment import Judgment

    validator = Validator()
    validator.add_many(j.__dict__ if isinstance(j, Judgment) else j for j in judgments)
    return validator.result()
