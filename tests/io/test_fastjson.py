"""io's msgspec decoders are a first attempt over core's readers: same rows, same errors."""

from __future__ import annotations

import pytest

from goldkeeper.core import judgments
from goldkeeper.errors import InputError
from goldkeeper.io import fastjson

LINE = b'{"query_id":"q1","doc_uri":"d1","relevance":2}'


def test_the_row_mirror_has_cores_fields():
    assert fastjson.Row.__required_keys__ == judgments._Row.__required_keys__
    assert fastjson.Row.__optional_keys__ == judgments._Row.__optional_keys__


@pytest.mark.parametrize("line", [
    b'{"query_id":"","doc_uri":"d1","relevance":2}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":1024}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":-1}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2.0}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":true}',
    b'{"query_id":"q1","doc_uri":"d1"}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2,"query":null}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2,"query_id":"q2"}',
    b'{"query_id":"q1","doc_uri":"d1","relevance":2} {"query_id":"q1","doc_uri":"d1","relevance":2}',
    b'[1]',
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


def test_extra_keys_are_kept_and_stop_msgspec_for_the_rest_of_the_file():
    calls = []

    def counting(body: bytes):
        calls.append(body)
        return fastjson.judgment_rows(body)

    extra = b'{"query_id":"q1","doc_uri":"d1","relevance":2,"source":"bm25"}'
    blocks = [LINE + b"\n", extra + b"\n", LINE + b"\n"]
    rows = [r for block in judgments.iter_judgment_blocks(blocks, decode=counting) for r in block]
    assert rows[1]["source"] == "bm25" and len(rows) == 3
    assert len(calls) == 2  # the first block, then the one with extras; not the third


def test_msgspec_decodes_a_plain_block_in_input_key_order():
    row = fastjson.judgment_rows(b'{"relevance":1,"doc_uri":"d","query_id":"q","stratum":"s"}')
    assert row == [{"relevance": 1, "doc_uri": "d", "query_id": "q", "stratum": "s"}]
    assert fastjson.judgment_rows(b'{"relevance":1}') is None
