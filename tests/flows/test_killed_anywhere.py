"""Crash anywhere, run again, same end state (issue 43, item 1; spec/reliability.md, "Faults
of the store").

The lifecycle's flow process is killed with SIGKILL at numbered moments (tests/kill_points:
each task's start and end; each storage write's start, the moment its temporary is written
in full but not yet in place, and its end) and run again, against the session's real Prefect
server: as a new run for the same event, as a retry of the same flow run in Prefect's engine
(``python -m prefect.engine``, the command a process worker runs), and through a real process
worker, which reports the killed run Crashed and runs the next one. Afterwards storage holds exactly
what an uninterrupted run leaves: the same files, byte for byte (one new judgments version,
not two; one history object per evaluation; the same queue, report and pages), and no
temporary. The killed attempt and the rerun run at different clocks (SOURCE_DATE_EPOCH): a
rerun takes up the re-index at its first attempt's time, unless the kill came before that
attempt recorded its start, in which case it is a new re-index at the rerun's own time.

Every moment is tried with ``GOLDKEEPER_SOAK=1`` in the environment (89 of them, about ten
minutes; CI does not set it); by default a spread of 20 or more is.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
HOOK = Path(__file__).resolve().parents[1] / "kill_points"
FIRST, LATER = "1764806400", "1764900000"  # the killed attempt's clock, the rerun's
RUN = ("import sys; from goldkeeper.flows.lifecycle import on_reindex; "
       "on_reindex(suite='wiki-qa', corpus_url=sys.argv[1], storage_url=sys.argv[2])")


class Case:
    """One suite on storage at a fixed place (reports name their storage: every attempt must
    use the same one), made afresh before each attempt; a run that ranks every chunk."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.tmp, self.env = tmp_path, env
        self.store = tmp_path / "store"
        self.root = f"file://{self.store}"
        self.corpus = str(FIXTURES / "merge" / "corpus.json")
        chunks = [c["chunk_id"] for c in json.loads(Path(self.corpus).read_text())["chunks"]]
        queries = dict.fromkeys(json.loads(line)["query_id"]
                                for line in (FIXTURES / "merge" / "judgments.jsonl").read_text().splitlines())
        self.run_file = tmp_path / "wiki-run.jsonl"
        self.run_file.write_text("".join(json.dumps({"query_id": q, "ranking": chunks}) + "\n" for q in queries))
        self.plan = tmp_path / "kill.json"

    def fresh(self) -> None:
        subprocess.run(["rm", "-rf", str(self.store)], check=True)
        done = subprocess.run([str(BIN / "goldkeeper"), "suite", "init", "wiki-qa", "--storage", self.root,
                               "-j", str(FIXTURES / "merge" / "judgments.jsonl"), "-r", str(self.run_file),
                               "-k", "1,2", "--gate", "recall@2:0.5"], env=self.env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    def environment(self, clock: str, plan: dict | None, plan_file: Path | None = None) -> dict[str, str]:
        """A flow process's environment: its clock, and its kill-points plan (in ``plan_file``)."""
        env = {**self.env, "SOURCE_DATE_EPOCH": clock}
        if plan is not None:
            plan_file = plan_file or self.plan
            plan_file.write_text(json.dumps(plan))
            env.update(GOLDKEEPER_KILL_POINTS=str(plan_file),
                       PYTHONPATH=os.pathsep.join([str(HOOK), *filter(None, [self.env.get("PYTHONPATH")])]))
        return env

    def run(self, clock: str, plan: dict | None = None, corpus: str | None = None) -> subprocess.CompletedProcess:
        """The lifecycle for a re-index onto ``corpus`` (the merge case's by default), to its end."""
        return subprocess.run([sys.executable, "-c", RUN, corpus or self.corpus, self.root],
                              env=self.environment(clock, plan), capture_output=True, text=True, timeout=300)

    def start(self, corpus: str, plan: dict | None = None, plan_file: Path | None = None) -> subprocess.Popen:
        """The same, started in the background (at the first clock)."""
        return subprocess.Popen([sys.executable, "-c", RUN, corpus, self.root],
                                env=self.environment(FIRST, plan, plan_file), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def stored(self) -> dict[str, bytes]:
        """Every file on storage but the locks (empty files a writer holds) by its path."""
        return {str(p.relative_to(self.store)): p.read_bytes() for p in sorted(self.store.rglob("*"))
                if p.is_file() and not p.name.endswith(".goldkeeper.lock")}


    def prepare(self) -> Case:
        """The moments an uninterrupted run passes, and what storage holds after one at the
        killed attempt's clock and after one at the rerun's."""
        record = self.tmp / "moments.txt"
        self.fresh()
        done = self.run(FIRST, {"record": str(record)})
        assert done.returncode == 0, done.stderr[-3000:]
        self.moments = record.read_text().splitlines()
        self.expected = {FIRST: self.stored()}
        self.fresh()
        assert self.run(LATER).returncode == 0
        self.expected[LATER] = self.stored()
        # Until the re-index's record is stored, a rerun is a new re-index at its own time.
        self.recorded = next(n for n, m in enumerate(self.moments) if m.startswith("create ") and m.endswith(" end"))
        return self

    def killed_and_run_again(self, point: int) -> list[str]:
        """Kill a run at moment ``point``, run it again as a new run; what storage then holds
        that an uninterrupted run's does not (nothing, when all is well)."""
        self.fresh()
        killed = self.run(FIRST, {"at": point})
        assert killed.returncode == -signal.SIGKILL, (point, self.moments[point], killed.stderr[-2000:])
        again = self.run(LATER)
        assert again.returncode == 0, (point, self.moments[point], again.stderr[-3000:])
        found = self.stored()
        assert not [p for p in found if p.endswith(".tmp")], (point, self.moments[point])
        return _differences(self.expected[FIRST if point >= self.recorded else LATER], found)


def _differences(expected: dict[str, bytes], found: dict[str, bytes]) -> list[str]:
    return ([f"missing {p}" for p in expected.keys() - found.keys()] + [f"extra {p}" for p in found.keys() - expected.keys()]
            + [f"differs {p}" for p in expected.keys() & found.keys() if expected[p] != found[p]])


@pytest.fixture(scope="module")
def case(prefect_server, tmp_path_factory):
    return Case(tmp_path_factory.mktemp("killed"), prefect_server).prepare()


def _spread(moments: list[str], recorded: int) -> list[int]:
    """The moments tried by default: the first, the moment the re-index is recorded, each
    write's mid-write moment (its temporary in full, not yet in place), and every third
    task's start."""
    staged = [n for n, m in enumerate(moments) if m.endswith(" staged")]
    starts = [n for n, m in enumerate(moments) if m.startswith("task ") and m.endswith(" start")]
    return sorted({0, recorded, *staged, *starts[1::3]})


def test_killed_at_each_moment_and_run_again_as_a_new_run_ends_as_an_uninterrupted_run(case, tmp_path):
    """Two lanes (two storages, each with its uninterrupted runs) share the moments."""
    from concurrent.futures import ThreadPoolExecutor

    points = list(range(len(case.moments))) if os.environ.get("GOLDKEEPER_SOAK") else _spread(case.moments, case.recorded)
    assert len(points) >= 20, (len(points), case.moments)
    other = Case(tmp_path, case.env).prepare()
    assert other.moments[:case.recorded + 1] == case.moments[:case.recorded + 1] and len(other.moments) == len(case.moments)
    lanes = [(case, points[0::2]), (other, points[1::2])]
    with ThreadPoolExecutor(2) as pool:
        found = pool.map(lambda lane: [(n, lane[0].moments[n], lane[0].killed_and_run_again(n)) for n in lane[1]], lanes)
        table = sorted(row for rows in found for row in rows)
    print("\n".join(f"{n:3} {m}: {w or 'same'}" for n, m, w in table))
    assert not [row for row in table if row[2]], [row for row in table if row[2]]
    versions = [p for p in case.expected[FIRST] if "/versions/" in p]
    assert len(versions) == 2  # the suite's first version and the one the re-index made: not three


def test_killed_at_random_moments_from_outside_and_run_again(case):
    """SIGKILL sent from outside at seeded random times within an uninterrupted run's length,
    wherever the process is then: inside a task, between Prefect's calls, mid-write."""
    case.fresh()
    started = time.monotonic()
    assert case.run(FIRST).returncode == 0
    length = time.monotonic() - started
    chance = random.Random(43)
    for _ in range(3):
        case.fresh()
        delay = chance.uniform(0.2, length)
        process = case.start(case.corpus)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
        again = case.run(LATER)
        assert again.returncode == 0, (delay, again.stderr[-3000:])
        found = case.stored()
        assert not [p for p in found if p.endswith(".tmp")]
        # Which clock depends on whether the kill came before the re-index was recorded.
        assert found in (case.expected[FIRST], case.expected[LATER]), (delay, _differences(case.expected[FIRST], found))


def _client_call(env, call):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def go():
        async with get_client() as client:
            return await call(client)
    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        return asyncio.run(go())


def _deployment(env, pool: str | None = None):
    """A deployment of on_reindex by its module path (as the shipped prefect.yaml has it)."""
    from goldkeeper.flows.lifecycle import on_reindex

    async def create(client):
        flow_id = await client.create_flow(on_reindex)
        return await client.create_deployment(flow_id=flow_id, name=f"killed-{pool or 'engine'}",
                                              entrypoint="goldkeeper.flows.lifecycle:on_reindex",
                                              work_pool_name=pool)
    return _client_call(env, create)


def _flow_run(env, deployment_id, case):
    return _client_call(env, lambda client: client.create_flow_run_from_deployment(
        deployment_id, parameters={"suite": "wiki-qa", "corpus_url": case.corpus, "storage_url": case.root})).id


def _again(env, run_id) -> None:
    """The run given to Prefect again: scheduled once more (a crashed run, or one whose
    process died before anyone could say so, which the server still thinks is running)."""
    from prefect.states import Scheduled

    _client_call(env, lambda client: client.set_flow_run_state(run_id, Scheduled(), force=True))


def _state(env, run_id):
    return _client_call(env, lambda client: client.read_flow_run(run_id))


def test_killed_and_retried_as_the_same_flow_run_in_prefects_engine(case, prefect_server):
    """The process a worker starts for a run (``python -m prefect.engine`` with the run's id)
    killed at moments across the lifecycle, then the same flow run given to the engine again."""
    deployment = _deployment(prefect_server)
    writes = [n for n, m in enumerate(case.moments) if m.startswith(("write ", "create ")) and m.endswith(" staged")]
    for point in [writes[1], writes[len(writes) // 2], writes[-1]]:
        case.fresh()
        run_id = _flow_run(prefect_server, deployment, case)
        engine = [sys.executable, "-m", "prefect.engine"]
        killed = subprocess.run(engine, env={**case.environment(FIRST, {"at": point}), "PREFECT__FLOW_RUN_ID": str(run_id)},
                                capture_output=True, text=True, timeout=300)
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr[-2000:])
        _again(prefect_server, run_id)
        retried = subprocess.run(engine, env={**case.environment(LATER, None), "PREFECT__FLOW_RUN_ID": str(run_id)},
                                 capture_output=True, text=True, timeout=300)
        run = _state(prefect_server, run_id)
        assert retried.returncode == 0 and run.state.is_completed(), (point, run.state, retried.stderr[-3000:])
        assert run.run_count >= 2  # the same run, run again
        assert _differences(case.expected[FIRST], case.stored()) == [], (point, case.moments[point])


def test_a_process_workers_crashed_run_and_the_next_run_end_as_an_uninterrupted_run(case, prefect_server):
    """A real process worker: its flow process killed mid-write of the new judgments version;
    the worker reports the run Crashed (red in the UI, with the signal); the next run of the
    deployment, on the same worker, ends where an uninterrupted run ends."""
    pool = "goldkeeper-killed"
    made = subprocess.run([str(BIN / "prefect"), "work-pool", "create", pool, "--type", "process"], env=prefect_server,
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    deployment = _deployment(prefect_server, pool)
    point = next(n for n, m in enumerate(case.moments) if m.startswith("write versions/") and m.endswith(" staged"))
    case.fresh()
    worker_env = {**case.environment(FIRST, {"at": point}), "PREFECT_WORKER_QUERY_SECONDS": "1",
                  "PREFECT_WORKER_PREFETCH_SECONDS": "2"}
    log = open(case.tmp / "worker.log", "w")
    worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", pool], env=worker_env,
                              cwd=case.tmp, stdout=log, stderr=subprocess.STDOUT)
    try:
        run_id = _flow_run(prefect_server, deployment, case)
        deadline = time.monotonic() + 180
        while not (_state(prefect_server, run_id).state.is_crashed() or time.monotonic() > deadline):
            time.sleep(1)
        assert _state(prefect_server, run_id).state.is_crashed(), (_state(prefect_server, run_id).state,
                                                                  (case.tmp / "worker.log").read_text()[-3000:])
        assert not case.plan.exists()  # the kill came where it was planned
        again = _flow_run(prefect_server, deployment, case)
        deadline = time.monotonic() + 180
        while not (_state(prefect_server, again).state.is_final() or time.monotonic() > deadline):
            time.sleep(1)
        run = _state(prefect_server, again)
        assert run.state.is_completed(), (run.state, (case.tmp / "worker.log").read_text()[-3000:])
    finally:
        worker.terminate()
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()
    # The worker's clock was the first attempt's for both runs: the record decides either way.
    assert _differences(case.expected[FIRST], case.stored()) == []
