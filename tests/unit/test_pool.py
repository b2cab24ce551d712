"""Pool completion (core.pool): the unjudged live chunks of the runs' top k become items the
judge grades, and its grades new labels that can be told apart and set aside."""

from __future__ import annotations

import goldkeeper
from goldkeeper.core.drift import LiveChunk
from goldkeeper.core.pool import pool_item_id, pool_items, pooled_labels
from goldkeeper.core.sampling import fully_judged, set_aside


def _chunk(doc: str, ordinal: int, text: str) -> LiveChunk:
    return LiveChunk(goldkeeper.chunk_id(doc, "r1", ordinal, text, "new"), doc, ordinal, text,
                     goldkeeper.text_sha(text))


A, B, C, D = (_chunk("kb://a", 0, "refunds take five days"), _chunk("kb://a", 1, "cancel any time"),
              _chunk("kb://b", 0, "two factor sign in"), _chunk("kb://b", 1, "audit logs export"))
LIVE = {c.chunk_id: c for c in (A, B, C, D)}
LABELS = [{"query_id": "q1", "query": "refund time", "doc_uri": "kb://a", "chunk_id": A.chunk_id, "relevance": 1,
           "stratum": "billing"},
          {"query_id": "q2", "doc_uri": "kb://b", "chunk_id": C.chunk_id, "relevance": 1}]  # no query text


def test_the_pool_is_the_unjudged_live_chunks_of_the_runs_top_k_per_query_with_a_text():
    runs = [[("q1", [A.chunk_id, "c1:gone", B.chunk_id, C.chunk_id, D.chunk_id])],
            [("q1", [D.chunk_id, B.chunk_id]), ("q2", [D.chunk_id])]]
    asked = [{"query_id": "q1", "candidates": [{"chunk_id": C.chunk_id}]}]  # a queue item's to answer
    (item,) = pool_items(LABELS, runs, 4, LIVE, asked)  # q2 has no query text: nothing for a judge
    # A is labelled, "gone" is not live, C is the queue item's, D is past the first run's top 4
    # but in the second's: B then D, in the order the runs rank them
    assert [c["chunk_id"] for c in item["candidates"]] == [B.chunk_id, D.chunk_id]
    assert (item["action"], item["status"], item["query"], item["stratum"]) == ("judge", "UNJUDGED", "refund time",
                                                                                "billing")
    assert item["item_id"] == pool_item_id("q1", [B.chunk_id, D.chunk_id])
    (first,) = pool_items(LABELS, runs, 1, LIVE)  # at depth 1: A (labelled) and the second run's D
    assert [c["chunk_id"] for c in first["candidates"]] == [D.chunk_id]
    assert pool_items(LABELS, runs[:1], 1, LIVE) == []


def test_the_judge_s_grades_are_new_labels_marked_and_set_aside_whole():
    (item,) = pool_items(LABELS, [[("q1", [B.chunk_id, D.chunk_id])]], 10, LIVE)
    answers = [{"item_id": item["item_id"], "chunk_id": B.chunk_id, "relevance": 1, "labeled_by": "synthetic:m",
                "labeled_at": "2026-12-04T00:00:00Z", "prompt_sha": "p1:0123456789abcdef"}]
    (partial,) = fully_judged([item], answers)  # a pool item keeps what the judge graded
    assert [c["chunk_id"] for c in partial["candidates"]] == [B.chunk_id]
    (label,) = pooled_labels([partial], answers, LIVE, "sentences/v2")
    assert (label["query_id"], label["chunk_id"], label["relevance"], label["pooled_from"]) == (
        "q1", B.chunk_id, 1, item["item_id"])
    assert label["text_sha"] == B.text_sha and label["stratum"] == "billing" and label["prompt_sha"].startswith("p1:")
    assert set_aside([*LABELS, label], [], [item["item_id"]]) == LABELS
