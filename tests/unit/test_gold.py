"""Gold sets as rag-eval-gate reads them: its JSONL {query, relevant_doc_ids}, and qrels with a
queries file, each turned into canonical judgments without losing a query, text or grade."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest

from goldkeeper.core.gold import gold_query_id
from tests.conftest import run_cli

GOLD = [
    {"query": "how do I rotate a signing key", "relevant_doc_ids": ["kms-rotation"]},
    {"query": "refund window for annual plans", "relevant_doc_ids": ["refunds", "billing"]},
    {"query_id": "q9", "query": "set up SSO with Okta", "relevant_doc_ids": ["sso"]},
]


@pytest.fixture
def gold(tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in GOLD))
    return path


def test_a_gold_set_converts_to_judgments_and_says_which_ids_it_derived(gold):
    result = run_cli("convert", str(gold), "--to", "judgments")
    assert result.code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["query_id"], r["query"], r["doc_uri"], r["relevance"]) for r in rows] == [
        ("gq:" + hashlib.sha256(b"how do I rotate a signing key").hexdigest()[:12], "how do I rotate a signing key",
         "kms-rotation", 1),
        (gold_query_id("refund window for annual plans"), "refund window for annual plans", "refunds", 1),
        (gold_query_id("refund window for annual plans"), "refund window for annual plans", "billing", 1),
        ("q9", "set up SSO with Okta", "sso", 1),
    ]
    assert result.stderr == ("note: 2 query id(s) derived from the query text ('gq:' and 12 hex digits of its "
                             "sha256); give a line query_id to choose one\n")
    # nothing lost: the gold set is rebuilt from the judgments, line for line
    rebuilt: dict[str, dict] = {}
    for row in rows:
        rebuilt.setdefault(row["query_id"], {"query": row["query"], "relevant_doc_ids": []})["relevant_doc_ids"].append(row["doc_uri"])
    assert [{k: v for k, v in line.items() if k != "query_id"} for line in GOLD] == list(rebuilt.values())
    again = run_cli("validate", "-", stdin=result.stdout.encode())
    assert again.code == 0, again.stdout


def test_a_gold_set_is_scored_like_its_judgments(gold, tmp_path):
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(run_cli("convert", str(gold), "--to", "judgments").stdout)
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps({"query_id": q, "ranking": docs}) + "\n" for q, docs in (
        (gold_query_id(GOLD[0]["query"]), ["kms-rotation", "x"]), (gold_query_id(GOLD[1]["query"]), ["x", "billing"]),
        ("q9", ["y"]))))
    args = ["-r", str(run), "-k", "1,2", "--no-intervals", "--format", "json", "--now", "2026-01-01T00:00:00Z"]
    from_gold = json.loads(run_cli("score", "-j", str(gold), *args).stdout)
    from_judgments = json.loads(run_cli("score", "-j", str(judgments), *args).stdout)
    assert from_gold["metrics"] == from_judgments["metrics"]
    assert from_gold["metrics"]["recall@2"]["value"] == pytest.approx((1 + 0.5 + 0) / 3)


@pytest.mark.parametrize(("line", "message"), [
    ({"query": "", "relevant_doc_ids": ["a"]}, "gold.jsonl:1: query: must be a non-empty string, got \"\""),
    ({"query": "x", "relevant_doc_ids": []}, "gold.jsonl:1: relevant_doc_ids: must be a non-empty list of document ids, got an empty list"),
    ({"query": "x", "relevant_doc_ids": ["a", "a"]}, "gold.jsonl:1: relevant_doc_ids[1]: names a document twice, got \"a\""),
    ({"query": "x", "relevant_doc_ids": ["a"], "relevance": 2},
     "gold.jsonl:1: relevance: is a judgment field, which a gold line cannot set (its documents are grade 1), got 2"),
    ({"query": "x", "relevant_doc_ids": 7}, "gold.jsonl:1: relevant_doc_ids: must be a non-empty list of document ids, got 7"),
], ids=["empty-query", "no-documents", "document-twice", "judgment-field", "not-a-list"])
def test_a_bad_gold_line_is_refused_with_its_line_and_field(tmp_path, line, message):
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps(line) + "\n")
    result = run_cli("convert", str(path), "--to", "judgments")
    assert result.code == 2
    assert message in result.stderr


def test_gold_lines_as_rag_eval_gate_reads_them_one_string_and_extra_fields(tmp_path):
    """Restates rag-eval-gate's tests/test_pipeline.py TestGoldSet::test_accepts_a_single_string_of_relevant_ids and
    ::test_keeps_extra_fields_without_choking_on_them: the extra field is kept on the labels goldkeeper writes."""
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps({"query": "q one", "relevant_doc_ids": "d1", "lang": "en"}) + "\n"
                    + json.dumps({"query": "q two", "relevant_doc_ids": ["d2", "d3"], "meta": {"split": "dev"}}) + "\n")
    result = run_cli("convert", str(path), "--to", "judgments")
    assert result.code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["query_id"], r["doc_uri"], r.get("lang"), r.get("meta")) for r in rows] == [
        (gold_query_id("q one"), "d1", "en", None), (gold_query_id("q two"), "d2", None, {"split": "dev"}),
        (gold_query_id("q two"), "d3", None, {"split": "dev"})]
    judged = tmp_path / "judgments.jsonl"
    judged.write_text(result.stdout)
    again = run_cli("convert", str(judged), "--to", "judgments")  # read back, written back: kept
    assert again.code == 0 and again.stdout == result.stdout


def test_one_query_on_two_lines_is_refused(tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps({"query": "same", "relevant_doc_ids": [d]}) + "\n" for d in ("a", "b")))
    result = run_cli("convert", str(path), "--to", "judgments")
    assert result.code == 2 and "gold.jsonl:2: query: names a query already on line 1" in result.stderr


def test_qrels_with_a_queries_file_become_judgments_with_their_texts_and_grades(tmp_path, trec_eval_dir):
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq2\td3\t0\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                               for q, t in (("q1", "first"), ("q2", "second"), ("q3", "not judged: left out"))))
    result = run_cli("convert", str(qrels), "--to", "judgments", "--queries-file", str(queries))
    assert result.code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["query_id"], r["query"], r["doc_uri"], r["relevance"]) for r in rows] == [
        ("q1", "first", "d1", 2), ("q2", "second", "d2", 1), ("q2", "second", "d3", 0)]
    queries.write_text(json.dumps({"query_id": "q1", "query": "first"}) + "\n")  # goldkeeper's wording
    missing = run_cli("convert", str(qrels), "--to", "judgments", "--queries-file", str(queries))
    assert missing.code == 2
    assert missing.stderr == (f'error: {queries}: query_id: has no line for a judged query, got "q2" (hint: every query '
                              'the judgments name needs its text in the queries file)\n')


def test_eval_takes_gold_and_qrels_with_queries_as_the_seed_does(tmp_path):
    script = tmp_path / "search.py"
    script.write_text("import json, sys\nprint(json.dumps([{'id': 'd1'} if sys.argv[2] == 'first' else {'id': 'zz'}]))\n")
    command = json.dumps([sys.executable, str(script), "--", "{query}"])
    qrels = tmp_path / "qrels.test"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in (("q1", "first"), ("q2", "second"))))
    result = run_cli("eval", "--gold", str(qrels), "--queries-file", str(queries), "--backend", "command",
                     "--command", command, "-k", "1", "--out", str(tmp_path / "out"), "--format", "json")
    assert result.code == 0, result.stderr
    report = next(iter(json.loads(result.stdout)["systems"].values()))
    assert report["metrics"]["recall@1"]["value"] == 0.5
    without = run_cli("eval", "--gold", str(qrels), "--backend", "command", "--command", command,
                      "--out", str(tmp_path / "o2"))
    assert without.code == 2 and "no query text" in without.stderr


def test_the_python_api_reads_gold_sets_and_qrels_with_queries(gold, tmp_path):
    import goldkeeper

    labels = goldkeeper.read_judgments(str(gold))
    assert [(j.query_id, j.doc_uri) for j in labels][-1] == ("q9", "sso")
    qrels = tmp_path / "qrels.test"
    qrels.write_text("q1 0 d1 1\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"_id": "q1", "text": "first"}) + "\n")
    assert goldkeeper.read_judgments(str(qrels), queries=str(queries))[0].query == "first"
