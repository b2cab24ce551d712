"""Files by path or fsspec URL, read in a stream and written atomically.

Atomic means a reader sees the old bytes or the new bytes, never a half-written file: locally
a temporary file in the same directory, fsynced, then ``os.replace``; on object stores a single
``put`` of the whole object, which those stores make visible all at once.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from goldkeeper.errors import ChangedError, InputError, MissingError, StorageError, compressed_input

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment

__all__ = [
    "CODECS",
    "MAX_EXPANSION",
    "MAX_LINE_BYTES",
    "capped_lines",
    "create_once",
    "decode_utf8",
    "exists",
    "filesystem",
    "is_local",
    "iter_blocks",
    "iter_lines",
    "iter_range_blocks",
    "line_blocks",
    "line_ranges",
    "local_path",
    "locked",
    "open_read",
    "open_write_atomic",
    "read_bytes",
    "read_judgments",
    "remove_quietly",
    "source_name",
    "storage_failures",
    "stored_bytes",
    "uncompressed_name",
    "unreachable",
    "watching",
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


def storage_failures() -> tuple[type[BaseException], ...]:
    """What storage raises for a location it cannot reach, to be said as a ``StorageError``:
    fsspec's OSError and ValueError, a missing package's ImportError, and botocore's own
    errors (an unreachable endpoint, missing credentials), which are not OSErrors. Evaluated
    as an exception is matched, when botocore, if used, has been imported."""
    botocore = sys.modules.get("botocore.exceptions")
    found: tuple[type[BaseException], ...] = (OSError, ValueError, ImportError)
    return found if botocore is None else (*found, botocore.BotoCoreError)


#: Who is told as files are read (the CLI's progress bars): ``opened(url, size or None)``
#: returns ``advance(bytes)``, called as bytes are read and with None when the file closes.
_WATCHERS: list[Callable[[str, int | None], Callable[[int | None], None]]] = []


@contextlib.contextmanager
def watching(opened: Callable[[str, int | None], Callable[[int | None], None]]) -> Iterator[None]:
    """Tell ``opened`` of every file read while the block runs (see ``_WATCHERS``)."""
    _WATCHERS.append(opened)
    try:
        yield
    finally:
        _WATCHERS.remove(opened)


class _Counted:
    """A binary stream that counts the bytes read from it (``read``), and reports them to
    ``advance`` (the progress bars) as they are read."""

    def __init__(self, raw: Any, advance: Callable[[int | None], None] | None) -> None:
        self._raw, self._advance, self.read_so_far = raw, advance, 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.read_so_far += len(data)
        if self._advance is not None:
            self._advance(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        count = self._raw.readinto(buffer) or 0
        self.read_so_far += count
        if self._advance is not None:
            self._advance(count)
        return count

    def __getattr__(self, name: str) -> Any:  # peek, seek, readable, mode...: the stream's own
        return getattr(self._raw, name)


@contextlib.contextmanager
def _watched(handle: Any, url: str, size: int | None) -> Iterator[Any]:
    if not _WATCHERS:
        yield handle
        return
    advance = _WATCHERS[-1](url, size)
    try:
        yield _Counted(handle, advance)
    finally:
        advance(None)


@contextlib.contextmanager
def _open_raw(url: str) -> Iterator[Any]:
    if url == "-":
        with _watched(sys.stdin.buffer, url, None) as handle:
            yield handle
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
        with handle, _watched(handle, url, os.fstat(handle.fileno()).st_size if _WATCHERS else None) as watched:
            yield watched
        return
    import fsspec  # lazily: most runs never need it

    try:
        with fsspec.open(url, "rb") as handle, _watched(handle, url, getattr(handle, "size", None)) as watched:
            yield watched
    except FileNotFoundError:
        raise MissingError(url, "cannot be read: no such file or object") from None
    except storage_failures() as error:
        raise unreachable(url, "cannot be read", error) from None


#: The compressions goldkeeper reads, by their first bytes and by the name's suffix, each as
#: fsspec's codec of that name.
CODECS = ((b"\x1f\x8b", ".gz", "gzip"), (b"BZh", ".bz2", "bz2"), (b"\xfd7zXZ\x00", ".xz", "xz"),
          (b"\x28\xb5\x2f\xfd", ".zst", "zstd"))


def uncompressed_name(url: str) -> str:
    """The name without a compression suffix (``qrels.txt.gz``: ``qrels.txt``), for formats
    told by their names."""
    lowered = url.lower()
    for _, suffix, _ in CODECS:
        if lowered.endswith(suffix):
            return url[: -len(suffix)]
    return url


@contextlib.contextmanager
def open_read(url: str, *, decompress: bool = True) -> Iterator[Any]:
    """A binary stream of a file, object or stdin (``-``). A gzip, bzip2, xz or zstd input is
    decompressed as it is read (told by its first bytes; a name saying one compression while
    the bytes say another is refused), so every reader takes compressed inputs, streamed.
    ``decompress=False``: the bytes as stored (sharded snapshots hash their stored shards)."""
    with _open_raw(url) as raw:
        codec = _codec(raw, url) if decompress else None
        if codec is None:
            yield raw
            return
        import lzma
        import zlib

        from fsspec.compression import compr

        failures: tuple[type[BaseException], ...] = (EOFError, OSError, lzma.LZMAError, zlib.error)
        if codec == "zstd":
            try:
                import zstandard
            except ImportError:
                raise InputError(source_name(url), "is zstd-compressed, and reading it needs the zstandard package",
                                 line=1, field="encoding", hint="pip install zstandard") from None
            failures += (zstandard.ZstdError,)
        stored = _Counted(raw, None)
        stream = _ZstdReader(stored) if codec == "zstd" else compr[codec](stored, mode="rb")
        try:
            yield _Expanding(stream, stored, url, codec)
        except failures as error:
            raise InputError(source_name(url), f"cannot be decompressed as {codec} ({error})", field="encoding",
                             found="a damaged or truncated file") from None
        finally:
            stream.close()


#: How far a compressed input may expand: past ``MIN_EXPANDED`` bytes, at most ``MAX_EXPANSION``
#: times the stored bytes read so far. Real judgments, runs and chunks compress 5 to 50 times
#: (ids and scores differ from line to line); one line repeated compresses a thousand times
#: (gzip's limit): such a stream is a decompression bomb, refused before it fills memory.
MAX_EXPANSION = 200
MIN_EXPANDED = 64 << 20


class _Expanding:
    """A decompressed stream, refused (``InputError``) once it expands past ``MAX_EXPANSION``
    times what was read of the stored one; a whole read is done a block at a time, so the
    check comes before the memory is taken."""

    def __init__(self, stream: Any, stored: _Counted, url: str, codec: str) -> None:
        self._stream, self._stored, self._url, self._codec, self._out = stream, stored, url, codec, 0

    def _check(self, count: int) -> None:
        self._out += count
        if self._out > MIN_EXPANDED and self._out > MAX_EXPANSION * self._stored.read_so_far:
            raise InputError(source_name(self._url), f"expands more than {MAX_EXPANSION} times as it is "
                             f"decompressed ({self._out >> 20} MiB from {self._stored.read_so_far >> 10} KiB of "
                             f"{self._codec}), as no real input does: refused as a decompression bomb",
                             field="encoding", found="a stream that expands without bound")

    def read(self, size: int = -1) -> bytes:
        if size is not None and size >= 0:
            data = self._stream.read(size)
            self._check(len(data))
            return data
        parts = []
        while True:
            data = self._stream.read(1 << 20)
            if not data:
                return b"".join(parts)
            self._check(len(data))
            parts.append(data)

    def readinto(self, buffer: Any) -> int:
        count = self._stream.readinto(buffer) or 0
        self._check(count)
        return count

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ZstdReader(io.RawIOBase):
    """A zstd stream read frame after frame. (zstandard's own stream reader, which fsspec
    uses, ends a truncated stream quietly, as if the file were shorter: here a stream that
    ends inside a frame is an error.)"""

    def __init__(self, raw: Any) -> None:
        import zstandard

        self._raw, self._zstd = raw, zstandard
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._pending, self._at = b"", 0  # decompressed bytes not yet read, and how far they were
        self._started = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._at >= len(self._pending):
            self._pending, self._at = b"", 0
            # A kilobyte at a time: what one call decompresses stays small (zstd has no
            # output limit per call), so memory is bounded as for plain files.
            data = self._raw.read(1 << 10)
            if not data:
                if self._started and not self._frame.eof:
                    raise self._zstd.ZstdError("the stream ends inside a frame (truncated)")
                return 0
            while data:
                if self._frame.eof:  # a file may hold several frames, one after another
                    self._frame = self._zstd.ZstdDecompressor().decompressobj()
                self._started = True
                self._pending += self._frame.decompress(data)
                data = self._frame.unused_data if self._frame.eof else b""
        size = min(len(buffer), len(self._pending) - self._at)
        buffer[:size] = memoryview(self._pending)[self._at:self._at + size]
        self._at += size
        return size


def _codec(raw: Any, url: str) -> str | None:
    """The compression of a stream by its first bytes (checked against the name's suffix)."""
    if hasattr(raw, "peek"):
        head = raw.peek(6)[:6]
    else:
        head = raw.read(6)
        raw.seek(0)
    found = next((name for magic, _, name in CODECS if head.startswith(magic)), None)
    lowered = url.lower()
    named = next(((suffix, name) for _, suffix, name in CODECS if lowered.endswith(suffix)), None)
    if named is not None and named[1] != found:
        raise InputError(source_name(url), f"is named *{named[0]} but is not {named[1]}-compressed", line=1,
                         field="encoding", found=f"first bytes {head.hex(' ') or 'none'}")
    return found


#: The extra of goldkeeper's that installs a scheme's filesystem (pyproject.toml).
_EXTRAS = {"s3": "s3", "s3a": "s3"}


def unreachable(url: str, what: str, error: BaseException) -> StorageError:
    """A storage failure said as a ``StorageError``; a scheme's missing package with the
    goldkeeper extra that installs it (``pip install 'goldkeeper[s3]'``)."""
    extra = _EXTRAS.get(url.split("://", 1)[0]) if isinstance(error, ImportError) else None
    return StorageError(url, f"{what}: {error}", hint=f"pip install 'goldkeeper[{extra}]'" if extra else None)


def filesystem(url: str) -> tuple[Any, str]:
    """fsspec's filesystem and path for a URL; a ``StorageError`` naming the scheme when
    fsspec knows none for it, or it needs a package that is not installed."""
    import fsspec

    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as error:
        raise unreachable(url, "its scheme needs a package that is not installed", error) from None
    except ValueError as error:
        scheme = url.split("://", 1)[0] if "://" in url else url
        raise StorageError(url, f"no storage is known for the scheme '{scheme}' ({error}); "
                                "file paths, memory://, s3://, gs:// and az:// are") from None


def iter_lines(url: str) -> Iterator[bytes]:
    """Lines of a file as bytes, newline kept, read in a stream."""
    with open_read(url) as handle:
        yield from capped_lines(handle, url)


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


#: The longest line goldkeeper reads (a judgment, a run entry, a chunk of a shard): a bound
#: on the memory one line takes, far above any real one.
MAX_LINE_BYTES = 64 << 20


def long_line(url: str, number: int) -> InputError:
    return InputError(source_name(url), f"a line longer than {MAX_LINE_BYTES >> 20} MiB, which goldkeeper does not read",
                      line=number, field="line", found="no newline within the limit")


def iter_blocks(url: str, size: int = LINES_BLOCK) -> Iterator[bytes]:
    """The file in blocks of about ``size`` bytes, each ending at a newline (except the last)."""
    with open_read(url) as handle:
        yield from line_blocks(handle, url, size)


def line_ranges(url: str, pieces: int) -> list[tuple[int, int]]:
    """About ``pieces`` byte ranges ``(start, stop)`` that together hold a file, each starting
    at a line's start, so that several readers can share it; ``[(0, -1)]``, the whole input
    read as a stream, for stdin or a compressed input (which cannot be read from the middle)."""
    if url == "-" or pieces <= 1:
        return [(0, -1)]
    with _open_raw(url) as raw:
        if _codec(raw, url) is not None:
            return [(0, -1)]
        size = size_of(url)
        cuts = [0]
        for piece in range(1, pieces):
            at = max(size * piece // pieces, cuts[-1] + 1)
            if at >= size:
                break
            raw.seek(at - 1)  # the line holding byte at - 1 ends the range
            skipped = 0
            while True:
                data = raw.read(LINES_BLOCK)
                found = data.find(b"\n")
                if found >= 0 or not data:
                    break
                skipped += len(data)
            cut = at - 1 + skipped + found + 1 if found >= 0 else size
            if cut < size:
                cuts.append(cut)
        cuts.append(size)
    return list(itertools.pairwise(cuts))


def iter_range_blocks(url: str, start: int, stop: int, size: int = LINES_BLOCK) -> Iterator[bytes]:
    """``iter_blocks`` of one of ``line_ranges``' ranges."""
    if stop < 0:
        yield from iter_blocks(url, size)
        return
    with _open_raw(url) as raw:
        raw.seek(start)
        yield from line_blocks(_Bounded(raw, stop - start), url, size)


class _Bounded:
    """The next ``left`` bytes of a stream."""

    def __init__(self, raw: Any, left: int) -> None:
        self.raw, self.left = raw, left

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(self.left if size < 0 else min(size, self.left))
        self.left -= len(data)
        return data


def line_blocks(handle: Any, url: str, size: int) -> Iterator[bytes]:
    """A binary stream in blocks ending at newlines. Linear however long its lines: a line is
    gathered in pieces, each searched once; one longer than ``MAX_LINE_BYTES`` is refused (so
    that a line without end, or a small gzip that expands to one, cannot take all memory)."""
    pending: list[bytes] = []  # the start of a line that no newline has ended yet
    held = lines = 0
    while True:
        data = handle.read(size)
        if not data:
            break
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            pending.append(data)
            held += len(data)
            if held > MAX_LINE_BYTES:
                raise long_line(url, lines + 1)
            continue
        if pending and held + data.find(b"\n") + 1 > MAX_LINE_BYTES:
            raise long_line(url, lines + 1)
        block = b"".join((*pending, data[:cut])) if pending else data[:cut]
        pending, held = ([data[cut:]], len(data) - cut) if cut < len(data) else ([], 0)
        lines += block.count(b"\n")
        yield block
    if pending:
        yield b"".join(pending)


def capped_lines(stream: Any, url: str) -> Iterator[bytes]:
    """The lines of a binary stream, newline kept, each at most ``MAX_LINE_BYTES``."""
    for block in line_blocks(stream, url, LINES_BLOCK):
        pieces = block.split(b"\n")
        last = pieces.pop()
        for piece in pieces:
            yield piece + b"\n"
        if last:
            yield last


def exists(url: str) -> bool:
    """Whether a file, object or directory is there (a ``StorageError`` when storage cannot say)."""
    if is_local(url):
        return os.path.exists(local_path(url))
    fs, path = filesystem(url)
    try:
        return bool(fs.exists(path))
    except storage_failures() as error:
        raise unreachable(url, "cannot be read", error) from None


def size_of(url: str) -> int:
    """The size in bytes of a file or object (a StorageError when it cannot be found)."""
    try:
        if is_local(url):
            return os.path.getsize(local_path(url))
        fs, path = filesystem(url)
        return int(fs.size(path))
    except storage_failures() as error:
        raise unreachable(url, "cannot be read", error) from None


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


def write_bytes_atomic(url: str, data: bytes, *, unchanged: str | None = None) -> None:
    """Replace the file at ``url`` with ``data`` all at once (see the module docstring);
    ``unchanged``: the sha256 it had when read, checked as ``write_together`` does."""
    write_together([(url, data)], unchanged={url: unchanged} if unchanged else None)


def write_together(outputs: Sequence[tuple[str, bytes | Iterable[bytes]]], *,
                   unchanged: Mapping[str, str] | None = None) -> None:
    """Write several outputs as one command's result: each local one is first written in full
    to a temporary beside its target, so that a location that cannot be written fails the
    command before any target is replaced; then the remote ones are put (each atomic), and
    the local ones renamed into place. An output may come as blocks (an iterable of bytes),
    which a plain local target writes as they come, so that the whole output is never held.

    ``unchanged`` maps a target rewritten in place to the sha256 it had when it was read.
    Under a lock beside it (``filelock``: any writer of that target waits for it), the target
    must still have that content; if another writer replaced it meanwhile, nothing is
    written and a ``StorageError`` says so, so no update is lost. On S3 there is no lock: the
    object's ETag is taken with the content's hash, and the put is conditional on it (If-Match),
    so a writer that replaced it between the check and the put makes this one fail instead."""
    staged: list[tuple[str, str, str]] = []  # (url, temporary, path)
    targets = [url for url, _ in outputs if url != "-"]
    checked = {url: sha for url, sha in (unchanged or {}).items() if sha and url in targets}
    conditions: dict[str, str] = {}  # remote target -> the ETag its checked content had
    try:
        outputs = [(url, data if isinstance(data, bytes) or (is_local(url) and _codec_of(url) is None)
                    else b"".join(data)) for url, data in outputs]
        for url, data in outputs:
            if url == "-":
                for block in (data,) if isinstance(data, bytes) else data:
                    sys.stdout.buffer.write(block)
                sys.stdout.buffer.flush()
            elif is_local(url):
                staged.append((url, _stage(url, local_path(url), _packed(url, data) if isinstance(data, bytes) else data),
                               local_path(url)))
        with locked(list(checked)):
            for url, expected in checked.items():
                before = _etag(url)
                if _content_sha256(url) != expected or _etag(url) != before:
                    raise _changed(url)
                if before is not None:
                    conditions[url] = before
            for url, data in outputs:
                if url != "-" and not is_local(url):
                    _put(url, _packed(url, data), if_match=conditions.get(url))
            for url, tmp, path in staged:
                try:
                    os.replace(tmp, path)
                except OSError as error:
                    raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
    finally:
        for _, tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _codec_of(url: str) -> str | None:
    """The compression a target's name asks for (``.gz``, ``.bz2``, ``.xz``, ``.zst``), or None."""
    return next((name for _, suffix, name in CODECS if url.lower().endswith(suffix)), None)


def _packed(url: str, data: bytes) -> bytes:
    """``data`` compressed as the target's name says (``.gz``, ``.bz2``, ``.xz``, ``.zst``), so
    that what goldkeeper writes under such a name it reads back; as it is otherwise."""
    codec = _codec_of(url)
    if codec is None:
        return data
    if codec == "gzip":
        import gzip

        return gzip.compress(data, mtime=0)  # no time in the header: the same data, the same bytes
    if codec == "bz2":
        import bz2

        return bz2.compress(data)
    if codec == "xz":
        import lzma

        return lzma.compress(data)
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


def _stage(url: str, path: str, data: bytes | Iterable[bytes]) -> str:
    """``data`` (or its blocks, written as they come) in a new temporary beside ``path``,
    fsynced; its name. Nothing is left behind if writing fails, whatever the reason."""
    if os.path.isdir(path):  # checked now: renaming onto it would fail after others were replaced
        raise StorageError(url, "is a directory, not a file")
    try:
        fd, tmp = temporary_beside(path)
    except OSError as error:
        raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            for block in (data,) if isinstance(data, bytes) else data:
                handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(OSError):
            # Keep the permissions of the file being replaced, as an editor would.
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(error, OSError):
            raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
        raise
    return tmp


#: A writer's temporary beside its target: ``.<target name>.goldkeeper-<host>-<pid>-<random>.tmp``.
_TEMPORARY = ".{name}.goldkeeper-{host}-{pid}-{token}.tmp"


def temporary_beside(path: str) -> tuple[int, str]:
    """A new file beside ``path`` to write it in full before it replaces ``path``: (fd, name).
    It is created as any new file is (mode 0666 less the umask), and named after its target,
    host and process, so that the next writer in the same directory removes what a writer on
    this host left there when it was killed (its process is gone)."""
    import secrets
    import socket

    directory, name = os.path.split(os.path.abspath(path))
    host = socket.gethostname().replace("-", "_") or "host"
    _sweep(directory, host)
    tmp = os.path.join(directory, _TEMPORARY.format(name=name, host=host, pid=os.getpid(), token=secrets.token_hex(4)))
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp


def _sweep(directory: str, host: str) -> None:
    """Remove the temporaries in ``directory`` that writers on this host left when they died,
    whatever their target: a rerun may write under another name (a later time) than the
    attempt that was killed."""
    try:
        entries = [e for e in os.listdir(directory) if e.startswith(".") and e.endswith(".tmp")]
    except OSError:
        return
    for entry in entries:
        owner, _, rest = entry.removesuffix(".tmp").rpartition(f".goldkeeper-{host}-")
        pid = rest.split("-", 1)[0]
        if owner and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, entry))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, under another user
        return True
    return True


@contextlib.contextmanager
def locked(urls: Sequence[str]) -> Iterator[None]:
    """Hold ``.<name>.goldkeeper.lock`` beside each local file, in a fixed order (``filelock``:
    every in-place writer of goldkeeper's takes it); URLs of object stores, which have no
    locks, are passed over."""
    urls = [url for url in urls if is_local(url)]
    if not urls:
        yield
        return
    from filelock import FileLock, Timeout

    with contextlib.ExitStack() as stack:
        for url in sorted(urls):
            directory, name = os.path.split(os.path.abspath(local_path(url)))
            try:
                stack.enter_context(FileLock(os.path.join(directory, f".{name}.goldkeeper.lock"), timeout=120))
            except Timeout:
                raise StorageError(url, "another goldkeeper has been writing it for two minutes; try again") from None
        yield


def _content_sha256(url: str) -> str | None:
    """The sha256 of a file's content as goldkeeper reads it (decompressed, as every input's
    hash is), streamed; None when there is no file."""
    digest = sha256()
    try:
        with open_read(url) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except MissingError:
        return None
    return digest.hexdigest()


def _changed(url: str) -> StorageError:
    return ChangedError(url, "was changed by another writer since goldkeeper read it; nothing was written "
                             "(run the command again on its new contents)")


def _etag(url: str) -> str | None:
    """An S3 object's ETag (None elsewhere, or when there is no object): what a conditional
    put compares against."""
    if is_local(url) or not url.startswith(("s3://", "s3a://")):
        return None
    fs, path = filesystem(url)
    try:
        fs.invalidate_cache(path)
        return fs.info(path).get("ETag")
    except FileNotFoundError:
        return None
    except storage_failures() as error:
        raise unreachable(url, "cannot be read", error) from None


def _put(url: str, data: bytes, *, if_match: str | None = None) -> None:
    fs, path = filesystem(url)
    # With a condition, one PUT whatever the size (S3 takes up to 5 GB): s3fs would send a
    # larger object in parts, and a multipart upload's first call takes no If-Match.
    condition = {} if if_match is None else {"IfMatch": if_match, "chunksize": max(len(data), 50 << 20)}
    try:
        fs.pipe_file(path, data, **_object_type(url), **condition)
    except storage_failures() as error:
        if if_match is not None and "PreconditionFailed" in f"{error!r} {getattr(error, '__cause__', '')!r}":
            # Another writer's change, or this very PUT: stored, answered with an error (a 500
            # after success, a timeout), retried by the client against its own new ETag. The
            # bytes tell which.
            if stored_bytes(fs, path) == data:
                return
            raise _changed(url) from None
        raise unreachable(url, "cannot be written", error) from None


def create_once(url: str, data: bytes) -> bytes:
    """Store ``data`` at ``url`` unless something is there already; what is stored there now
    (``data``, or the bytes an earlier writer put). Of writers racing to create one target,
    exactly one's bytes stand and every one of them returns those: locally a hard link of a
    fsynced temporary, which fails where a file exists; on S3 a put conditional on there being
    no object (If-None-Match: *), whose outcome, when unknown, is read back."""
    if is_local(url):
        path = local_path(url)
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError as error:
            raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
        tmp = _stage(url, path, data)
        try:
            os.link(tmp, path)
            return data
        except FileExistsError:
            return read_bytes(url)
        except OSError as error:
            raise StorageError(url, f"cannot be written: {_os_problem(error)}") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    fs, path = filesystem(url)
    try:
        fs.pipe_file(path, data, mode="create", **_object_type(url))
        return data
    except FileExistsError:
        # Taken: by another writer, or by this very put, when S3 stored it and answered an
        # error (a 500 after success, a timeout) and the client's retry met the object.
        stored = stored_bytes(fs, path)
    except storage_failures() as error:
        raise unreachable(url, "cannot be written", error) from None
    if stored is None:
        raise StorageError(url, "is there, but cannot be read")
    return stored


def stored_bytes(fs: Any, path: str) -> bytes | None:
    """An object's bytes as stored now (None when they cannot be read): what a write whose
    outcome is unknown is verified against before it is taken for another writer's."""
    try:
        fs.invalidate_cache(path)
        return bytes(fs.cat_file(path))
    except (OSError, ValueError):
        return None


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
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            fd, tmp = temporary_beside(path)
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
    except storage_failures() as error:
        raise unreachable(url, "cannot be written", error) from None


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
