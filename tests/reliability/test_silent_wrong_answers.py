"""Issue 26, class 4: inputs and options that used to give an answer, and a wrong one, are
refused: a key named twice however it is spelled, zero resamples, levels outside (0, 1) or
NaN, a temperature that is not positive, a redirect's body, two answers giving a query one
chunk twice."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import goldkeeper
from tests.conftest import run_cli


@pytest.fixture
def example(tmp_path):
    assert run_cli("example", str(tmp_path)).code == 0
    return tmp_path


def _refused(result, expected):
    assert (result.code, result.stderr) == (2, expected + "\n")


# A key spelled twice, the second time with an escape (\u0069 is "i"): a fast decoder keeps
# the last value, so the first would be lost without a word.
@pytest.mark.parametrize("spelling", ["ranking", "rank\\u0069ng"])
def test_a_run_naming_a_key_twice_is_refused(example, spelling):
    line = '{"query_id":"q01","ranking":["a"],"' + spelling + '":["b"]}\n'
    (example / "twice.jsonl").write_text(line)
    _refused(run_cli("score", "-j", "judgments.jsonl", "-r", "twice.jsonl", cwd=example),
             "error: twice.jsonl:1: ranking: key appears twice in one object, got a second value an array")


@pytest.mark.parametrize("spelling", ["relevance", "relev\\u0061nce"])
def test_judgments_naming_a_key_twice_are_refused(example, spelling):
    (example / "twice.jsonl").write_text('{"query_id":"q","doc_uri":"d","relevance":1,"' + spelling + '":0}\n')
    for command in (["validate", "twice.jsonl"], ["convert", "twice.jsonl", "--to", "qrels"]):
        _refused(run_cli(*command, cwd=example),
                 "error: twice.jsonl:1: relevance: key appears twice in one object, got a second value 0")


@pytest.mark.parametrize("spelling", ["chunks", "\\u0063hunks"])
def test_a_corpus_naming_chunks_twice_is_refused_not_read_as_empty(example, spelling):
    text = (example / "corpus.json").read_text().rstrip()
    (example / "twice.json").write_text(text[:-1] + ', "' + spelling + '": []}')
    _refused(run_cli("drift", "-j", "judgments.jsonl", "-c", "twice.json", cwd=example),
             "error: twice.json: chunks: key appears twice in one object, got a second value an array")


def test_a_chunk_naming_its_text_twice_is_refused(example):
    corpus = json.loads((example / "corpus.json").read_text())
    text = json.dumps(corpus, indent=2)
    first = json.dumps(corpus["chunks"][0]["text"])
    (example / "twice.json").write_text(text.replace(f'"text": {first}', f'"text": {first}, "t\\u0065xt": "other"', 1))
    _refused(run_cli("drift", "-j", "judgments.jsonl", "-c", "twice.json", cwd=example),
             'error: twice.json: text: key appears twice in one object, got a second value "other"')


def test_the_corpus_fast_path_still_takes_what_goldkeeper_writes(example):
    from goldkeeper.io.snapshots import corpus_json

    assert corpus_json((example / "corpus.json").read_bytes()) is not None


def test_zero_resamples_is_refused_not_p_equals_one(example):
    rows = [json.loads(line) for line in (example / "run.jsonl").read_text().splitlines()]
    (example / "run2.jsonl").write_text("".join(json.dumps({**r, "ranking": r["ranking"][::-1]}) + "\n" for r in rows))
    _refused(run_cli("compare", "-j", "judgments.jsonl", "-r", "run.jsonl", "-r", "run2.jsonl", "--resamples", "0",
                     cwd=example), "error: Invalid value for '--resamples': 0 is not in the range 1<=x<=1000000.")
    from goldkeeper.core.significance import paired_permutation_test

    with pytest.raises(ValueError, match="resamples must be a whole number of at least 1, got 0"):
        paired_permutation_test([0.1] * 30, [0.2 + i / 100 for i in range(30)], resamples=0)


@pytest.mark.parametrize("alpha", ["nan", "1", "0", "-0.5", "inf"])
def test_audit_alpha_outside_zero_one_is_refused(alpha):
    _refused(run_cli("audit", "-n", "10", "-v", "0.5", "-b", "0.4", "--alpha", alpha),
             f"error: Invalid value for '--alpha': must be between 0 and 1, exclusive, got {float(alpha)}")


def test_the_audit_api_refuses_what_the_cli_refuses():
    from goldkeeper.core.audit import audit

    for alpha in (math.nan, 1.0):
        with pytest.raises(ValueError, match="alpha must be between 0 and 1, exclusive"):
            audit(10, "recall@5", 0.5, 0.4, alpha=alpha)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1, exclusive"):
        audit(10, "recall@5", 0.5, 0.4, confidence=math.nan)


@pytest.mark.parametrize("temperature", ["-1", "0", "nan"])
def test_calibrate_refuses_a_temperature_that_is_not_positive(example, temperature):
    _refused(run_cli("calibrate", "-j", "judgments.jsonl", "-r", "run.jsonl", "--temperature", temperature,
                     cwd=example),
             f"error: Invalid value for '--temperature': must be a finite number above 0, got {float(temperature)}")
    from goldkeeper.core.calibration import calibrate

    with pytest.raises(ValueError, match="temperature must be a finite number above 0"):
        calibrate([], temperature=float(temperature))


class Redirecting(BaseHTTPRequestHandler):
    """Answers every query with a 302 whose body looks like a perfect ranking."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        data = json.dumps({"hits": [{"id": "d0", "score": 1.0}]}).encode()
        self.send_response(302)
        self.send_header("Location", "http://elsewhere.example/search")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_redirect_is_an_error_not_the_retrievers_answer(tmp_path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        judgments = tmp_path / "judgments.jsonl"
        judgments.write_text(json.dumps({"query_id": "q0", "query": "refunds", "doc_uri": "d0", "relevance": 1}) + "\n")
        out = tmp_path / "out"
        result = run_cli("eval", "-j", str(judgments), "--url-template",
                         f"http://127.0.0.1:{httpd.server_address[1]}/s?q={{query}}", "--results-path", "hits",
                         "--retries", "0", "--out", str(out), "--format", "json")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert result.code == 1, result.stderr
    assert (out / "run-http.jsonl").read_text() == ""
    errors = [json.loads(line)["error"] for line in (out / "errors-http.jsonl").read_text().splitlines()]
    assert errors == ["query q0: HTTP 302, a redirect to http://elsewhere.example/search, which goldkeeper does not "
                      "follow: give --url-template the final address"]


def test_two_answers_giving_one_query_the_same_chunk_are_refused(tmp_path):
    doc = "kb://refunds"

    def chunk(text, ordinal, fingerprint):
        return {"chunk_id": goldkeeper.chunk_id(doc, fingerprint, ordinal, text, fingerprint), "doc_uri": doc,
                "ordinal": ordinal, "text": text, "text_sha": goldkeeper.text_sha(text)}

    old = [chunk("Refunds for legacy plans are handled by support.", 0, "old"),
           chunk("Gift cards never expire and cannot be refunded.", 1, "old")]
    new = [chunk("Support now handles every refund request.", 0, "new")]
    judgments = tmp_path / "judgments.jsonl"  # one query, two labels, both orphaned by the re-chunk
    judgments.write_text("".join(json.dumps({"query_id": "q0", "query": "refunds", "doc_uri": doc, "chunk_id": c["chunk_id"],
                                             "chunk_text": c["text"], "relevance": 2}) + "\n" for c in old))
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"corpus_fingerprint": "new", "chunks": new}))
    queue = tmp_path / "queue.jsonl"
    assert run_cli("drift", "-j", str(judgments), "-c", str(corpus), "--queue", str(queue)).code == 1
    items = [json.loads(line) for line in queue.read_text().splitlines()]
    assert len(items) == 2
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"item_id": item["item_id"], "chunk_id": new[0]["chunk_id"], "relevance": 1,
                                           "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"}) + "\n"
                               for item in items))
    before = judgments.read_bytes()
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(answers), "-c", str(corpus))
    _refused(result, f"error: {answers}:2: chunk_id: query q0 is given this chunk by two answers (the other on line 1); "
                     f"a query has one label per chunk, got {new[0]['chunk_id']}")
    assert judgments.read_bytes() == before
