"""Span labels through the CLI (spec/spans.md): refused with one line naming file, line and
field; ``convert --corpus`` derives spans that score as the chunk labels they came from;
``validate`` counts a span as an anchor; a span label scored without its snapshot says what to
give. The fixture is spec/fixtures/goldkeeper-one-gold-set."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, run_cli

CASE = FIXTURES / "goldkeeper-one-gold-set"
GOLD = [json.loads(line) for line in (CASE / "judgments.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    path = tmp_path_factory.mktemp("spans") / "recursive.json"
    done = run_cli("snapshot", str(CASE / "chunks-recursive.jsonl"), "--chunker", "recursive", "-o", str(path), "--quiet")
    assert done.code == 0, done.stderr
    return path


def _with_span(span):
    return {**GOLD[0], "span": span}


@pytest.mark.parametrize(("span", "field", "said"), [
    ("line 3", "span", 'must be an object {start, end, exact[, prefix, suffix]}, got "line 3"'),
    ({"start": 1, "end": 5, "exact": "abcd", "colour": "red"}, "span.colour", "is not a field of a span"),
    ({"start": 1, "exact": "abcd"}, "span.end", "required, got nothing"),
    ({"start": -1, "end": 3, "exact": "abcd"}, "span.start", "must be an integer offset from 0"),
    ({"start": 1.5, "end": 3, "exact": "ab"}, "span.start", "must be an integer offset from 0"),
    ({"start": 5, "end": 5, "exact": ""}, "span.exact", "must be a non-empty string"),
    ({"start": 6, "end": 5, "exact": "a"}, "span.end", "must be after span.start, got 5 (start 6)"),
    ({"start": 0, "end": 3, "exact": "abcd"}, "span.exact", "got 4 characters for offsets 0..3"),
    ({"start": 0, "end": 2, "exact": "ab", "prefix": 7}, "span.prefix", "must be a string, got 7"),
])
def test_a_bad_span_is_one_line_naming_file_line_and_field(tmp_path, snapshot, span, field, said):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps(GOLD[1]) + "\n" + json.dumps(_with_span(span)) + "\n", encoding="utf-8")
    for args in (("validate", str(labels)),
                 ("score", "-j", str(labels), "-r", str(CASE / "run-recursive.jsonl"), "--corpus", str(snapshot))):
        done = run_cli(*args)
        assert done.code == 2, (args, done)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {labels}:2: {field}: "), done.stderr
        assert said in lines[0], lines[0]
        assert "Traceback" not in done.stderr and done.stdout == ""


def test_span_labels_without_the_runs_snapshot_say_what_to_give(snapshot):
    for args in (("score", "-r", str(CASE / "run-recursive.jsonl")),
                 ("compare", "-r", str(CASE / "run-recursive.jsonl"), "-r", str(CASE / "run-tokens.jsonl"))):
        done = run_cli(*args, "-j", str(CASE / "judgments.jsonl"))
        assert done.code == 2
        assert "a span label without a chunk_id is scored on the chunks that hold its span" in done.stderr
        assert "--corpus" in done.stderr
    done = run_cli("compare", "-j", str(CASE / "judgments.jsonl"), "-r", str(CASE / "run-recursive.jsonl"),
                   "-r", str(CASE / "run-tokens.jsonl"), "--corpus", str(snapshot), "--corpus", str(snapshot),
                   "--corpus", str(snapshot))
    assert done.code == 2 and "one snapshot for all runs or one per run (2), got 3" in done.stderr


def test_validate_counts_a_span_as_an_anchor():
    done = run_cli("validate", str(CASE / "judgments.jsonl"))
    assert done.code == 0, done
    assert "no-chunk-ids" not in done.stdout + done.stderr
    assert "8 labels, 8 queries" in done.stdout


def test_convert_derives_spans_that_score_as_the_chunk_labels_they_came_from(tmp_path, snapshot):
    """Chunk labels of the recursive snapshot, converted with --corpus, gain the span of the
    chunk each judged; written, read back and scored on the snapshot, they score as before, and
    a label whose chunk the snapshot does not hold is kept as it was."""
    chunks = json.loads(snapshot.read_text(encoding="utf-8"))["chunks"]
    labels = [{"query_id": f"q{n}", "doc_uri": c["doc_uri"], "chunk_id": c["chunk_id"], "relevance": 1 + n % 2}
              for n, c in enumerate(chunks[::5])]
    labels.append({"query_id": "q-elsewhere", "doc_uri": "pydoc://if", "chunk_id": "c1:" + "0" * 32, "relevance": 1})
    plain = tmp_path / "chunk-labels.jsonl"
    plain.write_text("".join(json.dumps(row) + "\n" for row in labels), encoding="utf-8")
    spanned = tmp_path / "span-labels.jsonl"
    done = run_cli("convert", str(plain), "--to", "judgments", "--corpus", str(snapshot), "-o", str(spanned), "--quiet")
    assert done.code == 0, done.stderr
    rows = [json.loads(line) for line in spanned.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(labels)
    by_id = {c["chunk_id"]: c for c in chunks}
    for row in rows[:-1]:
        chunk = by_id[row["chunk_id"]]
        assert row["span"]["start"] == chunk["start_index"]
        assert row["span"]["exact"] == chunk["text"] and row["span"]["end"] == chunk["start_index"] + len(chunk["text"])
    assert "span" not in rows[-1]
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps({"query_id": row["query_id"], "ranking": [c["chunk_id"] for c in chunks[n % 7::7]]})
                           + "\n" for n, row in enumerate(labels)), encoding="utf-8")
    common = ("-r", str(run), "-k", "3,10", "--format", "json", "--now", "2026-12-06T00:00:00Z", "--resamples", "100")
    before = json.loads(run_cli("score", "-j", str(plain), *common).stdout)
    after = json.loads(run_cli("score", "-j", str(spanned), "--corpus", str(snapshot), *common).stdout)
    assert after["metrics"] == before["metrics"] and after["per_query"] == before["per_query"]
    assert after["inputs"]["spans"]["resolved"] == len(labels) - 1
