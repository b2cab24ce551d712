"""Content-addressed chunk identity: ``normalize``, ``text_sha`` and ``chunk_id``.

A relevance label must point at text, not at "position 7 of whatever the chunker produced that
day"; everything drift can do follows from that. The definitions are in spec/chunk-id.md and
must stay byte-exact across languages, which is why the whitespace set below is spelled out
code point by code point instead of borrowing a language's ``strip``/``trim``: Python's
``str.strip`` also removes U+001C..U+001F, JavaScript's ``trim`` also removes U+FEFF, and the
two reference implementations therefore disagree on such text.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from typing import Any

__all__ = ["FIELD_SEPARATOR", "WHITESPACE", "chunk_id", "normalize", "normalized_sha", "text_sha"]

#: U+001F UNIT SEPARATOR joins the canonical fields.
FIELD_SEPARATOR = "\x1f"

#: Exactly the 25 code points with the Unicode ``White_Space`` property (PropList.txt, stable
#: since Unicode 6.3). Stripped from both ends of the whole text, nothing else.
WHITESPACE = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def normalize(text: str) -> str:
    """NFC, then ``\\r\\n`` and ``\\r`` to ``\\n``, then strip Unicode White_Space at both ends."""
    # ASCII is its own NFC; ``isascii`` reads a flag, where NFC's quick check reads every
    # character (half of this function's time on 200,000 chunks of prose).
    normalized = text if text.isascii() else unicodedata.normalize("NFC", text)
    if "\r" in normalized:
        normalized = normalized.replace("\r\n", "\n").replace("\r", "\n")
    return normalized.strip(WHITESPACE)


@cache
def _sha256() -> Any:
    """hashlib's sha256, imported on first use (OpenSSL's library is large, and scoring
    computes no chunk hash)."""
    import hashlib

    return hashlib.sha256


def _h128(value: str) -> str:
    return _sha256()(value.encode("utf-8")).hexdigest()[:32]


def text_sha(text: str) -> str:
    """``t1:`` and the first 128 bits of SHA-256 over ``normalize(text)``, in lowercase hex."""
    return normalized_sha(normalize(text))


def normalized_sha(normalized: str) -> str:
    """``text_sha`` of a text already ``normalize``d (its result, not any text)."""
    return "t1:" + _h128(normalized)


def chunk_id(
    doc_uri: str,
    doc_revision: str,
    ordinal: int,
    text: str,
    chunker_fingerprint: str,
) -> str:
    """``c1:`` and the first 128 bits of SHA-256 over the five canonical fields.

    The fields are joined by U+001F. ``doc_uri``, ``doc_revision`` and ``chunker_fingerprint``
    must not contain U+001F and ``ordinal`` must be a non-negative int: with those refused,
    the joined string splits back into exactly one tuple of fields, so two different chunks can
    never share a canonical string (the text alone may contain U+001F, as the middle field).
    """
    if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 0:
        raise ValueError(f"chunk_id: ordinal: must be a non-negative integer, got {ordinal!r}")
    for name, value in (
        ("doc_uri", doc_uri),
        ("doc_revision", doc_revision),
        ("chunker_fingerprint", chunker_fingerprint),
    ):
        if not isinstance(value, str):
            raise ValueError(f"chunk_id: {name}: must be a string, got {value!r}")
        if FIELD_SEPARATOR in value:
            raise ValueError(
                f"chunk_id: {name}: must not contain U+001F (the field separator), got {value!r}"
            )
    if not isinstance(text, str):
        raise ValueError(f"chunk_id: text: must be a string, got {text!r}")
    canonical = FIELD_SEPARATOR.join(
        (doc_uri, doc_revision, str(ordinal), normalize(text), chunker_fingerprint)
    )
    return "c1:" + _h128(canonical)
