"""The evaluate flow on a real (temporary, loopback) Prefect server; artifacts read back."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.conftest import FIXTURES, run_cli

pytest.importorskip("prefect")


@pytest.fixture(scope="module")
def prefect_server():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def _artifacts(keys):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def read():
        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
            return {a.key: a for a in found}

    return asyncio.run(read())


def test_evaluate_publishes_report_history_and_artifacts(prefect_server, tmp_path):
    from goldkeeper.flows.evaluate import evaluate

    root = f"file://{tmp_path}/store"
    case = FIXTURES / "basic"
    outcome = evaluate(suite="Basic Suite", judgments_url=str(case / "judgments.jsonl"),
                       run_url=str(case / "run.jsonl"), storage_url=root, k=[1, 3],
                       gates=["recall@3:0.9"], generated_at="2026-11-29T12:00:00Z")
    assert outcome["verdict"] == "FAIL"
    report = json.loads(open(outcome["report_url"][len("file://"):]).read())
    assert report["metrics"]["recall@3"]["value"] == 0.5
    assert report["verdict"]["status"] == "FAIL"
    history = (tmp_path / "store" / "history" / "basic-suite.jsonl").read_text().splitlines()
    assert len(history) == 1 and json.loads(history[0])["verdict"] == "FAIL"

    found = _artifacts(["goldkeeper-basic-suite-metrics", "goldkeeper-basic-suite-summary",
                        "goldkeeper-basic-suite-report"])
    assert set(found) == {"goldkeeper-basic-suite-metrics", "goldkeeper-basic-suite-summary",
                          "goldkeeper-basic-suite-report"}
    assert found["goldkeeper-basic-suite-summary"].data.startswith("### goldkeeper: FAIL")
    table = found["goldkeeper-basic-suite-metrics"].data
    table = json.loads(table) if isinstance(table, str) else table
    assert {"metric": "recall@3", "value": 0.5} .items() <= next(r for r in table if r["metric"] == "recall@3").items()
    assert outcome["report_url"] in str(found["goldkeeper-basic-suite-report"].data)


def test_a_second_evaluation_appends_to_history(prefect_server, tmp_path):
    from goldkeeper.flows.evaluate import evaluate

    root = f"file://{tmp_path}/store"
    case = FIXTURES / "no-positives"
    for stamp in ("2026-11-29T12:00:00Z", "2026-11-30T12:00:00Z"):
        evaluate(suite="np", judgments_url=str(case / "judgments.jsonl"), run_url=str(case / "run.jsonl"),
                 storage_url=root, k=[3], generated_at=stamp)
    history = [json.loads(line) for line in (tmp_path / "store" / "history" / "np.jsonl").read_text().splitlines()]
    assert [h["time"] for h in history] == ["2026-11-29T12:00:00Z", "2026-11-30T12:00:00Z"]
    assert len(list((tmp_path / "store" / "reports" / "np").iterdir())) == 2


@pytest.mark.slow
def test_goldkeeper_demo_runs_the_main_job_end_to_end(tmp_path):
    result = run_cli("demo", "--storage", f"file://{tmp_path}/store", cwd=tmp_path)
    assert result.code == 0, result.stderr[-2000:]
    assert "verdict PASS" in result.stdout
    reports = list((tmp_path / "store" / "reports" / "example").iterdir())
    assert len(reports) == 1
    assert json.loads(reports[0].read_text())["verdict"]["status"] == "PASS"
