"""Is this judgment set sound enough to compute a metric from?

``Validator`` is an accumulator: feed it labels one at a time (from a stream of any length)
and ask for the ``ValidationResult`` at the end. It keeps only what the checks need (the
(query, target) pairs, one query text per query, counters), never the labels themselves.
It groups the labels as it checks them, into a ``Qrels`` given (score's reader, which
scores them) or its own, and finds repeated pairs there.

Issue codes, severities, messages and their order are the reference implementation's
(retrieval-eval 0.1.1), which the ``unsorted-queries`` fixture makes normative: per-label
findings in file order, then set-level findings, each sorted by code point. goldkeeper adds
checks the reference misses; they are listed in spec/validation.md and come after the
reference's findings of the same kind.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from goldkeeper.core.grouped import Qrels, note_stratum
from goldkeeper.core.identity import text_sha

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment

__all__ = ["Issue", "Severity", "ValidationResult", "Validator", "is_iso8601", "validate"]


_CHUNK_ID = re.compile(r"c1:[0-9a-f]{32}")
_TEXT_SHA = re.compile(r"t1:[0-9a-f]{32}")
_UNSTRATIFIED = "_unstratified"
_PROVENANCE = ("human:", "synthetic:")
_THIN_STRATUM = 5


Severity = Literal["error", "warning"]


# Results, not a wire format: plain dataclasses, so that scoring, which reports them, loads
# no pydantic.
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




class Validator:
    """Streaming accumulator behind ``validate``: one loop over the labels, findings in file
    order, grouping them as it goes (``build_qrels``'s grouping, into the ``Qrels`` given, for
    score, or its own), where a repeated (query, target) pair is found."""

    def __init__(self, qrels: Qrels | None = None) -> None:
        #: The labels grouped as they are fed (``build_qrels``'s grouping): given, for score,
        #: which scores them; else this validator's own. A repeated pair is found there.
        self._qrels = qrels if qrels is not None else Qrels()
        #: (severity, code, message) of each finding: the models are built by ``result``.
        self._issues: list[tuple[Severity, str, str]] = []
        self._labels = 0
        self._positives = 0
        self._human = 0
        self._synthetic = 0
        self._anchored = 0
        self._fingerprints: set[str] = set()
        self._query_text: dict[str, str] = {}
        self._strata: dict[str, int] = {}
        self._doc_uris: set[str] = set()

    @property
    def labels(self) -> int:
        return self._labels

    def _issue(self, severity: Severity, code: str, message: str) -> None:
        self._issues.append((severity, code, message))

    def add(self, row: Mapping[str, Any]) -> None:
        """Account for one label, given as a parsed row or a ``Judgment``'s field values."""
        self.add_many((row,))

    def add_many(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Account for many labels, one at a time, findings in file order; a validator given
        a ``Qrels`` groups them into it too."""
        self._add_rows(rows)

    def _add_rows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """The definition: one label at a time, findings in file order."""
        issue = self._issue
        doc_uris = self._doc_uris
        fingerprints = self._fingerprints
        qrels = self._qrels
        grades, stratum_of, conflicts = qrels.grades, qrels.stratum, qrels.stratum_conflicts
        conflicted = False
        query_text = self._query_text
        strata = self._strata
        labels = positives = human = synthetic = anchored = 0
        chunk_re = _CHUNK_ID.fullmatch
        sha_re = _TEXT_SHA.fullmatch
        for row in rows:
            get = row.get
            query_id: str = row["query_id"]
            doc_uri: str = row["doc_uri"]
            chunk = get("chunk_id")
            relevance = row["relevance"]
            labels += 1
            doc_uris.add(doc_uri)
            if relevance >= 1:
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
            named = get("stratum")
            stratum = named or _UNSTRATIFIED
            strata[stratum] = strata.get(stratum, 0) + 1

            # Grouped as build_qrels groups: a query's stratum is its first label's, a key
            # labelled twice keeps its last grade (and is a finding).
            target = doc_uri if chunk is None else chunk
            group = _UNSTRATIFIED if named is None else named
            if named is not None:
                qrels.stratified = True
            per_query = grades.get(query_id)
            if per_query is None:
                grades[query_id] = {target: relevance}
                stratum_of[query_id] = group
            else:
                if target in per_query:
                    issue(
                        "error",
                        "duplicate-label",
                        f"duplicate judgment for query {query_id} and target {target}",
                    )
                per_query[target] = relevance
                first = stratum_of[query_id]
                if first != group:
                    note_stratum(conflicts, query_id, first, group)
                    conflicted = True

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

            if chunk is not None or get("span") is not None:
                anchored += 1  # a chunk, or a passage any chunking resolves to chunks
            if chunk is not None:
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
        if conflicted:
            for query_id, names in conflicts.items():
                conflicts[query_id] = sorted(names)
        self._labels += labels
        self._positives += positives
        self._human += human
        self._synthetic += synthetic
        self._anchored += anchored

    def _query_ids(self) -> Collection[str]:
        """Every query seen."""
        return self._qrels.grades.keys()

    def result(self) -> ValidationResult:
        """The findings so far, in the normative order."""
        issues = [Issue(severity=severity, code=code, message=message) for severity, code, message in self._issues]

        def issue(severity: Severity, code: str, message: str) -> None:
            issues.append(Issue(severity=severity, code=code, message=message))

        query_ids = self._query_ids()
        # Texts are kept only for queries seen: as many as queries, every query has one.
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
        if 0 < self._anchored < self._labels:
            issue(
                "warning",
                "mixed-granularity",
                f"{self._anchored}/{self._labels} labels have a chunk_id or a span; "
                "the rest are document-level",
            )
        if self._anchored == 0 and self._labels:
            issue(
                "warning",
                "no-chunk-ids",
                "no label has a chunk_id or a span, so drift can only work at document granularity. "
                "See spec/chunk-id.md and spec/spans.md",
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
#: regex, slow per character, need not run.
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
