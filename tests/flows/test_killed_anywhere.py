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

Every moment (89 of them) is tried with ``GOLDKEEPER_SOAK=1`` in the environment, which CI
does not set; by default a spread of 20 or more is.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.flows.conftest import on_server
from tests.flows.killing import BIN, FIRST, LATER, Case, differences

pytestmark = pytest.mark.slow
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
        assert found in (case.expected[FIRST], case.expected[LATER]), (delay, differences(case.expected[FIRST], found))


def _deployment(env, pool: str | None = None):
    """A deployment of on_reindex by its module path (as the shipped prefect.yaml has it)."""
    from goldkeeper.flows.lifecycle import on_reindex

    async def create(client):
        flow_id = await client.create_flow(on_reindex)
        return await client.create_deployment(flow_id=flow_id, name=f"killed-{pool or 'engine'}",
                                              entrypoint="goldkeeper.flows.lifecycle:on_reindex",
                                              work_pool_name=pool)
    return on_server(env, create)


def _flow_run(env, deployment_id, case):
    return on_server(env, lambda client: client.create_flow_run_from_deployment(
        deployment_id, parameters={"suite": "wiki-qa", "corpus_url": case.corpus, "storage_url": case.root})).id


def _again(env, run_id) -> None:
    """The run given to Prefect again: scheduled once more (a crashed run, or one whose
    process died before anyone could say so, which the server still thinks is running)."""
    from prefect.states import Scheduled

    on_server(env, lambda client: client.set_flow_run_state(run_id, Scheduled(), force=True))


def _state(env, run_id):
    return on_server(env, lambda client: client.read_flow_run(run_id))


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
        assert differences(case.expected[FIRST], case.stored()) == [], (point, case.moments[point])


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
    assert differences(case.expected[FIRST], case.stored()) == []


def test_the_partitioned_lifecycle_killed_mid_drift_and_run_again_leaves_no_work_folder(prefect_server, tmp_path):
    """With ``partitions``, drift runs as a subflow in a work folder on storage. The folder is
    named by what the drift works on, so the rerun of a run killed inside it works in the same
    folder and removes it at its end: storage ends as an uninterrupted partitioned run's."""
    case = Case(tmp_path, prefect_server, partitions=2).prepare()
    assert not [p for p in case.expected[FIRST] if p.startswith("work/")]
    # The moments inside the work folder's life: it is written (labels staged, the partitions'
    # manifests, the scoring's split), and the moment before it is removed (drift's, scoring's).
    inside = ("task stage_labels end", "task write_manifests end", "task split_judgments end", "task clean_work start")
    points = [n for n, m in enumerate(case.moments) if m in inside]
    assert len(points) == 5, case.moments
    # And inside the mapped tasks (their threads' moments interleave as they come, so the
    # moment killed is one of that phase's): mid-stream of a piece, as a partition is
    # classified, as the partitions exchange what they found, as the outputs are merged.
    mapped = ("stream labels/p0000-r0000.jsonl staged", "task classify_one end", "stream exchange/found-p0000.pickle end",
              "stream out/fixed.jsonl staged")
    points = sorted({*points, *(case.moments.index(m) for m in mapped)})
    table = [(n, case.moments[n], case.killed_and_run_again(n)) for n in points]
    print("\n".join(f"{n:3} {m}: {w or 'same'}" for n, m, w in table))
    assert not [row for row in table if row[2]], table


@pytest.fixture(scope="module")
def judged_case(prefect_server, tmp_path_factory):
    """The case with a judge configured: a stub judge (seeded by each request, so every
    attempt is answered alike) grades the runs' unjudged top k, and an audit opens."""
    from goldkeeper.examples.stub_judge import StubJudge

    judge = StubJudge(bias=1.0)  # one grade too high: every query keeps a relevant label
    url = judge.start()
    try:
        case = Case(tmp_path_factory.mktemp("judged"), prefect_server, judge_url=url).prepare()
        case.judge = judge
        yield case
    finally:
        judge.stop()


def test_killed_in_the_judges_step_and_run_again_ends_as_an_uninterrupted_run(judged_case):
    """The judge's step (spec/judge.md) killed as it is asked, as what it made is kept, in
    each of its writes (the judged version, made current, the audit) and after them; run
    again, storage ends as an uninterrupted run's: the judged version made once, the audit
    open (before the step was kept, a kill after the judged version was made current left a
    rerun that took it for another writer's, began a new re-index and never opened the
    audit: the judge's labels were scored with nobody to check them). Every moment of the
    step with ``GOLDKEEPER_SOAK=1``."""
    case = judged_case
    first = case.moments.index("task judge_queued start")
    last = case.moments.index("task signal_judge end")
    if os.environ.get("GOLDKEEPER_SOAK"):
        points = list(range(first - 2, last + 1))
    else:
        points = [n for n in range(first, last + 1) if (case.moments[n].endswith((" staged", " end"))
                  and case.moments[n].startswith(("write ", "create ")))
                  or case.moments[n] in ("task judge_queued start", "task open_audit start", "task show_judge end")]
    kept = [m for m in case.moments if m.endswith(".judge.json end")]
    assert kept and len(points) >= 10, case.moments[first:last + 1]
    assert [p for p in case.expected[FIRST] if p.startswith("audit/")], sorted(case.expected[FIRST])
    table = [(n, case.moments[n], case.killed_and_run_again(n)) for n in points]
    print("\n".join(f"{n:3} {m}: {w or 'same'}" for n, m, w in table))
    assert not [row for row in table if row[2]], [row for row in table if row[2]]
    versions = [p for p in case.expected[FIRST] if "/versions/" in p]
    assert len(versions) == 3  # the suite's first, the re-index's, the judge's: not more


def test_the_same_reindex_event_again_after_the_judge_answered_asks_it_nothing(judged_case):
    """The event delivered again a day later, after an uninterrupted run: the rerun takes the
    re-index up, the judge is not asked again, and storage is as the one run left it."""
    case = judged_case
    case.fresh()
    assert case.run(FIRST).returncode == case.ends
    calls = case.judge.calls
    again = case.run(LATER)
    assert again.returncode == case.ends, again.stderr[-3000:]
    assert case.judge.calls == calls
    assert differences(case.expected[FIRST], case.stored()) == []
