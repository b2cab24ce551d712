"""msgspec decoders for the largest inputs: judgments JSONL and run JSONL (corpus.json's
``Chunk``, which needs core.drift, is in io.snapshots: score imports this module and not drift).

msgspec decodes straight into typed values and checks them in the same pass, 3x faster than
pydantic-core here (500,000 labels: 0.34 s against 0.98 s with the block's wrapping). core
stays on pydantic (its dependencies are fixed), so these are only a first attempt: anything
they refuse, or whose keys do not add up (extra keys are dropped here), goes to core's
readers, which keep extras and word errors. So what is accepted, and every message, is core's.

Drift, score and validate read their labels this way. pydantic-core shares equal
short strings between rows (query ids, strata, labelers) and msgspec does not, so rows from
msgspec hash and group more slowly afterwards and the strings they leave in sets take more
memory. For score the decoding alone was no faster (100k x 100: 2.47 s against 2.43 s) and
its peak grew (363 to 398 MiB), but once its report and validation result needed no pydantic,
decoding here spared both its processes pydantic's import: 10k x 100 0.343 s against 0.396 s,
7k x 1,000 0.411 s against 0.507 s, 100k x 100 2.49 s against 2.69 s, peak 387 against 363
MiB (interleaved medians). validate of the same 50,000 labels: 0.243 s against 0.363 s (9
each), and of 1M labels 4.69 against 4.70 s, peak 511 against 503 MiB. Drift's labels carry
long unique texts: there reading half of 100,000 labels takes 0.11 s against 0.21 s.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any

import msgspec
from typing_extensions import NotRequired, TypedDict

from goldkeeper.core.judgments import MAX_RELEVANCE, iter_judgment_blocks

__all__ = ["NonEmpty", "Refused", "Row", "RunLine", "judgment_blocks", "judgment_rows", "run_lines"]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class Row(TypedDict):
    """core.judgments' ``_Row``, field for field (a test holds them equal)."""

    query_id: NonEmpty
    query: NotRequired[str]
    doc_uri: NonEmpty
    chunk_id: NotRequired[str]
    text_sha: NotRequired[str]
    chunk_text: NotRequired[str]
    relevance: Annotated[int, msgspec.Meta(ge=0, le=MAX_RELEVANCE)]
    corpus_fingerprint: NotRequired[str]
    labeled_by: NotRequired[str]
    labeled_at: NotRequired[str]
    stratum: NotRequired[str]
    notes: NotRequired[str]


_ROWS = msgspec.json.Decoder(Row)


def judgment_rows(body: bytes) -> list[dict[str, Any]] | None:
    """A block of whole JSON lines as checked rows, extra keys dropped; None if refused."""
    try:
        return _ROWS.decode_lines(body)  # type: ignore[return-value]
    except msgspec.MsgspecError:
        return None


def judgment_blocks(blocks: Iterable[bytes], source: str = "judgments", **options: Any) -> Iterator[list[dict[str, Any]]]:
    """core's ``iter_judgment_blocks`` with ``judgment_rows`` as its first decoder."""
    return iter_judgment_blocks(blocks, source, decode=judgment_rows, **options)


class Refused(Exception):
    """A line the msgspec reader does not take: the caller reads the input core's way."""


class RunLine(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """The common run line, ``{"query_id", "ranking"}`` with non-empty string keys."""

    query_id: NonEmpty
    ranking: list[NonEmpty]


_RUN_LINE = msgspec.json.Decoder(RunLine)


def run_lines(data: Any, start: int = 0, stop: int | None = None) -> Iterator[RunLine]:
    """Each line of run JSONL in ``data[start:stop]`` (bytes, or a file's mapping: nothing is
    copied), decoded and checked; ``Refused`` at the first line that is not a common one
    (other fields, a blank line, a CR, anything msgspec refuses).

    A line at a time, so a caller that keeps only a ranking's head reuses the memory of
    the rest (decoding a 37 MB part whole took as long as core's reader, 0.26 s, in page
    faults; line by line 0.16 s against 0.24 s), each line a view of ``data``, not a copy.
    It cannot see a key named twice in a line or a query on two lines: the caller checks
    those over the whole part.
    """
    size = len(data) if stop is None else stop
    if data.find(b"\r", start, size) >= 0:
        raise Refused
    view = memoryview(data)
    decode = _RUN_LINE.decode
    while start < size:
        end = data.find(b"\n", start, size)
        end = size if end < 0 else end
        try:
            yield decode(view[start:end])  # an empty line too is refused
        except msgspec.MsgspecError:
            raise Refused from None
        start = end + 1
