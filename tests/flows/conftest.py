"""One real Prefect server for the flow tests: `prefect server start` on loopback, with its own
PREFECT_HOME and analytics off, started once per session. The settings are applied here, at
import time, before any test imports Prefect, so every flow and client in the session (and
every process the tests start) talks to this server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


PORT = _port()
HOME = tempfile.mkdtemp(prefix="goldkeeper-prefect-home-")
SETTINGS = {
    "PREFECT_HOME": HOME,
    "PREFECT_API_URL": f"http://127.0.0.1:{PORT}/api",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_LOGGING_LEVEL": "WARNING",
}
os.environ.update(SETTINGS)
STARTUP_TIMEOUT = 180


def start_server(port: int, home: str, log_name: str = "server.log") -> subprocess.Popen:
    """`prefect server start` on loopback at ``port`` with PREFECT_HOME ``home`` (its database
    there), once it answers /health; a failed start fails the test with the server's log."""
    settings = {**SETTINGS, "PREFECT_HOME": home, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}
    binary = Path(sys.executable).parent / "prefect"
    log = open(Path(home) / log_name, "ab")
    process = subprocess.Popen([str(binary), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                               env={**os.environ, **settings}, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        try:
            if urllib.request.urlopen(f"{settings['PREFECT_API_URL']}/health", timeout=2).status == 200:
                return process
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail("prefect server did not start: " + (Path(home) / log_name).read_text()[-2000:])
        time.sleep(0.5)


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


@pytest.fixture(scope="session")
def prefect_server():
    """The session's server: started on first use, stopped at the end; its environment."""
    process = start_server(PORT, HOME)
    yield {**os.environ, **SETTINGS}
    _drain_prefect_workers()
    stop_server(process)


def _drain_prefect_workers() -> None:
    """Prefect's event and log workers outlive the flows that started them; once the server is
    gone they retry against it. They are drained while the server still answers. (Suspected of
    the suite's intermittent HypothesisDeprecationWarning, "do not use the random module inside
    strategies", which later tests print: draining did not remove it, so it is not theirs.)"""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    EventsWorker.drain_all(timeout=10, at_exit=False)
    APILogWorker.drain_all(timeout=10, at_exit=False)


def on_server(env: dict[str, str], call):
    """``call(client)`` (a coroutine of Prefect's client) against the test server, with the API
    URL set only for the call; its result."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def called():
        async with get_client() as client:
            return await call(client)
    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        return asyncio.run(called())


def placed_drift_corpus(path) -> str:
    """The spec's drift corpus with each chunk's offsets into its document (``start_index``,
    its documents rebuilt as the chunks' texts apart by a blank line), written to ``path``."""
    import json

    from tests.conftest import FIXTURES

    snapshot = json.loads((FIXTURES / "drift" / "corpus.json").read_text())
    ends: dict[str, int] = {}
    for chunk in sorted(snapshot["chunks"], key=lambda c: (c["doc_uri"], c["ordinal"])):
        chunk["start_index"] = ends.get(chunk["doc_uri"], -2) + 2
        ends[chunk["doc_uri"]] = chunk["start_index"] + len(chunk["text"])
    path.write_text(json.dumps(snapshot))
    return str(path)


def queued_suite(root: str, suite: str, corpus_path: str | None = None) -> list[dict]:
    """A suite on storage whose judgments drifted (the spec's drift case, or its corpus at
    ``corpus_path``) and whose re-judgment queue is published; the queue's items."""
    import goldkeeper
    from goldkeeper.core.drift import classify, parse_corpus, rejudgment_queue
    from goldkeeper.io.storage import publish_queue, write_judgments_version
    from tests.conftest import FIXTURES

    case = FIXTURES / "drift"
    write_judgments_version(root, suite, (case / "judgments.jsonl").read_bytes(), None)
    labels = goldkeeper.parse_judgments((case / "judgments.jsonl").read_bytes())
    corpus = parse_corpus(open(corpus_path or case / "corpus.json", "rb").read())
    items = rejudgment_queue(labels, classify(labels, corpus), corpus)
    publish_queue(root, suite, items, "2026-11-29T00:00:00Z")
    return items


def finished(flow_function, **parameters) -> dict:
    """Run a goldkeeper flow and return its outcome whatever its verdict (a FAIL evaluation
    ends Failed, with the outcome in its state); any other failure raises."""
    from goldkeeper.flows.evaluate import outcome_of

    return outcome_of(flow_function(**parameters, return_state=True))


def next_form(run_id, before: str, timeout: float = 120) -> dict:
    """The schema of the form a paused run asks for next, once its keyset is not ``before``
    (the schema key of the form answered last)."""
    import json

    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(run_id).state
            keys = state.state_details.run_input_keyset if state and state.is_paused() else None
            if keys and keys["schema"] != before and (schema := form_schema(client, run_id, state)) is not None:
                return json.loads(schema)
        time.sleep(0.5)
    raise AssertionError(f"the run was not paused for another form: {state}")


def form_schema(client, run_id, state) -> str | None:
    """The schema of the form a paused ``state`` asks for, or None while it is not saved yet:
    Prefect proposes the Paused state first and saves the form's schema after it, so a run
    seen paused may not have its form yet (and resuming it then is refused)."""
    from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError

    keys = state.state_details.run_input_keyset if state else None
    if not keys:
        return None
    try:
        return client.read_flow_run_input(run_id, keys["schema"])
    except (ObjectNotFound, PrefectHTTPStatusError) as error:
        if getattr(getattr(error, "response", None), "status_code", 404) != 404:
            raise
        return None


def paused_filter():
    """The server's paused flow runs only: unfiltered, a read returns its default page (200
    runs), and a session's newest paused run need not be on it."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType

    return FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PAUSED])))


def paused_run(storage_url: str, timeout: float = 120):
    """The flow run paused for a form on ``storage_url`` (its parameter), once there is one."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with get_client(sync_client=True) as client:
            paused = [r for r in client.read_flow_runs(flow_run_filter=paused_filter()) if r.state and r.state.is_paused()
                      and r.parameters.get("storage_url") == storage_url
                      and (not r.state.state_details.run_input_keyset or form_schema(client, r.id, r.state) is not None)]
        if paused:
            return paused[0]
        time.sleep(1)
    raise AssertionError(f"no run on {storage_url} paused for a form")
