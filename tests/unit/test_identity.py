"""Identity: the whitespace set, the separator rule, and agreement with the reference."""

from __future__ import annotations

import hashlib
import unicodedata

import pytest
import retrieval_eval

import goldkeeper
from goldkeeper.core.identity import WHITESPACE


def test_whitespace_set_is_exactly_unicode_white_space():
    # PropList.txt White_Space, cross-checked against Python: str.isspace() minus U+001C..1F.
    python_space = {c for c in map(chr, range(0x110000)) if c.isspace()}
    assert set(WHITESPACE) == python_space - {"\x1c", "\x1d", "\x1e", "\x1f"}
    assert len(WHITESPACE) == 25


@pytest.mark.parametrize(
    ("text", "agrees"),
    [
        ("  plain text \r\n", True),
        ("\u00a0nbsp\u00a0", True),
        ("\u0085next line\u0085", True),
        ("cafe\u0301", True),
        ("\x1fseparator\x1f", False),  # Python's strip removes it; we keep it
        ("\x1cfile separator", False),
    ],
)
def test_agreement_with_the_python_reference_is_exact_outside_u001c_to_u001f(text, agrees):
    assert (goldkeeper.text_sha(text) == retrieval_eval.text_sha(text)) is agrees


def test_text_sha_is_sha256_of_the_normalized_text():
    text = "  Annual plans \r\n may be refunded.  "
    digest = hashlib.sha256(b"Annual plans \n may be refunded.").hexdigest()[:32]
    assert goldkeeper.text_sha(text) == "t1:" + digest


def test_normalize_is_idempotent_and_nfc():
    for text in ["cafe\u0301 \r\n", "\u3000x\u2029", "a\rb", "\ufeffx"]:
        once = goldkeeper.normalize(text)
        assert goldkeeper.normalize(once) == once
        assert unicodedata.is_normalized("NFC", once)


@pytest.mark.parametrize("field", ["doc_uri", "doc_revision", "chunker_fingerprint"])
def test_chunk_id_refuses_the_separator_inside_a_field(field):
    args = {"doc_uri": "s3://b/k", "doc_revision": "v1", "ordinal": 0, "text": "t",
            "chunker_fingerprint": "fp"}
    args[field] = "a\x1fb"
    with pytest.raises(ValueError, match=f"{field}: must not contain U\\+001F"):
        goldkeeper.chunk_id(**args)


def test_the_separator_rule_prevents_the_collision_it_exists_for():
    # Without the rule these two would share the canonical string "u␟r␟0␟a␟b␟c".
    first = ("u", "r", 0, "a\x1fb", "c")
    assert goldkeeper.chunk_id(*first) == retrieval_eval.chunk_id(*first)
    with pytest.raises(ValueError):
        goldkeeper.chunk_id("u", "r", 0, "a", "b\x1fc")


@pytest.mark.parametrize("ordinal", [-1, True, 1.0, "0"])
def test_chunk_id_refuses_a_bad_ordinal(ordinal):
    with pytest.raises(ValueError, match="ordinal"):
        goldkeeper.chunk_id("u", "r", ordinal, "t", "fp")


def test_text_may_contain_the_separator():
    assert goldkeeper.chunk_id("u", "r", 3, "x\x1fy", "fp").startswith("c1:")
