"""One gold set for three chunkers (spec/fixtures/goldkeeper-one-gold-set, issue 44): span
labels over Python's help texts, the texts chunked by LangChain's recursive splitter, LlamaIndex's
SentenceSplitter and chonkie's TokenChunker, a run over each. Scored from the one gold set,
each resolved against its own snapshot, every run scores exactly as it does against the chunk
labels a person marked by hand for its chunker, and the paired comparison of the three is the
same too. All through the CLI a user runs: snapshot, score, compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

CASE = FIXTURES / "goldkeeper-one-gold-set"
EXPECTED = json.loads((CASE / "expected.json").read_text(encoding="utf-8"))
CHUNKERS = list(EXPECTED["chunkers"])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Each chunker's snapshot, made by ``goldkeeper snapshot``, and its hand-made chunk labels."""
    root = tmp_path_factory.mktemp("one-gold-set")
    spans = [json.loads(line) for line in (CASE / "judgments.jsonl").read_text(encoding="utf-8").splitlines()]
    uri_of = {row["query_id"]: row["doc_uri"] for row in spans}
    paths = {}
    for name in CHUNKERS:
        paths[name] = root / f"{name}.json"
        done = run_cli("snapshot", str(CASE / f"chunks-{name}.jsonl"), "--chunker", EXPECTED["chunkers"][name]["fingerprint"],
                       "-o", str(paths[name]), "--quiet")
        assert done.code == 0, done.stderr
        chunks = json.loads(paths[name].read_text(encoding="utf-8"))["chunks"]
        assert all(c.get("start_index") is not None for c in chunks)
        ids = {(c["doc_uri"], c["ordinal"]): c["chunk_id"] for c in chunks}
        ranked = {i for line in (CASE / f"run-{name}.jsonl").read_text().splitlines() for i in json.loads(line)["ranking"]}
        assert ranked <= set(ids.values())  # the runs rank the snapshot's own chunks
        labels = [{"query_id": query, "doc_uri": uri_of[query], "chunk_id": ids[(uri_of[query], n)], "relevance": 1}
                  for query, ordinals in EXPECTED["chunkers"][name]["answers"].items() for n in ordinals]
        paths[f"{name} by hand"] = root / f"{name}-by-hand.jsonl"
        paths[f"{name} by hand"].write_text("".join(json.dumps(row) + "\n" for row in labels), encoding="utf-8")
    return paths


def _json(*args: str) -> dict:
    done = run_cli(*args, "--format", "json")
    assert done.code in (0, 1), done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", CHUNKERS)
def test_a_run_scores_on_the_one_gold_set_as_on_its_chunkers_hand_made_labels(built, name):
    run = str(CASE / f"run-{name}.jsonl")
    common = ("-r", run, "-k", "1,5", "--now", "2026-12-06T00:00:00Z", "--resamples", "200")
    by_span = _json("score", "-j", str(CASE / "judgments.jsonl"), "--corpus", str(built[name]), *common)
    by_hand = _json("score", "-j", str(built[f"{name} by hand"]), *common)
    assert by_span["metrics"] == by_hand["metrics"]
    assert by_span["per_query"] == by_hand["per_query"]
    answers = EXPECTED["chunkers"][name]["answers"]
    spans = by_span["inputs"]["spans"]
    assert (spans["labels"], spans["resolved"], spans["chunks"]) == (8, 8, sum(map(len, answers.values())))
    assert spans["found_again"] == spans["gone"] == spans["ambiguous"] == 0


def test_three_chunkers_compare_paired_by_query_from_one_gold_set(built):
    """``compare`` from the one gold set equals the paired comparison of the three runs each
    scored on its own hand-made labels (through the API, since no one labels file holds them)."""
    from goldkeeper.core.comparison import compare_scores
    from goldkeeper.core.scoring import build_qrels, score
    from goldkeeper.io.loading import load_label_rows, load_run

    runs = [arg for name in CHUNKERS for arg in ("-r", str(CASE / f"run-{name}.jsonl"))]
    corpora = [arg for name in CHUNKERS for arg in ("--corpus", str(built[name]))]
    by_span = _json("compare", "-j", str(CASE / "judgments.jsonl"), *corpora, *runs, "-k", "1,5")
    named = [(str(CASE / f"run-{name}.jsonl"),
              score(build_qrels(load_label_rows(str(built[f"{name} by hand"]))[0]),
                    load_run(str(CASE / f"run-{name}.jsonl"))[0], k=[1, 5], threshold=1)) for name in CHUNKERS]
    by_hand = compare_scores(named, metrics=None, alpha=0.05, resamples=10_000, seed=0)
    assert by_span["comparisons"] == by_hand["comparisons"]
    assert any(c["difference"] != 0 for c in by_span["comparisons"])  # the chunkers do differ
    assert [r["spans"]["resolved"] for r in by_span["runs"]] == [8, 8, 8]
    assert [r["corpus"]["url"] for r in by_span["runs"]] == [str(built[name]) for name in CHUNKERS]
    # The text a user reads names each challenger against the baseline, from the one gold set.
    text = run_cli("compare", "-j", str(CASE / "judgments.jsonl"), *corpora, *runs, "-k", "5")
    assert text.code == 0, text.stderr
    assert "run-sentences.jsonl" in text.stdout and "run-tokens.jsonl" in text.stdout
    assert text.stdout.count("8 of 8 span labels resolved") == 3, text.stdout

