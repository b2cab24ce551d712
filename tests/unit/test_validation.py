"""Validation beyond the reference, and parity with it where both check the same thing."""

from __future__ import annotations

import json

import pytest
import retrieval_eval

import goldkeeper


def labels(*rows: dict) -> list[goldkeeper.Judgment]:
    return goldkeeper.parse_judgments("".join(json.dumps(r) + "\n" for r in rows))


BASE = {"query_id": "q1", "query": "refunds", "doc_uri": "d1", "relevance": 1, "labeled_by": "human:ana",
        "chunk_id": "c1:" + "a" * 32}


def codes(result) -> list[str]:
    return [i.code for i in result.issues]


def test_text_sha_that_disagrees_with_chunk_text_is_an_error():
    good = {**BASE, "chunk_text": "Annual plans", "text_sha": goldkeeper.text_sha("Annual plans")}
    bad = {**BASE, "doc_uri": "d2", "chunk_id": "c1:" + "b" * 32, "chunk_text": "Annual plans",
           "text_sha": goldkeeper.text_sha("Monthly plans")}
    result = goldkeeper.validate(labels(good, bad))
    assert codes(result).count("text-sha-mismatch") == 1
    assert not result.ok


def test_labeled_by_without_prefix_and_bad_labeled_at_are_warnings():
    result = goldkeeper.validate(labels({**BASE, "labeled_by": "ana", "labeled_at": "yesterday"}))
    assert {"bad-labeled-by", "bad-labeled-at"} <= set(codes(result))
    assert result.ok


@pytest.mark.parametrize("stamp", ["2026-11-29T10:00:00Z", "2026-11-29T10:00:00+01:00", "2026-11-29",
                                   "2026-11-29T10:00:00.123456Z"])
def test_iso_8601_timestamps_pass(stamp):
    assert "bad-labeled-at" not in codes(goldkeeper.validate(labels({**BASE, "labeled_at": stamp})))


@pytest.mark.parametrize(("first", "second"), [("q1", "q1 "), ("q1", "\tq1"), ("q1", "q1\x1c"), ("ﬁle", "file"),
                                             ("Ｑ1", "Q1")])
def test_lookalike_ids_are_warned_about(first, second):
    result = goldkeeper.validate(labels({**BASE, "query_id": first}, {**BASE, "query_id": second}))
    assert "lookalike-ids" in codes(result)


def test_reference_checks_agree_with_the_reference_on_a_messy_set():
    rows = [
        {**BASE},
        {**BASE},  # duplicate
        {**BASE, "doc_uri": "d3", "chunk_id": "c1:zz", "query": "other"},  # bad chunk id, inconsistent text
        {**BASE, "query_id": "q2", "text_sha": "t1:nothex", "labeled_by": "synthetic:j",
         "corpus_fingerprint": "a", "stratum": "s"},
        {**BASE, "query_id": "q0", "relevance": 0, "corpus_fingerprint": "b"},
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    ours = goldkeeper.validate(goldkeeper.parse_judgments(text))
    theirs = retrieval_eval.validate(retrieval_eval.parse_judgments(text))
    assert [i.to_dict() for i in ours.issues] == [i.to_dict() for i in theirs.issues]
    assert (ours.queries, ours.labels, ours.human_labels, ours.synthetic_labels, ours.strata) == (
        theirs.queries, theirs.labels, theirs.human_labels, theirs.synthetic_labels, theirs.strata)


def test_rows_that_are_mappings_but_not_dicts_validate_as_dicts():
    """The column path maps dict.get in C; other mappings are copied to dicts first."""
    from types import MappingProxyType

    from goldkeeper.core.validation import validate

    rows = [{"query_id": "q1", "doc_uri": "d1", "relevance": 1, "labeled_by": "human:a", "stratum": "s"},
            {"query_id": "q1", "doc_uri": "d1", "relevance": 2, "query": "x"},
            {"query_id": "q2", "doc_uri": "d2", "relevance": 0, "chunk_id": "bad"}]
    assert validate([MappingProxyType(r) for r in rows]) == validate(rows)
    assert validate([MappingProxyType(r) for r in rows[2:]]) == validate(rows[2:])
    assert [i.code for i in validate(rows).issues][:2] == ["duplicate-label", "bad-chunk-id"]


