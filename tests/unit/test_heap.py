"""io.heap: the bootstrap's blocks of memory come back from the heap, not from the kernel."""

from __future__ import annotations

import subprocess
import sys

import pytest

_FAULTS = """
import resource, sys
import numpy as np
from goldkeeper.core.intervals import BootstrapSpec, bca_intervals
if sys.argv[1] == "keep":
    from goldkeeper.io.heap import keep_freed_blocks
    assert keep_freed_blocks() and keep_freed_blocks()  # once per process; again is a no-op
values = np.random.default_rng(0).random((10_000, 3))
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
bca_intervals(values, BootstrapSpec(resamples=1_000))
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True,
                         env={"OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_bootstraps_blocks_are_reused_instead_of_mapped_afresh():
    """Resampling 10,000 queries draws blocks of resamples whose arrays (0.5 MiB of draws,
    1 MiB of counts) a fresh process maps, faults in page by page and unmaps again, block
    after block; once ``keep_freed_blocks`` ran, they are served again from the heap."""
    fresh, kept = _faults("fresh"), _faults("keep")
    assert kept < fresh / 5, (fresh, kept)


_TASKS = """
import sys
from goldkeeper.io import heap
from goldkeeper.core.scoring import build_qrels, query_values
import flows.evaluate as evaluate, flows.scale as scale
rows = [{"query_id": f"q{i % 50}", "doc_uri": f"d{i}", "relevance": i % 3} for i in range(400)]
run = [type("E", (), {"query_id": f"q{q}", "ranking": [f"d{q + 50 * j}" for j in range(10)]}) for q in range(50)]
task, intervals = sys.argv[1], sys.argv[2] == "on"
if task == "evaluate":
    evaluate.score_run.fn(rows, run, [10], 1, intervals)
else:
    qrels = build_qrels(rows)
    scale.summarize_values.fn(qrels, [query_values(qrels, run, [10], 1)], intervals)
print(heap._kept)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize("task", ["evaluate", "scale"])
def test_the_flows_tasks_that_bootstrap_keep_freed_blocks(task):
    """The flows read their inputs in blocks too, and a score with intervals took 2.8 s against
    1.4-1.6 s at 10k x 100: the tasks that compute intervals set the heap as the CLI does."""
    for intervals, kept in (("off", "False"), ("on", "True")):
        out = subprocess.run([sys.executable, "-c", _TASKS, task, intervals], capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split()[-1] == kept, (intervals, out.stdout)
