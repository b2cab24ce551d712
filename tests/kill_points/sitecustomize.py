"""Kill points for the fault tests (tests/flows/test_killed_anywhere.py).

A Python process started with this folder on its ``PYTHONPATH`` and ``GOLDKEEPER_KILL_POINTS``
naming a file numbers the moments of the goldkeeper flow it runs: each Prefect task's start
and end, and each storage write's start, the moment its temporary is written in full (fsynced,
not yet in place: a kill there is a kill mid-write) and its end. The file holds JSON:
``{"record": PATH}`` appends each moment's name to PATH, one a line; ``{"at": N}`` kills the
process with SIGKILL at moment N (counting from 0), after removing the file, so the run that
follows is not killed again. To order two processes: ``{"hold": NAME, "until": PATH}`` waits
at the first moment named NAME until PATH exists (creating PATH.holding as it begins to),
and ``{"touch": NAME, "path": PATH}`` creates PATH at the first moment named NAME. Nothing
happens without the variable.
"""

from __future__ import annotations

import functools
import json
import os
import signal

_FILE = os.environ.get("GOLDKEEPER_KILL_POINTS")
_count = 0


def _moment(name: str) -> None:
    global _count
    try:
        with open(_FILE) as handle:  # type: ignore[arg-type]
            plan = json.load(handle)
    except (OSError, ValueError):
        return
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

    run_task = prefect.task_engine.run_task

    @functools.wraps(run_task)
    def numbered_task(task, *args, **kwargs):
        _moment(f"task {task.name} start")
        result = run_task(task, *args, **kwargs)
        _moment(f"task {task.name} end")
        return result

    prefect.task_engine.run_task = numbered_task

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

    files.write_together, files._stage, files.create_once = numbered_write, numbered_stage, numbered_create


if _FILE:
    _install()
