"""goldkeeper: keep a RAG retrieval test suite true across re-chunks, and gate on it honestly.

The public API, stable by name::

    normalize, text_sha, chunk_id              content-addressed identity (spec/chunk-id.md)
    parse_judgments, dump_judgments            judgments JSONL text in and canonical text out
    read_judgments, write_judgments            the same by path or fsspec URL, writes atomic
    validate -> ValidationResult of Issue      is a judgment set sound enough to score?
    Judgment, Chunk, CorpusSnapshot, RunEntry, Report     the wire formats (pydantic v2)

Importing goldkeeper loads neither prefect nor fsspec; ``read_judgments`` and
``write_judgments`` load the storage layer on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from goldkeeper._version import __version__
from goldkeeper.core.identity import chunk_id, normalize, text_sha
from goldkeeper.core.judgments import dump_judgments, parse_judgments
from goldkeeper.core.qrels import parse_beir_tsv, parse_trec_qrels, parse_trec_run, to_qrels, to_trec_run
from goldkeeper.core.runs import parse_run
from goldkeeper.core.validation import Issue, ValidationResult, validate
from goldkeeper.errors import GoldkeeperError, InputError, StorageError, UsageError
from goldkeeper.models import Chunk, CorpusSnapshot, Judgment, Measurement, Report, RunEntry

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "Chunk",
    "CorpusSnapshot",
    "GoldkeeperError",
    "InputError",
    "Issue",
    "Judgment",
    "Measurement",
    "Report",
    "RunEntry",
    "StorageError",
    "UsageError",
    "ValidationResult",
    "__version__",
    "chunk_id",
    "dump_judgments",
    "normalize",
    "parse_beir_tsv",
    "parse_judgments",
    "parse_run",
    "parse_trec_qrels",
    "parse_trec_run",
    "read_judgments",
    "text_sha",
    "to_qrels",
    "to_trec_run",
    "validate",
    "write_judgments",
]


def read_judgments(url: str) -> list[Judgment]:
    """Read a judgments JSONL file by path or fsspec URL (``-`` is stdin)."""
    from goldkeeper.io.files import read_judgments as _read

    return _read(url)


def write_judgments(url: str, judgments: Iterable[Judgment]) -> None:
    """Write judgments canonically and atomically to a path or fsspec URL."""
    from goldkeeper.io.files import write_judgments as _write

    _write(url, judgments)
