"""The Prefect server goes away and comes back (issue 43, item 4; spec/reliability.md, "Faults
of the store").

Each test starts its own server (its own port and PREFECT_HOME, so the session's server is
untouched), stops it under a flow and starts it again on the same port and database. A
lifecycle run held just before it writes the new judgments version goes on while the server
is down; it either completes once the server is back or fails with its reason, and then a
rerun completes; either way storage ends as an uninterrupted run leaves it. A rejudge run
suspended for people's answers (a deployment's run, served by ``goldkeeper serve``) is still
suspended after the restart, and answering it then applies the answers; so is one paused in
place (the flow called directly, polling from its own process).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.flows.conftest import SETTINGS, _port, on_server, queued_suite, start_server, stop_server
from tests.flows.killing import FIRST, Case, differences

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


@pytest.fixture
def own_server():
    """A server of the test's own, and a way to restart it: (environment, restart)."""
    port, home = _port(), tempfile.mkdtemp(prefix="goldkeeper-restarted-")
    env = {**os.environ, **SETTINGS, "PREFECT_HOME": home, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}
    held = {"server": start_server(port, home)}

    def restart(while_down=lambda: None) -> None:
        stop_server(held["server"])
        while_down()
        held["server"] = start_server(port, home, "server-again.log")
    yield env, restart
    stop_server(held["server"])


def _runs(env, name: str):
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    return on_server(env, lambda client: client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[name]))))


def test_a_lifecycle_run_in_flight_through_a_server_restart_ends_as_an_uninterrupted_run(own_server, tmp_path):
    env, restart = own_server
    case = Case(tmp_path, env)
    case.fresh()
    assert case.run(FIRST).returncode == 0
    expected = case.stored()
    case.fresh()
    go = tmp_path / "go"
    process = case.start(case.corpus, {"hold": "task write_version start", "until": str(go)})
    deadline = time.monotonic() + 120
    while not Path(f"{go}.holding").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert Path(f"{go}.holding").exists(), process.communicate()[1][-3000:]
    # Down: the run goes on, and its next calls to the API meet no server for a while.
    restart(while_down=lambda: (go.touch(), time.sleep(3)))
    err = process.communicate(timeout=300)[1]
    if process.returncode == 0:
        outcome = "completed when the server was back"
        newest = max(_runs(env, "goldkeeper-on-reindex"), key=lambda r: r.created)
        assert newest.state.is_completed(), newest.state  # and the server knows it
    else:
        # A clear reason on its last line, and a rerun that completes.
        reason = err.strip().splitlines()[-1]
        assert "Traceback" not in reason and reason, err[-3000:]
        outcome = f"failed ({reason}); a rerun completed"
        assert case.run(FIRST).returncode == 0
    print(outcome)
    assert differences(expected, case.stored()) == [], outcome
    assert not [p for p in case.stored() if p.endswith(".tmp")]


def test_a_suspended_rejudge_run_survives_a_server_restart_and_can_be_answered(own_server, tmp_path):
    from prefect.flow_runs import resume_flow_run
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from goldkeeper.io.storage import read_current_judgments

    env, restart = own_server
    root = f"file://{tmp_path}/store"
    orphan = queued_suite(root, "served")[1]
    served = subprocess.Popen([str(BIN / "goldkeeper"), "serve", "--storage", root], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        deployment = None
        while deployment is None and time.monotonic() < deadline:
            try:
                deployment = on_server(env, lambda client: client.read_deployment_by_name("goldkeeper-rejudge/serve"))
            except Exception:
                time.sleep(1)
        assert deployment is not None
        run = on_server(env, lambda client: client.create_flow_run_from_deployment(
            deployment.id, parameters={"suite": "served", "corpus_url": str(FIXTURES / "drift" / "corpus.json"),
                                       "storage_url": root, "batch": 2, "evaluate_after": False}))

        def state():
            return on_server(env, lambda client: client.read_flow_run(run.id)).state

        deadline = time.monotonic() + 120
        while state().name != "Suspended" and time.monotonic() < deadline:
            time.sleep(1)
        assert state().name == "Suspended", state()
        restart()
        assert state().name == "Suspended", state()  # kept in the server's database
        assert served.poll() is None, served.stderr.read().decode()[-3000:]  # the runner rode it out
        with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
            resume_flow_run(run.id, run_input={"reviewer": "bo", "item_1_1_1": True, "item_1_2_1": True,
                                               "item_2_none": True})
        deadline = time.monotonic() + 180
        while not state().is_final() and time.monotonic() < deadline:
            time.sleep(1)
        assert state().is_completed(), state()
        data, _ = read_current_judgments(root, "served")
        assert data.count(b'"labeled_by":"human:bo"') == 2 and orphan["doc_uri"].encode() not in data
    finally:
        served.terminate()
        served.wait(30)


def test_a_rejudge_run_paused_in_place_survives_a_server_restart_and_can_be_answered(own_server, tmp_path):
    """The rejudge flow called directly (not a deployment's run): it pauses in its own process,
    asking the server for its state every second. The server is down for a while under it
    and comes back; the run is still paused, its process alive, and answering it applies the
    answers."""
    from prefect.flow_runs import resume_flow_run
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from goldkeeper.io.storage import read_current_judgments

    env, restart = own_server
    root = f"file://{tmp_path}/store"
    orphan = queued_suite(root, "paused")[1]
    code = ("import sys; from goldkeeper.flows.rejudge import rejudge; "
            "rejudge(suite='paused', corpus_url=sys.argv[1], storage_url=sys.argv[2], batch=2, poll_interval=1, "
            "timeout=600, evaluate_after=False)")
    process = subprocess.Popen([sys.executable, "-c", code, str(FIXTURES / "drift" / "corpus.json"), root], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def paused():
            runs = [r for r in _runs(env, "goldkeeper-rejudge") if r.state and r.state.is_paused()]
            return runs[0] if runs and on_server(env, lambda client: _async_schema(client, runs[0])) else None

        async def _async_schema(client, run):
            from prefect.exceptions import ObjectNotFound

            try:
                return await client.read_flow_run_input(run.id, run.state.state_details.run_input_keyset["schema"])
            except ObjectNotFound:
                return None

        deadline = time.monotonic() + 120
        while (run := paused()) is None and process.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        assert run is not None, process.communicate(timeout=30)[1][-3000:]
        restart(while_down=lambda: time.sleep(5))  # five of its polls meet no server
        assert process.poll() is None, process.communicate(timeout=30)[1][-3000:]
        assert paused() is not None and paused().id == run.id  # kept in the server's database
        with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
            resume_flow_run(run.id, run_input={"reviewer": "bo", "item_1_1_1": True, "item_1_2_1": True,
                                               "item_2_none": True})
        _, err = process.communicate(timeout=180)
        assert process.returncode == 0, err[-3000:]
        finished = on_server(env, lambda client: client.read_flow_run(run.id))
        assert finished.state.is_completed(), finished.state
        data, _ = read_current_judgments(root, "paused")
        assert data.count(b'"labeled_by":"human:bo"') == 2 and orphan["doc_uri"].encode() not in data
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
