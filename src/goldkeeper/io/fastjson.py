"""msgspec decoders for the largest inputs: judgments JSONL and run JSONL (corpus.json's
``Chunk``, which needs core.drift, is in io.snapshots: score imports this module and not drift).

msgspec decodes straight into typed values and checks them in the same pass, several times
faster than pydantic-core. core stays on pydantic (its dependencies are fixed), so these are
only a first attempt: core counts a block's keys against its text (a key named twice), asks
again with extras kept when the lines hold keys of their own, and reads anything refused
line by line, which words the error. So what is accepted, and every message, is core's.
Drift, score and validate read their labels this way, and none of them needs pydantic's
import for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any

import msgspec
from typing_extensions import NotRequired, TypedDict

from goldkeeper.core.judgments import check_row, iter_judgment_blocks
from goldkeeper.errors import InputError
from goldkeeper.models.records import JUDGMENT_ROW, MAX_RELEVANCE

__all__ = ["NonEmpty", "Refused", "Row", "RunLine", "judgment_blocks", "judgment_rows", "run_lines"]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


#: A judgment line as msgspec decodes it, made from ``JUDGMENT_ROW`` (extra keys dropped).
Row = TypedDict("Row", {  # type: ignore[misc]
    spec.name: {"id": NonEmpty, "text": NotRequired[str],
                "grade": Annotated[int, msgspec.Meta(ge=0, le=MAX_RELEVANCE)]}[spec.kind]
    for spec in JUDGMENT_ROW if spec.kind != "span"
})

_ROWS = msgspec.json.Decoder(Row)


_ANY_ROWS = msgspec.json.Decoder(dict[str, Any])


def judgment_rows(body: bytes, keep_extras: bool = False) -> list[dict[str, Any]] | None:
    """A block of whole JSON lines as checked rows; None if refused. Rows are decoded and
    checked by msgspec as ``Row``s, which drops keys of a line's own; with ``keep_extras``
    they are decoded as plain objects, extras kept, and each checked as core's line reader
    checks it (``check_row``)."""
    if b'"span"' in body:  # a span is checked as core's line reader checks it
        return None
    try:
        if not keep_extras:
            return _ROWS.decode_lines(body)  # type: ignore[return-value]
        return [check_row(row, "judgments", 0) for row in _ANY_ROWS.decode_lines(body)]
    except (msgspec.MsgspecError, InputError, RecursionError):
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
    the rest (decoding a large block whole makes every ranking at once), each line a view of
    ``data``, not a copy.
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
        except (msgspec.MsgspecError, RecursionError):
            raise Refused from None
        start = end + 1
