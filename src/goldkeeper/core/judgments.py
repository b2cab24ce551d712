"""Judgments JSONL: a strict, streaming parser and the canonical writer.

The parser reads one line at a time, so a caller can validate a file of any size in memory
bounded by what validation itself keeps. It type-checks every known field and refuses bad
input with one line that names the source, the line, the field, what is wrong and what was
found (``goldkeeper.errors.InputError``). Lines are decoded as ``goldkeeper.core.jsonl`` reads
every JSONL input (no key twice, no NaN); ``iter_judgment_blocks`` lets a faster decoder
(io's msgspec reader) take whole blocks it can vouch for, and reads the rest line by line.

The writer follows the spec's design rule 5: known fields in schema order, unknown fields
last in their original order, compact JSON with non-ASCII kept, one object per line, a final
newline. It uses the standard library's encoder on purpose: its number and escape spellings
are the reference implementation's, and byte identity with it is the point.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from goldkeeper.core.jsonl import decode_jsonl, keys_in_text, keys_in_value, nests_deeply, split_lines
from goldkeeper.errors import InputError, describe_value
from goldkeeper.models.records import JUDGMENT_ROW, MAX_RELEVANCE, SPAN

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment

# pydantic (and the Judgment model) load on first use: reading labels with an io decoder
# never needs them, and commands that never build a model should not pay for the import.

__all__ = [
    "MAX_RELEVANCE",
    "BlockDecoder",
    "check_nfc",
    "check_row",
    "check_span",
    "dump_judgments",
    "iter_judgment_blocks",
    "iter_judgment_rows",
    "iter_judgments",
    "judgment_line",
    "parse_judgments",
]

_REQUIRED_STR = tuple(spec.name for spec in JUDGMENT_ROW if spec.kind == "id")
_OPTIONAL_STR = tuple(spec.name for spec in JUDGMENT_ROW if spec.kind == "text")
#: Identifiers compared by code point against runs and corpora; they must be NFC.
_NFC_FIELDS = tuple(spec.name for spec in JUDGMENT_ROW if spec.nfc)

_FIELD_IS_STR = dict.fromkeys(_OPTIONAL_STR + _REQUIRED_STR, True)


def check_row(row: Any, source: str, number: int) -> dict[str, Any]:
    """A decoded judgments line (``row``, line ``number`` of ``source``) with every known
    field type-checked, or the ``InputError`` naming the field."""
    if type(row) is not dict:
        raise InputError(
            source, "must be a JSON object", line=number, field="line", found=describe_value(row)
        )
    for name in _REQUIRED_STR:
        value = row.get(name)
        if type(value) is not str or not value:
            found = "nothing" if name not in row else describe_value(value)
            raise InputError(
                source,
                "required, must be a non-empty string",
                line=number,
                field=name,
                found=found,
                hint=("the line looks like a run entry (query_id, ranking), not a judgment: were the "
                      "judgments and the run swapped?") if name == "doc_uri" and "ranking" in row else None,
            )
    relevance = row.get("relevance", _MISSING)
    if type(relevance) is not int or not 0 <= relevance <= MAX_RELEVANCE:
        _refuse_relevance(relevance, source, number)
    is_str = _FIELD_IS_STR
    for name, value in row.items():
        if type(value) is not str and name in is_str:
            raise InputError(
                source,
                "must be a string when present",
                line=number,
                field=name,
                found=describe_value(value),
            )
    if "span" in row:
        check_span(row["span"], source, number)
    check_nfc(row, source, number)
    return row


_SPAN_KEYS = {name for name, _, _ in SPAN}


def check_span(span: Any, source: str, number: int) -> None:
    """Refuse a ``span`` that is not a passage (spec/spans.md): an object of SPAN's fields,
    offsets integers from 0 with ``end`` after ``start``, ``exact`` the ``end - start``
    characters between them."""
    if type(span) is not dict:
        raise InputError(source, "must be an object {start, end, exact[, prefix, suffix]}", line=number,
                         field="span", found=describe_value(span))
    for name in span:
        if name not in _SPAN_KEYS:
            raise InputError(source, "is not a field of a span (start, end, exact, prefix, suffix, proposed_by)",
                             line=number, field=f"span.{name}", found=describe_value(span[name]))
    for name, required, offset in SPAN:
        value = span.get(name, _MISSING)
        if value is _MISSING:
            if required:
                raise InputError(source, "required", line=number, field=f"span.{name}", found="nothing")
            continue
        if offset and (type(value) is not int or value < 0):
            raise InputError(source, "must be an integer offset from 0 (characters of the document)", line=number,
                             field=f"span.{name}", found=describe_value(value))
        if not offset and (type(value) is not str or (required and not value)):
            raise InputError(source, "must be a non-empty string" if required else "must be a string",
                             line=number, field=f"span.{name}", found=describe_value(value))
    if span["end"] <= span["start"]:
        raise InputError(source, "must be after span.start", line=number, field="span.end",
                         found=f"{span['end']} (start {span['start']})")
    if len(span["exact"]) != span["end"] - span["start"]:
        raise InputError(source, "must be the span's end - start characters (offsets count code points of the "
                         "document's text, not bytes)", line=number, field="span.exact",
                         found=f"{len(span['exact'])} characters for offsets {span['start']}..{span['end']}")


def check_nfc(row: Any, source: str, number: int) -> None:
    """Refuse a row whose identifiers (query_id, doc_uri, chunk_id) are not in NFC: in any
    format, since its judgments could not be written back otherwise."""
    for name in _NFC_FIELDS:
        value = row.get(name)
        if value is not None and not value.isascii() and not unicodedata.is_normalized("NFC", value):
            nfc = unicodedata.normalize("NFC", value)
            raise InputError(
                source,
                "identifier is not in Unicode NFC form, so it would not match its NFC twin in "
                "runs and corpora",
                line=number,
                field=name,
                found=f"{describe_value(value)} (NFC would be {describe_value(nfc)})",
            )


def _refuse_relevance(relevance: Any, source: str, number: int) -> None:
    if relevance is _MISSING:
        problem, found = "required, must be an integer grade", "nothing"
    elif isinstance(relevance, bool):
        problem, found = "must be an integer grade, not a boolean", describe_value(relevance)
    elif isinstance(relevance, float):
        problem = "must be an integer grade, not a number with a fraction or exponent"
        found = describe_value(relevance)
    elif isinstance(relevance, int):
        problem, found = f"must be from 0 to {MAX_RELEVANCE}", describe_value(relevance)
    else:
        problem, found = "must be an integer grade", describe_value(relevance)
    raise InputError(source, problem, line=number, field="relevance", found=found)


_MISSING = object()


def iter_judgment_rows(
    lines: Iterable[bytes | str],
    source: str = "judgments",
    *,
    allow_empty: bool = False,
    first_line: int = 1,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Stream ``(line_number, row)`` for every label, every known field type-checked."""
    for number, value in decode_jsonl(
        lines, source, allow_empty=allow_empty, first_line=first_line
    ):
        yield number, check_row(value, source, number)


#: ``decode(block, keep_extras)``: a block of whole JSON lines as rows checked as
#: ``check_row`` checks them, keys of the lines' own dropped unless ``keep_extras``; or None
#: for anything it does not take (io's msgspec reader). It must refuse NaN and Infinity,
#: which JSON has not; the block's keys are then counted against its text here.
BlockDecoder = Callable[[bytes, bool], "list[dict[str, Any]] | None"]


def _fast_block(body: bytes, at_start: bool, decode: BlockDecoder) -> list[dict[str, Any]] | None:
    """Decode and check a block of whole lines in one call, or None to take the line path.

    None is returned for anything unusual (a blank line, CR, a key named twice, non-NFC
    identifiers, anything ``decode`` refuses); the line-by-line path then decides and words
    the error. Only clean blocks are accepted here, so both paths accept exactly the same
    input.
    """
    if (at_start and body.startswith(b"\xef\xbb\xbf")) or b"\r" in body or nests_deeply(body, 1):
        return None
    rows = decode(body, False)
    if rows is None or len(rows) != body.count(b"\n") + 1:
        return None
    flat = body.count(b"{") == len(rows) and b"[" not in body
    in_text = keys_in_text(body)
    decoded = sum(map(len, rows)) if flat else sum(map(keys_in_value, rows))
    if in_text > decoded:  # lines with keys of their own, or a key named twice
        rows = decode(body, True)
        if rows is None:
            return None
        decoded = sum(map(keys_in_value, rows))
    if in_text != decoded:
        return None
    if not body.isascii():
        for row in rows:
            for name in _NFC_FIELDS:
                value = row.get(name)
                if value is not None and not value.isascii() and not unicodedata.is_normalized("NFC", value):
                    return None
    return rows


def iter_judgment_blocks(
    blocks: Iterable[bytes],
    source: str = "judgments",
    *,
    first_line: int = 1,
    allow_empty: bool = False,
    decode: BlockDecoder | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """Stream checked rows a block at a time: the fast path for large files.

    Each block holds whole lines (the last block may lack its final newline). With
    ``decode`` (io's msgspec reader) a block is decoded in one call; a block it declines, or
    with anything unusual in it, goes through ``iter_judgment_rows`` instead, line by line,
    so errors name the same line either way. ``first_line`` numbers the first line of the
    first block, for a caller reading a file from the middle.
    """
    start = first_line
    decoded = 0
    for block in blocks:
        if not block:
            continue
        body = block[:-1] if block.endswith(b"\n") else block
        rows = _fast_block(body, first_line == 1, decode) if body and decode is not None else None  # (the BOM is line 1's)
        if rows is None:
            rows = [
                row
                for _, row in iter_judgment_rows(
                    body.split(b"\n"), source, allow_empty=True, first_line=first_line
                )
            ]
        first_line += body.count(b"\n") + 1
        decoded += len(rows)
        yield rows
    if decoded == 0 and not allow_empty:
        raise InputError(
            source,
            "holds no JSON line, so there is nothing to read",
            line=max(first_line - 1, 1),
            field="file",
            found="an empty file" if first_line == start else f"{first_line - start} blank line(s)",
        )


def iter_judgments(lines: Iterable[bytes | str], source: str = "judgments") -> Iterator[Judgment]:
    """Stream ``Judgment`` models from JSONL lines."""
    from goldkeeper.models.judgment import Judgment

    for _, row in iter_judgment_rows(lines, source):
        # Fields were checked with messages of our own, so no second validation pass.
        yield Judgment.model_construct(**row)


def parse_judgments(text: str | bytes, source: str = "judgments") -> list[Judgment]:
    """Parse a whole judgments JSONL text. Raises ``InputError`` on the first bad line."""
    return list(iter_judgments(split_lines(text), source))


def judgment_line(judgment: Judgment) -> str:
    """One canonical JSONL line, without its newline."""
    return json.dumps(judgment.canonical_dict(), ensure_ascii=False, separators=(",", ":"))


def dump_judgments(judgments: Iterable[Judgment]) -> str:
    """The canonical bytes (as text) of a judgments file: one line per label, final newline."""
    return "".join(judgment_line(j) + "\n" for j in judgments)


def row_line(row: Mapping[str, Any]) -> bytes:
    """One JSONL line of a row as goldkeeper writes rows (compact, UTF-8), with its newline."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def dump_rows(rows: Iterable[dict[str, Any]], block: int = 1 << 20) -> Iterator[bytes]:
    """``dump_judgments``' bytes from canonical label rows (``canonical_judgment``'s), about
    ``block`` bytes at a time as the rows come: a writer holds one block, no models, no
    whole output."""
    lines: list[bytes] = []
    size = 0
    for row in rows:
        line = row_line(row)
        lines.append(line)
        size += len(line)
        if size >= block:
            yield b"".join(lines)
            lines, size = [], 0
    if lines:
        yield b"".join(lines)
