"""Pool completion (issue 41): after a re-chunk, runs rank live chunks nobody graded for their
query, and judged@k falls. The suite's judge grades them, and its grades are added as labels.

- ``pool_items``: per query, the live chunks its runs rank in their top ``depth`` that the
  query has no label on, as one item shaped like a queue item (``action`` "judge", ``status``
  "UNJUDGED", its candidates those chunks), so the judge, the audit sample and the audit form
  take it as they take the queue's.
- ``pooled_labels``: the judge's grades of those items as new labels, each marked
  ``pooled_from`` (the item's id), so they can be told from people's and set aside, in the
  stratum of the query's other labels.

Nothing is guessed: a query without a query text (TREC qrels) has nothing for a judge to
read, and is left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from goldkeeper.core.drift import LiveChunk
from goldkeeper.core.rejudge import label_on, quote_problem, span_on

__all__ = ["pool_item_id", "pool_items", "pooled_labels"]


def pool_item_id(query_id: str, chunk_ids: Iterable[str]) -> str:
    """A pool item's stable id: the same query and chunks give the same id on every run."""
    key = "\x1f".join(("pool", query_id, *chunk_ids))
    return "rq1:" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def pool_items(labels: Iterable[Mapping[str, Any]], runs: Iterable[Iterable[tuple[str, list[str]]]], depth: int,
               live: Mapping[str, LiveChunk], asked: Iterable[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The unjudged live chunks of the runs' top ``depth`` (each run as (query id, ranking)
    pairs), one item per query with a query text, in the order the queries were first
    labelled; candidates in the order the runs rank them. A chunk that is a candidate of a
    queue item of the query (``asked``) is that item's to answer, not the pool's."""
    texts: dict[str, str] = {}
    strata: dict[str, str] = {}
    labelled = {(item["query_id"], c["chunk_id"]) for item in asked for c in item.get("candidates") or []}
    for row in labels:
        if row.get("query") and row["query_id"] not in texts:
            texts[row["query_id"]] = row["query"]
        if row.get("stratum") and row["query_id"] not in strata:
            strata[row["query_id"]] = row["stratum"]
        labelled.add((row["query_id"], row.get("chunk_id") or ""))
    wanted: dict[str, dict[str, None]] = {}
    for run in runs:
        for query_id, ranking in run:
            if query_id in texts:
                found = wanted.setdefault(query_id, {})
                for chunk_id in ranking[:depth]:
                    if chunk_id in live and (query_id, chunk_id) not in labelled:
                        found[chunk_id] = None
    items = []
    for query_id, query in texts.items():
        chunks = [live[chunk_id] for chunk_id in wanted.get(query_id, {})]
        if not chunks:
            continue
        items.append({"item_id": pool_item_id(query_id, [c.chunk_id for c in chunks]), "action": "judge",
                      "status": "UNJUDGED", "query_id": query_id, "query": query, "doc_uri": chunks[0].doc_uri,
                      "relevance": 0, **({"stratum": strata[query_id]} if query_id in strata else {}),
                      "candidates": [{"chunk_id": c.chunk_id, "doc_uri": c.doc_uri, "ordinal": c.ordinal,
                                      "text": c.text, **({} if c.start_index is None else {"start_index": c.start_index})}
                                     for c in chunks]})
    return items


def pooled_labels(items: Iterable[Mapping[str, Any]], answers: Iterable[Mapping[str, Any]],
                  live: Mapping[str, LiveChunk], corpus_fingerprint: str | None) -> list[dict[str, Any]]:
    """Each of the judge's ``answers`` (queue-answer rows) on a pool item as a new label of its
    query on that chunk, canonical and checked; an answer's ``quote`` that places on the chunk
    is the label's span (proposed by the judge), one that does not is left out."""
    by_id = {item["item_id"]: item for item in items}
    out = []
    for line, answer in enumerate(answers, start=1):
        item = by_id.get(answer["item_id"])
        if item is None:
            continue
        chunk = live[answer["chunk_id"]]
        values: dict[str, Any] = {"query_id": item["query_id"], "query": item["query"], "doc_uri": chunk.doc_uri,
                                  "chunk_id": chunk.chunk_id, "relevance": answer["relevance"],
                                  "labeled_by": answer["labeled_by"], "labeled_at": answer["labeled_at"],
                                  "prompt_sha": answer["prompt_sha"], "pooled_from": item["item_id"]}
        if item.get("stratum"):
            values["stratum"] = item["stratum"]
        quote = answer.get("quote")
        if quote is not None and quote_problem(quote, chunk.text, chunk.start_index) is None:
            values["span"] = span_on(chunk, quote, None, answer["labeled_by"])
        out.append(label_on(values, chunk, corpus_fingerprint, "the judge's pool answers", line))
    return out
