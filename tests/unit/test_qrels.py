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


def _line_by_line(text):
    from goldkeeper.core import qrels

    original = qrels.parse_plain_trec_run
    qrels.parse_plain_trec_run = lambda _text: None
    try:
        return qrels.parse_trec_run(text)
    finally:
        qrels.parse_plain_trec_run = original


@pytest.mark.parametrize("seed", range(40))
def test_column_wise_trec_run_reader_agrees_with_the_line_reader(seed):
    """The column-wise fast path and the line reader give the same entries on every file the
    fast path accepts; on the others (comments, extra columns, signs, interleaved queries) the
    line reader decides, so the answer is the same too."""
    import random

    from goldkeeper.core import qrels

    rng = random.Random(seed)
    lines = []
    for query in range(rng.randint(1, 6)):
        for rank in range(rng.randint(1, 30)):
            score = rng.choice([rng.randint(0, 5), round(rng.random(), 3), 1e-3 * rng.randint(0, 3)])
            sep = rng.choice([" ", "\t", "  "])
            lines.append(sep.join([f"q{query}", "Q0", f"d{rng.randint(0, 40)}", str(rank + 1), str(score), "r"]))
    if seed % 4 == 1:
        rng.shuffle(lines)  # queries interleaved: not contiguous
    if seed % 5 == 2:
        lines.insert(rng.randrange(len(lines)), "# a comment")
    if seed % 7 == 3:
        lines[0] += " extra"
    if seed % 6 == 4:
        lines.insert(rng.randrange(len(lines)), "")
    text = rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n"])
    fast = qrels.parse_plain_trec_run(text)
    slow = _line_by_line(text)
    got = goldkeeper.parse_trec_run(text)
    as_tuples = lambda entries: [(e.query_id, e.ranking, e.scores) for e in entries]  # noqa: E731
    assert as_tuples(got) == as_tuples(slow)
    if fast is not None:
        assert as_tuples(fast) == as_tuples(slow)
    if seed % 4 == 0 and seed % 5 != 2 and seed % 7 != 3:
        assert fast is not None  # plain files take the fast path


@pytest.mark.parametrize(("bad", "field"), [
    ("q1 Q0 d1 1 nan r\n", "score"), ("q1 Q0 d1 x 0.5 r\n", "rank"), ("q1 Q0 d1 1 0.5\n", "columns"),
])
def test_a_bad_line_after_many_good_ones_is_named_by_the_line_reader(bad, field):
    text = "q1 Q0 d0 1 0.9 r\n" * 5000 + bad
    with pytest.raises(goldkeeper.InputError) as caught:
        goldkeeper.parse_trec_run(text)
    assert caught.value.line == 5001 and caught.value.field == field
