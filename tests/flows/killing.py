"""The lifecycle case the fault tests kill, repeat and overlap (test_killed_anywhere.py,
test_overlapping_reindex.py): one suite on storage, the flow run in its own process with a
clock and, when asked, tests/kill_points' plan."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES

BIN = Path(sys.executable).parent
HOOK = Path(__file__).resolve().parents[1] / "kill_points"
FIRST, LATER = "1764806400", "1764900000"  # the killed attempt's clock, the rerun's
RUN = ("import sys; from goldkeeper.flows.lifecycle import on_reindex; "
       "on_reindex(suite='wiki-qa', corpus_url=sys.argv[1], storage_url=sys.argv[2], partitions=int(sys.argv[3]))")


class Case:
    """One suite on storage at a fixed place (reports name their storage: every attempt must
    use the same one), made afresh before each attempt; a run that ranks every chunk."""

    def __init__(self, tmp_path: Path, env: dict[str, str], partitions: int = 0, judge_url: str | None = None) -> None:
        self.tmp, self.env, self.partitions, self.judge_url = tmp_path, env, partitions, judge_url
        # A judged suite's evaluation is INDETERMINATE until people audit the judge: the flow
        # ends Failed (exit code 1), killed or not.
        self.ends = 1 if judge_url else 0
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
        shutil.rmtree(self.store, ignore_errors=True)
        done = subprocess.run([str(BIN / "goldkeeper"), "suite", "init", "wiki-qa", "--storage", self.root,
                               "-j", str(FIXTURES / "merge" / "judgments.jsonl"), "-r", str(self.run_file),
                               "-k", "1,2", "--gate", "recall@2:0.5"], env=self.env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        if self.judge_url:  # the judge answers the queue and grades the runs' unjudged top k; people audit it
            done = subprocess.run([str(BIN / "goldkeeper"), "suite", "set", "wiki-qa", "--storage", self.root,
                                   "--judge-url", self.judge_url, "--judge-model", "stub-judge"],
                                  env=self.env, capture_output=True, text=True)
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
        return subprocess.run([sys.executable, "-c", RUN, corpus or self.corpus, self.root, str(self.partitions)],
                              env=self.environment(clock, plan), capture_output=True, text=True, timeout=300)

    def start(self, corpus: str, plan: dict | None = None, plan_file: Path | None = None) -> subprocess.Popen:
        """The same, started in the background (at the first clock)."""
        return subprocess.Popen([sys.executable, "-c", RUN, corpus, self.root, str(self.partitions)],
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
        assert done.returncode == self.ends, done.stderr[-3000:]
        self.moments = record.read_text().splitlines()
        self.expected = {FIRST: self.stored()}
        self.fresh()
        assert self.run(LATER).returncode == self.ends
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
        assert again.returncode == self.ends, (point, self.moments[point], again.stderr[-3000:])
        found = self.stored()
        assert not [p for p in found if p.endswith(".tmp")], (point, self.moments[point])
        return differences(self.expected[FIRST if point >= self.recorded else LATER], found)


def differences(expected: dict[str, bytes], found: dict[str, bytes]) -> list[str]:
    return ([f"missing {p}" for p in expected.keys() - found.keys()] + [f"extra {p}" for p in found.keys() - expected.keys()]
            + [f"differs {p}" for p in expected.keys() & found.keys() if expected[p] != found[p]])
