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
    reader = "read_judgments" if where == "judgments" else "parse_run"
    with pytest.raises(TypeError, match=rf"score: {where} must be rows, not .*goldkeeper\.{reader}"):
        goldkeeper.score(arguments["judgments"], arguments["run"])


@pytest.mark.parametrize(("labels", "run", "field"), [
    ([{"query_id": "q1", "doc_uri": "a"}], RUN, "relevance"),
    (LABELS, [{"query_id": "q1"}], "ranking"),
    (LABELS, [{"query_id": "q1", "ranking": "a"}], "ranking"),
    ([3], RUN, "valid dictionary"),
])
def test_a_malformed_row_is_pydantics_error_naming_the_field(labels, run, field):
    with pytest.raises(ValidationError, match=field):
        goldkeeper.score(labels, run)
