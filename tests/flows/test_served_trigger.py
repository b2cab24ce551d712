"""The re-index trigger end to end: a real `prefect server start` on loopback (its own
PREFECT_HOME, analytics off), `goldkeeper serve` in another process, `goldkeeper emit-reindex`
from a third; the lifecycle run completes with the templated parameters and its drift
artifact exists, and an event about another resource starts nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from goldkeeper.io.storage import read_history
from tests.conftest import FIXTURES
from tests.flows.conftest import on_server as _read

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


@pytest.fixture
def server(prefect_server):
    return prefect_server


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
            runs = _flow_runs(server, "serve")
            finished = [r for r in runs if r.state and r.state.is_final()]
            if len(finished) == 2:
                break
            time.sleep(2)
        runs = [r for r in _flow_runs(server, "serve") if r.parameters.get("suite") in ("wiki", "wiki-qa")]
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
        assert "serve" in served_names and not {"on-reindex", "nightly", "rejudge"} & served_names
        queue = list((tmp_path / "store" / "queue").glob("wiki-qa/*.jsonl"))
        assert all(json.loads(line)["item_id"].startswith("rq1:") for q in queue for line in q.read_text().splitlines())
    finally:
        served.terminate()
        served.wait(30)


def _run(env, *args, cwd=None, timeout=300):
    done = subprocess.run([str(BIN / args[0]), *args[1:]], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, (" ".join(args), (done.stdout + done.stderr)[-3000:])
    return done.stdout


def _run_of(env, name, suite, seen=()):
    """The newest flow run of deployment ``name`` for ``suite`` not in ``seen``, once final."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        runs = [r for r in _flow_runs(env, name) if r.parameters.get("suite") == suite and r.id not in seen]
        if runs and runs[0].state and runs[0].state.is_final():
            return runs[0]
        time.sleep(2)
    raise AssertionError(f"no finished {name} run for {suite}: {[(r.parameters, r.state) for r in _flow_runs(env, name)]}")


def _ranking_everything(corpus: Path, judgments: Path, out: Path) -> str:
    """A run that ranks every chunk of the corpus for each judged query, in the corpus's order."""
    chunks = [c["chunk_id"] for c in json.loads(corpus.read_text())["chunks"]]
    queries = dict.fromkeys(json.loads(line)["query_id"] for line in judgments.read_text().splitlines())
    out.write_text("".join(json.dumps({"query_id": q, "ranking": chunks}) + "\n" for q in queries))
    return str(out)


def _queries(path: Path) -> set[str]:
    return {json.loads(line)["query_id"] for line in path.read_text().splitlines()}


def test_the_shipped_deployments_run_on_a_process_worker_for_the_suite_an_event_names(server, tmp_path):
    """The README's way for a work pool, as a new user takes it: two suites configured with
    `goldkeeper suite init`; `prefect work-pool create`, `prefect deploy --all` of the shipped
    prefect.yaml as written; a worker started in another directory (it loads the installed
    package, not this clone) with GOLDKEEPER_STORAGE. A re-index event from `goldkeeper
    emit-reindex` names one suite, one posted with curl names the other: each lifecycle
    scores its own suite's configured runs with its gates, and neither touches the other's.
    The nightly deployment run by hand scores its suite; a suite's schedule lands on it and
    survives a redeploy."""
    repo = Path(__file__).resolve().parents[2]
    root = f"file://{tmp_path}/store"
    env = {**server, "GOLDKEEPER_STORAGE": root}
    merge, drift = FIXTURES / "merge", FIXTURES / "drift"
    run_a = _ranking_everything(merge / "corpus.json", merge / "judgments.jsonl", tmp_path / "wiki-run.jsonl")
    dense = tmp_path / "wiki-dense.jsonl"  # a second system of the same suite
    dense.write_bytes(Path(run_a).read_bytes())
    run_b = _ranking_everything(drift / "corpus.json", drift / "judgments.jsonl", tmp_path / "refunds-run.jsonl")
    _run(env, "goldkeeper", "suite", "init", "wiki-qa", "-j", str(merge / "judgments.jsonl"), "-r", run_a,
         "-r", str(dense), "-k", "1,2", "--gate", "recall@2:0.5")
    _run(env, "goldkeeper", "suite", "init", "refunds", "-j", str(drift / "judgments.jsonl"), "-r", run_b,
         "-k", "3", "--gate", "recall@3:0.99")

    _run(env, "prefect", "work-pool", "create", "goldkeeper", "--type", "process")
    _run(env, "prefect", "--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml", cwd=repo)
    deployments = {d.name: d for d in _read(server, lambda client: client.read_deployments())}
    for name in ("on-reindex", "nightly", "rejudge"):
        assert deployments[name].work_pool_name == "goldkeeper"
        assert deployments[name].pull_steps == [{"prefect.deployments.steps.run_shell_script": {
            "id": "goldkeeper-installed", "script": "goldkeeper --version", "stream_output": True}}]
    assert not deployments["nightly"].schedules

    (tmp_path / "elsewhere").mkdir()
    worker_log = open(tmp_path / "worker.log", "w")
    worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", "goldkeeper"],
                              env={**env, "PREFECT_WORKER_QUERY_SECONDS": "2", "PREFECT_WORKER_PREFETCH_SECONDS": "5"},
                              cwd=tmp_path / "elsewhere", stdout=worker_log, stderr=subprocess.STDOUT)
    try:
        time.sleep(5)  # the deployment's trigger is live once deployed; the worker polls
        _run(env, "goldkeeper", "emit-reindex", "wiki", "--suite", "wiki-qa", "--snapshot-url", str(merge / "corpus.json"))
        event = json.dumps([{"id": "7c8d7a2e-5d3e-4b0a-9a53-1f6e2b9c0d11", "occurred": "2026-12-01T00:00:00Z",
                             "event": "goldkeeper.corpus.reindexed",
                             "resource": {"prefect.resource.id": "goldkeeper.corpus.refunds",
                                          "goldkeeper.snapshot_url": str(drift / "corpus.json")}}])
        posted = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                                 "-H", "Content-Type: application/json", "--data", event,
                                 f"{server['PREFECT_API_URL']}/events"], capture_output=True, text=True, timeout=30)
        assert posted.stdout == "204", posted.stdout + posted.stderr

        wiki = _run_of(server, "on-reindex", "wiki-qa")
        refunds = _run_of(server, "on-reindex", "refunds")
        log = (tmp_path / "worker.log").read_text()
        assert wiki.state.is_completed(), (wiki.state, log[-3000:])
        assert wiki.state.message == "2 evaluation(s) passed"
        # refunds: drift queued labels that score as misses, so its strict gate fails: a red run
        assert refunds.state.is_failed() and "refunds FAIL" in refunds.state.message, refunds.state
        # A FAIL is an answer, not a crash: said once in red, with no traceback in the run's log or the worker's.
        from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

        # (the run's process ships its logs in the background: they may land after its final state)
        deadline = time.monotonic() + 60
        while True:
            logs = _read(server, lambda client: client.read_logs(
                log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[refunds.id]))))
            said = "\n".join(entry.message for entry in logs)
            if "refunds FAIL" in said or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert "Traceback" not in said and "unexpected exception" not in said, said[-3000:]
        assert any(entry.level >= 40 and "refunds FAIL" in entry.message for entry in logs), said[-3000:]
        assert "Traceback" not in log and "unexpected exception" not in log, log[-3000:]
        for suite, corpus in (("wiki-qa", merge), ("refunds", drift)):
            config = json.loads((tmp_path / "store" / "suites" / f"{suite}.json").read_text())
            assert config["corpus_url"] == str(corpus / "corpus.json")  # the event's snapshot, recorded
            for report in (tmp_path / "store" / "reports" / suite).glob("*.json"):
                document = json.loads(report.read_text())
                assert [g["expression"] for g in document["verdict"]["gates"]] == config["gates"]
        # wiki-qa is one suite with two systems: one history, one page, a line per system on its chart
        assert sorted(e["system"] for e in read_history(root, "wiki-qa")) == ["wiki-dense", "wiki-run"]
        wiki_page = (tmp_path / "store" / "pages" / "wiki-qa" / "index.html").read_text()
        assert 'id="line-wiki-run-recall@2"' in wiki_page and 'id="line-wiki-dense-recall@2"' in wiki_page
        assert "wiki-qa-wiki" not in "".join(p.name for p in (tmp_path / "store" / "history").iterdir())
        # no cross-talk: each suite's judgments hold its own queries only
        for suite, corpus in (("wiki-qa", merge), ("refunds", drift)):
            assert _queries(tmp_path / "store" / "judgments" / suite / "current.jsonl") == _queries(corpus / "judgments.jsonl")
        assert "reanchored_from" in (tmp_path / "store" / "judgments" / "wiki-qa" / "current.jsonl").read_text()
        assert not (tmp_path / "elsewhere" / ".goldkeeper").exists()

        _run(env, "prefect", "deployment", "run", "goldkeeper-evaluate-suite/nightly", "-p", "suite=wiki-qa")
        nightly = _run_of(server, "nightly", "wiki-qa")
        assert nightly.state.is_completed() and nightly.state.message == "2 evaluation(s) passed", nightly.state
        # the same inputs as the lifecycle's evaluation: the same report, found by its content key
        assert len(list((tmp_path / "store" / "reports" / "wiki-qa").glob("*.json"))) == 2
        assert len(list((tmp_path / "store" / "reports" / "refunds").glob("*.json"))) == 1
        assert "goldkeeper " in (tmp_path / "worker.log").read_text()  # the pull step said which version ran
    finally:
        worker.terminate()
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:  # a loaded machine: the worker's graceful shutdown is not under test
            worker.kill()
            worker.wait(30)
        worker_log.close()

    said = _run(env, "goldkeeper", "suite", "set", "wiki-qa", "--schedule", "0 3 * * *")
    assert "on goldkeeper-evaluate-suite/nightly" in said
    _run(env, "prefect", "--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml", cwd=repo)
    nightly_deployment = _read(server, lambda client: client.read_deployment_by_name("goldkeeper-evaluate-suite/nightly"))
    (schedule,) = nightly_deployment.schedules  # kept across the redeploy
    assert schedule.schedule.cron == "0 3 * * *" and schedule.parameters["suite"] == "wiki-qa"
    _run(env, "goldkeeper", "suite", "set", "wiki-qa", "--schedule", "off")
    assert not _read(server, lambda client: client.read_deployment_by_name("goldkeeper-evaluate-suite/nightly")).schedules


def test_a_served_rejudge_run_suspends_batch_after_batch_and_walks_the_whole_queue(server, tmp_path):
    """A deployment's rejudge run suspends (its process gone while people answer) and starts
    over when resumed. With one item per batch: the first batch's answers are applied, the
    restarted run suspends again for the second item (not the first again), and an invalid
    answer leaves the run suspended."""
    from prefect.flow_runs import resume_flow_run
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from goldkeeper.io.storage import read_current_judgments, read_latest_queue
    from tests.flows.conftest import form_schema, queued_suite

    case = FIXTURES / "drift"
    root = f"file://{tmp_path}/store"
    items = queued_suite(root, "served")
    split, orphan = items
    served = subprocess.Popen([str(BIN / "goldkeeper"), "serve", "--storage", root], env=server, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        deployment = None
        while deployment is None and time.monotonic() < deadline:
            try:
                deployment = _read(server, lambda client: client.read_deployment_by_name("goldkeeper-rejudge/serve"))
            except Exception:
                time.sleep(1)
        assert deployment is not None
        run = _read(server, lambda client: client.create_flow_run_from_deployment(
            deployment.id, parameters={"suite": "served", "corpus_url": str(case / "corpus.json"), "storage_url": root,
                                       "batch": 1, "evaluate_after": False}))

        def state():
            return _read(server, lambda client: client.read_flow_run(run.id)).state

        def suspended(waiting: list[str], other_than: str | None = None):
            """Until the run is suspended with ``waiting`` as the queue's pending items (for a
            form other than the one keyed ``other_than``)."""
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                now = state()
                if (now.name == "Suspended" and [i["item_id"] for i in read_latest_queue(root, "served")[1]] == waiting
                        and now.state_details.run_input_keyset["schema"] != other_than
                        and _read(server, lambda client, now=now: form_schema(client, run.id, now)) is not None):
                    return
                time.sleep(1)
            raise AssertionError((state(), read_latest_queue(root, "served")))

        suspended([split["item_id"], orphan["item_id"]])
        with temporary_settings(updates={PREFECT_API_URL: server["PREFECT_API_URL"]}):
            with pytest.raises(RuntimeError, match="Cannot resume"):
                resume_flow_run(run.id, run_input={"reviewer": "bo", "item_1_1": "3"})
            assert state().name == "Suspended"
            resume_flow_run(run.id, run_input={"reviewer": "bo smith", "item_1_1_1": True, "item_1_2_1": True})
            suspended([orphan["item_id"]])  # the restarted run applied the first batch, and asks for the next item
            data, _ = read_current_judgments(root, "served")
            assert data.count(b'"labeled_by":"human:bo smith"') == 2  # both pieces of the split
            # a blank name: the restarted run suspends again for the same item, asking again, nothing applied
            asked = state().state_details.run_input_keyset["schema"]
            resume_flow_run(run.id, run_input={"reviewer": " ", "item_1_none": True})
            suspended([orphan["item_id"]], other_than=asked)
            assert read_current_judgments(root, "served")[0] == data
            resume_flow_run(run.id, run_input={"reviewer": "bo smith", "item_1_none": True})
        deadline = time.monotonic() + 120
        while not state().is_final() and time.monotonic() < deadline:
            time.sleep(1)
        assert state().is_completed(), state()
        data, _ = read_current_judgments(root, "served")
        assert orphan["doc_uri"].encode() not in data
        assert read_latest_queue(root, "served")[1] == []
        assert len(list((tmp_path / "store" / "answers" / "served").glob("*.jsonl"))) == 2
    finally:
        served.terminate()
        served.wait(30)
