"""corpus.json is read by msgspec (io, ``open_corpus``) or pydantic-core (core) in one pass when
it is well formed; anything else is read field by field. Every reader must give the same
chunks, or the same error."""

from __future__ import annotations

import json

import pytest

from goldkeeper.core import drift
from goldkeeper.core.drift import corpus as drift_corpus
from goldkeeper.core.identity import text_sha
from goldkeeper.errors import InputError
from goldkeeper.io.snapshots import LiveChunkStruct, corpus_json, spooled_corpus

GOOD = {"chunk_id": "c1:" + "a" * 32, "doc_uri": "doc://a", "ordinal": 0, "text": "Refunds take 5 days."}


def _msgspec_first(raw: bytes, source: str) -> drift.Corpus:
    """What ``open_corpus`` does with a corpus.json's bytes."""
    corpus = corpus_json(raw)
    return corpus if corpus is not None else drift.parse_corpus(raw, source)


def _spooled_first(raw: bytes, source: str) -> drift.Corpus:
    """What ``open_corpus(..., stream=True)`` does with a large corpus.json's bytes (its
    chunks read back from the spool)."""
    spooled = spooled_corpus(raw)
    if spooled is None:
        return drift.parse_corpus(raw, source)
    return drift.Corpus(list(spooled), spooled.corpus_fingerprint, spooled.chunker_fingerprint)


def _facts(outcome: object) -> object:
    """A corpus as plain values, whichever chunk type holds them (io's ``LiveChunkStruct`` is
    core's ``LiveChunk`` as a msgspec Struct; the two do not compare equal)."""
    if not isinstance(outcome, drift.Corpus):
        return outcome
    return (outcome.corpus_fingerprint, outcome.chunker_fingerprint,
            [(c.chunk_id, c.doc_uri, c.ordinal, c.text, c.text_sha, c.start_index) for c in outcome.chunks])


def _both(payload: object) -> tuple[object, object]:
    """What parse_corpus, the msgspec reader and the spooling one give (or raise), which must
    agree, and what the field-by-field reader gives. Each is tried compact and indented."""
    data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
    outcomes = []
    for reader in (drift.parse_corpus, _msgspec_first, _spooled_first,
                   lambda raw, source: drift_corpus._parse_corpus_fields(raw, source)):
        try:
            outcomes.append(_facts(reader(data, "corpus.json")))
        except InputError as error:
            outcomes.append(("error", str(error)))
    assert outcomes[0] == outcomes[1] == outcomes[2]
    if not isinstance(payload, bytes) and outcomes[0][0] != "error":  # indented, as goldkeeper writes it
        assert _facts(_spooled_first(json.dumps(payload, indent=1).encode(), "corpus.json")) == outcomes[0]
    return outcomes[0], outcomes[3]


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
    other = {**GOOD, "chunk_id": "c1:" + "f" * 32}  # beside a chunk of its own id: ids never repeat
    fast, fields = _both({"corpus_fingerprint": "new", "chunker_fingerprint": "c", "chunks": [other, chunk]})
    assert fast == fields


@pytest.mark.parametrize("second", [GOOD, {**GOOD, "text": "another text"}], ids=["same-chunk", "another-chunk"])
def test_a_snapshot_whose_chunk_ids_repeat_is_refused_by_every_reader(tmp_path, second):
    """Issue 42, item 8: a label on a repeated id would match either chunk; refused with the
    position of both, before drift or score writes anything."""
    from goldkeeper.io.snapshots import open_corpus

    data = json.dumps({"chunks": [GOOD, second]}).encode()
    message = f'corpus.json: chunks[1].chunk_id: repeats the id of chunks[0], got "{GOOD["chunk_id"]}"'
    with pytest.raises(InputError) as parsed:
        drift.parse_corpus(data, "corpus.json")
    assert str(parsed.value) == message
    (tmp_path / "corpus.json").write_bytes(data)
    with pytest.raises(InputError) as opened:
        open_corpus(str(tmp_path / "corpus.json"))
    assert str(opened.value) == message.replace("corpus.json", str(tmp_path / "corpus.json"), 1)


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
    assert plain.text_sha is None and plain.sha() == text_sha(GOOD["text"])
    assert stored.text_sha == stored.sha() == "t1:" + "d" * 32


def test_io_chunk_is_core_live_chunk_field_for_field():
    import dataclasses

    import msgspec

    assert [(f.name, None if f.default is dataclasses.MISSING else f.default)
            for f in dataclasses.fields(drift.LiveChunk)] == [
        (f.name, None if f.default is msgspec.NODEFAULT else f.default) for f in msgspec.structs.fields(LiveChunkStruct)]
    assert [f.required for f in msgspec.structs.fields(LiveChunkStruct)] == [
        f.default is dataclasses.MISSING for f in dataclasses.fields(drift.LiveChunk)]
    values = ("c1:" + "a" * 32, "doc://a", None, " Caf\u0065\u0301 refunds\r\n", None, 4)
    core, fast = drift.LiveChunk(*values), LiveChunkStruct(*values)
    assert (core.order(), core.sha()) == (fast.order(), fast.sha())
    with pytest.raises(AttributeError):
        fast.text = "x"  # frozen, as LiveChunk is


def test_classify_fix_and_queue_read_either_chunk_type():
    import goldkeeper

    def live(doc, ordinal, text):
        return (goldkeeper.chunk_id(doc, "r2", ordinal, text, "new"), doc, ordinal, text)

    rows = [live("doc://a", 0, "Refunds take five business days."), live("doc://a", 1, "Shipping is free over $50."),
            live("doc://b", 0, "Returns need a receipt and the original box."),
            live("doc://b", 1, "Gift cards never expire.")]
    labels = [
        {"query_id": "q1", "doc_uri": "doc://a", "chunk_id": rows[0][0], "relevance": 1},
        {"query_id": "q2", "doc_uri": "doc://a", "chunk_id": "c1:" + "0" * 32,
         "chunk_text": "Shipping is free over $50.", "relevance": 2},
        {"query_id": "q3", "doc_uri": "doc://b", "chunk_id": "c1:" + "1" * 32,
         "chunk_text": "the original box. Gift cards", "relevance": 1},
        {"query_id": "q4", "doc_uri": "doc://b", "chunk_id": "c1:" + "2" * 32, "chunk_text": "a receipt", "relevance": 1},
        {"query_id": "q5", "doc_uri": "doc://a", "chunk_id": "c1:" + "3" * 32, "chunk_text": "Refunds take ten days.",
         "relevance": 1},
    ]
    outcomes = []
    for kind in (drift.LiveChunk, LiveChunkStruct):
        corpus = drift.Corpus([kind(*row) for row in rows], "new", "c")
        result = drift.classify(labels, corpus)
        fixed, moved = drift.fix([goldkeeper.Judgment.model_validate(label) for label in labels], result)
        queue = drift.rejudgment_queue(labels, result, corpus)
        outcomes.append((result.findings, result.summary, [j.model_dump() for j in fixed], moved, queue))
    assert outcomes[0] == outcomes[1]
    assert [f["status"] for f in outcomes[0][0]] == ["VALID", "RE_ANCHORABLE", "SPLIT", "MERGED", "ORPHANED"]
