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
