"""io's msgspec decoders are a first attempt over core's readers: same rows, same errors."""

from __future__ import annotations

import io

import pytest

from goldkeeper.core import judgments
from goldkeeper.core.grouped import pack_run
from goldkeeper.core.runs import iter_run
from goldkeeper.errors import InputError
from goldkeeper.io import fastjson

LINE = b'{"query_id":"q1","doc_uri":"d1","relevance":2}'


def test_the_msgspec_row_is_made_from_the_one_definition():
    from goldkeeper.models.records import JUDGMENT_ROW

    # a span is left to core's line reader: judgment_rows refuses any body holding one
    fields = [spec for spec in JUDGMENT_ROW if spec.kind != "span"]
    assert list(fastjson.Row.__annotations__) == [spec.name for spec in fields]
    assert fastjson.Row.__required_keys__ == {spec.name for spec in fields if spec.kind != "text"}
    assert fastjson.judgment_rows(b'{"query_id":"q1","doc_uri":"d1","relevance":1,"span":{"start":0,"end":1}}\n') is None


@pytest.mark.parametrize("line", [
    b'{"query_id":"","doc_uri":"d1","relevance":2}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":1024}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":-1}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2.0}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":true}',
    b'{"query_id":"q1","doc_uri":"d1"}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2,"query":null}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2,"query_id":"q2"}',
    # A key named twice, spaced or not, a string or not: the quotes no longer add up.
    b'{"query_id":"q1","doc_uri":"d1","relevance":2,"stratum" : "a","stratum":"b"}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2, "relevance" :3}',
    b'{"query_id" :"q1","doc_uri":"d1","query_id": "q1","relevance":2}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2} {"query_id":"q1","doc_uri":"d1","relevance":2}',
    b'[1]',
    b'{"query_id":"q1","doc_uri":"d1","relevance":NaN}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":Infinity}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2,"score":-Infinity}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2,"scores":[1.0,NaN]}',
])
def test_a_bad_line_gets_cores_message(line):
    data = LINE + b"\n" + line + b"\n" + LINE + b"\n"
    outcomes = []
    for reader in (fastjson.judgment_blocks, judgments.iter_judgment_blocks):
        try:
            outcomes.append(list(reader([data], "j.jsonl")))
        except InputError as error:
            outcomes.append(str(error))
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[0], str) and "j.jsonl:2" in outcomes[0]


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"[NaN]", b'{"a":Infinity}'])
def test_msgspec_refuses_what_json_has_not_itself(literal):
    """core checks a block for NaN and Infinity only before pydantic-core, which takes them;
    the msgspec decoder must refuse them in any field, known or extra."""
    assert fastjson.judgment_rows(LINE[:-1] + b',"x":' + literal + b"}") is None
    assert fastjson.judgment_rows(b'{"query_id":"q1","doc_uri":"d1","relevance":' + literal + b"}") is None


def _counting_decoder() -> tuple[list[bytes], object]:
    """The msgspec decoder, and the blocks it was called with."""
    calls: list[bytes] = []

    def counting(body: bytes, keep_extras: bool = False):
        if not keep_extras:
            calls.append(body)
        return fastjson.judgment_rows(body, keep_extras)

    return calls, counting


def test_a_string_that_reads_nan_keeps_the_block_on_the_fast_path():
    calls, counting = _counting_decoder()
    line = b'{"query_id":"q1","query":"NaN and Infinity in JavaScript","doc_uri":"d1","relevance":2}'
    rows = [r for block in judgments.iter_judgment_blocks([line + b"\n" + LINE + b"\n"], decode=counting) for r in block]
    assert rows[0]["query"] == "NaN and Infinity in JavaScript" and len(rows) == 2
    assert len(calls) == 1


def test_extra_keys_are_kept_on_the_fast_path():
    """A line with keys of its own is decoded by msgspec too, extras kept, checked as core's
    line reader checks it: the rows are the line reader's."""
    calls, counting = _counting_decoder()
    extra = b'{"query_id":"q1","doc_uri":"d1","relevance":2,"source":"bm25","weights":[1,2]}'
    blocks = [LINE + b"\n", extra + b"\n" + LINE + b"\n"]
    rows = [r for block in judgments.iter_judgment_blocks(blocks, decode=counting) for r in block]
    assert rows[1]["source"] == "bm25" and rows[1]["weights"] == [1, 2] and len(rows) == 3
    assert len(calls) == 2  # every block on the fast path (the second decoded again, extras kept)
    lines = [line for block in blocks for line in block.splitlines()]
    assert rows == [row for _, row in judgments.iter_judgment_rows(lines)]
    # An extra key that breaks a known field's type still goes to the line reader's words.
    with pytest.raises(InputError, match="relevance"):
        list(judgments.iter_judgment_blocks([b'{"query_id":"q","doc_uri":"d","relevance":"2","x":1}'],
                                            decode=fastjson.judgment_rows))


def test_msgspec_decodes_a_plain_block_in_input_key_order():
    row = fastjson.judgment_rows(b'{"relevance":1,"doc_uri":"d","query_id":"q","stratum":"s"}')
    assert row == [{"relevance": 1, "doc_uri": "d", "query_id": "q", "stratum": "s"}]
    assert fastjson.judgment_rows(b'{"relevance":1}') is None


RUN = b'{"query_id":"q1","ranking":["d1","d2","d1","d3"]}\n{"query_id":"q2","ranking":[]}\n'


@pytest.mark.parametrize("part", [
    RUN,
    RUN[:-1],
    RUN + b'{"query_id":"q3","ranking":["d1"],"scores":[1.0]}\n',
    RUN + b'{"query_id":"q3","ranking":["d1"],"ranking":["d2"]}\n',
    RUN + b'{"query_id":"q1","ranking":["d9"]}\n',
    RUN + b'\n' + b'{"query_id":"q3","ranking":["d1"]}\n',
    RUN.replace(b"\n", b"\r\n"),
    RUN + b'{"query_id":"q3","ranking":["", "d1"]}\n',
    RUN + b'{"query_id":"q3","ranking":["query_id","ranking"]}\n',
    RUN + b'{"query_id":"q\\u00e9","ranking":["caf\\u00e9","\\ud83d\\ude00"]}\n',
    RUN + b'{"query_id":"q3","ranking":["\\ud800"]}\n',
    RUN + b'{"query_id":"","ranking":["d1"]}\n',
    RUN + b'{"query_id":"q3","ranking":"d1"}\n',
    RUN + b'{"ranking":["d1"],"query_id":"q3"}\n',
    b'\xef\xbb\xbf' + RUN,
])
@pytest.mark.parametrize("depth", [1, 2, 10])
def test_the_run_reader_gives_cores_heads_or_cores_refusal_at_any_block_size(part, depth, tmp_path, monkeypatch):
    """The reader streams a run a block at a time, msgspec reading the common lines: whatever
    the blocks, it gives the heads core's line reader gives, or its refusal, word for word."""
    from goldkeeper.errors import InputError
    from goldkeeper.io import loading

    path = tmp_path / "run.jsonl"
    path.write_bytes(part)
    try:
        core: object = pack_run(iter_run(io.BytesIO(part), str(path)), depth)
    except InputError as error:
        core = str(error)
    for block in (1 << 20, 64, 1):
        monkeypatch.setattr(loading, "RUN_BLOCK_BYTES", block)
        try:
            found: object = loading.load_run_prefixes(str(path), None, depth)[0]
        except InputError as error:
            found = str(error)
        assert found == core, block


def test_run_lines_refuses_what_it_does_not_take():
    assert [(r.query_id, r.ranking) for r in fastjson.run_lines(RUN)] == [("q1", ["d1", "d2", "d1", "d3"]),
                                                                          ("q2", [])]
    for part in (RUN + b"\n\n", RUN.replace(b"\n", b"\r\n"), b'{"query_id":"q","ranking":[],"x":1}'):
        with pytest.raises(fastjson.Refused):
            list(fastjson.run_lines(part))
