"""rag-eval-gate's README command lines, run unchanged by goldkeeper against a local retriever
(issue 42, item 3), beside rag-eval-gate itself on the same retriever: the same exit codes and
the same means, so a CI job moves over by changing the executable.

The retriever listens where rag-eval-gate's default URL template points
(``http://localhost:8080/api/search?q={query}&mode={mode}``) and answers in its default shape
(``{"results": [{"docId", "score"}]}``); a second route answers the README's custom-field
example (``data.hits``, ``document_id``, ``relevance``). The README's host for that example,
``https://search.internal``, is the one thing changed: it is not this machine.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.conftest import Result, run_cli

QUERIES = [f"how do I configure feature {i}" for i in range(100)]


def ranking(index: int, mode: str) -> list[str]:
    """hybrid finds every answer first; bm25 finds three in four second; vector two in three first."""
    answer, others = f"doc-{index}", [f"other-{index}-{n}" for n in range(4)]
    if mode == "bm25":
        return [others[0], answer, *others[1:]] if index % 4 else others
    if mode == "vector":
        return [answer, *others] if index % 3 else others
    return [answer, *others]


class Retriever(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlparse(self.path)
        asked = parse_qs(url.query)
        text = (asked.get("q") or asked.get("text") or [""])[0]
        mode = (asked.get("mode") or asked.get("strategy") or ["hybrid"])[0]
        ids = ranking(QUERIES.index(text), mode) if text in QUERIES else []
        scored = [(doc, round(1.0 - rank * 0.2, 3)) for rank, doc in enumerate(ids)]
        if url.path == "/api/search":
            body = {"results": [{"docId": doc, "score": score} for doc, score in scored]}
        elif url.path == "/v2/query":
            body = {"data": {"hits": [{"document_id": doc, "relevance": score} for doc, score in scored]}}
        else:
            self.send_error(404)
            return
        payload = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def retriever():
    try:
        server = ThreadingHTTPServer(("127.0.0.1", 8080), Retriever)
    except OSError as error:  # the README's default URL needs this very port
        with socket.socket() as probe:
            busy = probe.connect_ex(("127.0.0.1", 8080)) == 0
        reason = f"port 8080, which rag-eval-gate's default URL names, is taken ({error}; in use: {busy})"
        if os.environ.get("CI"):  # a fresh CI machine has it free: there, not running is a failure
            pytest.fail(reason)
        pytest.skip(reason)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "gold.jsonl").write_text("".join(
        json.dumps({"query": q, "relevant_doc_ids": [f"doc-{i}"]}) + "\n" for i, q in enumerate(QUERIES)))
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\tdoc-{i}\t1\n" for i in range(len(QUERIES))))
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "bm25.trec").write_text("".join(
        f"q{i} Q0 {doc} {rank + 1} {1.0 - rank * 0.2:.3f} bm25\n"
        for i in range(len(QUERIES)) for rank, doc in enumerate(ranking(i, "bm25"))))
    return tmp_path


def peer(*args: str, cwd: Path) -> Result:
    proc = subprocess.run([sys.executable, "-c", "import sys; from rag_eval_gate.cli import main; sys.exit(main())",
                           *args], capture_output=True, cwd=cwd, timeout=120, input=b"")
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


PEER_METRICS = ("recall@5", "recall@10", "mrr@10", "ndcg@10")


def means_alike(workdir: Path, peer_json: Path) -> None:
    """Each mode's means in goldkeeper's reports equal rag-eval-gate's (1e-9): every metric both
    computed (goldkeeper computes the cutoffs its -k and gates name, 10 by default)."""
    for mode, found in json.loads(peer_json.read_text())["modes"].items():
        ours = workdir / "goldkeeper-eval" / f"report-{mode}.json"
        if not ours.exists():  # a run file: goldkeeper names the system by the file, the peer by its mode
            (ours,) = (workdir / "goldkeeper-eval").glob("report-*.json")
        report = json.loads(ours.read_text())
        shared = [metric for metric in PEER_METRICS if metric in report["metrics"]]
        assert {"recall@10", "mrr@10", "ndcg@10"} <= set(shared), report["metrics"].keys()
        for metric in shared:
            assert report["metrics"][metric]["value"] == pytest.approx(found[metric], abs=1e-9), (mode, metric)


README = [  # (the command line as the README writes it, after the executable; what it must end in)
    ("eval gold.jsonl --gate --min-mrr10 0.85", 0),
    ("eval gold.jsonl --modes bm25,vector,hybrid", 0),
    ("eval gold.jsonl --gate --gate-policy sequential", 0),
    ("eval gold.jsonl --url-template http://localhost:8080/v2/query?text={query}&strategy={mode} "
     "--results-path data.hits --id-field document_id --score-field relevance", 0),
    ("eval qrels/test.tsv --backend run-file --run-file runs/bm25.trec", 0),
    ("eval gold.jsonl --gate --min-mrr10 0.85 --modes bm25", 1),  # the same gate on a retriever that misses it
]


@pytest.mark.parametrize(("line", "code"), README, ids=[line for line, _ in README])
def test_the_peer_readmes_eval_lines_run_unchanged_and_agree_with_the_peer(retriever, workdir, line, code):
    args = line.split()
    ours = run_cli(*args, "--quiet", cwd=workdir)
    assert ours.code == code, ours.stdout + ours.stderr
    theirs = peer(*args, "--quiet", "--json", "peer.json", cwd=workdir)
    assert theirs.code == code, theirs.stdout + theirs.stderr
    if "sequential" not in line:  # a sequential gate stops early, each tool in its own order
        means_alike(workdir, workdir / "peer.json")
    if "--gate" in args and "--min-recall5" not in args:
        assert "rag-eval-gate's thresholds for what no --min- names: recall@5 >= 0.9" in ours.stderr


def test_the_peer_readmes_bare_gate_says_what_it_gates_on(retriever, workdir):
    """--gate with no --min- gates on the peer's three thresholds, and says so; a sequential
    policy settles on a retriever that finds everything before asking every query."""
    result = run_cli("eval", "gold.jsonl", "--gate", "--gate-policy", "sequential", "--format", "json", cwd=workdir)
    assert result.code == 0, result.stderr
    assert ("note: --gate also gates on rag-eval-gate's thresholds for what no --min- names: recall@5 >= 0.9, "
            "mrr@10 >= 0.85, ndcg@10 >= 0.85") in result.stderr
    hybrid = json.loads(result.stdout)["systems"]["hybrid"]
    assert [g["expression"] for g in hybrid["verdict"]["gates"]] == [
        "recall@5:sequential:0.9", "mrr@10:sequential:0.85", "ndcg@10:sequential:0.85", "errors:0"]
    assert hybrid["retrieval"]["sequential"]["asked"] < len(QUERIES)


def test_the_peer_readmes_other_lines_run_unchanged(retriever, workdir):
    assert run_cli("power", "gold.jsonl", cwd=workdir).code == 0
    for line in ("audit -n 10 -v 1.00 -b 0.70", "audit -n 10 -m recall@5 -v 1.00 -b 0.70"):
        ours, theirs = run_cli(*line.split()), peer(*line.split(), cwd=workdir)
        assert ours.code == theirs.code == 1, ours.stdout  # unresolvable: exit 1, both
        assert "[0.692, 1.000]" in ours.stdout and "[0.692, 1.000]" in theirs.stdout
    certified = run_cli("calibrate", "gold.jsonl", "--alpha", "0.10", "--risk-alpha", "0.05", cwd=workdir)
    assert certified.code in (0, 1), certified.stderr  # a certificate, against the live retriever
    assert "coverage:" in certified.stdout and "held out:" in certified.stdout


def test_the_readmes_command_backend_line_is_refused_for_its_query_placement(workdir):
    """The README's `--command './retrieve --q {query} --mode {mode} --json'` would hand a query
    beginning with '-' to the program as an option: refused, with the way out (spec/eval.md)."""
    result = run_cli("eval", "gold.jsonl", "--backend", "command", "--command",
                     "./retrieve --q {query} --mode {mode} --json", cwd=workdir)
    assert result.code == 2
    assert "argument 2 ({query}) starts with a placeholder before any '--'" in result.stderr
    assert "'--query={query}'" in result.stderr


def test_eval_prints_the_gold_sets_resolution_in_every_format(retriever, workdir):
    """Issue 42, item 4: what the peer prints beside the scores, goldkeeper prints: the smallest
    effect the gold set detects at its size, measured on the last mode against the first."""
    import math

    from scipy.stats import norm

    args = ["eval", "gold.jsonl", "--modes", "bm25,hybrid", "--quiet"]
    found = json.loads(run_cli(*args, "--format", "json", cwd=workdir).stdout)["resolution"]
    bm25, hybrid = (json.loads((workdir / "goldkeeper-eval" / f"report-{m}.json").read_text())["per_query"]
                    for m in ("bm25", "hybrid"))
    diffs = [hybrid[q]["mrr@10"] - bm25[q]["mrr@10"] for q in bm25]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    assert found["metric"] == "mrr@10" and found["systems"] == ["bm25", "hybrid"] and found["n"] == len(QUERIES)
    assert found["sd"] == pytest.approx(sd, abs=1e-12)
    assert found["normal"]["mde"] == pytest.approx((norm.ppf(0.975) + norm.ppf(0.8)) * sd / math.sqrt(len(diffs)))
    assert found["normal"]["queries_needed"] == math.ceil(((norm.ppf(0.975) + norm.ppf(0.8)) * sd / 0.02) ** 2)
    text = run_cli(*args, cwd=workdir).stdout
    assert "resolution of this gold set (hybrid vs bm25, mrr@10):" in text
    assert f"smallest detectable effect at 80% power: +{found['normal']['mde']:.3f} (normal)" in text
    markdown = run_cli(*args, "--format", "markdown", cwd=workdir).stdout
    assert "### Resolution of this gold set (hybrid vs bm25, mrr@10)" in markdown
    assert f"- queries needed to resolve +0.02: {found['normal']['queries_needed']:,} (normal)" in markdown
