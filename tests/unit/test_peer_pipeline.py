"""rag-eval-gate's own tests/test_pipeline.py (0.2.1, from its sdist), restated against
goldkeeper (issue 42): each test names the peer test it restates. Where goldkeeper does
otherwise on purpose, the test asserts goldkeeper's behaviour and says which difference of
spec/eval.md or spec/formats.md it is."""

from __future__ import annotations

import json

import pytest

import goldkeeper
from goldkeeper.core.gold import gold_query_id
from goldkeeper.errors import InputError
from goldkeeper.io.retrievers import Query, RetrieverError, hits_from_payload

QUERY = Query("q1", "a b&c", 10, "hybrid")


def _gold(tmp_path, text: str, name: str = "gold.jsonl", **options):
    path = tmp_path / name
    path.write_text(text)
    return goldkeeper.read_judgments(str(path), **options)


# JsonlGoldTest --------------------------------------------------------------------------------

def test_reads_the_documented_shape(tmp_path):
    """JsonlGoldTest::test_reads_the_documented_shape. Difference (spec/formats.md, gold sets):
    the query's id is derived from its text (gq: and 12 hex digits), not the text itself."""
    (label,) = _gold(tmp_path, json.dumps({"query": "rotate a key", "relevant_doc_ids": ["kms"]}) + "\n")
    assert (label.query, label.doc_uri, label.relevance, label.query_id) == (
        "rotate a key", "kms", 1, gold_query_id("rotate a key"))


def test_accepts_a_single_string_of_relevant_ids(tmp_path):
    """JsonlGoldTest::test_accepts_a_single_string_of_relevant_ids."""
    (label,) = _gold(tmp_path, '{"query": "q", "relevant_doc_ids": "only-one"}\n')
    assert label.doc_uri == "only-one"


def test_keeps_extra_fields_without_choking_on_them(tmp_path):
    """JsonlGoldTest::test_keeps_extra_fields_without_choking_on_them."""
    (label,) = _gold(tmp_path, '{"query": "q", "relevant_doc_ids": ["d"], "lang": "ko"}\n')
    assert label.extra == {"lang": "ko"}


def test_blank_lines_are_skipped(tmp_path):
    """JsonlGoldTest::test_blank_lines_are_skipped."""
    labels = _gold(tmp_path, '{"query": "a", "relevant_doc_ids": ["1"]}\n\n{"query": "b", "relevant_doc_ids": ["2"]}\n')
    assert [label.doc_uri for label in labels] == ["1", "2"]


def test_a_query_with_no_judgements_is_refused_loudly(tmp_path):
    """JsonlGoldTest::test_a_query_with_no_judgements_is_refused_loudly."""
    with pytest.raises(InputError, match="relevant_doc_ids: must be a non-empty list of document ids"):
        _gold(tmp_path, '{"query": "q", "relevant_doc_ids": []}\n')


def test_malformed_json_names_the_line(tmp_path):
    """JsonlGoldTest::test_malformed_json_names_the_line."""
    with pytest.raises(InputError, match=r"gold\.jsonl:2: json: not valid JSON"):
        _gold(tmp_path, '{"query": "ok", "relevant_doc_ids": ["d"]}\nnot json\n')


def test_an_empty_file_is_an_error_not_an_empty_run(tmp_path):
    """JsonlGoldTest::test_an_empty_file_is_an_error_not_an_empty_run."""
    with pytest.raises(InputError, match="holds no JSON line"):
        _gold(tmp_path, "\n\n")


# TrecQrelsTest --------------------------------------------------------------------------------

HF_STYLE = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq2\td3\t0\n"
CLASSIC = "q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 0\n"


def _relevant(labels, threshold: int = 1) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for label in labels:
        if label.relevance >= threshold:
            found.setdefault(label.query_id, set()).add(label.doc_uri)
    return found


def test_reads_the_three_column_flavour(tmp_path):
    """TrecQrelsTest::test_reads_the_three_column_flavour. Difference (spec/formats.md): a grade-0
    line is kept as a judgment (judged not relevant, which judged@k counts), and q2, with no
    relevant document, is not scored; the peer drops both."""
    labels = _gold(tmp_path, HF_STYLE, "qrels.tsv")
    assert _relevant(labels) == {"q1": {"d1", "d2"}}
    assert ("q2", "d3", 0) in [(label.query_id, label.doc_uri, label.relevance) for label in labels]


def test_reads_the_classic_four_column_flavour(tmp_path):
    """TrecQrelsTest::test_reads_the_classic_four_column_flavour."""
    assert _relevant(_gold(tmp_path, CLASSIC, "qrels.test")) == {"q1": {"d1", "d2"}}


def test_the_relevance_cutoff_is_applied(tmp_path):
    """TrecQrelsTest::test_the_relevance_cutoff_is_applied (goldkeeper's --threshold, scoring's
    relevance cutoff, applied when scored)."""
    labels = _gold(tmp_path, HF_STYLE, "qrels.tsv")
    scored = goldkeeper.score(labels, [{"query_id": "q1", "ranking": ["d2"]}], k=[1], threshold=2, intervals=False)
    assert scored.metrics["recall@1"]["value"] == 1.0  # d2 is q1's only relevant document at grade 2


def test_joins_query_text_when_a_queries_file_is_given(tmp_path):
    """TrecQrelsTest::test_joins_query_text_when_a_queries_file_is_given."""
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "the question"}\n{"_id": "q2", "text": "x"}\n')
    labels = _gold(tmp_path, HF_STYLE, "qrels.tsv", queries=str(tmp_path / "queries.jsonl"))
    assert {label.query for label in labels if label.query_id == "q1"} == {"the question"}


def test_without_query_text_the_id_is_the_search_key(tmp_path):
    """TrecQrelsTest::test_without_query_text_the_id_is_the_search_key: with no text, a run file
    (addressed by id) still evaluates; a retriever that needs the text is refused up front."""
    from tests.conftest import run_cli

    (tmp_path / "qrels.tsv").write_text(HF_STYLE)
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n")
    by_id = run_cli("eval", "qrels.tsv", "--backend", "run-file", "--run-file", "run.trec", "--quiet", cwd=tmp_path)
    assert by_id.code == 0, by_id.stderr
    by_text = run_cli("eval", "qrels.tsv", "--url-template", "http://127.0.0.1:9/?q={query}", cwd=tmp_path)
    assert by_text.code == 2 and "no query text" in by_text.stderr


# HttpBackendParsingTest and DigTest -------------------------------------------------------------

def test_reads_the_configured_fields():
    """HttpBackendParsingTest::test_reads_the_configured_fields: the peer's default shape,
    {"results": [{"docId", "score"}]}, read with goldkeeper's defaults."""
    found = hits_from_payload({"results": [{"docId": "a", "score": 0.5}]}, QUERY)
    assert (found.ids, found.scores) == (("a",), (0.5,))


def test_field_names_are_not_assumed():
    """HttpBackendParsingTest::test_field_names_are_not_assumed."""
    found = hits_from_payload([{"document_id": "a", "relevance": 2.0}], QUERY, "", "document_id", "relevance")
    assert (found.ids, found.scores) == (("a",), (2.0,))


def test_a_bare_string_hit_is_a_document_id():
    """HttpBackendParsingTest::test_a_bare_string_hit_is_a_document_id."""
    assert hits_from_payload(["just-an-id"], QUERY).ids == ("just-an-id",)


def test_a_missing_id_field_says_what_was_there():
    """HttpBackendParsingTest::test_a_missing_id_field_says_which_keys_were_there (goldkeeper
    shows the hit itself, which holds its keys)."""
    with pytest.raises(RetrieverError) as caught:
        hits_from_payload([{"uuid": "a"}], QUERY, "", "docId")
    assert "needs a string 'docId'" in str(caught.value) and '"uuid"' in str(caught.value)


def test_scores_are_optional():
    """HttpBackendParsingTest::test_scores_are_optional."""
    assert hits_from_payload([{"id": "a"}], QUERY).scores is None
    assert hits_from_payload([{"id": "a", "score": 1.0}], QUERY, score_field=None).scores is None


def test_a_url_template_percent_encodes_the_query():
    """HttpBackendParsingTest::test_a_url_template_percent_encodes_the_query, on a server on
    loopback that records the path it was asked."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from goldkeeper.io.retrievers import HttpRetriever

    asked: list[str] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b"[]")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        retriever = HttpRetriever(f"http://127.0.0.1:{server.server_port}/search?q={{query}}&m={{mode}}")
        assert retriever.search(QUERY).ids == ()
        retriever.close()
    finally:
        server.shutdown()
        server.server_close()
    assert asked == ["/search?q=a%20b%26c&m=hybrid"]


def test_follows_a_nested_path_and_indexes_into_lists():
    """DigTest::test_follows_a_nested_path, ::test_indexes_into_lists, ::test_an_empty_path_returns_the_whole_body."""
    assert hits_from_payload({"data": {"hits": ["1", "2"]}}, QUERY, "data.hits").ids == ("1", "2")
    assert hits_from_payload({"a": [{"b": ["7"]}]}, QUERY, "a.0.b").ids == ("7",)
    assert hits_from_payload(["1", "2"], QUERY, "").ids == ("1", "2")


def test_a_wrong_path_reports_what_was_there():
    """DigTest::test_a_wrong_path_reports_what_was_available."""
    with pytest.raises(RetrieverError) as caught:
        hits_from_payload({"results": []}, QUERY, "hits")
    assert "no 'hits' on the way to results path 'hits'" in str(caught.value)


# MetricTest ------------------------------------------------------------------------------------

def _one(relevant: list[str], ranking: list[str], k: int = 10) -> dict[str, float]:
    labels = [{"query_id": "q", "doc_uri": doc, "relevance": 1} for doc in relevant]
    return goldkeeper.score(labels, [{"query_id": "q", "ranking": ranking}], k=sorted({5, k}), intervals=False).per_query["q"]


def test_a_first_rank_hit_scores_one_everywhere():
    """MetricTest::test_a_first_rank_hit_scores_one_everywhere."""
    found = _one(["a"], ["a", "b", "c"])
    assert (found["recall@5"], found["mrr@10"], found["ndcg@10"]) == (1.0, 1.0, 1.0)


def test_reciprocal_rank_and_ndcg_follow_the_closed_form():
    """MetricTest::test_reciprocal_rank_and_ndcg_follow_the_closed_form."""
    import math

    found = _one(["c"], ["a", "b", "c"])
    assert found["mrr@10"] == pytest.approx(1 / 3, abs=1e-12) and found["ndcg@10"] == pytest.approx(1 / math.log2(4), abs=1e-12)


def test_a_miss_scores_zero_rather_than_erroring():
    """MetricTest::test_a_miss_scores_zero_rather_than_erroring."""
    found = _one(["z"], ["a", "b"])
    assert (found["recall@5"], found["mrr@10"], found["ndcg@10"]) == (0.0, 0.0, 0.0)


def test_recall_cutoffs_are_respected():
    """MetricTest::test_recall_cutoffs_are_respected."""
    found = _one(["f"], ["a", "b", "c", "d", "e", "f"])
    assert (found["recall@5"], found["recall@10"]) == (0.0, 1.0)


def test_chunks_of_one_document_occupy_one_rank():
    """MetricTest::test_chunks_of_one_document_occupy_one_rank: a repeated id counts once, at
    its first rank (spec/metrics.md), so the next document is at rank 2."""
    found = _one(["doc-b"], ["doc-a", "doc-a", "doc-a", "doc-b"])
    assert found["mrr@10"] == 0.5


def test_ndcg_never_exceeds_one_and_its_ideal_is_capped_at_the_depth():
    """MetricTest::test_ndcg_never_exceeds_one_even_with_many_relevant_documents and
    ::test_the_ideal_is_capped_at_the_ranking_depth."""
    found = _one([f"d{i}" for i in range(20)], [f"d{i}" for i in range(10)])
    assert found["ndcg@10"] == pytest.approx(1.0, abs=1e-12)


def test_aggregate_averages_every_reported_metric():
    """MetricTest::test_aggregate_averages_every_reported_metric and ::test_values_of_returns_the_per_query_series."""
    labels = [{"query_id": "a", "doc_uri": "x", "relevance": 1}, {"query_id": "b", "doc_uri": "y", "relevance": 1}]
    result = goldkeeper.score(labels, [{"query_id": "a", "ranking": ["x"]}, {"query_id": "b", "ranking": ["z", "y"]}],
                              k=[10], intervals=False)
    assert result.metrics["mrr@10"]["value"] == pytest.approx((1.0 + 0.5) / 2, abs=1e-12)
    assert [result.per_query[q]["mrr@10"] for q in ("a", "b")] == [1.0, 0.5]


# RunFileTest -----------------------------------------------------------------------------------

RUN = "q1 Q0 d5 1 9.5 bm25\nq1 Q0 d2 2 8.1 bm25\nq2 Q0 d9 1 7.0 bm25\n"


def test_reads_rank_order_and_scores(tmp_path):
    """RunFileTest::test_reads_rank_order_and_scores."""
    (tmp_path / "run.trec").write_text(RUN)
    first = goldkeeper.read_run(str(tmp_path / "run.trec"))[0]
    assert (first.query_id, first.ranking, first.scores[0]) == ("q1", ["d5", "d2"], 9.5)


def test_rows_are_ordered_by_score_not_file_order(tmp_path):
    """RunFileTest::test_rows_are_sorted_by_the_rank_column_not_file_order. Difference: ordered
    by score, descending, as trec_eval orders them (here score and rank agree)."""
    (tmp_path / "run.trec").write_text("q1 Q0 d2 2 8.1 x\nq1 Q0 d5 1 9.5 x\n")
    assert goldkeeper.read_run(str(tmp_path / "run.trec"))[0].ranking == ["d5", "d2"]


def test_comments_and_blank_lines_are_skipped(tmp_path):
    """RunFileTest::test_comments_and_blank_lines_are_skipped."""
    (tmp_path / "run.trec").write_text("# a comment\n\n" + RUN)
    assert sorted(entry.query_id for entry in goldkeeper.read_run(str(tmp_path / "run.trec"))) == ["q1", "q2"]


def test_an_unknown_query_is_a_miss_and_said(tmp_path):
    """RunFileTest::test_an_unknown_query_explains_that_ids_must_match: a judged query the run
    lacks is an error for that query, which names it, and the verdict counts it."""
    from tests.conftest import run_cli

    (tmp_path / "run.trec").write_text(RUN)
    (tmp_path / "qrels.test").write_text("q1 0 d5 1\nq7 0 d1 1\n")
    result = run_cli("eval", "qrels.test", "--backend", "run-file", "--run-file", "run.trec", "--format", "json",
                     "--quiet", cwd=tmp_path)
    errors = next(iter(json.loads(result.stdout)["systems"].values()))["retrieval"]
    assert result.code == 1 and errors["errors"] == 1


def test_a_truncated_line_names_its_number(tmp_path):
    """RunFileTest::test_a_truncated_line_names_its_number."""
    (tmp_path / "run.trec").write_text("q1 Q0\n")
    with pytest.raises(InputError, match=r"run\.trec:1: columns: a TREC run line has 6 columns"):
        goldkeeper.read_run(str(tmp_path / "run.trec"))
