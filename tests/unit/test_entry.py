"""The console script ends without a heap teardown, except where a proper shutdown matters."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import atexit, sys
{setup}
atexit.register(lambda: print("atexit ran", flush=True))
sys.argv = ["goldkeeper", *{argv!r}]
from goldkeeper.cli import entry
entry()
"""


def _run(setup: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(setup=setup, argv=argv)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("argv", "code"), [(["--version"], 0), (["score", "--judgments", "x"], 2)])
def test_a_plain_command_ends_at_once_with_its_code_and_its_output(argv, code):
    done = _run("", argv)
    assert done.returncode == code
    assert "atexit ran" not in done.stdout  # os._exit: no interpreter shutdown
    assert (done.stdout if code == 0 else done.stderr).strip()  # yet the output was flushed


def test_with_prefect_loaded_or_a_thread_running_the_interpreter_shuts_down():
    for setup in ("import prefect", "import threading, time\nthreading.Thread(target=time.sleep, args=(0.5,)).start()"):
        done = _run(setup, ["--version"])
        assert done.returncode == 0
        assert "atexit ran" in done.stdout, setup
