"""Judgments JSONL: a strict, streaming parser and the canonical writer.

The parser reads one line at a time, so a caller can validate a file of any size in memory
bounded by what validation itself keeps. It type-checks every known field and refuses bad
input with one line that names the source, the line, the field, what is wrong and what was
found (``goldkeeper.errors.InputError``). JSON is decoded by pydantic-core (Rust; it keeps big
integers exact and refuses NaN), and the standard library's decoder is used only to explain a
line pydantic-core rejected or to look for duplicate keys, which pydantic-core silently merges.

The writer follows the spec's design rule 5: known fields in schema order, unknown fields
last in their original order, compact JSON with non-ASCII kept, one object per line, a final
newline. It uses the standard library's encoder on purpose: its number and escape spellings
are the reference implementation's, and byte identity with it is the point.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

from typing_extensions import NotRequired, TypedDict

from goldkeeper.errors import InputError, compressed_input, describe_value
from goldkeeper.models.records import JUDGMENT_ROW, MAX_RELEVANCE

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment

# pydantic (and the Judgment model) load on first use: reading labels with an io decoder
# never needs them, and commands that never build a model should not pay for the import.

__all__ = [
    "MAX_RELEVANCE",
    "BlockDecoder",
    "check_row",
    "decode_block",
    "decode_jsonl",
    "dump_judgments",
    "iter_judgment_blocks",
    "iter_judgment_rows",
    "iter_judgments",
    "judgment_line",
    "parse_judgments",
    "split_lines",
]

_REQUIRED_STR = tuple(spec.name for spec in JUDGMENT_ROW if spec.kind == "id")
_OPTIONAL_STR = tuple(spec.name for spec in JUDGMENT_ROW if spec.kind == "text")
#: Identifiers compared by code point against runs and corpora; they must be NFC.
_NFC_FIELDS = tuple(spec.name for spec in JUDGMENT_ROW if spec.nfc)

# Every key in JSON text is a closing quote, optional whitespace, then a colon. Counting that
# pattern gives at least the number of keys on the line (string contents can only add to it),
# so when it equals the number of keys decoded, no key was repeated. Otherwise the slow path
# decides exactly. (No newline is inside a line: a block's newlines end lines, never a key.)
_KEY_PROBE = re.compile(r'"[ \t\r]*:')
_KEY_PROBE_BYTES = re.compile(rb'"[ \t\r]*:')


def _count_keys(value: Any) -> int:
    if isinstance(value, dict):
        return len(value) + sum(_count_keys(v) for v in value.values() if isinstance(v, (dict, list)))
    if isinstance(value, list):
        return sum(_count_keys(v) for v in value if isinstance(v, (dict, list)))
    return 0


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key, value)
        out[key] = value
    return out


class _DuplicateKey(Exception):
    def __init__(self, key: str, value: Any) -> None:
        self.key = key
        self.value = value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _explain(text: str, source: str, number: int) -> Any:
    """Decode with the standard library to name exactly what is wrong with a line."""
    try:
        return json.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except _DuplicateKey as dup:
        raise InputError(
            source,
            "key appears twice in one object",
            line=number,
            field=dup.key,
            found=f"a second value {describe_value(dup.value)}",
        ) from None
    except json.JSONDecodeError as error:
        raise InputError(
            source,
            f"not valid JSON ({error.msg} at column {error.colno})",
            line=number,
            field="json",
            found=describe_value(text),
        ) from None
    except ValueError as error:  # NaN / Infinity, which JSON does not have
        raise InputError(
            source, f"not valid JSON ({error})", line=number, field="json", found=describe_value(text)
        ) from None


def _text(raw: bytes | str, source: str, number: int) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise (compressed_input(raw[:8], source) if number == 1 else None) or InputError(
            source,
            f"not valid UTF-8 at byte {error.start + 1} of the line",
            line=number,
            field="encoding",
            found=f"byte 0x{raw[error.start]:02X}",
            hint="judgments files are UTF-8; re-encode the file (e.g. iconv -t UTF-8)",
        ) from None


def _refuse_line(raw: bytes | str, source: str, number: int) -> Any:
    """Name exactly what is wrong with a line the fast decoder refused; raises."""
    text = _text(raw, source, number).strip(" \t\n")
    _explain(text, source, number)
    # The standard library accepted what pydantic-core refused: a lone surrogate escape.
    raise InputError(
        source,
        "not valid JSON (a string holds an unpaired surrogate escape)",
        line=number,
        field="json",
        found=describe_value(text),
    )


def _probe_keys(line: bytes | str) -> int:
    # Compact and default-separator JSON never has a quote followed by whitespace outside a
    # string, so every key there is spelled `"...":` and a plain count is a sound probe.
    # A raw tab or CR (never inside a JSON string) is looked for first, one byte at a time
    # (memchr): without them only `" ` needs the slower two-byte search.
    if isinstance(line, bytes):
        if b"\t" in line or b"\r" in line or b'" ' in line:
            return len(_KEY_PROBE_BYTES.findall(line))
        return line.count(b'":')
    if '" ' in line or '"\t' in line or '"\r' in line:
        return len(_KEY_PROBE.findall(line))
    return line.count('":')


def decode_jsonl(
    lines: Iterable[bytes | str], source: str, *, allow_empty: bool = False, first_line: int = 1
) -> Iterator[tuple[int, Any]]:
    """Decode JSONL into ``(line_number, value)``, refusing what is not strict JSONL.

    Refused, each with its line: a UTF-8 byte order mark, CRLF line endings, bytes that are not
    UTF-8, ``//`` comments, invalid JSON (NaN and Infinity included), lone surrogates, and an
    object that repeats a key. Blank lines are skipped; an input with no line at all is refused
    unless ``allow_empty``. Lines may be bytes (decoded as UTF-8 by pydantic-core, which
    checks the encoding) or str.
    """
    from pydantic_core import from_json

    number, decoded = first_line - 1, 0
    for number, raw in enumerate(lines, start=first_line):
        is_bytes = isinstance(raw, bytes)
        if number == 1 and raw.startswith(b"\xef\xbb\xbf" if is_bytes else "\ufeff"):  # type: ignore[arg-type]
            raise InputError(
                source,
                "starts with a byte order mark, which JSONL does not allow",
                line=1,
                field="encoding",
                found="U+FEFF",
                hint="save the file as UTF-8 without BOM",
            )
        stripped = raw.strip(b" \t\n" if is_bytes else " \t\n")  # type: ignore[arg-type]
        if stripped.endswith(b"\r" if is_bytes else "\r"):  # type: ignore[arg-type]
            raise InputError(
                source,
                "line ends with CR LF; JSONL lines end with LF alone",
                line=number,
                field="line ending",
                found='"\\r\\n"',
                hint="convert the line endings, e.g. sed -i 's/\\r$//' FILE",
            )
        if not stripped:
            continue
        if stripped.startswith(b"//" if is_bytes else "//"):  # type: ignore[arg-type]
            raise InputError(
                source,
                "comments are not JSON",
                line=number,
                field="json",
                found=describe_value(_text(stripped, source, number)),
            )
        try:
            value = from_json(stripped, allow_inf_nan=False, cache_strings="keys")
        except ValueError:
            _refuse_line(stripped, source, number)
        if type(value) is dict:
            # One brace and no bracket: no nested container, so the key count is len.
            flat = stripped.count(b"{" if is_bytes else "{") == 1 and (b"[" if is_bytes else "[") not in stripped  # type: ignore[operator]
            if _probe_keys(stripped) != (len(value) if flat else _count_keys(value)):
                value = _explain(_text(stripped, source, number), source, number)
        decoded += 1
        yield number, value
    if decoded == 0 and not allow_empty:
        raise InputError(
            source,
            "holds no JSON line, so there is nothing to read",
            line=max(number, 1),
            field="file",
            found="an empty file" if number < first_line else f"{number} blank line(s)",
        )


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
    return row


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


_ROWS: Any = None


def _rows_adapter() -> Any:
    """pydantic's validator of a list of judgment rows, made from ``JUDGMENT_ROW`` on first
    use: the per-line checks of ``check_row`` compiled by pydantic-core to run over a block at
    once (strict types, extra keys kept)."""
    global _ROWS
    if _ROWS is None:
        from pydantic import ConfigDict, Field, StringConstraints, TypeAdapter, with_config

        kinds = {"id": Annotated[str, StringConstraints(min_length=1)], "text": NotRequired[str],
                 "grade": Annotated[int, Field(ge=0, le=MAX_RELEVANCE)]}
        row = TypedDict("JudgmentRow", {spec.name: kinds[spec.kind] for spec in JUDGMENT_ROW})  # type: ignore[misc]
        _ROWS = TypeAdapter(list[with_config(ConfigDict(extra="allow", strict=True))(row)])
    return _ROWS


#: Decodes a block of whole JSON lines into rows with the checks of ``check_row``, or gives None.
#: One other than ``decode_block`` (io's msgspec reader) must refuse NaN and Infinity (which
#: JSON has not) itself, and give rows with ``JUDGMENT_ROW``'s fields only, dropping any other key: the
#: rows' keys then no longer add up to the text's, and the block is decoded again.
BlockDecoder = Callable[[bytes], "list[dict[str, Any]] | None"]


def decode_block(body: bytes) -> list[dict[str, Any]] | None:
    """``check_row``'s checks over a block in one pydantic-core call, extra keys kept; or None."""
    try:
        return _rows_adapter().validate_json(b"[" + body.replace(b"\n", b",") + b"]")
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None


def _fast_block(body: bytes, at_start: bool, decode: BlockDecoder = decode_block) -> list[dict[str, Any]] | None:
    """Decode and check a block of whole lines in one call, or None to take the slow path.

    None is returned for anything unusual (a blank line, CR, NaN, a nested container whose
    keys do not add up, non-NFC identifiers, any type error); the line-by-line path then
    decides and words the error. Only clean blocks are accepted here, so both paths accept
    exactly the same input.
    """
    if (at_start and body.startswith(b"\xef\xbb\xbf")) or b"\r" in body:
        return None
    # pydantic-core's parser takes NaN and Infinity; a decoder given (io's msgspec) refuses
    # them itself, and rows it decodes can hold "NaN" in a string without leaving this path.
    if decode is decode_block and (b"NaN" in body or b"Infinity" in body):
        return None
    rows = decode(body)
    if rows is None or len(rows) != body.count(b"\n") + 1:
        return None
    if decode is not decode_block and b"\\" not in body:
        # Such rows hold only JUDGMENT_ROW's fields, each a string but relevance; without a backslash
        # every quote delimits a string, so a row of k keys is 4k - 2 quotes. More quotes are
        # a key named twice or one dropped. One byte counted is cheaper than probing for keys.
        if body.count(b'"') != 4 * sum(map(len, rows)) - 2 * len(rows):
            return None
    else:
        if body.count(b"{") == len(rows) and b"[" not in body:
            keys = sum(map(len, rows))
        else:
            keys = sum(_count_keys(row) for row in rows)
        if _probe_keys(body) != keys:
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

    Each block holds whole lines (the last block may lack its final newline). A block is
    decoded in one call: by ``decode`` when given (io passes a faster decoder that drops
    extra keys), else, or when that one's rows do not add up, by pydantic-core, which keeps
    them; a file whose extra keys defeat ``decode`` once stops trying it. A block with
    anything unusual in it goes through ``iter_judgment_rows`` instead, line by line, so
    errors name the same line either way. ``first_line`` numbers the first line of the first
    block, for a caller reading a file from the middle.
    """
    start = first_line
    decoded = 0
    for block in blocks:
        if not block:
            continue
        body = block[:-1] if block.endswith(b"\n") else block
        rows = None
        if body and decode is not None:
            rows = _fast_block(body, first_line == 1, decode)
        if body and rows is None:
            rows = _fast_block(body, first_line == 1)  # the BOM is line 1's
            if rows is not None:
                decode = None
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


def split_lines(text: str | bytes) -> list[Any]:
    # Not str.splitlines: it also splits at U+2028, U+0085 and others that a JSON string may
    # hold raw. JSONL lines end at LF alone.
    parts = text.split(b"\n" if isinstance(text, bytes) else "\n")  # type: ignore[arg-type]
    if not parts[-1]:
        parts.pop()
    return parts


def judgment_line(judgment: Judgment) -> str:
    """One canonical JSONL line, without its newline."""
    return json.dumps(judgment.canonical_dict(), ensure_ascii=False, separators=(",", ":"))


def dump_judgments(judgments: Iterable[Judgment]) -> str:
    """The canonical bytes (as text) of a judgments file: one line per label, final newline."""
    return "".join(judgment_line(j) + "\n" for j in judgments)
