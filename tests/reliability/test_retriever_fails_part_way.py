"""A retriever that fails part-way through ``eval`` (issue 43, item 5): the process killed
mid-run (SIGKILL), or the retriever answering 5xx for a while. A rerun resumes from the answer
cache, asks only what is missing, and writes the report an uninterrupted run writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

RETRIEVER = '''
import os, time
def search(query, k=10, mode=""):
    qid = query.split()[-1]
    with open("calls.log", "a") as log:
        log.write(qid + "\\n")
    if os.path.exists("down") and int(qid[1:]) % 3 == 0:
        raise ConnectionError("503 from the retriever")
    time.sleep(float(os.environ.get("SLOW", "0")))
    return [f"d{qid}" if int(qid[1:]) % 4 else "nope", "x"]
'''
QUERIES = 60


def _folder(tmp_path):
    (tmp_path / "retriever.py").write_text(RETRIEVER)
    (tmp_path / "judgments.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i:03d}", "query": f"about q{i:03d}", "doc_uri": f"dq{i:03d}", "relevance": 1}) + "\n"
        for i in range(QUERIES)))
    return tmp_path


def _argv(out: str) -> list[str]:
    return [sys.executable, "-m", "goldkeeper", "eval", "-j", "judgments.jsonl", "--backend", "python", "--python",
            "retriever:search", "-k", "1,2", "--out", out, "--concurrency", "2", "--now", "2026-12-01T00:00:00Z",
            "--format", "json", "--quiet"]


def _calls(folder) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().split() if log.exists() else []


def _report(folder, out: str) -> dict:
    document = json.loads((folder / out / "report-python.json").read_text())
    for name in ("inputs",):  # the run's URL names its --out folder
        document.pop(name)
    return document


def test_killed_mid_run_a_rerun_asks_only_what_is_missing_and_reports_the_same(tmp_path):
    folder = _folder(tmp_path)
    subprocess.run(_argv("whole"), cwd=folder, check=True, capture_output=True, timeout=120)
    (folder / "calls.log").unlink()
    started = subprocess.Popen(_argv("killed"), cwd=folder, env={**os.environ, "SLOW": "0.05"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(_calls(folder)) < QUERIES // 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(started.pid, signal.SIGKILL)
    started.wait()
    cached = len((folder / "killed" / "cache.jsonl").read_text().splitlines())  # answers that landed
    assert 0 < cached < QUERIES
    (folder / "calls.log").unlink()
    rerun = subprocess.run(_argv("killed"), cwd=folder, capture_output=True, text=True, timeout=120)
    assert rerun.returncode in (0, 1), rerun.stderr
    asked_again = _calls(folder)
    assert len(asked_again) == len(set(asked_again)) == QUERIES - cached  # only what the cache did not hold
    assert _report(folder, "killed") == _report(folder, "whole")


def test_a_retriever_down_for_a_while_is_asked_again_only_for_what_failed(tmp_path):
    folder = _folder(tmp_path)
    subprocess.run(_argv("whole"), cwd=folder, check=True, capture_output=True, timeout=120)
    (folder / "down").write_text("")
    (folder / "calls.log").unlink()
    failing = subprocess.run(_argv("flaky"), cwd=folder, capture_output=True, text=True, timeout=120)
    assert failing.returncode == 1  # errors beyond --max-errors 0 fail the verdict
    failed = {json.loads(line)["query_id"] for line in (folder / "flaky" / "errors-python.jsonl").read_text().splitlines()}
    assert len(failed) == QUERIES // 3
    (folder / "down").unlink()
    (folder / "calls.log").unlink()
    rerun = subprocess.run(_argv("flaky"), cwd=folder, capture_output=True, text=True, timeout=120)
    assert rerun.returncode in (0, 1), rerun.stderr
    assert sorted(_calls(folder)) == sorted(failed)  # the answered ones come from the cache
    assert _report(folder, "flaky") == _report(folder, "whole")
