"""Run one function in a forked child process and collect its result later.

This machine class has two cores, and goldkeeper's big inputs split naturally (two halves of
a judgments file; a run file beside the judgments). ``start`` forks a child that calls the
function and sends back its value or its ``GoldkeeperError`` through a pipe; ``result``
re-raises that error in the parent, so failures read exactly as in one process. Where fork
is unavailable or unsafe (not Linux), ``start`` calls the function inline instead.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable
from typing import Any

from goldkeeper.errors import GoldkeeperError

__all__ = ["Forked", "can_fork", "split_map", "start"]


def can_fork() -> bool:
    return sys.platform.startswith("linux")


def _serve(conn, fn: Callable[..., Any], args: tuple) -> None:  # pragma: no cover - forked
    try:
        conn.send(("ok", fn(*args)))
    except GoldkeeperError as error:
        conn.send(("error", error))
    except BaseException as error:  # noqa: BLE001 - carried to the parent, which raises it
        conn.send(("crash", f"{type(error).__name__}: {error}"))
    finally:
        conn.close()
        os._exit(0)


class Forked:
    """A call running in a child process (or already done, when fork was not used)."""

    def __init__(self, fn: Callable[..., Any], args: tuple) -> None:
        self._done: tuple[str, Any] | None = None
        if not can_fork():
            try:
                self._done = ("ok", fn(*args))
            except GoldkeeperError as error:
                self._done = ("error", error)
            return
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._child = context.Process(target=_serve, args=(send, fn, args), daemon=True)
        self._child.start()
        send.close()

    def cancel(self) -> None:
        if self._done is None:
            self._child.kill()
            self._child.join()
            self._done = ("crash", "cancelled")

    def result(self) -> Any:
        if self._done is None:
            try:
                self._done = self._receive.recv()
            except EOFError:
                self._done = ("crash", "the child process died without an answer")
            self._child.join()
        kind, payload = self._done
        if kind == "error":
            raise payload
        if kind == "crash":
            raise RuntimeError(f"a worker process failed: {payload}")
        return payload


def start(fn: Callable[..., Any], *args: Any) -> Forked:
    return Forked(fn, args)


def _each(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    return [fn(item) for item in items]


def split_map(fn: Callable[[Any], Any], items: list[Any], costs: list[int]) -> list[Any]:
    """``[fn(item) for item in items]`` on two cores: the items are dealt by cost (largest
    first, to the lighter side), a forked child computes one side while this process computes
    the other. Results come back in item order; below two items, or without fork, inline."""
    if len(items) < 2 or not can_fork():
        return _each(fn, items)
    sides: tuple[list[int], list[int]] = ([], [])
    loads = [0, 0]
    for index in sorted(range(len(items)), key=lambda i: -costs[i]):
        side = 0 if loads[0] <= loads[1] else 1
        sides[side].append(index)
        loads[side] += costs[index]
    child = start(_each, fn, [items[i] for i in sides[1]])
    try:
        mine = _each(fn, [items[i] for i in sides[0]])
    except BaseException:
        child.cancel()
        raise
    out: list[Any] = [None] * len(items)
    for index, value in zip(sides[0], mine):
        out[index] = value
    for index, value in zip(sides[1], child.result()):
        out[index] = value
    return out
