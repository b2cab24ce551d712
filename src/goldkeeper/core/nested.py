"""Qrels and runs as nested JSON objects: ``{query_id: {doc_id: grade}}`` and
``{query_id: {doc_id: score}}``, the dicts pytrec_eval takes, ranx's ``to_dict`` gives and
BEIR's ``results.json`` holds.

Read as their TREC files are: grades are integers up to 1023 (a negative one becomes 0, a
fractional one is refused), and a run's documents are ordered as trec_eval orders them, by
score descending and ties by doc id descending, so one run scores the same as a dict, a
nested file or a TREC file. A bad value is named by its path, ``q1.d3``. Writing refuses what
could not be read back as it was: a key twice in one ranking, or scores whose order is not
the ranking's (rank-derived scores, ``len - index``, are written for a run without any).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

from goldkeeper.core.jsonl import decode_document
from goldkeeper.core.qrels import bounded_grade, looks_nested, qrel_label
from goldkeeper.errors import InputError, describe_value

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment
    from goldkeeper.models.run import RunEntry

__all__ = [
    "looks_nested",
    "parse_nested_qrels",
    "parse_nested_run",
    "qrels_from_mapping",
    "run_from_mapping",
    "to_nested_qrels",
    "to_nested_run",
]



def _identifier(value: Any, source: str, field: str, what: str) -> str:
    """An id as the formats hold it: a non-empty string (an integer, as pandas reads a numeric
    id column, is its decimal spelling)."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        return str(int(value))
    if not isinstance(value, str) or not value:
        raise InputError(source, f"a {what} must be a non-empty string", field=field, found=describe_value(value))
    return value


def _inner(source: str, query_id: Any, docs: Any) -> tuple[str, Mapping[Any, Any]]:
    query = _identifier(query_id, source, str(query_id), "query id")
    if not isinstance(docs, Mapping):
        raise InputError(source, "each query maps to an object of {doc_id: value}", field=query,
                         found=describe_value(docs))
    return query, docs


def _top(value: Any, source: str, kind: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise InputError(source, f"nested {kind} is one object of {{query_id: {{doc_id: value}}}}", field="json",
                         found=describe_value(value))
    return value


def qrels_from_mapping(value: Any, source: str = "qrels", *, as_chunk_ids: bool = False) -> list[Judgment]:
    """Judgments from ``{query_id: {doc_id: grade}}``; the doc id is each label's ``doc_uri``
    (and, ``as_chunk_ids``, its ``chunk_id``)."""
    out = []
    for query_id, docs in _top(value, source, "qrels").items():
        query, docs = _inner(source, query_id, docs)
        for doc_id, grade in docs.items():
            doc = _identifier(doc_id, source, f"{query}.{doc_id}", "doc id")
            field = f"{query}.{doc}"
            if isinstance(grade, bool) or not isinstance(grade, Integral):
                fractional = isinstance(grade, Real) and not isinstance(grade, bool)
                raise InputError(source, "must be an integer grade" + (
                    "; a fractional grade is refused, not truncated" if fractional else ""),
                    field=field, found=describe_value(grade))
            out.append(qrel_label(query, doc, bounded_grade(int(grade), source, None, field, grade),
                                  as_chunk_ids, source, None))
    if not out:
        raise InputError(source, "holds no label", field="json", found="an object with no query holding a document")
    return out


def run_from_mapping(value: Any, source: str = "run") -> list[RunEntry]:
    """Run entries from ``{query_id: {doc_id: score}}``, each ranking in trec_eval's order."""
    from goldkeeper.models.run import RunEntry

    out = []
    for query_id, docs in _top(value, source, "run").items():
        query, docs = _inner(source, query_id, docs)
        rows = []
        for doc_id, score in docs.items():
            doc = _identifier(doc_id, source, f"{query}.{doc_id}", "doc id")
            if isinstance(score, bool) or not isinstance(score, Real) or not math.isfinite(score):
                raise InputError(source, "must be a finite number", field=f"{query}.{doc}", found=describe_value(score))
            rows.append((float(score), doc))
        rows.sort(reverse=True)
        out.append(RunEntry.model_construct(query_id=query, ranking=[d for _, d in rows], scores=[s for s, _ in rows]))
    return out


def parse_nested_qrels(data: bytes | str, source: str = "qrels", *, as_chunk_ids: bool = False) -> list[Judgment]:
    """A nested qrels JSON file's text."""
    return qrels_from_mapping(decode_document(data, source), source, as_chunk_ids=as_chunk_ids)


def parse_nested_run(data: bytes | str, source: str = "run") -> list[RunEntry]:
    """A nested run JSON file's text (a BEIR ``results.json``)."""
    return run_from_mapping(decode_document(data, source), source)


def _dump(value: dict[str, dict[str, Any]]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def to_nested_qrels(judgments: Iterable[Judgment], source: str = "judgments") -> str:
    """``{query_id: {key: grade}}`` on one line, the key being each label's chunk id or doc uri."""
    out: dict[str, dict[str, Any]] = {}
    for index, label in enumerate(judgments, start=1):
        docs = out.setdefault(label.query_id, {})
        if label.key in docs:
            raise InputError(source, "names one key twice for one query, which a nested object cannot hold",
                             field=f"label {index}", found=describe_value(label.key))
        docs[label.key] = label.relevance
    return _dump(out)


def to_nested_run(entries: Iterable[RunEntry], source: str = "run") -> str:
    """``{query_id: {key: score}}`` on one line: the entry's scores, or ``len - index``."""
    out: dict[str, dict[str, Any]] = {}
    for entry in entries:
        total = len(entry.ranking)
        scores = entry.scores if entry.scores is not None else [float(total - i) for i in range(total)]
        docs: dict[str, Any] = {}
        for index, (key, score) in enumerate(zip(entry.ranking, scores)):
            if key in docs:
                raise InputError(source, "ranks one key twice, which a nested object cannot hold",
                                 field=f"{entry.query_id}.ranking[{index}]", found=describe_value(key))
            docs[key] = score
        if sorted(zip(scores, entry.ranking), reverse=True) != list(zip(scores, entry.ranking)):
            raise InputError(source, "scores out of the ranking's order (score descending, ties by doc id "
                             "descending), so a nested run would rank them otherwise", field=f"{entry.query_id}.scores",
                             found=describe_value(scores), hint="convert to run JSONL, which keeps the order as given")
        out[entry.query_id] = docs
    return _dump(out)
