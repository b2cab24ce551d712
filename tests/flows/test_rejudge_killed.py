"""The rejudge flow killed while it applies a batch of people's answers, and run again (issue
43, item 1; spec/reliability.md, "Faults of the store").

A person answers the paused form; the flow's process is killed (SIGKILL, tests/kill_points)
as it keeps the answers, writes the new judgments version, or publishes what is left; a new
rejudge run follows. Where the answers were kept, the new run reuses them with the time they
were given (they are named by what was answered): if the version was written too, it only
publishes what is left, at that time; if not, it asks again, the person gives the same
answers, and the kept ones stand. Where they were not kept yet, the new run asks again and
is a new answering, at its own time. Either way storage ends as an uninterrupted run at that
time leaves it, byte for byte.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import FIXTURES
from tests.flows.conftest import on_server, paused_filter, queued_suite
from tests.flows.killing import FIRST, LATER, Case, differences

pytestmark = pytest.mark.slow
RUN = ("import sys; from goldkeeper.flows.rejudge import rejudge; "
       "rejudge(suite='drifted', corpus_url=sys.argv[1], storage_url=sys.argv[2], poll_interval=1, timeout=300, "
       "evaluate_after=False)")
#: The split's first piece graded 2, the orphan removed ("none of these").
ANSWERS = {"reviewer": "ana", "item_1_1_2": True, "item_2_none": True}


class Rejudged(Case):
    """The drift case's suite with its queue published; rejudge run in its own process."""

    def fresh(self) -> None:
        import shutil

        shutil.rmtree(self.store, ignore_errors=True)
        queued_suite(self.root, "drifted")

    def rejudge(self, clock: str, plan: dict | None = None) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", RUN, str(FIXTURES / "drift" / "corpus.json"), self.root],
                                env=self.environment(clock, plan), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def answered(self, process: subprocess.Popen) -> int:
        """Answer the form whenever the run pauses for one, until its process ends; its code."""
        from prefect.flow_runs import resume_flow_run
        from prefect.settings import PREFECT_API_URL, temporary_settings

        deadline = time.monotonic() + 240
        while process.poll() is None and time.monotonic() < deadline:
            runs = on_server(self.env, lambda client: client.read_flow_runs(flow_run_filter=paused_filter()))
            paused = [r for r in runs if r.state and r.state.is_paused() and r.parameters.get("storage_url") == self.root]
            for run in paused:
                with temporary_settings(updates={PREFECT_API_URL: self.env["PREFECT_API_URL"]}):
                    resume_flow_run(run.id, run_input=ANSWERS)
            time.sleep(0.5)
        process.communicate(timeout=60)
        return process.returncode


@pytest.fixture(scope="module")
def case(prefect_server, tmp_path_factory):
    case = Rejudged(tmp_path_factory.mktemp("rejudge-killed"), prefect_server)
    record = case.tmp / "moments.txt"
    case.expected = {}
    for clock, plan in ((FIRST, {"record": str(record)}), (LATER, None)):
        case.fresh()
        assert case.answered(case.rejudge(clock, plan)) == 0
        case.expected[clock] = case.stored()
    case.moments = record.read_text().splitlines()
    return case


def test_rejudge_killed_as_it_applies_answers_and_run_again_ends_as_an_uninterrupted_run(case):
    moments = case.moments
    keep = moments.index("task keep_answers start")
    kept = next(n for n in range(keep, len(moments)) if moments[n].startswith("write ") and moments[n].endswith(" end"))
    points = [keep, kept - 1, kept, moments.index("task write_version end"), moments.index("task publish_left start"),
              next(n for n in range(moments.index("task publish_left start"), len(moments))
                   if moments[n].endswith(" staged"))]
    assert len(set(points)) == len(points), [moments[n] for n in points]
    table = []
    for point in points:
        case.fresh()
        assert case.answered(case.rejudge(FIRST, {"at": point})) == -signal.SIGKILL, moments[point]
        assert case.answered(case.rejudge(LATER)) == 0, moments[point]
        found = case.stored()
        assert not [p for p in found if p.endswith(".tmp")], moments[point]
        table.append((moments[point], differences(case.expected[FIRST if point >= kept else LATER], found)))
    print("\n".join(f"{m}: {w or 'same'}" for m, w in table))
    assert not [row for row in table if row[1]], table
    # one version made by the answers, one answers file: nothing applied twice
    versions = [p for p in case.expected[FIRST] if "/versions/" in p]
    answers = [p for p in case.expected[FIRST] if p.startswith("answers/")]
    assert len(versions) == 2 and len(answers) == 1
