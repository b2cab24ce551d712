"""The re-index trigger end to end: a real `prefect server start` on loopback (its own
PREFECT_HOME, analytics off), `goldkeeper serve` in another process, `goldkeeper emit-reindex`
from a third; the lifecycle run completes with the templated parameters and its drift
artifact exists, and an event about another resource starts nothing."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


@pytest.fixture
def server(prefect_server):
    return prefect_server


def _read(env, call):
    """``call(client)`` against the test server, with the API URL set only for the call."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def read():
        async with get_client() as client:
            return await call(client)
    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        return asyncio.run(read())


def _flow_runs(env, deployment_name):
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName

    return _read(env, lambda client: client.read_flow_runs(
        deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=[deployment_name]))))


def _artifact(env, key):
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    return _read(env, lambda client: client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))))


def test_emitting_reindex_runs_the_served_lifecycle_with_templated_parameters(server, tmp_path):
    root = f"file://{tmp_path}/store"
    setup = ("from goldkeeper.io.storage import write_judgments_version; import sys; "
             "write_judgments_version(sys.argv[1], 'wiki-qa', open(sys.argv[2], 'rb').read(), None)")
    subprocess.run([sys.executable, "-c", setup, root, str(FIXTURES / "merge" / "judgments.jsonl")], check=True)
    served = subprocess.Popen([str(BIN / "goldkeeper"), "serve", "--storage", root], env=server, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(8)  # the deployment and its trigger register
        assert served.poll() is None, served.stderr.read().decode()
        # Without --suite the suite falls back to the corpus name, "wiki", which has no
        # judgments: that run must fail loudly, not be dropped.
        other = subprocess.run([str(BIN / "goldkeeper"), "emit-reindex", "wiki", "--snapshot-url", "s3://nowhere"],
                               env=server, capture_output=True, text=True)
        assert other.returncode == 0, other.stderr
        # An event about another resource, posted as the README's curl does: it starts nothing.
        import datetime
        import uuid

        body = json.dumps([{"id": str(uuid.uuid4()), "occurred": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                            "event": "goldkeeper.corpus.reindexed",
                            "resource": {"prefect.resource.id": "other.corpus.wiki"}}]).encode()
        request = urllib.request.Request(f"{server['PREFECT_API_URL']}/events", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        assert urllib.request.urlopen(request, timeout=10).status == 204
        emitted = subprocess.run(
            [str(BIN / "goldkeeper"), "emit-reindex", "wiki", "--suite", "wiki-qa", "--snapshot-url",
             str(FIXTURES / "merge" / "corpus.json")], env=server, capture_output=True, text=True)
        assert emitted.returncode == 0, emitted.stderr
        deadline = time.monotonic() + 150
        finished = []
        while time.monotonic() < deadline:
            runs = _flow_runs(server, "on-reindex")
            finished = [r for r in runs if r.state and r.state.is_final()]
            if len(finished) == 2:
                break
            time.sleep(2)
        runs = _flow_runs(server, "on-reindex")
        by_suite = {r.parameters.get("suite"): r for r in runs}
        assert by_suite["wiki-qa"].state.is_completed(), by_suite["wiki-qa"].state
        assert by_suite["wiki-qa"].parameters["corpus_url"] == str(FIXTURES / "merge" / "corpus.json")
        assert by_suite["wiki"].parameters["corpus_url"] == "s3://nowhere"
        assert by_suite["wiki"].state.is_failed()
        assert len(runs) == 2  # the foreign resource started nothing
        versions = list((tmp_path / "store" / "judgments" / "wiki-qa" / "versions").glob("*.jsonl"))
        assert len(versions) == 2  # the fixed judgments became a new version
        assert "reanchored_from" in (tmp_path / "store" / "judgments" / "wiki-qa" / "current.jsonl").read_text()
        assert _artifact(server, "goldkeeper-wiki-qa-drift")
        served_names = {d.name for d in _read(server, lambda client: client.read_deployments())}
        assert {"on-reindex", "rejudge", "evaluate"} <= served_names
        queue = list((tmp_path / "store" / "queue").glob("wiki-qa/*.jsonl"))
        assert all(json.loads(line)["item_id"].startswith("rq1:") for q in queue for line in q.read_text().splitlines())
    finally:
        served.terminate()
        served.wait(30)


def test_prefect_deploy_all_works_with_a_process_work_pool(server):
    repo = Path(__file__).resolve().parents[2]
    created = subprocess.run([str(BIN / "prefect"), "work-pool", "create", "goldkeeper", "--type", "process"],
                             env=server, capture_output=True, text=True)
    assert created.returncode == 0, created.stdout + created.stderr
    deployed = subprocess.run([str(BIN / "prefect"), "--no-prompt", "deploy", "--all", "--prefect-file",
                               "deployments/prefect.yaml"], cwd=repo, env=server, capture_output=True, text=True,
                              timeout=300)
    assert deployed.returncode == 0, (deployed.stdout + deployed.stderr)[-3000:]
    deployments = {d.name: d for d in _read(server, lambda client: client.read_deployments())}
    assert {"on-reindex", "evaluate-nightly", "rejudge"} <= set(deployments)
    assert deployments["on-reindex"].work_pool_name == "goldkeeper"


def test_a_served_rejudge_run_suspends_refuses_invalid_answers_and_resumes(server, tmp_path):
    from prefect.flow_runs import resume_flow_run
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from goldkeeper.io.storage import read_current_judgments
    from tests.flows.conftest import queued_suite

    case = FIXTURES / "drift"
    root = f"file://{tmp_path}/store"
    items = queued_suite(root, "served")
    served = subprocess.Popen([str(BIN / "goldkeeper"), "serve", "--storage", root], env=server, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        deployment = None
        while deployment is None and time.monotonic() < deadline:
            found = _read(server, lambda client: client.read_deployments())
            deployment = next((d for d in found if d.name == "rejudge" and d.flow_id), None)
            time.sleep(1)
        assert deployment is not None
        run = _read(server, lambda client: client.create_flow_run_from_deployment(
            deployment.id, parameters={"suite": "served", "corpus_url": str(case / "corpus.json"), "storage_url": root}))

        def state():
            return _read(server, lambda client: client.read_flow_run(run.id)).state

        deadline = time.monotonic() + 120
        while not (state().name == "Suspended") and time.monotonic() < deadline:
            time.sleep(1)
        assert state().name == "Suspended", state()
        answers = {"reviewer": "bo"}
        for n, item in enumerate(items):
            answers[f"item_{n}_chunk"] = item["candidates"][0]["chunk_id"] if item["status"] == "SPLIT" else "none"
            answers[f"item_{n}_relevance"] = 1
        with temporary_settings(updates={PREFECT_API_URL: server["PREFECT_API_URL"]}):
            with pytest.raises(RuntimeError, match="Cannot resume"):
                resume_flow_run(run.id, run_input={**answers, "item_0_relevance": -1})
            assert state().name == "Suspended"
            resume_flow_run(run.id, run_input=answers)
        deadline = time.monotonic() + 120
        while not state().is_final() and time.monotonic() < deadline:
            time.sleep(1)
        assert state().is_completed(), state()
        data, _ = read_current_judgments(root, "served")
        assert b'"labeled_by":"human:bo"' in data and b"rejudged_from" in data
    finally:
        served.terminate()
        served.wait(30)
