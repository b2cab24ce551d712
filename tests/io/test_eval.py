"""goldkeeper eval against real retrievers: an HTTP server on loopback, a real command, a run
file and a Python function; hostile query texts; slow, failing and malformed answers."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from goldkeeper.io.retrieval import run_queries
from goldkeeper.io.retrievers import CommandRetriever, Hits, HttpRetriever, Query, RetrieverError
from tests.conftest import run_cli

HOSTILE = ['it\'s "quoted"', "-oFILE --help", "$(rm -rf /)", "a; b && c", "`id`", "line\nbreak", "naïve café 東京", "%2F & = ?"]


class Retriever(BaseHTTPRequestHandler):
    """Ranks d<i> first for the query whose id is q<i>; records every query text it saw."""

    seen: list[str] = []
    calls: dict[str, int] = {}
    mode = "ok"

    def log_message(self, *args):  # quiet
        pass

    def _answer(self, query_id: str, text: str) -> None:
        type(self).seen.append(text)
        count = type(self).calls[query_id] = type(self).calls.get(query_id, 0) + 1
        if self.mode == "slow":
            time.sleep(1.0)
        if self.mode == "flaky" and count == 1:
            self.send_response(500)
            self.end_headers()
            return
        if self.mode == "shape":
            body = {"data": {"hits": {"not": "a list"}}}
        else:
            number = query_id[1:]
            body = {"data": {"hits": [{"id": f"d{number}", "score": 2.0}, {"id": "dx", "score": 1.0}]},
                    "auth": self.headers.get("Authorization")}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        params = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        self._answer(params["id"][0], params["q"][0])

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._answer(body["query_id"], body["text"])


@pytest.fixture
def server():
    Retriever.seen, Retriever.calls, Retriever.mode = [], {}, "ok"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Retriever)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def judgments(tmp_path):
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps({"query_id": f"q{i}", "query": text, "doc_uri": f"d{i}", "relevance": 1,
                                        "labeled_by": "human:t"}) + "\n" for i, text in enumerate(HOSTILE)))
    return path


def test_http_get_reaches_the_server_with_every_query_verbatim_and_scores_perfectly(server, judgments, tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVER_TOKEN", "Bearer s3cret-token")
    out = tmp_path / "out"
    result = run_cli("eval", "-j", str(judgments), "--url-template", server + "/search?q={query}&id={query_id}&k={k}",
                     "--results-path", "data.hits", "--header-env", "Authorization=RETRIEVER_TOKEN", "-k", "1",
                     "--out", str(out), "--format", "json", "--gate", "recall@1:1")
    assert result.code == 0, result.stderr
    assert sorted(Retriever.seen) == sorted(HOSTILE)
    payload = json.loads(result.stdout)
    report = payload["systems"]["http"]
    assert report["metrics"]["recall@1"]["value"] == 1.0 and report["retrieval"]["errors"] == 0
    everything = "".join(p.read_text() for p in out.iterdir()) + result.stdout + result.stderr
    assert "s3cret" not in everything  # the token never reaches runs, reports, caches or logs


def test_http_post_with_a_json_body_template(server, judgments, tmp_path):
    result = run_cli("eval", "-j", str(judgments), "--url-template", server + "/search", "--method", "POST",
                     "--body-template", '{"text": "{query}", "query_id": "{query_id}", "k": "{k}"}',
                     "--results-path", "data.hits", "-k", "1", "--out", str(tmp_path / "out"), "--format", "json")
    assert result.code == 0, result.stderr
    assert sorted(Retriever.seen) == sorted(HOSTILE)


def test_a_server_slower_than_the_timeout_is_an_error_never_an_empty_ranking(server, judgments, tmp_path):
    Retriever.mode = "slow"
    out = tmp_path / "out"
    result = run_cli("eval", "-j", str(judgments), "--url-template", server + "/s?q={query}&id={query_id}",
                     "--results-path", "data.hits", "--timeout", "0.2", "--retries", "0", "--out", str(out),
                     "--format", "json")
    assert result.code == 1
    report = json.loads(result.stdout)["systems"]["http"]
    assert report["retrieval"]["errors"] == len(HOSTILE)
    assert "every retriever call failed" in report["verdict"]["reasons"]
    assert (out / "run-http.jsonl").read_text() == ""  # no query recorded as an empty ranking
    errors = [json.loads(line) for line in (out / "errors-http.jsonl").read_text().splitlines()]
    assert {e["error"].split(": ", 1)[1] for e in errors} == {"no answer within the timeout"}


def test_a_500_then_a_200_is_retried_and_succeeds(server, judgments, tmp_path):
    Retriever.mode = "flaky"
    result = run_cli("eval", "-j", str(judgments), "--url-template", server + "/s?q={query}&id={query_id}",
                     "--results-path", "data.hits", "--out", str(tmp_path / "out"), "--format", "json")
    assert result.code == 0, result.stderr
    assert set(Retriever.calls.values()) == {2}


def test_a_wrong_shape_names_the_query_and_the_path(server, judgments, tmp_path):
    Retriever.mode = "shape"
    out = tmp_path / "out"
    result = run_cli("eval", "-j", str(judgments), "--url-template", server + "/s?q={query}&id={query_id}",
                     "--results-path", "data.hits", "--out", str(out), "--max-errors", "1")
    errors = [json.loads(line)["error"] for line in (out / "errors-http.jsonl").read_text().splitlines()]
    assert "query q0: results path 'data.hits' must be a list of hits, got dict" in errors
    assert result.code == 1  # every call failed: fail closed whatever the budget


def test_the_cache_makes_a_rerun_resume_without_calling_again(server, judgments, tmp_path):
    args = ["eval", "-j", str(judgments), "--url-template", server + "/s?q={query}&id={query_id}",
            "--results-path", "data.hits", "--out", str(tmp_path / "out"), "--format", "json", "--now",
            "2026-01-01T00:00:00Z"]
    first = run_cli(*args)
    calls = sum(Retriever.calls.values())
    second = run_cli(*args)
    assert sum(Retriever.calls.values()) == calls == len(HOSTILE)
    assert first.stdout == second.stdout


COMMAND = """
import json, sys
assert sys.argv[1] == "--"
query, number = sys.argv[2], sys.argv[3]
with open(sys.argv[4], "a", encoding="utf-8") as log:
    log.write(json.dumps(query) + "\\n")
print(json.dumps([{"id": "d" + number[1:], "score": 1.0}]))
"""


def test_a_command_gets_each_query_as_one_argument_and_never_a_shell(judgments, tmp_path):
    script = tmp_path / "search.py"
    script.write_text(COMMAND)
    log = tmp_path / "seen.jsonl"
    command = json.dumps([sys.executable, str(script), "--", "{query}", "{query_id}", str(log)])
    result = run_cli("eval", "-j", str(judgments), "--backend", "command", "--command", command, "-k", "1",
                     "--out", str(tmp_path / "out"), "--format", "json")
    assert result.code == 0, result.stderr
    assert sorted(json.loads(line) for line in log.read_text().splitlines()) == sorted(HOSTILE)
    as_line = run_cli("eval", "-j", str(judgments), "--backend", "command", "-k", "1", "--out", str(tmp_path / "o2"),
                      "--command", f"{sys.executable} {script} -- {{query}} {{query_id}} {log}")
    assert as_line.code == 0, as_line.stderr


def test_a_failing_command_is_an_error_with_its_message(judgments, tmp_path):
    retriever = CommandRetriever([sys.executable, "-c", "import sys; sys.exit('index offline')"])
    (outcome,) = run_queries(retriever, [Query("q1", "x", 5)])
    assert outcome.hits is None and "exited 1: index offline" in outcome.error


def test_run_files_are_separate_systems_compared_pairwise(judgments, tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text("".join(json.dumps({"query_id": f"q{i}", "ranking": [f"d{i}"]}) + "\n" for i in range(len(HOSTILE))))
    bad.write_text("".join(json.dumps({"query_id": f"q{i}", "ranking": ["dx"]}) + "\n" for i in range(len(HOSTILE))))
    result = run_cli("eval", "-j", str(judgments), "--backend", "run-file", "--run-file", str(good), "--run-file",
                     str(bad), "-k", "1", "--out", str(tmp_path / "out"), "--format", "json", "--no-intervals")
    assert result.code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert set(payload["systems"]) == {str(good), str(bad)}
    assert payload["comparison"] is not None
    same = run_cli("eval", "-j", str(judgments), "--backend", "run-file", "--run-file", str(good), "--run-file", str(good))
    assert same.code == 2 and "never compared with itself" in same.stderr


def retrieve(query, k, mode):  # the Python backend's function, for the test below
    if mode == "broken":
        raise ConnectionError("index offline")
    return [(f"d{len(query) % 3}", 1.0), ("dx", 0.5)]


def test_python_backend_and_modes_make_one_run_each(judgments, tmp_path):
    result = run_cli("eval", "-j", str(judgments), "--backend", "python", "--python", "tests.io.test_eval:retrieve",
                     "--modes", "bm25,broken", "--out", str(tmp_path / "out"), "--format", "json", "--no-intervals")
    payload = json.loads(result.stdout)
    assert result.code == 1  # the broken mode's calls all failed
    assert payload["systems"]["bm25"]["retrieval"]["errors"] == 0
    assert payload["systems"]["broken"]["retrieval"]["errors"] == len(HOSTILE)
    assert "ConnectionError: index offline" in (tmp_path / "out" / "errors-broken.jsonl").read_text()


def test_queries_without_text_and_bad_options_are_refused(tmp_path, server):
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"query_id": "q1", "doc_uri": "d1", "relevance": 1}) + "\n")
    result = run_cli("eval", "-j", str(bare), "--url-template", server + "/s?q={query}")
    assert result.code == 2 and "no query text" in result.stderr
    missing = run_cli("eval", "-j", str(bare), "--backend", "http")
    assert missing.code == 2 and "--url-template" in missing.stderr
    with pytest.raises(Exception, match="RETRIEVER_NOPE"):
        HttpRetriever(server, headers_from_env={"Authorization": "RETRIEVER_NOPE"})
    from goldkeeper.io.retrievers import hits_from_payload

    with pytest.raises(RetrieverError, match="hit 0 needs a finite numeric 'score'"):
        hits_from_payload([{"id": "d1", "score": "high"}], Query("q1", "x", 5))


def test_a_hit_without_a_score_is_ranked_by_its_place_as_in_the_seed():
    from goldkeeper.io.retrievers import hits_from_payload

    query = Query("q1", "x", 5)
    assert hits_from_payload([{"id": "d2"}, {"id": "d1"}], query) == Hits(("d2", "d1"), None)
    assert hits_from_payload([{"id": "d2", "score": 2}, {"id": "d1"}], query) == Hits(("d2", "d1"), None)
    assert hits_from_payload([{"id": "d2", "score": 2}, {"id": "d1", "score": 1}], query) == Hits(("d2", "d1"), (2.0, 1.0))


# The HTTP client (httpx): proxies from the environment, kept-alive connections, Retry-After ----

class _KeepAlive(BaseHTTPRequestHandler):
    """An HTTP/1.1 retriever (connections kept open) that records each request's target and
    the client port it came from; as a proxy it receives absolute URLs."""

    protocol_version = "HTTP/1.1"
    targets: list[str] = []
    ports: list[int] = []
    status = 200
    retry_after: str | None = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        type(self).targets.append(self.path)
        type(self).ports.append(self.client_address[1])
        if self.status != 200:
            self.send_response(self.status)
            if self.retry_after is not None:
                self.send_header("Retry-After", self.retry_after)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps({"hits": [{"id": "d1", "score": 1.0}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def keep_alive():
    _KeepAlive.targets, _KeepAlive.ports, _KeepAlive.status, _KeepAlive.retry_after = [], [], 200, None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_the_proxy_comes_from_the_environment(keep_alive, judgments, tmp_path):
    """The retriever's host does not resolve: the answer can only come through HTTP_PROXY."""
    import os
    import subprocess

    env = {**os.environ, "HTTP_PROXY": keep_alive, "NO_PROXY": "", "no_proxy": ""}
    done = subprocess.run([sys.executable, "-m", "goldkeeper", "eval", "-j", str(judgments), "--url-template",
                           "http://retriever.invalid/search?q={query}", "--results-path", "hits", "--out",
                           str(tmp_path / "out"), "--format", "json"], capture_output=True, env=env, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)["systems"]["http"]
    assert report["retrieval"]["errors"] == 0
    assert len(_KeepAlive.targets) == len(HOSTILE)
    assert all(target.startswith("http://retriever.invalid/search?q=") for target in _KeepAlive.targets)


def test_one_worker_keeps_one_connection_alive(keep_alive):
    retriever = HttpRetriever(keep_alive + "/s?q={query}", results_path="hits")
    outcomes = run_queries(retriever, [Query(f"q{i}", f"text {i}", 10) for i in range(20)], concurrency=1)
    retriever.close()
    assert all(o.hits is not None for o in outcomes)
    assert len(_KeepAlive.ports) == 20 and len(set(_KeepAlive.ports)) == 1


@pytest.mark.parametrize(("header", "expected"), [("7", 7.0), (None, None), ("soon", None)])
def test_a_429_carries_the_servers_retry_after(keep_alive, header, expected):
    _KeepAlive.status, _KeepAlive.retry_after = 429, header
    retriever = HttpRetriever(keep_alive + "/s?q={query}", results_path="hits")
    with pytest.raises(RetrieverError) as caught:
        retriever.search(Query("q1", "x", 10))
    retriever.close()
    assert caught.value.transient and caught.value.retry_after == expected


def test_retry_after_as_an_http_date():
    from email.utils import formatdate

    from goldkeeper.io.retrievers import retry_after_seconds

    assert retry_after_seconds(formatdate(1_000_030, usegmt=True), now=1_000_000) == 30.0
    assert retry_after_seconds(formatdate(999_000, usegmt=True), now=1_000_000) == 0.0


class _Refuses:
    """Transient failures with a given Retry-After, then an answer."""

    def __init__(self, retry_after, failures=1):
        self.retry_after, self.failures = retry_after, failures

    def identity(self):
        return {"backend": "test"}

    def search(self, query):
        from goldkeeper.io.retrievers import Hits

        if self.failures:
            self.failures -= 1
            raise RetrieverError(f"query {query.query_id}: HTTP 429", transient=True, retry_after=self.retry_after)
        return Hits(("d1",))

    def close(self):
        pass


def test_the_retry_waits_at_least_what_the_server_asked():
    waits = []
    outcomes = run_queries(_Refuses(2.5), [Query("q1", "x", 10)], sleep=waits.append, backoff=0.2)
    assert outcomes[0].hits is not None and outcomes[0].attempts == 2
    assert waits == [2.5]


def test_a_server_asking_to_wait_past_the_limit_fails_the_query_without_waiting():
    waits = []
    outcomes = run_queries(_Refuses(3600.0), [Query("q1", "x", 10)], sleep=waits.append)
    assert waits == [] and outcomes[0].hits is None
    assert outcomes[0].error == ("query q1: HTTP 429; the server asked to wait 3600 s, more than goldkeeper "
                                 "waits (120 s)")


def test_backoff_is_exponential_with_jitter():
    import random

    from goldkeeper.io.retrieval import retry_delay

    draws = random.Random(0)
    for attempt in (1, 2, 3, 4):
        ceiling = 0.2 * 2 ** (attempt - 1)
        delays = [retry_delay(attempt, 0.2, uniform=draws.uniform) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) == 50  # workers that failed together do not retry together
    waits = []
    run_queries(_Refuses(None, failures=3), [Query("q1", "x", 10)], sleep=waits.append, backoff=0.2, retries=3)
    assert [0.1 <= waits[0] <= 0.2, 0.2 <= waits[1] <= 0.4, 0.4 <= waits[2] <= 0.8] == [True] * 3
