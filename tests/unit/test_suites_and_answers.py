"""Suites configured once (`goldkeeper suite init|set|show`, suites/<suite>.json) and the
pure pieces of the re-judgment form: pending items, the walk, grades to answers, overlap."""

from __future__ import annotations

import json

import goldkeeper
from goldkeeper.core.rejudge import grade_answers, overlap, pending_items, walked
from tests.conftest import FIXTURES, run_cli


def test_suite_init_seeds_the_judgments_and_show_reads_back_what_set_changed(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "")
    root = f"file://{tmp_path}/store"
    judgments = FIXTURES / "merge" / "judgments.jsonl"
    made = run_cli("suite", "init", "Wiki QA", "-j", str(judgments), "-r", "s3://b/runs/a.jsonl", "-k", "5,1",
                   "--gate", "recall@5:0.7", "--storage", root)
    assert made.code == 0, made.stderr
    assert (tmp_path / "store" / "judgments" / "wiki-qa-4eec7a" / "current.jsonl").read_bytes() == judgments.read_bytes()
    config = json.loads((tmp_path / "store" / "suites" / "wiki-qa-4eec7a.json").read_text())
    assert config["k"] == [1, 5] and config["runs"] == ["s3://b/runs/a.jsonl"] and config["max_grade"] == 2
    other = tmp_path / "other.jsonl"
    other.write_bytes(judgments.read_bytes().splitlines(keepends=True)[0])
    (tmp_path / "store" / "suites" / "wiki-qa-4eec7a.json").unlink()
    kept = run_cli("suite", "init", "Wiki QA", "-j", str(other), "--storage", root)
    assert kept.code == 2 and "omit --judgments" in kept.stderr
    assert (tmp_path / "store" / "judgments" / "wiki-qa-4eec7a" / "current.jsonl").read_bytes() == judgments.read_bytes()
    reused = run_cli("suite", "init", "Wiki QA", "-r", "s3://b/runs/a.jsonl", "--storage", root)  # the judgments on storage
    assert reused.code == 0, reused.stderr
    again = run_cli("suite", "init", "Wiki QA", "-j", str(judgments), "--storage", root)
    assert again.code == 2 and "suite set" in again.stderr
    changed = run_cli("suite", "set", "Wiki QA", "--gate", "none", "--schedule", "0 3 * * *", "--storage", root)
    assert changed.code == 0, changed.stderr
    assert "no Prefect server is configured" in changed.stdout  # stored, and said it is not on a server
    shown = run_cli("suite", "show", "Wiki QA", "--storage", root, "--format", "json")
    document = json.loads(shown.stdout)
    assert document["gates"] == [] and document["schedule"] == "0 3 * * *"
    assert document["judgments_url"].endswith("/judgments/wiki-qa-4eec7a/current.jsonl")


def test_suite_commands_refuse_bad_values_in_one_line_and_write_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "")
    root = f"file://{tmp_path}/store"
    judgments = str(FIXTURES / "merge" / "judgments.jsonl")
    for args, said in ((["--gate", "recall@5"], "--gate: gate 'recall@5'"), (["--schedule", "nightly"], "cron expression"),
                       (["-r", "a", "-r", "a"], "listed twice")):
        refused = run_cli("suite", "init", "w", "-j", judgments, *args, "--storage", root)
        assert refused.code == 2 and said in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "store" / "suites").exists()
    bare = run_cli("suite", "init", "w", "--storage", root)
    assert bare.code == 2 and "give --judgments FILE" in bare.stderr
    missing = run_cli("suite", "show", "nowhere", "--storage", root)
    assert missing.code == 2 and "holds no configuration for suite 'nowhere'" in missing.stderr
    (tmp_path / "store" / "suites").mkdir(parents=True)
    (tmp_path / "store" / "suites" / "w.json").write_text('{"suite": "w", "k": [0]}')
    broken = run_cli("suite", "show", "w", "--storage", root)
    assert broken.code == 2 and "w.json: k:" in broken.stderr


def test_suite_set_configures_the_judge_shows_it_and_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "")
    root = f"file://{tmp_path}/store"
    assert run_cli("suite", "init", "w", "-j", str(FIXTURES / "merge" / "judgments.jsonl"), "--storage", root).code == 0
    half = run_cli("suite", "set", "w", "--kappa-floor", "0.5", "--storage", root)
    assert half.code == 2 and "give --judge-url and --judge-model" in half.stderr
    bad = run_cli("suite", "set", "w", "--judge-url", "ftp://x", "--judge-model", "m", "--storage", root)
    assert bad.code == 2 and "judge.base_url: must be an http:// or https:// URL" in bad.stderr
    made = run_cli("suite", "set", "w", "--judge-url", "http://127.0.0.1:8000/v1", "--judge-model", "qwen",
                   "--audit-at-most", "40", "--kappa-floor", "0.6", "--storage", root)
    assert made.code == 0, made.stderr
    shown = run_cli("suite", "show", "w", "--storage", root)
    assert ("judge: qwen at http://127.0.0.1:8000/v1; people audit enough queries for an interval 0.2 wide, "
            "at most 40; kappa floor 0.6") in shown.stdout
    changed = run_cli("suite", "set", "w", "--kappa-floor", "0.7", "--storage", root)  # the rest is kept
    config = json.loads(run_cli("suite", "show", "w", "--storage", root, "--format", "json").stdout)
    assert changed.code == 0 and config["judge"]["kappa_floor"] == 0.7 and config["judge"]["model"] == "qwen"
    assert not config["judge"]["spans"]
    assert run_cli("suite", "set", "w", "--judge-spans", "--storage", root).code == 0
    assert "kappa floor 0.7; it proposes spans" in run_cli("suite", "show", "w", "--storage", root).stdout
    assert run_cli("suite", "set", "w", "--judge-url", "off", "--storage", root).code == 0
    assert "judge: none" in run_cli("suite", "show", "w", "--storage", root).stdout


def _queue():
    from goldkeeper.core.drift import classify, parse_corpus, rejudgment_queue

    case = FIXTURES / "drift"
    labels = goldkeeper.parse_judgments((case / "judgments.jsonl").read_bytes())
    corpus = parse_corpus((case / "corpus.json").read_bytes())
    return labels, rejudgment_queue(labels, classify(labels, corpus), corpus)


def test_grades_become_one_answer_per_relevant_chunk_none_or_a_skip():
    _, (split, orphan) = _queue()
    c1, c2 = (c["chunk_id"] for c in split["candidates"])
    rows, skipped = grade_answers([split, orphan], [[2, 0], []], [False, True], "human:a b", "2026-12-01T00:00:00Z")
    assert [(r["item_id"], r["chunk_id"], r["relevance"]) for r in rows] == [
        (split["item_id"], c1, 2), (orphan["item_id"], "none", 0)] and skipped == []
    rows, _ = grade_answers([split], [[1, 2]], [False], "human:a", "2026-12-01T00:00:00Z")
    assert [(r["chunk_id"], r["relevance"]) for r in rows] == [(c1, 1), (c2, 2)]  # both pieces carry it
    rows, _ = grade_answers([split], [[0, 0]], [False], "human:a", "2026-12-01T00:00:00Z")
    assert [r["chunk_id"] for r in rows] == ["none"]  # every candidate 0: no live chunk carries it
    rows, skipped = grade_answers([split, orphan], [[None, None], []], [False, False], "human:a", "t")
    assert rows == [] and skipped == [split["item_id"], orphan["item_id"]]


def test_answered_items_are_never_pending_and_skipped_ones_go_to_the_back():
    from goldkeeper.core.drift import LiveChunk, parse_corpus
    from goldkeeper.core.rejudge import apply_answers, check_answers

    labels, queue = _queue()
    split, orphan = queue
    assert [i["item_id"] for i in pending_items(queue, labels)] == [split["item_id"], orphan["item_id"]]
    assert [i["item_id"] for i in walked(queue, [split["item_id"]])] == [orphan["item_id"], split["item_id"]]
    corpus = parse_corpus((FIXTURES / "drift" / "corpus.json").read_bytes())
    live = {c.chunk_id: c for c in corpus if isinstance(c, LiveChunk)}
    rows, _ = grade_answers([orphan], [[]], [True], "human:a", "2026-12-01T00:00:00Z")
    items = {orphan["item_id"]: orphan}
    applied = apply_answers(labels, check_answers(list(enumerate(rows, 1)), items, live, "form"), items, live, None)
    assert [i["item_id"] for i in pending_items(queue, applied.judgments)] == [split["item_id"]]


def test_overlap_marks_the_runs_of_words_the_candidate_shares_with_the_judged_text():
    pieces = overlap("Reset your password from the account page.",
                     "To sign in, open the app. Reset your PASSWORD from the account page, then log in.")
    assert [text for text, shared in pieces if shared] == ["Reset your PASSWORD from the account page,"]
    assert "".join(text for text, _ in pieces).startswith("To sign in")
    # two words in common with a longer judged text are a coincidence, not a shared passage
    assert not any(shared for _, shared in overlap("open the account page today", "visit an account page"))
    assert [t for t, s in overlap("a b", "x a b y") if s] == ["a b"]  # shorter than 3 words: counted whole
