"""drift --queue, then people's answers merged back with `goldkeeper queue apply`."""

from __future__ import annotations

import json

import pytest

import goldkeeper
from tests.conftest import run_cli

DOC = "kb://refunds"
P1 = "Annual plans may be refunded within 30 days of renewal."
P2 = "Monthly plans are non-refundable after the billing date."
P3 = "Enterprise agreements are governed by the master service agreement."
GONE = "Refunds for legacy plans are handled by support."


def _chunk(text, ordinal, fingerprint):
    return {"chunk_id": goldkeeper.chunk_id(DOC, fingerprint, ordinal, text, fingerprint), "doc_uri": DOC,
            "ordinal": ordinal, "text": text, "text_sha": goldkeeper.text_sha(text)}


@pytest.fixture
def suite(tmp_path):
    old = [_chunk(P1 + " " + P2, 0, "old"), _chunk(P3, 1, "old"), _chunk(GONE, 2, "old")]
    new = [_chunk(P1, 0, "new"), _chunk(P2 + " " + P3, 1, "new"), _chunk("Support handles refunds for legacy plans now.", 2, "new")]
    labels = [{"query_id": f"q{i}", "query": "refund window", "doc_uri": c["doc_uri"], "chunk_id": c["chunk_id"],
               "chunk_text": c["text"], "relevance": 2, "labeled_by": "human:ana",
               "labeled_at": "2026-01-02T03:04:05Z"} for i, c in enumerate(old)]
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps(label) + "\n" for label in labels))
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"corpus_fingerprint": "new", "chunker_fingerprint": "new", "chunks": new}))
    queue = tmp_path / "queue.jsonl"
    result = run_cli("drift", "-j", str(judgments), "-c", str(corpus), "--fix", "--queue", str(queue))
    assert result.code == 1, result.stderr  # two labels still need a person
    items = [json.loads(line) for line in queue.read_text().splitlines()]
    return tmp_path, judgments, corpus, queue, items, new


def _placed(suite):
    """The suite's corpus with each chunk's offsets into its document (P1 P2 P3 and a fourth)."""
    corpus = suite[2]
    snapshot = json.loads(corpus.read_text())
    at = 0
    for chunk in snapshot["chunks"]:
        chunk["start_index"] = at
        at += len(chunk["text"]) + 1
    corpus.write_text(json.dumps(snapshot))
    return snapshot["chunks"]


def _answers(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_the_queue_has_a_split_an_orphan_and_a_merge_for_review(suite):
    _, _, _, _, items, new = suite
    assert [(i["status"], i["action"]) for i in items] == [("SPLIT", "rejudge"), ("MERGED", "review"),
                                                          ("ORPHANED", "rejudge")]
    assert [c["chunk_id"] for c in items[0]["candidates"]] == [new[0]["chunk_id"], new[1]["chunk_id"]]
    assert items[2]["candidates"][0]["chunk_id"] == new[2]["chunk_id"]
    assert len({i["item_id"] for i in items}) == 3


def test_answers_replace_labels_in_place_and_applying_twice_changes_nothing(suite):
    tmp_path, judgments, corpus, queue, items, new = suite
    split, _merged, orphan = items
    answers = _answers(tmp_path / "answers.jsonl", [
        {"item_id": split["item_id"], "chunk_id": new[0]["chunk_id"], "relevance": 2,
         "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"},
        {"item_id": split["item_id"], "chunk_id": new[1]["chunk_id"], "relevance": 1,
         "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"},
        {"item_id": orphan["item_id"], "chunk_id": "none", "relevance": 0,
         "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:01:00Z"},
    ])
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(answers), "-c", str(corpus))
    assert result.code == 0, result.stderr
    assert "1 label(s) re-judged, 1 removed" in result.stdout
    assert "; now 1 waits for a person (1 to confirm);" in result.stdout  # the MERGED one, as the flows count it
    rows = [json.loads(line) for line in judgments.read_text().splitlines()]
    assert [(r["chunk_id"], r["relevance"], r["labeled_by"]) for r in rows] == [
        (new[0]["chunk_id"], 2, "human:bo"), (new[1]["chunk_id"], 1, "human:bo"),
        (new[1]["chunk_id"], 2, "human:ana")]  # the MERGED label, already moved by --fix, unanswered
    assert rows[0]["rejudged_from"]["item_id"] == split["item_id"]
    assert rows[0]["chunk_text"] == P1 and rows[0]["corpus_fingerprint"] == "new"
    assert goldkeeper.validate(goldkeeper.parse_judgments(judgments.read_bytes())).ok
    before = judgments.read_bytes()
    again = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(answers), "-c", str(corpus))
    assert again.code == 0 and judgments.read_bytes() == before
    assert "2 answer(s) already applied" in again.stdout


def test_a_merged_label_moved_by_fix_can_be_reviewed(suite):
    tmp_path, judgments, corpus, queue, items, _new = suite
    merged = items[1]
    answers = _answers(tmp_path / "answers.jsonl", [
        {"item_id": merged["item_id"], "chunk_id": merged["reanchor_to"], "relevance": 1,
         "labeled_by": "human:cy", "labeled_at": "2026-11-29T10:00:00+01:00"}])
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(answers), "-c", str(corpus),
                     "-o", str(tmp_path / "out.jsonl"))
    assert result.code == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    reviewed = [r for r in rows if r.get("labeled_by") == "human:cy"]
    assert len(reviewed) == 1 and reviewed[0]["relevance"] == 1 and "reanchored_from" not in reviewed[0]


@pytest.mark.parametrize(("answer", "field", "words"), [
    ({"item_id": "rq1:nope"}, "item_id", "must name an item of the queue"),
    ({"chunk_id": "c1:00000000000000000000000000000000"}, "chunk_id", "not a live chunk"),
    ({"relevance": True}, "relevance", "integer from 0 to 1023"),
    ({"relevance": 1024}, "relevance", "integer from 0 to 1023"),
    ({"labeled_by": "robot:gpt"}, "labeled_by", "human:<name> or synthetic:<model>"),
    ({"labeled_at": "yesterday"}, "labeled_at", "ISO 8601"),
    ({"quote": "Monthly plans"}, "quote", "cannot be placed: the answered chunk's snapshot has no offsets"),
    ({"quote": "  "}, "quote", "must be the words of the answered chunk"),
])
def test_bad_answers_are_refused_with_their_line_and_nothing_is_written(suite, answer, field, words):
    tmp_path, judgments, corpus, queue, items, new = suite
    good = {"item_id": items[0]["item_id"], "chunk_id": new[0]["chunk_id"], "relevance": 1,
            "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"}
    answers = _answers(tmp_path / "answers.jsonl", [good, {**good, "chunk_id": new[1]["chunk_id"], **answer}])
    before = judgments.read_bytes()
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(answers), "-c", str(corpus))
    assert result.code == 2
    assert result.stderr.startswith(f"error: {answers}:2: {field}: ") and words in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert judgments.read_bytes() == before


def test_an_answer_that_would_duplicate_a_label_is_refused(suite):
    tmp_path, judgments, corpus, queue, items, new = suite
    other = tmp_path / "other.jsonl"  # q1's MERGED label already sits on new[1]; q0 also lands there
    rows = [json.loads(line) for line in judgments.read_text().splitlines()]
    rows[1]["query_id"] = "q0"
    other.write_text("".join(json.dumps(r) + "\n" for r in rows))
    answers = _answers(tmp_path / "answers.jsonl", [
        {"item_id": items[0]["item_id"], "chunk_id": new[1]["chunk_id"], "relevance": 1,
         "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"}])
    result = run_cli("queue", "apply", "-j", str(other), "-q", str(queue), "-a", str(answers), "-c", str(corpus))
    assert result.code == 2 and f"{answers}:1: chunk_id: query q0 already has another label" in result.stderr


def test_none_must_stand_alone(suite):
    tmp_path, judgments, corpus, queue, items, new = suite
    base = {"item_id": items[0]["item_id"], "relevance": 0, "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"}
    answers = _answers(tmp_path / "answers.jsonl", [{**base, "chunk_id": new[0]["chunk_id"]}, {**base, "chunk_id": "none"}])
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(answers), "-c", str(corpus))
    assert result.code == 2 and '"none" must be the only answer' in result.stderr


def test_queue_items_and_answers_fit_their_schemas(suite):
    import jsonschema

    from tests.unit.test_schemas import SCHEMAS

    _, _, _, _, items, new = suite
    item_schema = json.loads((SCHEMAS / "queue-item.schema.json").read_text())
    for item in items:
        jsonschema.validate(item, item_schema)
    answer = {"item_id": items[0]["item_id"], "chunk_id": new[0]["chunk_id"], "relevance": 1,
              "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"}
    jsonschema.validate(answer, json.loads((SCHEMAS / "queue-answer.schema.json").read_text()))
    jsonschema.validate({**answer, "labeled_by": "synthetic:x"},  # a judge's answer
                        json.loads((SCHEMAS / "queue-answer.schema.json").read_text()))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**answer, "labeled_by": "robot:x"},
                            json.loads((SCHEMAS / "queue-answer.schema.json").read_text()))


@pytest.mark.parametrize(("field", "value"), [
    ("item_id", ""), ("item_id", 7), ("chunk_id", ""), ("chunk_id", None), ("relevance", -1), ("relevance", 1024),
    ("relevance", True), ("relevance", 1.0), ("labeled_by", "robot:gpt"), ("labeled_by", "human:"),
    ("labeled_by", "synthetic:"),
    ("labeled_by", None), ("labeled_at", None),
])
def test_the_answer_schema_and_the_answer_check_are_one_definition(field, value):
    """records.QUEUE_ANSWER makes both the schema model and core's check: a value one refuses,
    the other refuses too, and a good answer passes both."""
    from pydantic import ValidationError

    from goldkeeper.core.rejudge import check_answers
    from goldkeeper.errors import InputError
    from goldkeeper.models.corpus import QueueAnswer

    good = {"item_id": "rq1:" + "0" * 24, "chunk_id": "none", "relevance": 1, "labeled_by": "human:bo",
            "labeled_at": "2026-11-29T10:00:00Z"}
    queue = {good["item_id"]: {}}
    QueueAnswer.model_validate(good)
    assert check_answers([(1, good)], queue, {}, "answers.jsonl")
    bad = {**good, field: value}
    if field == "labeled_at":
        bad.pop(field)
    with pytest.raises(ValidationError):
        QueueAnswer.model_validate(bad, strict=True)
    with pytest.raises(InputError) as refused:
        check_answers([(1, bad)], queue, {}, "answers.jsonl")
    assert f":1: {field}: " in str(refused.value)


def test_a_queue_line_that_is_no_queue_item_is_refused_with_its_line_and_field(tmp_path):
    from goldkeeper.errors import InputError
    from goldkeeper.io.storage import read_queue

    queue = tmp_path / "queue.jsonl"
    item = {"item_id": "rq1:" + "0" * 24, "action": "rejudge", "status": "SPLIT", "query_id": "q1", "doc_uri": "d",
            "relevance": 1, "candidates": []}
    queue.write_text(json.dumps(item) + "\n" + json.dumps({**item, "action": "delete"}) + "\n")
    with pytest.raises(InputError) as refused:
        read_queue(str(queue))
    assert str(refused.value).startswith(f"{queue}:2: action: ") and "delete" in str(refused.value)
    queue.write_text(json.dumps(item) + "\n")
    assert read_queue(str(queue)) == [item]


def test_the_judges_answers_apply_as_synthetic_labels_with_their_prompt(suite):
    """The loop's first turn on the command line: goldkeeper judge answers the queue against
    the stub endpoint, and queue apply merges its answers as synthetic labels that name the
    prompt they answered."""
    from goldkeeper.core.judge import DEFAULT_PROMPT, prompt_sha
    from goldkeeper.examples.stub_judge import StubJudge

    tmp_path, judgments, corpus, queue, items, _ = suite
    stub = StubJudge()
    url = stub.start()
    try:
        judged = run_cli("judge", str(queue), "--base-url", url, "--model", "stub-judge", "--max-grade", "2",
                         "--out", str(tmp_path / "judge.jsonl"), "--now", "2026-12-04T00:00:00Z", cwd=tmp_path)
    finally:
        stub.stop()
    assert judged.code == 0, judged.stderr
    answers = [json.loads(line) for line in (tmp_path / "judge.jsonl").read_text().splitlines()]
    graded_items = {a["item_id"] for a in answers}
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(tmp_path / "judge.jsonl"),
                     "-c", str(corpus), "-o", str(tmp_path / "out.jsonl"))
    assert result.code == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    synthetic = [r for r in rows if r.get("labeled_by") == "synthetic:stub-judge"]
    assert synthetic and {r["prompt_sha"] for r in synthetic} == {prompt_sha(DEFAULT_PROMPT)}
    assert {r["rejudged_from"]["item_id"] for r in synthetic} <= graded_items
    assert graded_items == {i["item_id"] for i in items}  # the stub graded every candidate of every item
    assert result.stdout.startswith("3 label(s) re-judged, 0 removed") and "now nothing waits for a person" in result.stdout


def test_a_quote_narrows_the_label_to_a_span_placed_by_the_chunks_offsets(suite):
    """A person marks the sentence that answers (copied with its line break as a space): the
    label names that passage of the document, and a span label answered without one keeps its
    span only while the answered chunk holds it."""
    tmp_path, judgments, corpus, queue, items, new = suite
    placed = _placed(suite)
    split = items[0]
    answers = _answers(tmp_path / "answers.jsonl", [
        {"item_id": split["item_id"], "chunk_id": new[1]["chunk_id"], "relevance": 2, "quote": "non-refundable  after the",
         "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"}])
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(answers), "-c", str(corpus))
    assert result.code == 0, result.stderr
    row = json.loads(judgments.read_text().splitlines()[0])
    begin = placed[1]["start_index"] + placed[1]["text"].index("non-refundable after the")
    assert row["span"] == {"start": begin, "end": begin + 24, "exact": "non-refundable after the",
                           "prefix": "Monthly plans are ", "suffix": " billing date. Enterprise agreem"}
    assert "span" not in row["rejudged_from"]
    assert goldkeeper.validate(goldkeeper.parse_judgments(judgments.read_bytes())).ok


@pytest.mark.parametrize(("quote", "chunk", "words"), [
    ("Monthly plans", "none", 'cannot be given with "none"'),
    ("Annual plans", 1, "is not found in the answered chunk's text"),
])
def test_a_quote_that_places_no_span_is_refused(suite, quote, chunk, words):
    tmp_path, judgments, corpus, queue, items, new = suite
    _placed(suite)
    answers = _answers(tmp_path / "answers.jsonl", [
        {"item_id": items[0]["item_id"], "chunk_id": chunk if chunk == "none" else new[chunk]["chunk_id"], "relevance": 1,
         "quote": quote, "labeled_by": "human:bo", "labeled_at": "2026-11-29T10:00:00Z"}])
    before = judgments.read_bytes()
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(answers), "-c", str(corpus))
    assert result.code == 2 and result.stderr.startswith(f"error: {answers}:1: quote: ") and words in result.stderr
    assert judgments.read_bytes() == before


def test_a_span_label_answered_keeps_its_span_only_where_the_chunk_holds_it():
    from goldkeeper.core.drift import LiveChunk
    from goldkeeper.core.rejudge import apply_answers, check_answers

    text = "Refunds within 30 days. Monthly plans are final."
    live = {"c1:" + "a" * 32: LiveChunk("c1:" + "a" * 32, DOC, 0, text, goldkeeper.text_sha(text), 100)}
    held = {"start": 124, "end": 137, "exact": "Monthly plans"}
    for span, kept in ((held, True), ({"start": 10, "end": 23, "exact": "Monthly plans"}, False)):
        label = {"query_id": "q1", "doc_uri": DOC, "chunk_id": "c1:" + "b" * 32, "relevance": 1, "span": span}
        item = {"item_id": _item_id(label), "status": "SPLIT"}
        answer = {"item_id": item["item_id"], "chunk_id": "c1:" + "a" * 32, "relevance": 2, "labeled_by": "human:bo",
                  "labeled_at": "2026-11-29T10:00:00Z"}
        queue = {item["item_id"]: item}
        out = apply_answers([label], check_answers([(1, answer)], queue, live, "a"), queue, live, None).judgments[0]
        assert ("span" in out) is kept and out["rejudged_from"]["span"] == span


def _item_id(label):
    from goldkeeper.core.drift import queue_item_id

    return queue_item_id(label)


def test_the_judge_proposes_spans_that_queue_apply_places_marked_as_proposed(suite):
    """goldkeeper judge --spans: the stub quotes the sentence that answers; each answer whose
    quote is found once in its passage carries it, and queue apply makes it the label's span at
    the document's offsets, proposed_by the judge. A quote the passage does not hold is left
    out (the grade stands, the label has no span), and is counted."""
    from goldkeeper.core.judge import SPAN_PROMPT, prompt_sha
    from goldkeeper.examples.stub_judge import StubJudge

    tmp_path, judgments, corpus = suite[:3]
    placed = _placed(suite)
    document = " ".join(chunk["text"] for chunk in placed)
    queue = tmp_path / "placed-queue.jsonl"
    assert run_cli("drift", "-j", str(judgments), "-c", str(corpus), "--queue", str(queue)).code == 1
    assert all("start_index" in c for line in queue.read_text().splitlines() for c in json.loads(line)["candidates"])
    texts = [(item["query"], c["text"]) for line in queue.read_text().splitlines()
             for item in [json.loads(line)] for c in item["candidates"]]
    truth = {pair: n % 3 for n, pair in enumerate(texts)}  # grade 0 for some: those quote nothing
    for failures, out in (({}, "judge.jsonl"), ({"misquote": 1.0}, "misquoted.jsonl")):
        stub = StubJudge(truth, failures=failures)
        url = stub.start()
        try:
            judged = run_cli("judge", str(queue), "--base-url", url, "--model", "stub-judge", "--max-grade", "2",
                             "--spans", "--out", str(tmp_path / out), "--now", "2026-12-04T00:00:00Z", "--format", "json",
                             cwd=tmp_path)
        finally:
            stub.stop()
        assert judged.code == 0, judged.stderr
        summary = json.loads(judged.stdout)
        answers = [json.loads(line) for line in (tmp_path / out).read_text().splitlines()]
        graded_above_0 = sum(1 for a in answers if a["relevance"])
        assert graded_above_0 and {a["prompt_sha"] for a in answers} == {prompt_sha(SPAN_PROMPT)}
        if failures:
            assert summary["quotes"] == 0 and summary["quotes_unplaced"] == graded_above_0
            assert not any("quote" in a for a in answers)
        else:
            assert summary["quotes"] == graded_above_0 and summary["quotes_unplaced"] == 0
            assert all(("quote" in a) == bool(a["relevance"]) for a in answers)
    before = judgments.read_bytes()
    result = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(tmp_path / "judge.jsonl"),
                     "-c", str(corpus), "-o", str(tmp_path / "out.jsonl"))
    assert result.code == 0, result.stderr
    assert judgments.read_bytes() == before  # -o: the judgments stay as they were
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    spans = [r for r in rows if r.get("labeled_by") == "synthetic:stub-judge" and r["relevance"]]
    assert spans and all(r["span"]["proposed_by"] == "synthetic:stub-judge" for r in spans)
    for row in spans:
        span = row["span"]
        chunk = next(c for c in placed if c["chunk_id"] == row["chunk_id"])
        assert document[span["start"]:span["end"]] == span["exact"]
        assert chunk["start_index"] <= span["start"] < span["end"] <= chunk["start_index"] + len(chunk["text"])
    assert not any("span" in r for r in rows if r.get("labeled_by") == "synthetic:stub-judge" and not r["relevance"])
    assert goldkeeper.validate(goldkeeper.parse_judgments((tmp_path / "out.jsonl").read_bytes())).ok
    unplaced = run_cli("queue", "apply", "-j", str(judgments), "-q", str(queue), "-a", str(tmp_path / "misquoted.jsonl"),
                       "-c", str(corpus), "-o", str(tmp_path / "out2.jsonl"))
    assert unplaced.code == 0, unplaced.stderr
    assert not any("span" in json.loads(line) for line in (tmp_path / "out2.jsonl").read_text().splitlines())
