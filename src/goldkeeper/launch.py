"""The ``goldkeeper`` console script, its exit codes, and the one way errors become them.

Every command shares one set of exit codes:

    0  ok                 1  a check failed (validation errors, a failed or undecided gate)
    2  bad usage or input 3  internal error, so a crash never reads as a failed gate

``entry`` runs the command line. A ``score`` command line that ``score_command.fast_options``
reads (plain options only) runs without typer, whose import and command building took 18-19
ms of every score; everything else goes through typer (``goldkeeper.cli.main``). Either way
``guarded`` turns what the command raised into one line on stderr and an exit code.
This module imports nothing but the standard library and goldkeeper's errors.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from goldkeeper.errors import GoldkeeperError

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "entry", "exit_with", "fail", "guarded",
           "hold", "interrupted", "quiet_collector"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

#: Set by ``entry``: the process ends as soon as the command does, without taking its heap apart.
_ENDING = False
_HELD: list[Any] = []


def hold(*objects: Any) -> None:
    """Keep a command's large objects (a parsed corpus, the labels, their findings) alive to
    the end when ``entry`` runs it, so they are not freed object by object when the command
    returns: that took 0.09 s of a 2 s drift of 100k labels x 200k chunks, for nothing."""
    if _ENDING:
        _HELD.extend(objects)


def quiet_collector() -> None:
    """Commands build hundreds of thousands of acyclic containers (parsed JSON, chunks, label
    rows) at once; at the default threshold the young generation is collected every 700
    allocations, 0.5 s of a 3.5 s drift of 100k labels x 200k chunks. What is alive after
    the imports is never garbage: it leaves the collector's sight."""
    gc.freeze()
    gc.set_threshold(100_000, 20, 20)


def fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(message.replace("\n", " ") + "\n")
    raise SystemExit(code)


def interrupted() -> NoReturn:
    """An interrupt (Ctrl-C), said the same way whichever way the command ran (spec/cli.md)."""
    fail("error: interrupted", EXIT_USAGE)


def exit_with(code: int | None) -> NoReturn:
    sys.stdout.flush()
    raise SystemExit(code or 0)


def guarded(command: Callable[[], int | None]) -> NoReturn:
    """Run ``command`` and exit with its code, or with the one its failure maps to: a
    ``GoldkeeperError`` its own (2) with its message on one line, an interrupted or closed
    output as usual, anything else 3, an internal error, with no traceback unless
    ``GOLDKEEPER_DEBUG`` is set."""
    try:
        code = command()
    except GoldkeeperError as error:
        hint = getattr(error, "hint", None)
        fail(f"error: {error}" + (f" (hint: {hint})" if hint else ""), error.exit_code)
    except BrokenPipeError:
        # The reader went away (``| head``); not our failure.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        exit_with(EXIT_OK)
    except KeyboardInterrupt:
        interrupted()
    except Exception as error:  # the last line of defence, exit 3
        if os.environ.get("GOLDKEEPER_DEBUG"):
            raise
        fail(
            f"internal error: {type(error).__name__}: {error} "
            "(a goldkeeper bug; set GOLDKEEPER_DEBUG=1 for the traceback)",
            EXIT_INTERNAL,
        )
    exit_with(code)


def _run(args: list[str]) -> NoReturn:
    if args[:1] == ["score"]:
        from goldkeeper.score_command import fast_options, run_score

        options = fast_options(args[1:])
        if options is not None:
            quiet_collector()
            guarded(lambda: run_score(options))
    from goldkeeper.cli import main

    main(args)


def entry() -> NoReturn:
    """The ``goldkeeper`` script: run the command line, then leave without taking the heap apart.

    Freeing what a large command built (a parsed corpus, 100,000 labels and their findings)
    object by object took 0.1-0.16 s of a 2.3 s drift, for nothing: the process is ending.
    Once the output is flushed it ends at once, unless something may still need a proper
    shutdown: prefect loaded (the flow commands) or another thread running. ``cli.main``
    itself raises ``SystemExit`` as usual, for callers in Python.
    """
    import threading

    global _ENDING
    _ENDING = True
    code: Any = EXIT_INTERNAL  # (both ways of running raise SystemExit)
    try:
        _run(sys.argv[1:])
    except SystemExit as done:
        code = done.code
        if "prefect" in sys.modules or threading.active_count() > 1 or not isinstance(code, (int, type(None))):
            raise  # (a message as the code: the interpreter prints it, as it would have)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a reader gone, or a stream closed: nothing left to save
        pass
    os._exit(code or 0)
