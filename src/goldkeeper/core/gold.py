"""Gold sets as rag-eval-gate reads them, as judgments.

rag-eval-gate's gold set is JSONL, one query a line: ``{"query": "...", "relevant_doc_ids":
["..."]}``, with no query id. Each line becomes one judgment per relevant document (grade 1,
``doc_uri`` the document id, ``query`` the text). A line may carry ``query_id`` (or ``id``);
otherwise the id is derived from the text, ``gq:`` and 12 hex digits of the sha256 of its UTF-8
bytes, so the same query gets the same id in every file and order, and the CLI says that it
derived them. Two lines with one query are refused, not merged, since a gold file is one line
a query. ``relevant_doc_ids`` may be one string (one document), as rag-eval-gate reads it. Any
other field (``"lang"``) is kept on each of the line's judgments, so it survives where goldkeeper
writes the labels back; only a field that is itself a judgment field (``relevance``,
``chunk_id``...) is refused, since it would contradict what the line says (every document grade 1).

Its other form is TREC or BEIR qrels with a queries file: BEIR's ``queries.jsonl``
(``{"_id", "text"}``) or goldkeeper's own wording (``{"query_id", "query"}``). The queries give
the judgments their text; a judged query missing from the file is refused, and queries the
qrels never judge (BEIR's file holds every split's) are left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from goldkeeper.core.jsonl import decode_jsonl
from goldkeeper.core.judgments import check_nfc
from goldkeeper.errors import InputError, describe_value
from goldkeeper.models.records import JUDGMENT_FIELDS

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment

__all__ = ["GOLD_KEY", "attach_queries", "gold_query_id", "looks_like_gold", "parse_gold", "parse_queries"]

#: The key that tells a gold line from a judgment.
GOLD_KEY = "relevant_doc_ids"
_GOLD_FIELDS = frozenset({"query", GOLD_KEY, "query_id", "id"})


def looks_like_gold(first_line: str) -> bool:
    """Whether a JSONL file whose first line is ``first_line`` is a rag-eval-gate gold set."""
    return f'"{GOLD_KEY}"' in first_line and '"query"' in first_line


def gold_query_id(query: str) -> str:
    """The id a gold line without one gets: ``gq:`` and the first 48 bits of sha256(query)."""
    return "gq:" + hashlib.sha256(query.encode("utf-8")).hexdigest()[:12]


def _text(value: Any, source: str, number: int, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(source, "must be a non-empty string", line=number, field=field, found=describe_value(value))
    return value


def parse_gold(lines: Iterable[bytes | str], source: str = "gold") -> tuple[list[Judgment], int]:
    """Judgments from a gold set's lines, and how many query ids were derived from the text."""
    from goldkeeper.models.judgment import Judgment

    out: list[Judgment] = []
    seen: dict[str, int] = {}
    derived = 0
    for number, row in decode_jsonl(lines, source):
        if not isinstance(row, dict):
            raise InputError(source, "a gold line is an object {query, relevant_doc_ids}", line=number, field="line",
                             found=describe_value(row))
        extra = {key: value for key, value in row.items() if key not in _GOLD_FIELDS}
        clashing = sorted(set(extra) & set(JUDGMENT_FIELDS))
        if clashing:
            raise InputError(source, "is a judgment field, which a gold line cannot set (its documents are grade 1)",
                             line=number, field=clashing[0], found=describe_value(row[clashing[0]]),
                             hint="write judgments JSONL for graded labels")
        query = _text(row.get("query"), source, number, "query")
        given = row.get("query_id", row.get("id"))
        if given is None:
            query_id, derived = gold_query_id(query), derived + 1
        else:
            query_id = _text(str(given) if isinstance(given, int) and not isinstance(given, bool) else given,
                             source, number, "query_id")
        if query_id in seen:
            raise InputError(source, f"names a query already on line {seen[query_id]}; a gold set has one line a query",
                             line=number, field="query", found=describe_value(query))
        seen[query_id] = number
        docs = row.get(GOLD_KEY)
        if isinstance(docs, str):
            docs = [docs]
        if not isinstance(docs, list) or not docs:
            raise InputError(source, "must be a non-empty list of document ids", line=number, field=GOLD_KEY,
                             found="an empty list" if docs == [] else describe_value(docs))
        for index, doc in enumerate(docs):
            doc_id = _text(doc, source, number, f"{GOLD_KEY}[{index}]")
            if docs.index(doc) != index:
                raise InputError(source, "names a document twice", line=number, field=f"{GOLD_KEY}[{index}]",
                                 found=describe_value(doc))
            check_nfc({"query_id": query_id, "doc_uri": doc_id, "query": query}, source, number)
            out.append(Judgment.model_construct(query_id=query_id, query=query, doc_uri=doc_id, relevance=1, **extra))
    return out, derived


def parse_queries(lines: Iterable[bytes | str], source: str = "queries") -> dict[str, str]:
    """Query texts by id from BEIR's ``{"_id", "text"}`` lines or ``{"query_id", "query"}``."""
    texts: dict[str, tuple[str, int]] = {}
    for number, row in decode_jsonl(lines, source):
        if not isinstance(row, dict):
            raise InputError(source, "a query line is an object", line=number, field="line", found=describe_value(row))
        id_field, text_field = ("_id", "text") if "_id" in row else ("query_id", "query")
        query_id = row.get(id_field)
        if isinstance(query_id, int) and not isinstance(query_id, bool):
            query_id = str(query_id)
        query_id = _text(query_id, source, number, id_field)
        text = _text(row.get(text_field), source, number, text_field)
        if query_id in texts:
            raise InputError(source, f"names a query already on line {texts[query_id][1]}", line=number,
                             field=id_field, found=describe_value(query_id))
        texts[query_id] = (text, number)
    return {query_id: text for query_id, (text, _) in texts.items()}


def attach_queries(rows: Iterable[dict[str, Any]], texts: dict[str, str], source: str) -> Iterator[dict[str, Any]]:
    """Label rows with their query's text from ``texts``; a judged query without one is refused."""
    for row in rows:
        text = texts.get(row["query_id"])
        if text is None:
            raise InputError(source, "has no line for a judged query", field="query_id",
                             found=describe_value(row["query_id"]),
                             hint="every query the judgments name needs its text in the queries file")
        if row.get("query") not in (None, text):
            raise InputError(source, f"gives query {row['query_id']} another text than the judgments",
                             field="text", found=describe_value(text))
        yield {**row, "query": text}
