"""Reading and writing by URL. The only package that imports fsspec.

Plain local paths (and ``-`` for stdin/stdout) are served by the standard library, so the
commands people run most start without loading fsspec; any other URL goes through fsspec.
"""

from .files import (
    is_local,
    iter_lines,
    read_bytes,
    read_judgments,
    write_bytes_atomic,
    write_judgments,
)

__all__ = [
    "is_local",
    "iter_lines",
    "read_bytes",
    "read_judgments",
    "write_bytes_atomic",
    "write_judgments",
]
