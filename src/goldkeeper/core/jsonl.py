"""Strict JSON lines, as goldkeeper reads every JSONL input: the one place where a key named
twice and NaN or Infinity (which JSON has not) are refused.

``decode_jsonl`` is the definition: pydantic-core decodes each line (it keeps big integers
exact and refuses NaN), ``keys_in_text`` against the keys decoded shows whether an object
named a key twice (every fast decoder merges those silently), and the standard library's
decoder then names exactly what is wrong. A fast reader (io's msgspec decoders) may accept a
block only when ``keys_in_text`` of the block equals the keys it decoded; anything else goes
through ``decode_jsonl``, which words the refusal with its line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from goldkeeper.errors import InputError, compressed_input, describe_value

__all__ = ["MAX_DEPTH", "byte_order_mark", "decode_document", "decode_jsonl", "keys_in_text", "keys_in_value", "nests_deeply",
           "refuse_duplicates", "refuse_line", "refuse_overflow", "split_lines"]

#: How deep goldkeeper reads JSON: arrays and objects nested at most this many levels inside
#: one another (pydantic-core's limit, which decodes every input that is not on a fast path).
MAX_DEPTH = 200


def nests_deeply(body: bytes, containers_per_line: int) -> bool:
    """Whether a block of lines might nest deeper than ``MAX_DEPTH``: more brackets and braces
    than its lines' usual ``containers_per_line`` plus that many (a fast decoder must then
    leave the block to the line reader, which refuses such a line by the one rule)."""
    lines = body.count(b"\n") + 1
    return body.count(b"[") + body.count(b"{") > lines * containers_per_line + MAX_DEPTH


_INFINITIES = (math.inf, -math.inf)


def _infinite_at(value: Any, flat: bool) -> str | None:
    """The key (or index) holding a number that overflowed to infinity as it was decoded
    (``1e400``: JSON has no infinity, so it could not be written back); None if none does."""
    if flat:
        if math.inf in value.values() or -math.inf in value.values():
            return next(key for key, item in value.items() if item in _INFINITIES)
        return None
    stack = [("", value)]
    while stack:
        where, item = stack.pop()
        is_object = isinstance(item, dict)
        for key, inner in item.items() if is_object else enumerate(item):
            path = (f"{where}.{key}" if where else key) if is_object else f"{where}[{key}]"
            if isinstance(inner, float) and inner in _INFINITIES:
                return path
            if isinstance(inner, (dict, list)):
                stack.append((path, inner))
    return None


def refuse_overflow(value: Any, flat: bool, source: str, number: int | None) -> None:
    """Refuse a decoded line holding a number beyond a 64-bit float (see ``_infinite_at``)."""
    where = _infinite_at(value, flat)
    if where is not None:
        raise InputError(source, "a number too large for a 64-bit float (goldkeeper could not write it back: "
                         "JSON has no infinity)", line=number, field=where or "json", found="a number beyond 1.8e308")


def _too_deep(source: str, number: int | None) -> InputError:
    return InputError(source, f"arrays or objects nested more than {MAX_DEPTH} levels deep, which goldkeeper does not read",
                      line=number, field="json")


# Every key in JSON text is a closing quote, optional whitespace, then a colon. Counting that
# pattern gives at least the number of keys on the line (string contents can only add to it),
# so when it equals the number of keys decoded, no key was repeated. Otherwise the slow path
# decides exactly. (No newline is inside a line: a block's newlines end lines, never a key.)
_KEY_PROBE = re.compile(r'"[ \t\r]*:')
_KEY_PROBE_BYTES = re.compile(rb'"[ \t\r]*:')


def keys_in_value(value: Any) -> int:
    """The keys of every object in a decoded JSON value."""
    if isinstance(value, dict):
        return len(value) + sum(keys_in_value(v) for v in value.values() if isinstance(v, (dict, list)))
    if isinstance(value, list):
        return sum(keys_in_value(v) for v in value if isinstance(v, (dict, list)))
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


def _explain(text: str, source: str, number: int | None) -> Any:
    """Decode with the standard library to name exactly what is wrong with a line (or, with
    no line number, a whole document)."""
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
    except RecursionError:
        raise _too_deep(source, number) from None
    except ValueError as error:  # NaN / Infinity, which JSON does not have
        raise InputError(
            source, f"not valid JSON ({error})", line=number, field="json", found=describe_value(text)
        ) from None


def byte_order_mark(source: str, kind: str) -> InputError:
    """The refusal of a file starting with U+FEFF, which would otherwise become part of its
    first identifier (a query id no run matches)."""
    return InputError(source, f"starts with a byte order mark, which {kind} does not allow", line=1,
                      field="encoding", found="U+FEFF", hint="save the file as UTF-8 without BOM")


def refuse_duplicates(document: bytes | str, source: str) -> None:
    """Refuse a whole JSON document (not a line) whose objects name a key twice, saying which;
    returns when none does (the text merely held more key-like patterns than keys)."""
    _explain(document.decode("utf-8") if isinstance(document, bytes) else document, source, None)


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


def refuse_line(raw: bytes | str, source: str, number: int, reason: str = "") -> Any:
    """Name exactly what is wrong with a line the fast decoder refused (``reason``: what
    pydantic-core said); raises."""
    text = _text(raw, source, number).strip(" \t\n")
    _explain(text, source, number)
    if "recursion limit" in reason:  # deeper than pydantic-core reads, not as deep as json's limit
        raise _too_deep(source, number)
    # The standard library accepted what pydantic-core refused: a lone surrogate escape.
    raise InputError(
        source,
        "not valid JSON (a string holds an unpaired surrogate escape)",
        line=number,
        field="json",
        found=describe_value(text),
    )


def keys_in_text(line: bytes | str) -> int:
    """At least the number of keys in a JSON text (exactly it, for text goldkeeper or any
    compact or default-separator encoder wrote): compared with the keys a decoder found, it
    shows whether a key was named twice, which every fast decoder silently merges."""
    # Compact, default-separator and indented JSON never has whitespace before a colon, so
    # every key there is spelled `"...":` and a plain count is a sound probe. A raw tab or CR
    # (never inside a JSON string) is looked for first, one byte at a time (memchr); without
    # them, a key spelled with spaces before its colon holds " :", which is rare in text
    # (quotes are common), so that search is the quick one.
    if isinstance(line, bytes):
        if b"\t" in line or b"\r" in line or b" :" in line:
            return len(_KEY_PROBE_BYTES.findall(line))
        return line.count(b'":')
    if "\t" in line or "\r" in line or " :" in line:
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
            raise byte_order_mark(source, "JSONL")
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
        except ValueError as error:
            refuse_line(stripped, source, number, str(error))
        if type(value) is dict:
            # One brace and no bracket: no nested container, so the key count is len.
            flat = stripped.count(b"{" if is_bytes else "{") == 1 and (b"[" if is_bytes else "[") not in stripped  # type: ignore[operator]
            if keys_in_text(stripped) != (len(value) if flat else keys_in_value(value)):
                value = _explain(_text(stripped, source, number), source, number)
            refuse_overflow(value, flat, source, number)
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


def decode_document(data: bytes | str, source: str) -> Any:
    """A whole JSON document (a corpus.json, a nested run), refused by the rules a JSONL line
    is: invalid JSON (NaN and Infinity included), a key named twice, nesting past
    ``MAX_DEPTH``, a number beyond a 64-bit float, a byte order mark."""
    from pydantic_core import from_json

    if data.startswith(b"\xef\xbb\xbf" if isinstance(data, bytes) else "\ufeff"):  # type: ignore[arg-type]
        raise byte_order_mark(source, "JSON")
    try:
        value = from_json(data, allow_inf_nan=False)
    except ValueError as error:
        if "recursion limit" in str(error):
            raise _too_deep(source, None) from None
        raise compressed_input(data[:8], source) or InputError(
            source, f"not valid JSON ({error})", field="json", found="the file") from None
    if keys_in_text(data) != keys_in_value(value):
        refuse_duplicates(data, source)
    if isinstance(value, (dict, list)):
        refuse_overflow(value, False, source, None)
    return value


def split_lines(text: str | bytes) -> list[Any]:
    # Not str.splitlines: it also splits at U+2028, U+0085 and others that a JSON string may
    # hold raw. JSONL lines end at LF alone.
    parts = text.split(b"\n" if isinstance(text, bytes) else "\n")  # type: ignore[arg-type]
    if not parts[-1]:
        parts.pop()
    return parts


