"""Files by path or fsspec URL, read in a stream and written atomically.

Atomic means a reader sees the old bytes or the new bytes, never a half-written file: locally
a temporary file in the same directory, fsynced, then ``os.replace``; on object stores a single
``put`` of the whole object, which those stores make visible all at once.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from goldkeeper.errors import InputError, MissingError, StorageError, compressed_input

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment

__all__ = [
    "decode_utf8",
    "filesystem",
    "is_local",
    "iter_blocks",
    "iter_lines",
    "local_path",
    "open_read",
    "open_write_atomic",
    "read_bytes",
    "read_judgments",
    "remove_quietly",
    "source_name",
    "write_bytes_atomic",
    "write_judgments",
]

_CHUNK = 1 << 20


def is_local(url: str) -> bool:
    """True for a plain path or a ``file://`` URL."""
    return "://" not in url or url.startswith("file://")


def local_path(url: str) -> str:
    return url[len("file://") :] if url.startswith("file://") else url


def _os_problem(error: OSError) -> str:
    return (error.strerror or str(error)).lower()


@contextlib.contextmanager
def open_read(url: str) -> Iterator[object]:
    if url == "-":
        yield sys.stdin.buffer
        return
    if is_local(url):
        path = local_path(url)
        try:
            handle = open(path, "rb")
        except IsADirectoryError:
            raise StorageError(url, "is a directory, not a file") from None
        except FileNotFoundError as error:
            raise MissingError(url, f"cannot be read: {_os_problem(error)}") from None
        except OSError as error:
            raise StorageError(url, f"cannot be read: {_os_problem(error)}") from None
        with handle:
            yield handle
        return
    import fsspec  # lazily: most runs never need it

    try:
        with fsspec.open(url, "rb") as handle:
            yield handle
    except FileNotFoundError:
        raise MissingError(url, "cannot be read: no such file or object") from None
    except (OSError, ValueError, ImportError) as error:
        raise StorageError(url, f"cannot be read: {error}") from None


def filesystem(url: str) -> tuple[Any, str]:
    """fsspec's filesystem and path for a URL; a ``StorageError`` naming the scheme when
    fsspec knows none for it, or it needs a package that is not installed."""
    import fsspec

    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as error:
        raise StorageError(url, f"its scheme needs a package that is not installed: {error}") from None
    except ValueError as error:
        scheme = url.split("://", 1)[0] if "://" in url else url
        raise StorageError(url, f"no storage is known for the scheme '{scheme}' ({error}); "
                                "file paths, memory://, s3://, gs:// and az:// are") from None


def iter_lines(url: str) -> Iterator[bytes]:
    """Lines of a file as bytes, newline kept, read in a stream."""
    with open_read(url) as handle:
        yield from handle  # type: ignore[misc]


def source_name(url: str) -> str:
    """How errors name an input: its URL, or ``<stdin>`` for ``-``."""
    return "<stdin>" if url == "-" else url


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as text; bytes that are not UTF-8 are an ``InputError`` naming their line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise compressed_input(data[:8], source) or InputError(
            source, "not valid UTF-8", line=data.count(b"\n", 0, error.start) + 1,
            field="encoding", found=f"byte 0x{data[error.start]:02X}",
        ) from None


#: How many bytes of lines the readers decode at once. The rows of a block are walked
#: several times (decoded, validated, grouped), so a block whose objects stay in the CPU's
#: caches costs less than one that does not.
LINES_BLOCK = 64 << 10


def iter_blocks(url: str, size: int = LINES_BLOCK) -> Iterator[bytes]:
    """The file in blocks of about ``size`` bytes, each ending at a newline (except the last)."""
    with open_read(url) as handle:
        rest = b""
        while True:
            data = handle.read(size)  # type: ignore[attr-defined]
            if not data:
                break
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            rest = data[cut:]
            yield data[:cut]
        if rest:
            yield rest


def size_of(url: str) -> int:
    """The size in bytes of a file or object (a StorageError when it cannot be found)."""
    try:
        if is_local(url):
            return os.path.getsize(local_path(url))
        fs, path = filesystem(url)
        return int(fs.size(path))
    except (OSError, ValueError) as error:
        raise StorageError(url, f"cannot be read: {error}") from None


def sha256(data: bytes | memoryview = b"") -> Any:
    """``hashlib.sha256(data)``, hashlib imported on first use (OpenSSL's library is large,
    and commands that hash nothing need not load it)."""
    import hashlib

    return hashlib.sha256(data)


def report_bytes(report: Any) -> bytes:
    """A report's JSON document as goldkeeper writes it everywhere (indent 2, final newline):
    identical inputs give identical bytes. ``report`` is a ``Report`` or its document (a dict,
    ``core.reporting.report_document``). orjson is several times faster than json here."""
    import orjson

    document = report if isinstance(report, dict) else report.to_json_dict()
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def read_bytes(url: str) -> bytes:
    with open_read(url) as handle:
        return handle.read()  # type: ignore[attr-defined]


def write_bytes_atomic(url: str, data: bytes) -> None:
    """Replace the file at ``url`` with ``data`` all at once (see the module docstring)."""
    if url == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    if is_local(url):
        path = local_path(url)
        directory = os.path.dirname(os.path.abspath(path))
        try:
            fd, tmp = tempfile.mkstemp(prefix=".goldkeeper-", suffix=".tmp", dir=directory)
        except OSError as error:
            raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(OSError):
                # Keep the permissions of the file being replaced, as an editor would.
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)
            os.replace(tmp, path)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
        return
    fs, path = filesystem(url)
    try:
        fs.pipe_file(path, data, **_object_type(url))
    except (OSError, ValueError, ImportError) as error:
        raise StorageError(url, f"cannot be written: {error}") from None


def _object_type(url: str) -> dict[str, str]:
    """S3's content type for an object named like ``url`` (its type is set when it is put:
    without one a presigned link to a page or chart downloads it instead of showing it)."""
    import mimetypes

    kind = mimetypes.guess_type(url)[0]
    return {"ContentType": kind} if kind and url.startswith(("s3://", "s3a://")) else {}


@contextlib.contextmanager
def open_write_atomic(url: str) -> Iterator[object]:
    """A binary stream that replaces ``url`` only when the block ends without an error.

    Locally a temporary file beside it, fsynced and renamed; on object stores one upload that
    is committed at close (S3 writes are atomic per object). For data too big to hold in memory.
    """
    if is_local(url):
        path = local_path(url)
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".goldkeeper-", suffix=".tmp", dir=directory)
        except OSError as error:
            raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(error, OSError):
                raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
            raise
        return
    import fsspec

    try:
        with fsspec.open(url, "wb") as handle:
            yield handle
    except (OSError, ValueError, ImportError) as error:
        raise StorageError(url, f"cannot be written: {error}") from None


def remove_quietly(url: str) -> None:
    """Delete a file or object if it is there (cleaning up after a failed write)."""
    with contextlib.suppress(OSError, ValueError, ImportError):
        if is_local(url):
            os.unlink(local_path(url))
            return
        fs, path = filesystem(url)
        fs.rm_file(path)


def read_judgments(url: str) -> list[Judgment]:
    """Read and type-check a judgments JSONL file by path or URL."""
    from goldkeeper.core.judgments import iter_judgments

    return list(iter_judgments(iter_lines(url), source_name(url)))


def write_judgments(url: str, judgments: Iterable[Judgment]) -> None:
    """Write judgments canonically and atomically."""
    from goldkeeper.core.judgments import dump_judgments

    write_bytes_atomic(url, dump_judgments(judgments).encode("utf-8"))
