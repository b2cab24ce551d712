"""Every failure goldkeeper raises on purpose, in one tree.

A measurement tool that answers a malformed file with a stack trace teaches people not to
trust its other output either, so each expected failure is one of these and the CLI turns it
into one line and an exit code. Anything else is a bug (exit 3).

    GoldkeeperError                 base; never raised itself
    ├── InputError                  malformed input: file, line, field, what, got what (exit 2)
    │   └── UsageError              a bad flag or argument combination (exit 2)
    └── StorageError                a location that cannot be read or written (exit 2)
        ├── MissingError            ...because nothing is there
        └── ChangedError            ...because another writer changed it since it was read

Verdicts such as INDETERMINATE are values, never exceptions.

Every command shares one set of exit codes, and ``guarded`` is the one way a command's
outcome becomes one:

    0  ok                 1  a check failed (validation errors, a failed or undecided gate)
    2  bad usage or input 3  internal error, so a crash never reads as a failed gate
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "ChangedError", "GoldkeeperError", "InputError",
           "MissingError", "StorageError", "UsageError", "compressed_input", "describe_value", "exit_with", "fail", "guarded",
           "interrupted", "is_file_name", "os_refusal"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

_MAX_SHOWN = 60


def describe_value(value: object) -> str:
    """Show a found value briefly: JSON-ish, truncated, control characters escaped."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, str):
        text = repr(value)
        if text.startswith(("'", '"')):
            text = '"' + text[1:-1].replace('"', '\\"').replace("\\'", "'") + '"'
    elif isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, dict):
        text = "an object"
    elif isinstance(value, list):
        text = "an array"
    else:
        text = repr(value)
    if len(text) > _MAX_SHOWN:
        text = text[: _MAX_SHOWN - 3] + "..."
    return text


def is_file_name(value: object) -> bool:
    """Whether an API caller passed a path (str, bytes, ``os.PathLike``) where values belong:
    the functions that take rows or reports say so, rather than fail inside on its letters."""

    return isinstance(value, (str, bytes, os.PathLike))


def _restore(cls: type, args: tuple, state: dict) -> GoldkeeperError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class GoldkeeperError(Exception):
    """Base of every error goldkeeper raises on purpose."""

    exit_code = 2

    def __reduce__(self):  # type: ignore[override]
        # Keyword-only constructors do not survive the default pickling of exceptions, and
        # these cross process boundaries (parallel validation, flow workers).
        return (_restore, (type(self), self.args, dict(self.__dict__)))


class InputError(GoldkeeperError):
    """Malformed input. Renders as ``<source>:<line>: <field>: <problem>, got <found>``.

    ``line`` is 1-based and omitted when the problem concerns the whole input. ``hint`` names
    the way out, when there is one, and is shown on a second line by the CLI.
    """

    def __init__(
        self,
        source: str,
        problem: str,
        *,
        line: int | None = None,
        field: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.problem = problem
        self.found = found
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        parts = [where]
        if self.field:
            parts.append(self.field)
        text = ": ".join(parts) + f": {self.problem}"
        if self.found is not None:
            text += f", got {self.found}"
        return text


#: The first bytes of the archives goldkeeper does not read (gzip, bzip2, xz and zstd it
#: decompresses as it reads, io.files), and the commands that extract each: a file, a stream.
_COMPRESSED = (
    (b"PK\x03\x04", "zip", "unzip", "unzip -p"),
)


def compressed_input(data: bytes | memoryview | str, source: str) -> InputError | None:
    """The error for an input that is not UTF-8 because it is compressed (``data`` is its
    start, bytes or a view of them), saying so and how to decompress it; None when it does
    not start like one."""
    if isinstance(data, str):
        return None
    head = bytes(data[:8])
    for magic, name, for_file, for_stream in _COMPRESSED:
        if head.startswith(magic):
            way = f"pipe it through {for_stream}" if source in ("", "<stdin>") else f"{for_file} {source}"
            return InputError(source, f"is a {name} archive; goldkeeper reads UTF-8 text (gzip, bzip2, xz or zstd "
                                      "compressed, or not)", line=1,
                              field="encoding", found=f"the {name} signature {magic.hex(' ')}",
                              hint=f"decompress it first: {way}")
    return None


class UsageError(InputError):
    """A bad flag, argument or combination of them."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.source = ""
        self.line = None
        self.field = None
        self.problem = message
        self.found = None
        self.hint = hint
        Exception.__init__(self, message)

    def render(self) -> str:
        return self.problem


class StorageError(GoldkeeperError):
    """A location that cannot be read or written: missing file, denied, unreachable store."""

    def __init__(self, url: str, problem: str, *, hint: str | None = None) -> None:
        self.url = url
        self.problem = problem
        self.hint = hint
        super().__init__(f"{url}: {problem}")


class MissingError(StorageError):
    """A location that does not exist (as opposed to one that could not be reached)."""


class ChangedError(StorageError):
    """A compare-and-swap that lost: another writer changed the target since it was read.
    Trying the same write again cannot succeed; reading again and redoing the work can."""


def fail(message: str, code: int) -> NoReturn:
    """Say ``message`` on one line of stderr and exit with ``code``."""
    sys.stderr.write(message.replace("\n", " ") + "\n")
    raise SystemExit(code)


def interrupted() -> NoReturn:
    """An interrupt (Ctrl-C), said the same way whichever command ran (spec/cli.md)."""
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
    except OSError as error:
        # The machine refused a file (missing, a folder where a file is due, denied, a full
        # disk): the user's to fix, said as any Unix tool says it. Others are goldkeeper's.
        message = os_refusal(error)
        if message is None or os.environ.get("GOLDKEEPER_DEBUG"):
            _internal(error)
        fail(f"error: {message}", EXIT_USAGE)
    except Exception as error:  # the last line of defence, exit 3
        _internal(error)
    exit_with(code)


def _internal(error: BaseException) -> NoReturn:
    if os.environ.get("GOLDKEEPER_DEBUG"):
        raise error
    fail(
        f"internal error: {type(error).__name__}: {error} "
        "(a goldkeeper bug; set GOLDKEEPER_DEBUG=1 for the traceback)",
        EXIT_INTERNAL,
    )


#: What the machine says that is about the user's files and disks, not a goldkeeper bug.
_USER_ERRNOS = frozenset({errno.ENOENT, errno.EISDIR, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EEXIST,
                          errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.ENAMETOOLONG, errno.ELOOP,
                          errno.ENOTEMPTY, errno.EXDEV})


def os_refusal(error: OSError) -> str | None:
    """``<file>: <reason>`` for an OS error about the user's files or disks; None otherwise."""
    if error.errno not in _USER_ERRNOS:
        return None
    reason = (error.strerror or str(error)).lower()
    return f"{error.filename}: {reason}" if error.filename is not None else reason
