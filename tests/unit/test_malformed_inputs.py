"""Bad input gets one line naming file, line and field, and exit 2; never a traceback.

Every case runs through the API (``parse_judgments`` raising ``InputError``) and through the
real command (``goldkeeper validate``, which takes the block-at-a-time fast path, and
``goldkeeper convert``, which takes the line-by-line one), so both decoders are held to the
same line and the same words.
"""

from __future__ import annotations

import pytest

import goldkeeper
from tests.conftest import run_cli

G = b'{"query_id":"q1","doc_uri":"d1","relevance":1}\n'  # a good line


def row(body: str) -> bytes:
    return body.encode("utf-8") + b"\n"


# (id, file bytes, line, field)
JUDGMENTS = [
    ("bom", b"\xef\xbb\xbf" + G, 1, "encoding"),
    ("crlf-first-line", G[:-1] + b"\r\n", 1, "line ending"),
    ("crlf-second-line", G + G[:-1] + b"\r\n", 2, "line ending"),
    ("non-utf8-byte-ff", G + b'{"query_id":"q\xff","doc_uri":"d","relevance":1}\n', 2, "encoding"),
    ("latin1-e-acute", b'{"query_id":"caf\xe9","doc_uri":"d","relevance":1}\n', 1, "encoding"),
    ("truncated-utf8", b'{"query_id":"\xe2\x82","doc_uri":"d","relevance":1}\n', 1, "encoding"),
    ("array-not-object", G + b"[1,2]\n", 2, "line"),
    ("string-not-object", b'"hello"\n', 1, "line"),
    ("number-not-object", b"42\n", 1, "line"),
    ("null-not-object", b"null\n", 1, "line"),
    ("true-not-object", b"true\n", 1, "line"),
    ("duplicate-query-id", row('{"query_id":"q","query_id":"r","doc_uri":"d","relevance":1}'), 1, "query_id"),
    ("duplicate-relevance", row('{"query_id":"q","doc_uri":"d","relevance":1,"relevance":0}'), 1, "relevance"),
    ("duplicate-unknown", row('{"query_id":"q","doc_uri":"d","relevance":1,"x":1,"x":2}'), 1, "x"),
    ("duplicate-nested", row('{"query_id":"q","doc_uri":"d","relevance":1,"m":{"a":1,"a":2}}'), 1, "a"),
    ("duplicate-spaced", row('{"query_id" : "q", "doc_uri" : "d", "relevance" : 1, "doc_uri" : "e"}'), 1, "doc_uri"),
    ("relevance-true", row('{"query_id":"q","doc_uri":"d","relevance":true}'), 1, "relevance"),
    ("relevance-false", row('{"query_id":"q","doc_uri":"d","relevance":false}'), 1, "relevance"),
    ("relevance-float-whole", row('{"query_id":"q","doc_uri":"d","relevance":1.0}'), 1, "relevance"),
    ("relevance-float", row('{"query_id":"q","doc_uri":"d","relevance":1.5}'), 1, "relevance"),
    ("relevance-exponent", row('{"query_id":"q","doc_uri":"d","relevance":1e0}'), 1, "relevance"),
    ("relevance-1024", row('{"query_id":"q","doc_uri":"d","relevance":1024}'), 1, "relevance"),
    ("relevance-huge", row('{"query_id":"q","doc_uri":"d","relevance":99999999999999999999999}'), 1, "relevance"),
    ("relevance-negative", row('{"query_id":"q","doc_uri":"d","relevance":-1}'), 1, "relevance"),
    ("relevance-string", row('{"query_id":"q","doc_uri":"d","relevance":"1"}'), 1, "relevance"),
    ("relevance-null", row('{"query_id":"q","doc_uri":"d","relevance":null}'), 1, "relevance"),
    ("relevance-missing", row('{"query_id":"q","doc_uri":"d"}'), 1, "relevance"),
    ("relevance-array", row('{"query_id":"q","doc_uri":"d","relevance":[1]}'), 1, "relevance"),
    ("query-id-missing", row('{"doc_uri":"d","relevance":1}'), 1, "query_id"),
    ("query-id-empty", row('{"query_id":"","doc_uri":"d","relevance":1}'), 1, "query_id"),
    ("query-id-number", row('{"query_id":7,"doc_uri":"d","relevance":1}'), 1, "query_id"),
    ("query-id-null", row('{"query_id":null,"doc_uri":"d","relevance":1}'), 1, "query_id"),
    ("doc-uri-missing", row('{"query_id":"q","relevance":1}'), 1, "doc_uri"),
    ("doc-uri-empty", row('{"query_id":"q","doc_uri":"","relevance":1}'), 1, "doc_uri"),
    ("doc-uri-array", row('{"query_id":"q","doc_uri":["d"],"relevance":1}'), 1, "doc_uri"),
    ("query-number", row('{"query_id":"q","query":5,"doc_uri":"d","relevance":1}'), 1, "query"),
    ("chunk-id-number", row('{"query_id":"q","doc_uri":"d","chunk_id":12,"relevance":1}'), 1, "chunk_id"),
    ("text-sha-bool", row('{"query_id":"q","doc_uri":"d","text_sha":true,"relevance":1}'), 1, "text_sha"),
    ("chunk-text-object", row('{"query_id":"q","doc_uri":"d","chunk_text":{},"relevance":1}'), 1, "chunk_text"),
    ("fingerprint-null", row('{"query_id":"q","doc_uri":"d","relevance":1,"corpus_fingerprint":null}'), 1, "corpus_fingerprint"),
    ("labeled-by-number", row('{"query_id":"q","doc_uri":"d","relevance":1,"labeled_by":1}'), 1, "labeled_by"),
    ("labeled-at-number", row('{"query_id":"q","doc_uri":"d","relevance":1,"labeled_at":20260101}'), 1, "labeled_at"),
    ("stratum-array", row('{"query_id":"q","doc_uri":"d","relevance":1,"stratum":["a"]}'), 1, "stratum"),
    ("notes-bool", row('{"query_id":"q","doc_uri":"d","relevance":1,"notes":false}'), 1, "notes"),
    ("empty-file", b"", 1, "file"),
    ("blank-lines-only", b"\n\n  \n", 3, "file"),
    ("trailing-comma", row('{"query_id":"q","doc_uri":"d","relevance":1,}'), 1, "json"),
    ("single-quotes", row("{'query_id':'q','doc_uri':'d','relevance':1}"), 1, "json"),
    ("unquoted-key", row('{query_id:"q","doc_uri":"d","relevance":1}'), 1, "json"),
    ("truncated-object", G + b'{"query_id":"q","doc_uri":"d","rel\n', 2, "json"),
    ("nan", row('{"query_id":"q","doc_uri":"d","relevance":1,"score":NaN}'), 1, "json"),
    ("infinity", row('{"query_id":"q","doc_uri":"d","relevance":1,"score":Infinity}'), 1, "json"),
    ("minus-infinity", row('{"query_id":"q","doc_uri":"d","relevance":1,"score":-Infinity}'), 1, "json"),
    ("comment-line", b"// labels\n" + G, 1, "json"),
    ("lone-surrogate", row('{"query_id":"q\\ud800","doc_uri":"d","relevance":1}'), 1, "json"),
    ("trailing-garbage", row('{"query_id":"q","doc_uri":"d","relevance":1} x'), 1, "json"),
    ("two-objects-one-line", G[:-1] + G, 1, "json"),
    ("nfd-query-id", row('{"query_id":"cafe\u0301","doc_uri":"d","relevance":1}'), 1, "query_id"),
    ("nfd-doc-uri", row('{"query_id":"q","doc_uri":"docs/cafe\u0301.md","relevance":1}'), 1, "doc_uri"),
    ("nfd-stratum", row('{"query_id":"q","doc_uri":"d","relevance":1,"stratum":"se\u0301curite\u0301"}'), 1, "stratum"),
    ("third-line-after-good-ones", G + G + row('{"query_id":"q","doc_uri":"d","relevance":true}'), 3, "relevance"),
    ("line-count-includes-blanks", G + b"\n\n" + row('{"query_id":"q","doc_uri":"d"}'), 4, "relevance"),
    ("bom-on-second-line", G + b"\xef\xbb\xbf" + G, 2, "json"),
    ("raw-control-char", row('{"query_id":"q\x01","doc_uri":"d","relevance":1}'), 1, "json"),
    ("bad-escape", row('{"query_id":"q\\x41","doc_uri":"d","relevance":1}'), 1, "json"),
    ("not-json-at-all", b"query_id,doc_uri,relevance\n", 1, "json"),
]


@pytest.mark.parametrize(("data", "line", "field"), [c[1:] for c in JUDGMENTS], ids=[c[0] for c in JUDGMENTS])
def test_api_refuses_with_file_line_and_field(data, line, field):
    with pytest.raises(goldkeeper.InputError) as caught:
        goldkeeper.parse_judgments(data, "labels.jsonl")
    error = caught.value
    assert (error.line, error.field) == (line, field)
    assert str(error).startswith(f"labels.jsonl:{line}: {field}: ")
    assert "\n" not in str(error)
    assert ", got " in str(error)


@pytest.mark.parametrize(("data", "line", "field"), [c[1:] for c in JUDGMENTS], ids=[c[0] for c in JUDGMENTS])
def test_cli_validate_prints_one_line_and_exits_2(tmp_path, data, line, field):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(data)
    result = run_cli("validate", str(path))
    assert result.code == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {path}:{line}: {field}: "), lines[0]


def test_more_than_sixty_malformed_inputs_are_covered():
    assert len(JUDGMENTS) >= 60
    assert len({c[0] for c in JUDGMENTS}) == len(JUDGMENTS)


# qrels, BEIR and TREC runs through `convert` ---------------------------------------------------

LABEL_FILES = [
    ("qrels-fractional", "x.qrels", b"q1 0 d1 1.5\n", 1, "grade"),
    ("qrels-three-columns", "x.qrels", b"q1 0 d1 1\nq1 d2 1\n", 2, "columns"),
    ("qrels-five-columns", "x.qrels", b"q1 0 d1 1 extra\n", 1, "columns"),
    ("qrels-word-grade", "x.qrels", b"q1 0 d1 high\n", 1, "grade"),
    ("qrels-empty", "x.qrels", b"# only a comment\n", 1, "file"),
    ("beir-no-header", "x.tsv", b"q1\td1\t1\n", 1, "header"),
    ("beir-fractional", "x.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t0.5\n", 2, "score"),
    ("beir-two-columns", "x.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\n", 2, "columns"),
    ("judgments-latin1", "x.jsonl", b'{"query_id":"caf\xe9","doc_uri":"d","relevance":1}\n', 1, "encoding"),
]


@pytest.mark.parametrize(("name", "data", "line", "field"), [c[1:] for c in LABEL_FILES], ids=[c[0] for c in LABEL_FILES])
def test_convert_refuses_bad_label_files(tmp_path, name, data, line, field):
    path = tmp_path / name
    path.write_bytes(data)
    result = run_cli("convert", str(path), "--to", "judgments")
    assert result.code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {path}:{line}: {field}: ")
    assert len(result.stderr.splitlines()) == 1


RUN_FILES = [
    ("trec-run-five-columns", b"q1 Q0 d1 1 0.5\n", 1, "columns"),
    ("trec-run-bad-score", b"q1 Q0 d1 1 high run\n", 1, "score"),
    ("trec-run-nan-score", b"q1 Q0 d1 1 nan run\n", 1, "score"),
    ("trec-run-bad-rank", b"q1 Q0 d1 first 0.5 run\n", 1, "rank"),
]


@pytest.mark.parametrize(("data", "line", "field"), [c[1:] for c in RUN_FILES], ids=[c[0] for c in RUN_FILES])
def test_convert_refuses_bad_trec_runs(tmp_path, data, line, field):
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    result = run_cli("convert", str(path), "--to", "run", "--from", "trec")
    assert result.code == 2
    assert result.stderr.startswith(f"error: {path}:{line}: {field}: ")


def test_qrels_out_refuses_an_id_with_whitespace(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(row('{"query_id":"q 1","doc_uri":"d","relevance":1}'))
    result = run_cli("convert", str(path), "--to", "qrels")
    assert result.code == 2
    assert "query_id: cannot be written as a whitespace-separated column" in result.stderr
    assert result.stdout == ""


def test_missing_file_is_exit_2_not_a_traceback(tmp_path):
    result = run_cli("validate", str(tmp_path / "nope.jsonl"))
    assert result.code == 2
    assert result.stderr == f"error: {tmp_path / 'nope.jsonl'}: cannot be read: no such file or directory\n"


def test_unknown_option_and_missing_argument_are_usage_errors():
    assert run_cli("validate").code == 2
    assert run_cli("validate", "x", "--bogus").code == 2
    assert run_cli("convert", "x", "--to", "bogus").code == 2
    assert run_cli("nonsense").code == 2


def test_a_zip_archive_is_named_as_such_with_the_command_that_extracts_it(tmp_path):
    import zipfile

    examples = __import__("goldkeeper.examples", fromlist=["x"]).__path__[0]
    packed = tmp_path / "judgments.zip"
    with zipfile.ZipFile(packed, "w") as archive:
        archive.write(f"{examples}/judgments.jsonl", "judgments.jsonl")
    result = run_cli("validate", str(packed))
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        f"error: {packed}:1: encoding: is a zip archive; goldkeeper reads UTF-8 text (gzip, bzip2, xz or zstd "
        f"compressed, or not), got the zip signature 50 4b 03 04 (hint: decompress it first: unzip {packed})")


def test_swapped_judgments_and_run_are_named_as_such():
    examples = __import__("goldkeeper.examples", fromlist=["x"]).__path__[0]
    judgments, run = f"{examples}/judgments.jsonl", f"{examples}/run.jsonl"
    as_run = run_cli("score", "-j", judgments, "-r", judgments)
    assert as_run.code == 2
    assert as_run.stderr.strip() == (
        f"error: {judgments}:1: ranking must be an array (hint: the line looks like a judgment (doc_uri, "
        "relevance), not a run entry: were the judgments and the run swapped?)")
    for args in (("score", "-j", run, "-r", judgments), ("validate", run)):
        as_judgments = run_cli(*args)
        assert as_judgments.code == 2
        assert as_judgments.stderr.strip() == (
            f"error: {run}:1: doc_uri: required, must be a non-empty string, got nothing (hint: the line looks "
            "like a run entry (query_id, ranking), not a judgment: were the judgments and the run swapped?)")
