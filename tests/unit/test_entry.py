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


def test_only_the_command_run_is_built_and_its_help_is_unchanged():
    import click
    from typer.main import get_group

    from goldkeeper.cli import _narrowed, app

    whole = get_group(app)
    for name in ("score", "eval", "emit-reindex", "queue"):
        narrow = get_group(_narrowed(name))
        assert list(narrow.commands) == [name]
        with click.Context(whole) as parent:
            full = whole.commands[name].get_help(click.Context(whole.commands[name], info_name=name, parent=parent))
        with click.Context(narrow) as parent:
            only = narrow.commands[name].get_help(click.Context(narrow.commands[name], info_name=name, parent=parent))
        assert only == full
    assert _narrowed("--version") is app and _narrowed("nope") is app
    assert len(get_group(app).commands) > 10  # the app itself keeps every command
