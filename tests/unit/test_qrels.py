"""TREC and BEIR interop details the fixtures do not pin."""

from __future__ import annotations

import pytest

import goldkeeper
from goldkeeper.core.qrels import detect_labels_format


def test_trec_qrels_accepts_tabs_any_iteration_token_and_comments():
    text = "# comment\nq1\tQ0\td1\t2\nq1 U0 d2 0\n\n  q2 0 d3 -2  \n"
    got = [(j.query_id, j.doc_uri, j.relevance) for j in goldkeeper.parse_trec_qrels(text)]
    assert got == [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 0)]


def test_as_chunk_ids_reads_the_doc_column_as_a_chunk_id():
    (label,) = goldkeeper.parse_trec_qrels("q1 0 c1:" + "a" * 32 + " 1\n", as_chunk_ids=True)
    assert label.chunk_id == label.doc_uri == "c1:" + "a" * 32


def test_trec_run_is_ordered_like_trec_eval_not_by_rank_column():
    text = "q1 Q0 a 1 0.5 r\nq1 Q0 b 2 0.9 r\nq1 Q0 c 3 0.5 r\nq1 Q0 d 4 0.7 r\n"
    (entry,) = goldkeeper.parse_trec_run(text)
    # score descending, then doc id descending for the tie at 0.5
    assert entry.ranking == ["b", "d", "c", "a"]


def test_trec_run_round_trips_its_scores_exactly():
    text = "q1 Q0 a 1 0.123456789012 r\nq1 Q0 b 2 0.1 r\n"
    entries = goldkeeper.parse_trec_run(text)
    again = goldkeeper.parse_trec_run(goldkeeper.to_trec_run(entries))
    assert again[0].ranking == entries[0].ranking
    assert again[0].scores == entries[0].scores


def test_trec_run_reads_the_shared_trec_eval_collection(trec_eval_dir):
    entries = goldkeeper.parse_trec_run((trec_eval_dir / "results.trunc").read_text())
    by_query = {e.query_id: e for e in entries}
    assert sorted(by_query) == ["301", "303"]
    assert (len(by_query["301"].ranking), len(by_query["303"].ranking)) == (500, 84)
    for entry in entries:
        assert entry.scores == sorted(entry.scores, reverse=True)


def test_qrels_from_the_trec_eval_collection(trec_eval_dir):
    text = (trec_eval_dir / "qrels.test").read_text()
    labels = goldkeeper.parse_trec_qrels(text)
    # Counted with awk on the file itself: 3,681 lines (the README's 3,985 is not this file).
    assert len(labels) == len([line for line in text.splitlines() if line.strip()]) == 3681
    assert sum(1 for j in labels if j.relevance >= 1) == 561
    assert {j.query_id for j in labels} == {"301", "302", "303"}


@pytest.mark.parametrize(("name", "text", "kind"), [
    ("a.jsonl", "", "jsonl"), ("a.tsv", "", "beir"), ("a.qrels", "", "trec"),
    ("-", '{"query_id": 1}', "jsonl"), ("-", "query-id\tcorpus-id\tscore\n", "beir"),
    ("-", "q1 0 d1 1\n", "trec"),
])
def test_detect_labels_format(name, text, kind):
    assert detect_labels_format(text, name) == kind
