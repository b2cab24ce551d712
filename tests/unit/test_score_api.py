"""``goldkeeper.score`` as a Python user calls it: models, parsed JSON lines, and clear
errors for what it cannot take."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

import goldkeeper

LABELS = [
    {"query_id": "q1", "doc_uri": "a", "relevance": 2, "stratum": "x"},
    {"query_id": "q1", "doc_uri": "b", "relevance": 1, "stratum": "x"},
    {"query_id": "q2", "doc_uri": "c", "relevance": 1, "stratum": "y"},
]
RUN = [{"query_id": "q1", "ranking": ["b", "z", "a"]}, {"query_id": "q2", "ranking": ["z", "c"]}]


def _models():
    text = "".join(json.dumps(row) + "\n" for row in LABELS)
    run = goldkeeper.parse_run("".join(json.dumps(entry) + "\n" for entry in RUN))
    return goldkeeper.parse_judgments(text), run


def test_parsed_json_lines_score_as_the_models_do():
    judgments, run = _models()
    from_models = goldkeeper.score(judgments, run, k=[1, 3])
    for labels, entries in ((LABELS, RUN), (iter(LABELS), iter(RUN)), (LABELS, run), (judgments, RUN)):
        found = goldkeeper.score(labels, entries, k=[1, 3])
        assert found.per_query == from_models.per_query
        assert found.metrics == from_models.metrics
    assert from_models.per_query["q2"]["mrr@3"] == 0.5
    assert from_models.per_query["q1"]["recall@1"] == 0.5


@pytest.mark.parametrize("where", ["judgments", "run"])
@pytest.mark.parametrize("path", ["labels.jsonl", b"labels.jsonl", Path("labels.jsonl")])
def test_a_file_name_is_refused_with_the_reader_to_use(where, path):
    arguments = {"judgments": LABELS, "run": RUN, where: path}
    reader = "read_judgments" if where == "judgments" else "read_run"
    with pytest.raises(TypeError, match=rf"^{where} must be rows, not .*goldkeeper\.{reader}"):
        goldkeeper.score(arguments["judgments"], arguments["run"])


@pytest.mark.parametrize(("row", "message"), [
    ({"query_id": "q1", "doc_uri": "a"}, "judgments:2: relevance: required, must be an integer grade, got nothing"),
    ({"query_id": "q1", "doc_uri": "a", "relevance": "2"}, 'judgments:2: relevance: must be an integer grade, got "2"'),
    ({"query_id": "q1", "doc_uri": "a", "relevance": 1.5}, "judgments:2: relevance: must be an integer grade, not a"),
    ({"query_id": "q1", "doc_uri": "a", "relevance": True}, "judgments:2: relevance: must be an integer grade, not a b"),
    ({"query_id": "", "doc_uri": "a", "relevance": 1}, "judgments:2: query_id: required, must be a non-empty string"),
    ({"query_id": "q1", "doc_uri": "a", "relevance": 1, "stratum": 3}, "judgments:2: stratum: must be a string"),
])
def test_a_malformed_label_is_the_readers_error_naming_its_position_and_field(row, message):
    with pytest.raises(goldkeeper.InputError) as caught:
        goldkeeper.score([LABELS[0], row], RUN)
    assert str(caught.value).startswith(message)


def test_a_row_that_is_neither_a_judgment_nor_a_mapping_is_a_type_error():
    with pytest.raises(TypeError, match="score: judgments row 2 is of type int; a Judgment or a mapping"):
        goldkeeper.score([LABELS[0], 3], RUN)


@pytest.mark.parametrize(("entry", "message"), [
    ({"query_id": "q1"}, "run:2: ranking must be an array"),
    ({"query_id": "q1", "ranking": "a"}, "run:2: ranking must be an array"),
    ({"query_id": "q1", "ranking": ["a", 3]}, r"run:2: ranking\[1\] must be a non-empty string"),
    ({"ranking": ["a"]}, "run:2: missing query_id"),
    ({"query_id": "q1", "ranking": ["a"], "scores": [float("nan")]}, "run:2: scores: must be an array of finite"),
])
def test_a_malformed_run_entry_is_goldkeepers_error_naming_the_field(entry, message):
    """Not pydantic's ValidationError: the message the run reader gives for the same line."""
    with pytest.raises(goldkeeper.InputError, match=message):
        goldkeeper.score(LABELS, [RUN[1], entry])


def test_a_run_row_that_is_neither_an_entry_nor_a_mapping_is_a_type_error():
    with pytest.raises(TypeError, match="score: run row 2 is of type int; a RunEntry or a mapping"):
        goldkeeper.score(LABELS, [RUN[1], 3])


def _report_document():
    from goldkeeper.core.reporting import report_document

    judgments, run = _models()
    return report_document(goldkeeper.score(judgments, run, k=[1]), goldkeeper.validate(judgments),
                           generated_at="2026-11-29T00:00:00Z")


def test_evaluate_gates_takes_the_document_or_the_model():
    document = _report_document()
    model = goldkeeper.Report.model_validate(document)
    for report in (document, model):
        found = goldkeeper.evaluate_gates(report, ["recall@1:0.25", "recall@1:0.3", "recall@1:0"], baseline=report)
        assert [r.status for r in found.results] == ["PASS", "FAIL", "PASS"]
        assert found.status == "FAIL"


@pytest.mark.parametrize(("report", "gates", "error", "message"), [
    ("report.json", ["recall@1:0.5"], TypeError, "report must be a Report or its JSON document .* a file name 'report.json'"),
    (Path("report.json"), ["recall@1:0.5"], TypeError, "a file name"),
    (3, ["recall@1:0.5"], TypeError, "not int"),
    (None, "recall@1:0.5", TypeError, r"gates is a list of gates, not one str: pass \['recall@1:0.5'\]"),
    ({"metrics": 3}, ["recall@1:0.5"], ValidationError, "goldkeeper report"),
])
def test_evaluate_gates_refuses_what_it_cannot_read_in_words(report, gates, error, message):
    with pytest.raises(error, match=message):
        goldkeeper.evaluate_gates(_report_document() if report is None else report, gates)


def test_a_malformed_baseline_document_is_pydantics_error():
    with pytest.raises(ValidationError, match="goldkeeper report"):
        goldkeeper.evaluate_gates(_report_document(), ["recall@1:-0.1"], baseline={"metrics": []})
