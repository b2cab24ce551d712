"""corpus.json is read by msgspec (io, ``open_corpus``) or pydantic-core (core) in one pass when
it is well formed; anything else is read field by field. Every reader must give the same
chunks, or the same error."""

from __future__ import annotations

import json

import pytest

from goldkeeper.core import drift
from goldkeeper.errors import InputError
from goldkeeper.io.fastjson import corpus_json

GOOD = {"chunk_id": "c1:" + "a" * 32, "doc_uri": "doc://a", "ordinal": 0, "text": "Refunds take 5 days."}


def _msgspec_first(raw: bytes, source: str) -> drift.Corpus:
    """What ``open_corpus`` does with a corpus.json's bytes."""
    corpus = corpus_json(raw)
    return corpus if corpus is not None else drift.parse_corpus(raw, source)


def _both(payload: object) -> tuple[object, object]:
    """What parse_corpus and the msgspec reader give (or raise), which must agree, and what
    the field-by-field reader gives."""
    data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
    outcomes = []
    for reader in (drift.parse_corpus, _msgspec_first, lambda raw, source: drift._parse_corpus_fields(raw, source)):
        try:
            outcomes.append(reader(data, "corpus.json"))
        except InputError as error:
            outcomes.append(("error", str(error)))
    assert outcomes[0] == outcomes[1]
    return outcomes[0], outcomes[2]


@pytest.mark.parametrize("chunk", [
    GOOD,
    {**GOOD, "doc_revision": "r2", "start_index": 12, "extra": [1, {"x": None}]},
    {**GOOD, "text_sha": "t1:" + "b" * 32},
    {**GOOD, "text_sha": ""},
    {k: v for k, v in GOOD.items() if k not in ("ordinal", "text")},
    {**GOOD, "ordinal": None, "text": None},
    {**GOOD, "ordinal": True},
    {**GOOD, "ordinal": 1.0},
    {**GOOD, "ordinal": -1},
    {**GOOD, "start_index": -3},
    {**GOOD, "chunk_id": ""},
    {**GOOD, "doc_uri": 7},
    {k: v for k, v in GOOD.items() if k != "chunk_id"},
    {**GOOD, "text": ["a"]},
    {**GOOD, "text_sha": 5},
    "not an object",
])
def test_both_readers_agree_on_a_chunk(chunk):
    fast, fields = _both({"corpus_fingerprint": "new", "chunker_fingerprint": "c", "chunks": [GOOD, chunk]})
    assert fast == fields


@pytest.mark.parametrize("payload", [
    {"corpus_fingerprint": 3, "chunker_fingerprint": None, "chunks": [GOOD]},
    {"chunks": []},
    {"chunks": {"a": GOOD}},
    {"corpus_fingerprint": "x"},
    [GOOD],
    b'{"chunks": [' + json.dumps(GOOD).encode() + b'], "note": NaN}',
    b'{"chunks": [' + json.dumps(GOOD).encode() + b']',
    b'{"chunks": [' + json.dumps(GOOD).encode() + b'], "chunks": []}',
    rb'{"chunks": [{"chunk_id": "c1:x", "doc_uri": "d", "text": "caf\u00e9 \ud83d\ude00 \n"}]}',
    rb'{"chunks": [{"chunk_id": "c1:x", "doc_uri": "d", "text": "a lone \ud800 surrogate"}]}',
    '{"chunks": [{"chunk_id": "c1:x", "doc_uri": "d", "text": "raw UTF-8: café"}]}'.encode(),
    b'{"chunks": [{"chunk_id": "c1:x", "doc_uri": "d", "text": "not UTF-8: \xff"}]}',
    b'{"chunks": [' + json.dumps(GOOD).encode() + b'], "corpus_fingerprint": null}',
    b'{"chunks": [' + json.dumps({**GOOD, "ordinal": 10**30}).encode() + b']}',
    b'\xef\xbb\xbf{"chunks": []}',
])
def test_both_readers_agree_on_the_document(payload):
    fast, fields = _both(payload)
    assert fast == fields


def test_the_fast_reader_keeps_a_stored_hash_and_computes_none():
    corpus = drift.parse_corpus(json.dumps({"chunks": [GOOD, {**GOOD, "chunk_id": "c1:" + "c" * 32,
                                                               "text_sha": "t1:" + "d" * 32}]}))
    plain, stored = corpus.chunks
    assert plain.text_sha is None and plain.sha() == drift.text_sha(GOOD["text"])
    assert stored.text_sha == stored.sha() == "t1:" + "d" * 32
