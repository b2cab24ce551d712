"""Drift through the CLI and API beyond the fixtures (the rule cases live in
spec/fixtures/goldkeeper-drift-rules): fix, the queue, snapshots, score --corpus."""

from __future__ import annotations

import json

import goldkeeper
from goldkeeper.core.drift import Corpus, LiveChunk, classify
from tests.conftest import FIXTURES, run_cli

DOC = "notion://page/1"
P1 = "Annual plans may be refunded within 30 days of renewal."
P2 = "Monthly plans are non-refundable after the billing date."
P3 = "Enterprise agreements are governed by the master service agreement."


def chunk(text, ordinal, doc=DOC):
    return LiveChunk(goldkeeper.chunk_id(doc, "r2", ordinal, text, "new"), doc, ordinal, text,
                     goldkeeper.text_sha(text))


def label(text, doc=DOC, **extra):
    return {"query_id": "q", "doc_uri": doc, "chunk_id": goldkeeper.chunk_id(doc, "r1", 0, text, "old"),
            "chunk_text": text, "relevance": 1, **extra}


def one(row, chunks):
    return classify([row], Corpus(chunks)).findings[0]


def test_score_with_corpus_reports_drift_and_gates_on_it(tmp_path):
    case = FIXTURES / "drift"
    run = tmp_path / "run.jsonl"
    live = json.loads((case / "corpus.json").read_text())["chunks"][0]["chunk_id"]  # a run over this snapshot
    run.write_text("".join(json.dumps({"query_id": q, "ranking": [live]}) + "\n" for q in ("q1", "q2", "q3", "q4")))
    result = run_cli("score", "--judgments", str(case / "judgments.jsonl"), "--run", str(run),
                     "--corpus", str(case / "corpus.json"), "--gate", "drift:0.5", "--format", "json")
    report = json.loads(result.stdout)
    assert report["judgments"]["drift"]["invalid_ratio"] == 0.75
    assert report["corpus"] == {"fingerprint": "recursive/384/64", "documents": 1, "chunks": 4}
    assert report["verdict"]["gates"][0]["status"] == "FAIL"
    assert "75% of judgments no longer match the live corpus" in report["verdict"]["reasons"]
    assert result.code == 1


def _fix(tmp_path, case, *extra):
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes((FIXTURES / case / "judgments.jsonl").read_bytes())
    result = run_cli("drift", "-j", str(labels), "-c", str(FIXTURES / case / "corpus.json"), "--fix", *extra)
    return labels, result


def test_fix_moves_only_recoverable_labels_and_never_split_or_orphaned(tmp_path):
    labels, result = _fix(tmp_path, "drift")
    assert result.code == 1  # a SPLIT and an ORPHANED label still need a person
    before = [json.loads(line) for line in (FIXTURES / "drift" / "judgments.jsonl").read_text().splitlines()]
    after = [json.loads(line) for line in labels.read_text().splitlines()]
    assert after[1]["chunk_id"] == "c1:4e556228a30930f72ad70a7f040abb44"
    assert after[1]["reanchored_from"]["chunk_id"] == before[1]["chunk_id"]
    assert after[1]["corpus_fingerprint"] == "recursive/384/64"
    assert after[2] == before[2] and after[3] == before[3]  # SPLIT and ORPHANED untouched


def test_fixing_a_fixed_file_changes_nothing(tmp_path):
    labels, _ = _fix(tmp_path, "merge")
    once = labels.read_bytes()
    again = run_cli("drift", "-j", str(labels), "-c", str(FIXTURES / "merge" / "corpus.json"), "--fix")
    assert again.code == 0
    assert labels.read_bytes() == once


def test_a_merged_label_keeps_the_text_a_person_judged(tmp_path):
    labels, result = _fix(tmp_path, "merge")
    assert result.code == 0
    before = goldkeeper.read_judgments(str(FIXTURES / "merge" / "judgments.jsonl"))
    fixed = goldkeeper.read_judgments(str(labels))
    merged = fixed[0]
    assert merged.chunk_id != before[0].chunk_id  # it points at the coarser chunk now
    assert (merged.chunk_text, merged.text_sha) == (before[0].chunk_text, before[0].text_sha)
    assert merged.extra["reanchored_from"] == {"chunk_id": before[0].chunk_id, "status": "MERGED"}
    assert goldkeeper.validate(fixed).error_codes == []


def _paragraphs(doc, texts, chunker, revision):
    return [chunk_row(doc, revision, ordinal, text, chunker) for ordinal, text in enumerate(texts)]


def chunk_row(doc, revision, ordinal, text, chunker):
    return {"chunk_id": goldkeeper.chunk_id(doc, revision, ordinal, text, chunker), "doc_uri": doc,
            "doc_revision": revision, "ordinal": ordinal, "text": text}


def test_paragraphs_merged_then_paragraphs_again_re_anchors_every_label(tmp_path):
    """The round trip the judged text makes possible: labels on paragraphs, re-chunked into
    pairs (MERGED, fixed), then back into paragraphs by another chunker (RE_ANCHORABLE, fixed):
    every label ends on the chunk holding exactly the paragraph a person judged."""
    paragraphs = [P1, P2, P3, "Refunds for monthly plans stop after the billing date."]
    first = _paragraphs(DOC, paragraphs, "para/v1", "r1")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"query_id": f"q{i}", "doc_uri": DOC, "chunk_id": row["chunk_id"],
                                          "chunk_text": row["text"], "relevance": 1}) + "\n"
                              for i, row in enumerate(first)))
    pairs = [paragraphs[0] + "\n\n" + paragraphs[1], paragraphs[2] + "\n\n" + paragraphs[3]]
    chunkers = {"pairs": "pairs/v1", "paragraphs": "para/v2"}
    stages = {"pairs": _paragraphs(DOC, pairs, "pairs/v1", "r2"), "paragraphs": _paragraphs(DOC, paragraphs, "para/v2", "r2")}
    statuses = {}
    for name, chunks in stages.items():
        corpus = tmp_path / f"{name}.jsonl"
        corpus.write_text("".join(json.dumps(row) + "\n" for row in chunks))
        snapshot = tmp_path / f"{name}.json"
        made = run_cli("snapshot", str(corpus), "--chunker", chunkers[name], "--out", str(snapshot))
        assert made.code == 0, made.stderr
        result = run_cli("drift", "-j", str(labels), "-c", str(snapshot), "--fix", "--format", "json")
        assert result.code == 0, result.stderr
        statuses[name] = json.loads(result.stdout)["summary"]
    assert statuses["pairs"]["merged"] == 4
    assert statuses["paragraphs"]["re_anchorable"] == 4
    fixed = goldkeeper.read_judgments(str(labels))
    assert [row.chunk_id for row in fixed] == [row["chunk_id"] for row in stages["paragraphs"]]
    assert [row.chunk_text for row in fixed] == paragraphs


def test_fix_with_out_leaves_the_input_alone(tmp_path):
    source = tmp_path / "labels.jsonl"
    source.write_bytes((FIXTURES / "merge" / "judgments.jsonl").read_bytes())
    out = tmp_path / "fixed.jsonl"
    run_cli("drift", "-j", str(source), "-c", str(FIXTURES / "merge" / "corpus.json"), "--fix", "--out", str(out))
    assert source.read_bytes() == (FIXTURES / "merge" / "judgments.jsonl").read_bytes()
    assert "reanchored_from" in out.read_text()


def test_the_queue_holds_split_and_orphaned_labels_with_candidates(tmp_path):
    from goldkeeper.core.drift import rejudgment_queue

    chunks = [chunk(P1, 0), chunk(P3, 1), chunk("Refunds for monthly plans stop after the billing date.", 2)]
    rows = [label(P1 + "\n\n" + P3), label(P2), label(P1)]  # SPLIT, ORPHANED, RE_ANCHORABLE
    result = classify(rows, Corpus(chunks))
    queue = rejudgment_queue(rows, result, Corpus(chunks))
    assert [item["status"] for item in queue] == ["SPLIT", "ORPHANED"]
    assert [c["chunk_id"] for c in queue[0]["candidates"]] == [chunks[0].chunk_id, chunks[1].chunk_id]
    assert queue[1]["candidates"][0]["chunk_id"] == chunks[2].chunk_id  # most words shared
    assert all(0 < c["coverage"] <= 1 for c in queue[1]["candidates"])
    assert all(item["action"] == "rejudge" and item["item_id"].startswith("rq1:") for item in queue)
    assert queue == rejudgment_queue(rows, result, Corpus(chunks[::-1]))  # stable ids, no file order


def test_a_merged_label_is_queued_for_review_with_its_new_chunk():
    from goldkeeper.core.drift import rejudgment_queue

    big = chunk(P1 + " " + P2, 0)
    rows = [label(P1)]
    result = classify(rows, Corpus([big]))
    (item,) = rejudgment_queue(rows, result, Corpus([big]))
    assert (item["status"], item["action"], item["reanchor_to"]) == ("MERGED", "review", big.chunk_id)
    assert [c["chunk_id"] for c in item["candidates"]] == [big.chunk_id]
    assert item["candidates"][0]["coverage"] == 1.0


def test_snapshot_computes_the_spec_ids(tmp_path):
    rows = tmp_path / "chunks.jsonl"
    rows.write_text("".join(json.dumps({"doc_uri": DOC, "doc_revision": "r2", "ordinal": i, "text": t}) + "\n"
                            for i, t in enumerate([P1, P2])))
    out = tmp_path / "corpus.json"
    result = run_cli("snapshot", str(rows), "--chunker", "new", "--out", str(out))
    assert result.code == 0, result.stderr
    built = json.loads(out.read_text())
    assert [c["chunk_id"] for c in built["chunks"]] == [chunk(P1, 0).chunk_id, chunk(P2, 1).chunk_id]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"doc_uri": DOC, "ordinal": -1, "text": "x"}) + "\n")
    refused = run_cli("snapshot", str(bad), "--chunker", "new", "--out", str(tmp_path / "x.json"))
    assert refused.code == 2 and "bad.jsonl:1: ordinal: " in refused.stderr
    assert not (tmp_path / "x.json").exists()


def test_the_public_drift_api_reads_fixes_and_queues(tmp_path):
    from goldkeeper.io.snapshots import write_sharded_snapshot

    labels = goldkeeper.parse_judgments((FIXTURES / "merge" / "judgments.jsonl").read_bytes())
    whole = goldkeeper.read_corpus(str(FIXTURES / "merge" / "corpus.json"))
    rows = [{k: c.__getattribute__(k) for k in ("doc_uri", "ordinal", "text")} for c in whole.chunks]
    write_sharded_snapshot(str(tmp_path), rows, whole.chunker_fingerprint or "fp")
    for corpus in (whole, goldkeeper.read_corpus(str(tmp_path))):
        result = goldkeeper.classify_drift(labels, corpus)
        assert result.summary["merged"] == 2
        fixed, moved = goldkeeper.fix_drift([j.canonical_dict() for j in labels], result)
        assert moved == 3 and all(isinstance(j, goldkeeper.Judgment) for j in fixed)
        assert goldkeeper.classify_drift(fixed, corpus).summary["valid"] == len(labels)
        assert [i["status"] for i in goldkeeper.rejudgment_queue(labels, result, corpus)] == ["MERGED", "MERGED"]


def test_chunks_are_ordered_as_order_says_with_or_without_ordinals():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from goldkeeper.core.drift.rebuild import _in_order
    from goldkeeper.io.snapshots import LiveChunkStruct

    chunks = st.builds(lambda kind, cid, ordinal: kind(cid, "d", ordinal, "t"), st.sampled_from([LiveChunk, LiveChunkStruct]),
                       st.sampled_from(["c1:a", "c1:b", "c1:c"]), st.none() | st.integers(0, 3))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(chunks, max_size=8))
    def check(items):
        assert _in_order(items) == sorted(items, key=LiveChunk.order)

    check()


def test_a_page_that_moved_is_said_in_words_fixed_across_documents_and_never_guessed(tmp_path):
    """The drift-rules case's moved pages through the CLI: the text output names each page
    that moved, --fix moves the MERGED label into its new document (the old one kept in
    reanchored_from), and the text found in two other pages is queued with both."""
    case = FIXTURES / "goldkeeper-drift-rules"
    shown = run_cli("drift", "-j", str(case / "judgments.jsonl"), "-c", str(case / "corpus.json"))
    assert shown.code == 1
    assert ("page case://moved-merged-old became case://moved-merged-new (1); 1 of its 1 label(s) followed their text"
            in shown.stdout)
    labels, queue = tmp_path / "labels.jsonl", tmp_path / "queue.jsonl"
    labels.write_bytes((case / "judgments.jsonl").read_bytes())
    fixed = run_cli("drift", "-j", str(labels), "-c", str(case / "corpus.json"), "--fix", "--queue", str(queue))
    assert fixed.code == 1, fixed.stderr
    moved = {row["query_id"]: row for row in map(json.loads, labels.read_text().splitlines())}["moved-merged"]
    assert moved["doc_uri"] == "case://moved-merged-new"
    assert moved["reanchored_from"]["doc_uri"] == "case://moved-merged-old"
    again = run_cli("drift", "-j", str(labels), "-c", str(case / "corpus.json"), "--format", "json")
    assert {f["query_id"]: f["status"] for f in json.loads(again.stdout)["findings"]}["moved-merged"] == "VALID"
    items = {item["query_id"]: item for item in map(json.loads, queue.read_text().splitlines())}
    ambiguous = items["moved-ambiguous"]
    assert ambiguous["found_in"] == ["case://moved-ambiguous-x", "case://moved-ambiguous-y"]
    assert [c["doc_uri"] for c in ambiguous["candidates"]] == ambiguous["found_in"]
    assert all(c["coverage"] == 1.0 for c in ambiguous["candidates"])  # each holds the whole judged text
    split = items["moved-split"]
    assert {c["doc_uri"] for c in split["candidates"]} == {"case://moved-split-new"}
    from goldkeeper.models.corpus import QueueItem

    assert all(QueueItem.model_validate(item) for item in items.values())
