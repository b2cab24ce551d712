"""The re-judgment form as Prefect gets it (no server): its JSON Schema and what its answers
mean. What a person sees of it is tested in a browser (test_ui_in_a_browser.py)."""

from __future__ import annotations

import json

import pytest

from goldkeeper.core.rejudge import Waiting, grade_answers
from goldkeeper.dashboard import batch_markdown
from goldkeeper.flows.rejudge import answer_form, given_answers, grades_of, quotes_of

SPLIT = {"item_id": "rq1:a", "action": "rejudge", "status": "SPLIT", "query_id": "q3", "query": "enterprise (refund) terms",
         "doc_uri": "notion://page/9f2a", "relevance": 2, "labeled_by": "human:ana",
         "chunk_text": "Enterprise agreements are governed by the MSA. Refunds are negotiated per contract.",
         "candidates": [{"chunk_id": "c1:1", "doc_uri": "notion://page/9f2a", "ordinal": 2,
                         "text": "Enterprise agreements are governed by the MSA.", "coverage": 0.5},
                        {"chunk_id": "c1:2", "doc_uri": "notion://page/9f2a", "ordinal": 3,
                         "text": "Refunds are negotiated per contract.", "coverage": 0.5}]}
ORPHAN = {"item_id": "rq1:b", "action": "rejudge", "status": "ORPHANED", "query_id": "q4", "query": "removed policy",
          "doc_uri": "notion://page/deleted", "relevance": 1, "text_sha": "t1:4b6f2850b5f76aaaa", "candidates": []}
ITEMS = [SPLIT, ORPHAN]


def _schema(form) -> dict:
    return form.model_json_schema()


def test_every_field_is_a_switch_but_the_name_and_no_field_is_a_select():
    schema = _schema(answer_form(ITEMS, 2, "header"))
    properties = schema["properties"]
    assert list(properties) == ["reviewer", "item_1_1_1", "item_1_1_2", "item_1_2_1", "item_1_2_2", "item_1_quote",
                                "item_1_none", "item_2_none", "stop"]
    assert {name: p["type"] for name, p in properties.items() if p["type"] != "boolean"} == {
        "reviewer": "string", "item_1_quote": "string"}  # an item without candidates has nothing to quote
    assert properties["item_1_quote"]["title"] == "1: the words that answer it, copied from the piece graded"
    assert "item_1_quote" not in _schema(answer_form(ITEMS, 2, "h", audit=True))["properties"]
    assert "enum" not in json.dumps(schema) and "pattern" not in json.dumps(schema)
    assert properties["item_1_2_2"]["title"] == "1.2 fully answers the query (2 of 2)"
    assert properties["item_1_1_1"]["title"] == "1.1 answers it in part (1 of 2)"
    assert _schema(answer_form(ITEMS, 1, "h"))["properties"]["item_1_1_1"]["title"] == "1.1 answers the query"


def test_each_text_is_in_the_description_of_the_field_that_answers_it():
    properties = _schema(answer_form(ITEMS, 2, "the batch's header"))["properties"]
    assert properties["reviewer"]["description"] == "the batch's header"
    first = properties["item_1_1_1"]["description"]
    assert first.startswith("#### Item 1 of 2: enterprise \\(refund\\) terms")  # the query, escaped markdown
    assert "**SPLIT**" in first and "> Enterprise agreements are governed by the MSA. Refunds" in first
    assert "**Candidate 1.1** (chunk 2 of `notion://page/9f2a`, holds 50% of the judged words)" in first
    assert "**Candidate 1.2**" in properties["item_1_2_1"]["description"]
    assert "Item 1" not in properties["item_1_2_1"]["description"]  # the item is said once, above its first candidate
    assert "description" not in properties["item_1_1_2"]  # the text stands above the candidate's first grade
    orphan = properties["item_2_none"]
    assert orphan["title"] == "2: no live chunk carries it; remove the label"
    assert "Item 2 of 2: removed policy" in orphan["description"] and "only its hash" in orphan["description"]
    assert "\n\n\n" in first and "\n\n>" not in first.replace("\n\n\n", "")  # blocks kept apart for Prefect's renderer


def test_answers_given_are_filled_in_when_the_form_is_asked_again():
    form = answer_form(ITEMS, 2, "h")
    answers = form(reviewer="bo", item_1_1_2=True, item_2_none=True)
    again = _schema(answer_form(ITEMS, 2, "h", given_answers(answers)))["properties"]
    assert again["reviewer"]["default"] == "bo"
    assert [name for name, p in again.items() if p.get("default") is True] == ["item_1_1_2", "item_2_none"]
    assert again["item_1_1_2"]["title"] == "1.1 fully answers the query (2 of 2)"  # titles kept (with_initial_data drops them)


@pytest.mark.parametrize(("switched", "grades", "removed", "problems"), [
    ({}, [[None, None], []], [False, False], []),
    ({"item_1_1_2": True, "item_1_2_1": True}, [[2, 1], []], [False, False], []),
    ({"item_1_none": True, "item_2_none": True}, [[0, 0], []], [True, True], []),
    ({"item_1_1_1": True, "item_1_1_2": True}, [[2, None], []], [False, False],
     ["1.1: 2 grades are switched on (1, 2); keep the one it deserves"]),
    ({"item_1_none": True, "item_1_2_2": True}, [[0, 2], []], [True, False],
     ["1.2: it is graded 2, and item 1 says none of its candidates answers it; switch one of them off"]),
], ids=["untouched", "graded", "none", "two-grades", "none-and-a-grade"])
def test_switches_become_grades_and_contradictions_are_said(switched, grades, removed, problems):
    answers = answer_form(ITEMS, 2, "h")(reviewer="bo", **switched)
    assert grades_of(answers, ITEMS, 2) == (grades, removed, problems)


def test_the_batch_header_names_the_batch_the_kinds_and_what_was_wrong():
    header = batch_markdown("Refunds", 5, Waiting(5, 2), 2, ["your name is empty"])
    assert header.startswith("**Not saved: change what is said here, then submit again.**\n\n\n- your name is empty")
    assert "#### Re-judge 5 of the 7 waiting in Refunds (5 to re-judge, 2 to confirm)" in header
    assert "Not saved" not in batch_markdown("Refunds", 5, Waiting(5, 2), 2)


def test_in_an_audit_none_grades_the_candidates_0_and_removes_nothing():
    from goldkeeper.flows.rejudge import answer_form

    title = _schema(answer_form(ITEMS, 1, "header", audit=True))["properties"]["item_1_none"]["title"]
    assert title == "1: none of these candidates answers it (grade them all 0)"


PLACED = {**SPLIT, "candidates": [{**c, "start_index": 120 + 47 * n} for n, c in enumerate(SPLIT["candidates"])]}


@pytest.mark.parametrize(("quote", "grades", "problems"), [
    ("", {"item_1_1_2": True}, []),
    ("governed by\nthe  MSA", {"item_1_1_2": True}, []),  # copied from the page: its line breaks as spaces
    ("per contract", {"item_1_1_2": True}, ["1: the quote you gave is in none of the candidates you graded above 0"]),
    ("per contract", {"item_1_none": True}, ["1: the quote you gave is in none of the candidates you graded above 0"]),
])
def test_a_quote_goes_with_the_graded_candidate_that_holds_it(quote, grades, problems):
    answers = answer_form([PLACED], 2, "h")(reviewer="bo", item_1_quote=quote, **grades)
    given, removed, contradictions = grades_of(answers, [PLACED], 2)
    quotes, said = quotes_of(answers, [PLACED], given)
    assert not contradictions and [p[:len(w)] for p, w in zip(said, problems)] == problems and len(said) == len(problems)
    if not said:
        rows, _ = grade_answers([PLACED], given, removed, "human:bo", "2026-12-06T00:00:00Z", quotes)
        assert [row.get("quote") for row in rows] == ([" ".join(quote.split())] if quote and grades.get("item_1_1_2")
                                                      else [None])


def test_a_quote_in_a_candidate_without_offsets_or_twice_in_it_is_said():
    answers = answer_form(ITEMS, 2, "h")(reviewer="bo", item_1_1_1=True, item_1_quote="the MSA")
    assert quotes_of(answers, ITEMS, grades_of(answers, ITEMS, 2)[0])[1] == [
        "1.1: the quote you gave cannot be placed: the answered chunk's snapshot has no offsets (start_index) into "
        "its document"]
    twice = {**PLACED, "candidates": [{**PLACED["candidates"][0], "text": "the MSA and the MSA"}]}
    answers = answer_form([twice], 2, "h")(reviewer="bo", item_1_1_1=True, item_1_quote="the MSA")
    assert quotes_of(answers, [twice], grades_of(answers, [twice], 2)[0])[1] == [
        "1.1: the quote you gave is found 2 times in the answered chunk's text; quote enough of it to say which"]
