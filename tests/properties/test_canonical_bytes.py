"""The canonical writer's bytes equal the reference writer's, and round-trips are lossless.

Hypothesis generates label sets with unicode everywhere (control characters, quotes,
backslashes, non-BMP, U+2028), every optional field, and unknown fields of every JSON type
in random order; each set is written by goldkeeper and by retrieval-eval 0.1.1's
``serialize_judgments`` from the same parsed labels.
"""

from __future__ import annotations

import json

import retrieval_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goldkeeper
from goldkeeper.models.judgment import JUDGMENT_FIELDS

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)),  # lone surrogates are not UTF-8
    max_size=12,
)
ID = TEXT.filter(bool).map(lambda s: __import__("unicodedata").normalize("NFC", s))
HEX = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)
JSON_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), TEXT,
)
JSON_VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)
UNKNOWN_KEY = TEXT.filter(lambda k: k not in JUDGMENT_FIELDS)


@st.composite
def label(draw) -> dict:
    row = {
        "query_id": draw(ID),
        "doc_uri": draw(ID),
        "relevance": draw(st.integers(min_value=0, max_value=1023)),
    }
    optional = {
        "query": TEXT,
        "chunk_id": HEX.map(lambda h: "c1:" + h),
        "text_sha": HEX.map(lambda h: "t1:" + h),
        "chunk_text": TEXT,
        "corpus_fingerprint": TEXT,
        "labeled_by": TEXT.map(lambda s: "human:" + s),
        "labeled_at": st.just("2026-11-29T10:00:00Z"),
        "stratum": ID,
        "notes": TEXT,
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            row[name] = draw(strategy)
    extras = draw(st.dictionaries(UNKNOWN_KEY, JSON_VALUE, max_size=4))
    # Unknown fields interleaved anywhere in the source line; order among them must survive.
    items = list(row.items())
    for key, value in extras.items():
        items.insert(draw(st.integers(min_value=0, max_value=len(items))), (key, value))
    return dict(items)


def _source(rows: list[dict]) -> str:
    # Written the way people write JSON: default separators, escaped non-ASCII.
    return "".join(json.dumps(r) + "\n" for r in rows)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(label(), min_size=1, max_size=6))
def test_canonical_bytes_equal_the_reference_writer(rows):
    text = _source(rows)
    ours = goldkeeper.dump_judgments(goldkeeper.parse_judgments(text)).encode("utf-8")
    theirs = retrieval_eval.serialize_judgments(retrieval_eval.parse_judgments(text)).encode("utf-8")
    assert ours == theirs


@settings(max_examples=300, deadline=None)
@given(st.lists(label(), min_size=1, max_size=6))
def test_canonical_write_is_idempotent_and_keeps_every_field(rows):
    once = goldkeeper.dump_judgments(goldkeeper.parse_judgments(_source(rows)))
    twice = goldkeeper.dump_judgments(goldkeeper.parse_judgments(once))
    assert once == twice
    for row, line in zip(rows, once.split("\n")):
        written = json.loads(line)
        assert written == row  # nothing lost, nothing invented
        known = [k for k in written if k in JUDGMENT_FIELDS]
        assert known == [k for k in JUDGMENT_FIELDS if k in row]  # schema order
        assert [k for k in written if k not in JUDGMENT_FIELDS] == [k for k in row if k not in JUDGMENT_FIELDS]
        assert list(written)[: len(known)] == known  # unknown fields last


@settings(max_examples=200, deadline=None)
@given(st.lists(label(), min_size=1, max_size=40))
def test_block_parser_accepts_exactly_what_the_line_parser_accepts(rows):
    from goldkeeper.io.fastjson import judgment_blocks

    data = _source(rows).encode("utf-8")
    by_line = [j.canonical_dict() for j in goldkeeper.parse_judgments(data)]
    by_block = [r for block in judgment_blocks([data]) for r in block]
    assert [goldkeeper.Judgment.model_construct(**r).canonical_dict() for r in by_block] == by_line


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(label(), min_size=1, max_size=10), min_size=1, max_size=4), st.booleans())
def test_the_msgspec_reader_gives_what_the_line_reader_gives(blocks, plain):
    """io's msgspec decoder reads every block, extra keys kept; the rows (block by block)
    must be the ones core's line reader gives."""
    from goldkeeper.core.judgments import iter_judgment_rows
    from goldkeeper.io.fastjson import judgment_blocks

    if plain:  # no unknown fields at all: the typed decoder alone
        blocks = [[{k: v for k, v in row.items() if k in JUDGMENT_FIELDS} for row in block] for block in blocks]
    data = [_source(block).encode("utf-8") for block in blocks]
    assert list(judgment_blocks(data)) == [[row for _, row in iter_judgment_rows(part.splitlines())] for part in data]


MESSY_ROW = st.fixed_dictionaries(
    {
        "query_id": st.sampled_from(["q1", "q2", "q3"]),
        "doc_uri": st.sampled_from(["d1", "d2", "d3", "d4"]),
        "relevance": st.integers(min_value=0, max_value=3),
    },
    optional={
        "query": st.sampled_from(["a", "b"]),
        "chunk_id": st.sampled_from(["c1:" + "a" * 32, "c1:" + "b" * 32, "c1:bad", ""]),
        "text_sha": st.sampled_from(["t1:" + "0" * 32, "t1:bad"]),
        "chunk_text": st.sampled_from(["x", "y"]),
        "corpus_fingerprint": st.sampled_from(["", "f1", "f2"]),
        "labeled_by": st.sampled_from(["human:a", "synthetic:j", "ana", ""]),
        "labeled_at": st.sampled_from(["2026-01-01", "yesterday"]),
        "stratum": st.sampled_from(["", "s1", "s2"]),
    },
)


# Batches where every label has its query text, or none has a chunk or a hash, take their
# own shortcuts in the column path; these rows mostly pass its other checks, so it is used.
PLAIN_ROW = st.fixed_dictionaries(
    {
        "query_id": st.sampled_from(["q1", "q2", "q3"]),
        "doc_uri": st.text(alphabet="abcdefgh", min_size=1, max_size=4),
        "relevance": st.integers(min_value=0, max_value=3),
    },
    optional={"query": st.sampled_from(["a", "b"]), "stratum": st.sampled_from(["s1", "s2"]),
              "labeled_by": st.just("human:a")},
)
WITH_QUERY_ROW = PLAIN_ROW.map(lambda row: {"query": "a", **row})
# A key no field has (pydantic's reader keeps them): the rarer fields must then be read.
WITH_EXTRA_ROW = st.one_of(PLAIN_ROW, MESSY_ROW).map(lambda row: {**row, "source": "bm25"})


def _grouping(qrels) -> tuple:
    return ([(q, list(g.items())) for q, g in qrels.grades.items()], list(qrels.stratum.items()),
            sorted(qrels.stratum_conflicts.items()), qrels.stratified)


LABEL_BATCHES = st.lists(st.one_of(st.lists(MESSY_ROW, max_size=8), st.lists(PLAIN_ROW, max_size=8),
                                   st.lists(WITH_QUERY_ROW, max_size=8)), max_size=5)


@settings(max_examples=400, deadline=None)
@given(LABEL_BATCHES)
def test_a_validator_that_groups_finds_what_one_with_its_own_pairs_finds(batches):
    """Given a Qrels, a validator takes the pairs seen from the grouping it builds (score's
    reader): the same findings as with its own set of pairs, and the grouping of build_qrels."""
    from goldkeeper.core.grouped import Qrels, build_qrels
    from goldkeeper.core.validation import Validator

    rows = [row for batch in batches for row in batch]
    own, grouping = Validator(), Validator(Qrels())
    for batch in batches:
        own.add_many(batch)
        grouping.add_many(batch)
    assert grouping.result() == own.result()
    assert _grouping(grouping._qrels) == _grouping(build_qrels(rows))
