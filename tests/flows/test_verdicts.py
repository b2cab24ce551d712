"""What an ops person sees of an evaluation on a real Prefect server: the run's state is its
verdict, its tags name suite and verdict, an event about the suite carries the figures, and
the suite's trend marks and attributes a change of judgments."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from goldkeeper.io.storage import read_history
from tests.conftest import FIXTURES

pytest.importorskip("prefect")


def _flow_run(run_id):
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return await client.read_flow_run(run_id)

    return asyncio.run(read())


def events_about(api_url: str, resource: str, prefix: str, at_least: int = 1, wait: float = 60) -> list[dict]:
    """Events the server stored about a resource, waiting for them to be persisted."""
    deadline = time.monotonic() + wait
    while True:
        body = {"filter": {"event": {"prefix": [prefix]}, "resource": {"id": [resource]},
                           "occurred": {"since": "2020-01-01T00:00:00Z"}}, "limit": 50}
        found = httpx.post(f"{api_url}/events/filter", json=body, timeout=10).json()["events"]
        if len(found) >= at_least or time.monotonic() > deadline:
            return found
        time.sleep(1)


@pytest.mark.parametrize(("gate", "state_type", "state_name", "message", "tag"), [
    ("recall@3:0.9", "FAILED", "Failed", "FAIL: recall@3 is 0.5000, below 0.9", "verdict:fail"),
    ("ndcg@50:0.5", "FAILED", "Indeterminate", "INDETERMINATE: ndcg@50:0.5: metric 'ndcg@50' not present in the report",
     "verdict:indeterminate"),
    ("recall@3:0.25", "COMPLETED", "Completed", "PASS: 1 gate(s) passed", "verdict:pass"),
], ids=["fail", "indeterminate", "pass"])
def test_the_verdict_is_the_runs_state_with_tags_and_an_event(prefect_server, tmp_path, gate, state_type, state_name,
                                                              message, tag):
    from goldkeeper.flows.evaluate import EvaluationFailed, evaluate

    suite = f"verdict {state_name}"
    case = FIXTURES / "basic"
    state = evaluate(suite=suite, judgments_url=str(case / "judgments.jsonl"), run_url=str(case / "run.jsonl"),
                     storage_url=f"file://{tmp_path}/store", k=[1, 3], gates=[gate], return_state=True)
    run = _flow_run(state.state_details.flow_run_id)
    assert (run.state.type.value, run.state.name, run.state.message) == (state_type, state_name, message)
    from goldkeeper.io.storage import suite_slug

    assert {"goldkeeper", f"suite:{suite_slug(suite)}", tag} <= set(run.tags)
    assert run.run_count == 1  # a verdict is an answer, not a fault: never retried
    if state_type == "FAILED":
        with pytest.raises(EvaluationFailed) as raised:  # a Python caller gets the outcome with the exception
            evaluate(suite=suite, judgments_url=str(case / "judgments.jsonl"), run_url=str(case / "run.jsonl"),
                     storage_url=f"file://{tmp_path}/store", k=[1, 3], gates=[gate])
        assert raised.value.outcome["verdict"] == state_name.upper().replace("FAILED", "FAIL")
    events = events_about(prefect_server["PREFECT_API_URL"], f"goldkeeper.suite.{suite_slug(suite)}",
                          "goldkeeper.evaluation.", at_least=2 if state_type == "FAILED" else 1)
    # the event of this run: related to it (the second, raising call emitted its own)
    (event,) = [e for e in events if any(r["prefect.resource.id"] == f"prefect.flow-run.{run.id}" for r in e["related"])]
    assert event["event"] == "goldkeeper.evaluation." + {"fail": "failed", "indeterminate": "indeterminate",
                                                          "pass": "passed"}[tag.split(":")[1]]
    assert event["payload"]["message"] == message.split(": ", 1)[1]  # the status once: "PASS: 1 gate(s) passed"
    assert [g["expression"] for g in event["payload"]["failing_gates"]] == ([] if state_type == "COMPLETED" else [gate])


def test_a_lifecycle_with_a_failing_evaluation_is_failed_and_says_which(prefect_server, tmp_path):
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import write_judgments_version

    root = f"file://{tmp_path}/store"
    case = FIXTURES / "drift"
    write_judgments_version(root, "parent", (case / "judgments.jsonl").read_bytes(), None)
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text('{"query_id": "q1", "ranking": ["c1:926073213714b1c617790e335bb0fabc"]}\n')
    bad.write_text('{"query_id": "q1", "ranking": ["c1:00000000000000000000000000000000"]}\n')
    state = on_reindex(suite="parent", corpus_url=str(case / "corpus.json"), run_urls=[str(good), str(bad)],
                       storage_url=root, k=[1], gates=["recall@1:0.25"], return_state=True)
    assert state.is_failed() and state.name == "Failed"
    assert state.message.startswith("1 of 2 evaluation(s) did not pass: parent (bad) FAIL (")
    # each run's summary sends the reviewer to the suite whose queue it is, not to the run's name
    from tests.flows.test_evaluate import _artifacts

    summary = _artifacts(["goldkeeper-parent-bad-summary"])["goldkeeper-parent-bad-summary"].data
    assert "Suite `parent`, system `bad`." in summary
    assert "2 wait for a person (2 to re-judge)" in summary
    assert "run the `goldkeeper-rejudge` flow for suite `parent` from the Prefect UI" in summary
    outcome = state.result(raise_on_failure=False).outcome
    assert {(e["suite"], e["system"]): e["verdict"] for e in outcome["evaluations"].values()} == {
        ("parent", "good"): "PASS", ("parent", "bad"): "FAIL"}
    # one suite with two systems: one history, both in it
    assert sorted(entry["system"] for entry in read_history(root, "parent")) == ["bad", "good"]
    drift = events_about(prefect_server["PREFECT_API_URL"], "goldkeeper.suite.parent", "goldkeeper.drift.")
    assert drift[0]["payload"]["invalid_ratio"] == 0.75 and drift[0]["payload"]["queued"] == 2
    opened = events_about(prefect_server["PREFECT_API_URL"], "goldkeeper.suite.parent", "goldkeeper.queue.")
    assert opened[0]["payload"]["items"] == 2
    versioned = events_about(prefect_server["PREFECT_API_URL"], "goldkeeper.suite.parent", "goldkeeper.judgments.")
    assert versioned[0]["payload"]["reanchored"] == 1


def _labels(rows):
    return "".join(json.dumps({"query_id": q, "query": f"about {q}", "doc_uri": d, "relevance": 1}) + "\n"
                   for q, d in rows)


def _run(rankings):
    return "".join(json.dumps({"query_id": q, "ranking": r}) + "\n" for q, r in rankings.items())


def test_the_trend_marks_a_judgments_change_and_attributes_the_delta(prefect_server, tmp_path):
    """Three evaluations; the judgments change before the third. recall@2 by hand:
    R1 on J1 = (1/2 + 1) / 2 = 0.75; R2 on J1 = 1; R2 on J2 = (2/3 + 1) / 2 = 5/6;
    R3 on J2 = (1/3 + 1) / 2 = 2/3. The third change, 2/3 - 1 = -1/3, is -1/6 from the labels
    (R2 on J2 minus R2 on J1) and -1/6 from the retriever (R3 minus R2, both on J2)."""
    from goldkeeper.flows.evaluate import evaluate
    from goldkeeper.io.storage import read_history
    from tests.flows.conftest import finished
    from tests.flows.test_evaluate import _artifacts

    root = f"file://{tmp_path}/store"
    j1, j2 = tmp_path / "j1.jsonl", tmp_path / "j2.jsonl"
    j1.write_text(_labels([("q1", "d1"), ("q1", "d2"), ("q2", "d3")]))
    j2.write_text(_labels([("q1", "d1"), ("q1", "d2"), ("q1", "d4"), ("q2", "d3")]))
    runs = {}
    for name, rankings in (("r1", {"q1": ["d1", "x"], "q2": ["y", "d3"]}), ("r2", {"q1": ["d1", "d2"], "q2": ["d3"]}),
                           ("r3", {"q1": ["x", "d4"], "q2": ["d3"]})):
        runs[name] = tmp_path / f"{name}.jsonl"
        runs[name].write_text(_run(rankings))
    outcomes = [finished(evaluate, suite="trend", judgments_url=str(j), run_url=str(runs[r]), storage_url=root,
                         k=[2], gates=["recall@2:0.7"], generated_at=f"2026-11-0{day}T03:00:00Z")
                for day, (j, r) in enumerate(((j1, "r1"), (j1, "r2"), (j2, "r3")), 1)]
    assert [o["verdict"] for o in outcomes] == ["PASS", "PASS", "FAIL"]
    attribution = outcomes[2]["attribution"]["metrics"]["recall@2"]
    assert attribution["change"] == pytest.approx(-1 / 3, abs=1e-12)
    assert attribution["labels"] == pytest.approx(-1 / 6, abs=1e-12)
    assert attribution["retriever"] == pytest.approx(-1 / 6, abs=1e-12)
    assert outcomes[1]["attribution"] is None  # same judgments: nothing to attribute
    assert [h["metrics"]["recall@2"]["value"] for h in read_history(root, "trend")] == pytest.approx([0.75, 1, 2 / 3])

    found = _artifacts(["goldkeeper-trend-trend", "goldkeeper-trend-summary"])
    trend = found["goldkeeper-trend-trend"].data
    rows = [line for line in trend.splitlines() if line.startswith("| 2026-")]
    assert [row.split(" | ")[0] for row in rows] == ["| 2026-11-03T03:00:00Z", "| 2026-11-02T03:00:00Z",
                                                     "| 2026-11-01T03:00:00Z"]  # newest first
    assert "(changed)" in rows[0] and "(changed)" not in rows[1] + rows[2]
    assert "0.6667" in rows[0] and "(-0.3333)" in rows[0] and "(+0.2500)" in rows[1]
    summary = found["goldkeeper-trend-summary"].data
    assert "**The judgments changed** since then" in summary
    assert "| recall@2 | -0.3333 | -0.1667 | -0.1667 |" in summary
    assert "#### Next steps" in summary

    chart = (tmp_path / "store" / "pages" / "trend" / "trend.svg").read_text()
    assert chart.count('id="line-recall@2"') == 1 and "threshold 0.7" in chart and "new judgments" in chart
    page = (tmp_path / "store" / "pages" / "trend" / "index.html").read_text()
    assert 'class="verdict FAIL"' in page and "<svg" in page and "new judgments" in page
    assert outcomes[2]["pages"]["page"].endswith("/pages/trend/index.html")


def test_points_with_other_cutoffs_are_not_compared(prefect_server, tmp_path):
    from goldkeeper.flows.evaluate import evaluate
    from tests.flows.conftest import finished

    root = f"file://{tmp_path}/store"
    case = FIXTURES / "basic"
    for day, k in ((1, [3]), (2, [1, 3])):
        outcome = finished(evaluate, suite="cuts", judgments_url=str(case / "judgments.jsonl"),
                           run_url=str(case / "run.jsonl"), storage_url=root, k=k, gates=["recall@3:0.4"],
                           generated_at=f"2026-11-0{day}T00:00:00Z")
    from goldkeeper.core.trend import trend_points
    from goldkeeper.io.storage import read_history

    points = trend_points(read_history(root, "cuts"), ["recall@3"])
    assert [p["previous"] for p in points] == [None, None] and outcome["verdict"] == "PASS"


def test_the_shipped_alert_automation_posts_to_a_webhook_when_an_evaluation_fails(prefect_server, tmp_path):
    """`goldkeeper alert --webhook` on a real server; a FAIL evaluation of the named suite
    makes the server's automation post the suite, verdict and reason to a loopback receiver,
    and a PASS of it posts nothing."""
    import http.server
    import threading

    from goldkeeper.flows.evaluate import evaluate
    from tests.conftest import run_cli
    from tests.flows.conftest import finished

    received: list[dict] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        made = run_cli("alert", "--webhook", f"http://127.0.0.1:{server.server_port}/hook", "--suite", "Alerted")
        assert made.code == 0, made.stderr
        assert "evaluations of Alerted that do not pass post to http://127.0.0.1:" in made.stdout
        time.sleep(5)  # the server loads new automations into its trigger service periodically
        case = FIXTURES / "basic"
        common = {"suite": "Alerted", "judgments_url": str(case / "judgments.jsonl"), "run_url": str(case / "run.jsonl"),
                      "storage_url": f"file://{tmp_path}/store", "k": [1, 3]}
        finished(evaluate, **common, gates=["recall@3:0.25"])
        outcome = finished(evaluate, **common, gates=["recall@3:0.9"])
        deadline = time.monotonic() + 90
        while not received and time.monotonic() < deadline:
            time.sleep(1)
        assert received, "the automation did not fire"
        time.sleep(3)  # a post for the PASS, had there been one, would have come first
        (post,) = received
        assert post["subject"] == "goldkeeper: Alerted is FAIL"
        assert post["text"].startswith("Alerted: FAIL: recall@3 is 0.5000, below 0.9\nreport: " + outcome["report_url"])
    finally:
        server.shutdown()


def test_a_malformed_private_file_fails_at_once_and_its_content_stays_out_of_prefect(prefect_server, tmp_path):
    """Chunker output whose line is not JSON: the lifecycle fails naming the file, the line
    and the problem; no line of it reaches the run's state or logs; the task that read it ran
    once (malformed input is an answer, not a fault to retry)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
        LogFilter,
        LogFilterFlowRunId,
    )

    from goldkeeper.errors import InputError
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import write_judgments_version

    secret = "PAYROLL-2026 salary of jane doe is 123456"
    chunks = tmp_path / "private-chunks.jsonl"
    chunks.write_text(secret + "\n")  # not JSON: the error would quote the line
    root = f"file://{tmp_path}/store"
    write_judgments_version(root, "private", (FIXTURES / "drift" / "judgments.jsonl").read_bytes(), None)
    state = on_reindex(suite="private", chunks_url=str(chunks), chunker="para/v1", storage_url=root, return_state=True)
    assert state.is_failed()
    error = state.result(raise_on_failure=False)
    assert isinstance(error, InputError) and str(chunks) in str(error) and ":1" in str(error)
    assert secret not in str(error) and "not shown" in str(error)
    run_id = state.state_details.flow_run_id
    deadline = time.monotonic() + 30
    with get_client(sync_client=True) as client:
        while True:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
            if logs or time.monotonic() > deadline:
                break
            time.sleep(1)
        snapshot = [r for r in client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(
            any_=["goldkeeper-snapshot-corpus"]))) if r.parameters.get("chunks_url") == str(chunks)]
        ids = [run_id, *(r.id for r in snapshot)]
        logs += client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids[1:])))
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)))
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)))
    assert logs, "the failure was not logged"
    stored = " ".join(log.message for log in logs) + " ".join(str(r.state.message) for r in runs)
    stored += " ".join(str(t.state.message) for t in tasks if t.state)
    assert str(chunks) in stored and "PAYROLL" not in stored and "jane" not in stored
    (publish,) = [t for t in tasks if t.name.startswith("publish_corpus_snapshot")]
    assert publish.run_count == 1 and publish.state.is_failed()
