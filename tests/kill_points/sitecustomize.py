"""Kill points for the fault tests (tests/flows/test_killed_anywhere.py).

A Python process started with this folder on its ``PYTHONPATH`` and ``GOLDKEEPER_KILL_POINTS``
naming a file numbers the moments of the goldkeeper flow it runs: each Prefect task's start
and end (submitted and mapped tasks too: their moments, from threads, are numbered in the order
they come, which may differ from run to run), and each storage write's start, the moment its
temporary is written in full (not yet in place: a kill there is a kill mid-write) and its end,
streamed writes (``open_write_atomic``) included. The file holds JSON:
``{"record": PATH}`` appends each moment's name to PATH, one a line; ``{"at": N}`` kills the
process with SIGKILL at moment N (counting from 0), after removing the file, so the run that
follows is not killed again. To order two processes: ``{"hold": NAME, "until": PATH}`` waits
at the first moment named NAME until PATH exists (creating PATH.holding as it begins to),
and ``{"touch": NAME, "path": PATH}`` creates PATH at the first moment named NAME. Nothing
happens without the variable.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import threading

_FILE = os.environ.get("GOLDKEEPER_KILL_POINTS")
_count = 0
_lock = threading.Lock()


def _moment(name: str) -> None:
    global _count
    try:
        with open(_FILE) as handle:  # type: ignore[arg-type]
            plan = json.load(handle)
    except (OSError, ValueError):
        return
    with _lock:  # submitted tasks pass their moments from threads of their own
        number, _count = _count, _count + 1
    if "record" in plan:
        with open(plan["record"], "a") as out:
            out.write(f"{name}\n")
    elif plan.get("hold") == name:
        import time

        open(plan["until"] + ".holding", "a").close()
        deadline = time.monotonic() + 300
        while not os.path.exists(plan["until"]) and time.monotonic() < deadline:
            time.sleep(0.1)
    elif plan.get("touch") == name:
        open(plan["path"], "a").close()
    elif plan.get("at") == number:
        os.unlink(_FILE)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGKILL)


def _where(url: str) -> str:
    return "/".join(str(url).rstrip("/").split("/")[-2:])


def _install() -> None:
    import prefect.task_engine

    from goldkeeper.io import files

    # run_task_sync runs every synchronous task: one called directly (through run_task) and
    # one submitted or mapped (a task runner's thread calls it).
    run_task_sync = prefect.task_engine.run_task_sync

    @functools.wraps(run_task_sync)
    def numbered_task(task, *args, **kwargs):
        _moment(f"task {task.name} start")
        result = run_task_sync(task, *args, **kwargs)
        _moment(f"task {task.name} end")
        return result

    prefect.task_engine.run_task_sync = numbered_task

    write_together, stage, create_once = files.write_together, files._stage, files.create_once

    @functools.wraps(write_together)
    def numbered_write(outputs, **kwargs):
        outputs = list(outputs)
        names = ",".join(_where(url) for url, _ in outputs)
        _moment(f"write {names} start")
        write_together(outputs, **kwargs)
        _moment(f"write {names} end")

    @functools.wraps(stage)
    def numbered_stage(url, path, data):
        staged = stage(url, path, data)
        _moment(f"write {_where(url)} staged")
        return staged

    @functools.wraps(create_once)
    def numbered_create(url, data):
        _moment(f"create {_where(url)} start")
        stored = create_once(url, data)
        _moment(f"create {_where(url)} end")
        return stored

    stream = files.open_write_atomic

    @functools.wraps(stream)
    @contextlib.contextmanager
    def numbered_stream(url):
        _moment(f"stream {_where(url)} start")
        with stream(url) as handle:
            yield handle
            _moment(f"stream {_where(url)} staged")  # written in full, not yet in place
        _moment(f"stream {_where(url)} end")

    files.write_together, files._stage, files.create_once = numbered_write, numbered_stage, numbered_create
    files.open_write_atomic = numbered_stream


if _FILE:
    _install()
