"""No history line is lost: eight processes publishing to one suite at once, on local
storage and on S3 (moto's server mode), each find their evaluation in the history."""

from __future__ import annotations

import subprocess
import sys

import pytest

from goldkeeper.io import storage

WRITERS = 8

_WRITER = """
import sys, time
from goldkeeper.io.storage import publish_report
root, n, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
while time.time() < start:  # every writer starts at the same moment
    pass
report = {"generated_at": f"2026-11-29T12:00:0{n}Z", "metrics": {"recall@5": {"value": n / 10}},
          "verdict": {"status": "PASS"}, "inputs": {}}
publish_report(root, "Busy Suite", report, key=f"writer-{n}")
"""


def _race(root: str) -> list[dict]:
    import time

    start = time.time() + 3
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, root, str(n), str(start)]) for n in range(WRITERS)]
    assert [w.wait(120) for w in writers] == [0] * WRITERS
    return storage.read_history(root, "Busy Suite")


@pytest.mark.parametrize("where", ["local", "s3"])
def test_eight_concurrent_publishes_keep_eight_history_lines(where, tmp_path, request):
    root = f"file://{tmp_path}/store" if where == "local" else f"{request.getfixturevalue('s3')}/history-race"
    history = _race(root)
    assert sorted(h["key"] for h in history) == [f"writer-{n}" for n in range(WRITERS)]
    assert [h["time"] for h in history] == sorted(h["time"] for h in history)  # oldest first
    assert storage.find_evaluation(root, "Busy Suite", "writer-3")["metrics"]["recall@5"]["value"] == 0.3


def test_history_written_before_one_object_per_evaluation_is_still_read(tmp_path):
    """A history/<suite>.jsonl of an earlier goldkeeper reads with the newer entries, by time."""
    import json

    root = f"file://{tmp_path}/store"
    (tmp_path / "store" / "history").mkdir(parents=True)
    (tmp_path / "store" / "history" / "old.jsonl").write_text(
        json.dumps({"time": "2026-11-01T00:00:00Z", "verdict": "PASS", "metrics": {}}) + "\n")
    storage.publish_report(root, "old", {"generated_at": "2026-11-02T00:00:00Z", "metrics": {},
                                         "verdict": {"status": "FAIL"}, "inputs": {}})
    assert [h["verdict"] for h in storage.read_history(root, "old")] == ["PASS", "FAIL"]


def test_a_suite_published_per_run_before_systems_is_read_as_one_suite_with_its_systems(tmp_path):
    """Storage written before suites held systems: a suite of two runs was published as
    '<suite>-<file stem>' each. Its history reads as the suite's, each entry the system its run
    is; an evaluation found already (same key, same system) is not scored again, and what is
    published now joins the same history."""
    from goldkeeper.models.suite import SuiteConfig

    root = f"file://{tmp_path}/store"
    storage.write_suite(root, SuiteConfig(suite="wiki-qa", runs=["s3://b/runs/run-a.jsonl", "/x/run-b.trec"]))

    def report(time: str, value: float) -> dict:
        return {"generated_at": time, "metrics": {"recall@5": {"value": value}}, "verdict": {"status": "PASS"},
                "inputs": {}, "k": [5], "threshold": 1}

    storage.publish_report(root, "wiki-qa-run-a", report("2026-11-01T00:00:00Z", 0.5), key="old-a")
    storage.publish_report(root, "wiki-qa-run-b", report("2026-11-01T00:00:00Z", 0.4), key="old-b")
    storage.publish_report(root, "wiki-qa", report("2026-12-01T00:00:00Z", 0.6), key="new-a", system="run-a")
    history = storage.read_history(root, "wiki-qa")
    assert [(h["system"], h["key"]) for h in history] == [("run-a", "old-a"), ("run-b", "old-b"), ("run-a", "new-a")]
    assert storage.find_evaluation(root, "wiki-qa", "old-b", "run-b")["key"] == "old-b"
    assert storage.find_evaluation(root, "wiki-qa", "old-b", "run-a") is None  # another system's
    assert storage.system_name("s3://b/runs/run-a.jsonl") == "run-a" and storage.system_name("/x/run-b.trec") == "run-b"
