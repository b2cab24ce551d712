"""The one task policy: which failures a task retries, and what of a failure reaches Prefect.

Every task of the flows is declared with ``step``, which applies both rules below, so no task
can forget one (the partitioned tasks had neither).

A task that reads or writes storage retries: a bucket that timed out or a disk that was full
may answer the next time. Malformed input (an ``InputError``: a snapshot that is not one, a
parameter that names nothing) gives the same answer every time, so it fails at once; so does
a compare-and-swap another writer won (a ``ChangedError``): the same write again would lose
again, and the flow redoes its work on what the other writer made instead.

What a failure says lands in Prefect's database (states, logs) and in front of everyone who
can read the UI. goldkeeper's errors quote what they found (``got '...'``), which is right on
a terminal for one's own file and wrong for a private corpus, so the tasks that read corpora
and chunker output raise their errors without the found value: the location, line, field
and problem, not the content.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from prefect import task

from goldkeeper.errors import ChangedError, InputError

__all__ = ["BACKOFF", "content_kept_out", "retry_faults", "step", "storage_root"]

#: Seconds before each retry of a task that met a fault: three tries more, then the failure.
BACKOFF = (1, 5, 20)


def step(function: Callable[..., Any] | None = None, /, *, timeout_seconds: float | None = None,
         name: str | None = None, cache_policy: Any = None) -> Any:
    """A Prefect task under goldkeeper's policy: a fault (anything but malformed input) is
    retried after each of ``BACKOFF``'s delays, malformed input never (``retry_faults``), and
    an ``InputError`` reaches Prefect without the content it found (``content_kept_out``).
    Used as ``@step`` or ``@step(timeout_seconds=300)``; ``name`` and ``cache_policy`` as
    Prefect's."""
    def declare(body: Callable[..., Any]) -> Any:
        @functools.wraps(body)
        def kept_out(*args: Any, **kwargs: Any) -> Any:
            with content_kept_out():
                return body(*args, **kwargs)

        options: dict[str, Any] = {"name": name or body.__name__, "retries": len(BACKOFF),
                                   "retry_delay_seconds": list(BACKOFF), "retry_condition_fn": retry_faults,
                                   "timeout_seconds": timeout_seconds}
        if cache_policy is not None:
            options["cache_policy"] = cache_policy
        return task(kept_out, **options)

    return declare(function) if function is not None else declare


def retry_faults(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect's ``retry_condition_fn``: retry anything but malformed input and a lost
    compare-and-swap."""
    try:
        state.result()
    except (InputError, ChangedError):
        return False
    except BaseException:
        return True
    return True


@contextlib.contextmanager
def content_kept_out() -> Iterator[None]:
    """Re-raise an ``InputError`` without the value it found (a line of a private file)."""
    try:
        yield
    except InputError as error:
        if error.found is None:
            raise
        raise InputError(error.source, error.problem, line=error.line, field=error.field,
                         found="(not shown: it is the input's content)", hint=error.hint) from None


def storage_root(storage_url: str | None) -> str:
    """The storage a flow run uses: ``storage_url``, else ``GOLDKEEPER_STORAGE``, else (for a
    flow called in a session, not a deployment's run) .goldkeeper in the working directory. A
    deployment's run on a worker without either fails at once: its working directory is the
    worker's, and what it wrote there would be lost to everyone else."""
    import os

    from prefect.context import FlowRunContext

    from goldkeeper.io.storage import default_root

    if storage_url or os.environ.get("GOLDKEEPER_STORAGE"):
        return storage_url or os.environ["GOLDKEEPER_STORAGE"]
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None and context.flow_run.deployment_id is not None:
        raise ValueError("no storage for this deployment's run: set GOLDKEEPER_STORAGE in the worker's environment "
                         "(e.g. s3://bucket/goldkeeper), or give the storage_url parameter")
    return default_root()
