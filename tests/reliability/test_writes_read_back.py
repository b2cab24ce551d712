"""Issue 26, class 1: anything goldkeeper writes, goldkeeper reads. Inputs are drawn as raw
text (numbers spelled with exponents and many digits, grades of every size, identifiers in
and out of NFC, tags and quotes); whatever a reader accepts, the writer's bytes must be read
again to the same values. What cannot be written back is refused at read time, with words."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goldkeeper.core.judgments import dump_judgments, parse_judgments
from goldkeeper.core.qrels import parse_trec_qrels, parse_trec_run, to_qrels, to_trec_run
from goldkeeper.core.runs import dump_run, parse_run
from goldkeeper.errors import InputError

NUMBER = st.from_regex(r"\A-?(0|[1-9][0-9]{0,3})(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?\Z")
BIG_INTEGER = st.integers(min_value=-(10**30), max_value=10**30).map(str)
GRADE = st.one_of(st.integers(min_value=-3, max_value=1030).map(str), st.sampled_from(["1023", "1024", "99999"]))
# "e" + U+0301 is "é" decomposed (not NFC); "é" composed is NFC
ID = st.lists(st.sampled_from(["q", "d", "7", "\u00e9", "e\u0301", "\u6771", "-", "_"]), min_size=1, max_size=4).map("".join)


def _read_twice(parse, write, text):
    try:
        first = parse(text)
    except InputError:
        return None  # refused with words: fine; what must never happen is accepting what cannot be written
    written = write(first)
    again = parse(written)
    return first, again, written


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(ID, ID, GRADE, st.one_of(NUMBER, BIG_INTEGER)), min_size=1, max_size=4))
def test_judgments_read_are_written_and_read_back_the_same(rows):
    text = "".join(f'{{"query_id":{json.dumps(q)},"doc_uri":{json.dumps(d)},"relevance":{g},"x":{n}}}\n'
                   for q, d, g, n in rows)
    found = _read_twice(parse_judgments, dump_judgments, text)
    if found is None:
        return
    first, again, written = found
    assert [r.canonical_dict() for r in again] == [r.canonical_dict() for r in first]
    assert "Infinity" not in written and "NaN" not in written
    for row in first:
        assert unicodedata.is_normalized("NFC", row.query_id) and unicodedata.is_normalized("NFC", row.doc_uri)
        assert 0 <= row.relevance <= 1023


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(ID, ID, GRADE), min_size=1, max_size=4))
def test_qrels_read_become_judgments_that_are_read_back(rows):
    text = "".join(f"{q} 0 {d} {g}\n" for q, d, g in rows)
    try:
        labels = parse_trec_qrels(text)
    except InputError:
        return
    again = parse_judgments(dump_judgments(labels))  # what `convert` writes
    assert [r.canonical_dict() for r in again] == [r.canonical_dict() for r in labels]
    assert parse_trec_qrels(to_qrels(again)) == parse_trec_qrels(to_qrels(labels))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(ID, st.lists(st.tuples(ID, NUMBER), min_size=1, max_size=3)), min_size=1, max_size=3,
                unique_by=lambda entry: entry[0]))
def test_runs_read_are_written_as_jsonl_and_trec_and_read_back(entries):
    lines = []
    for query, hits in entries:
        unique = list(dict(hits).items())
        lines.append(f'{{"query_id":{json.dumps(query)},"ranking":{json.dumps([d for d, _ in unique])},'
                     f'"scores":[{",".join(s for _, s in unique)}]}}\n')
    found = _read_twice(parse_run, dump_run, "".join(lines))
    if found is None:
        return
    first, again, written = found
    assert again == first and "Infinity" not in written
    trec = to_trec_run(first)
    assert "inf" not in trec and "nan" not in trec
    assert [e.query_id for e in parse_trec_run(trec)] == [e.query_id for e in first]


@pytest.mark.parametrize(("text", "expected"), [
    ('{"query_id":"q","doc_uri":"d","relevance":1,"x":1e400}\n',
     "judgments:1: x: a number too large for a 64-bit float (goldkeeper could not write it back: JSON has no "
     "infinity), got a number beyond 1.8e308"),
    ('{"query_id":"q","doc_uri":"d","relevance":1,"m":{"a":[1,-1e999]}}\n',
     "judgments:1: m.a[1]: a number too large for a 64-bit float (goldkeeper could not write it back: JSON has no "
     "infinity), got a number beyond 1.8e308"),
])
def test_a_number_beyond_a_double_is_refused_where_it_is_read(text, expected):
    with pytest.raises(InputError) as caught:
        parse_judgments(text)
    assert str(caught.value) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("q1 0 d1 1024\n", 'qrels:1: grade: a grade is at most 1023 (1024 and above is a unit mistake, not a grade), got "1024"'),
    ("q1 0 cafe\u0301 1\n", "qrels:1: doc_uri: identifier is not in Unicode NFC form, so it would not match its NFC "
                            'twin in runs and corpora, got "cafe\u0301" (NFC would be "caf\u00e9")'),
])
def test_qrels_that_would_convert_to_refused_judgments_are_refused(text, expected):
    with pytest.raises(InputError) as caught:
        parse_trec_qrels(text)
    assert str(caught.value) == expected


def test_a_run_score_beyond_a_double_is_refused():
    with pytest.raises(InputError) as caught:
        parse_run('{"query_id":"q","ranking":["a","b"],"scores":[1e400,1]}\n')
    assert "scores[0]: a number too large for a 64-bit float" in str(caught.value)


def test_a_retrievers_nan_score_is_an_error_for_that_query_not_a_run_line():
    from goldkeeper.io.retrievers import Query, RetrieverError, hits_from_payload

    query = Query("q7", "refunds", 10, "")
    with pytest.raises(RetrieverError, match="query q7: hit 0 needs a finite numeric 'score'"):
        hits_from_payload([{"id": "d", "score": float("nan")}], query, "", "id", "score")
