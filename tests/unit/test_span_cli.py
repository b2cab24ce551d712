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


def test_a_run_over_another_snapshot_is_refused_not_scored_0(tmp_path, snapshot):
    """The tokens chunker's run given the recursive chunker's snapshot: none of its ids is a
    chunk there, so it would score 0 on every query; it is refused in one line, nothing written.
    A run that ranks documents (doc_uri) over the same snapshot is no such mistake."""
    report = tmp_path / "report.json"
    for args in (("score", "-r", str(CASE / "run-tokens.jsonl"), "--corpus", str(snapshot), "--report", str(report)),
                 ("compare", "-r", str(CASE / "run-recursive.jsonl"), "-r", str(CASE / "run-tokens.jsonl"),
                  "--corpus", str(snapshot))):
        done = run_cli(*args, "-j", str(CASE / "judgments.jsonl"))
        assert done.code == 2 and done.stdout == "", done
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith(f"error: {CASE / 'run-tokens.jsonl'}: none of the first ") and "another snapshot" in line
    assert not report.exists()
    by_document = tmp_path / "documents.jsonl"
    by_document.write_text("".join(json.dumps({"query_id": row["query_id"], "ranking": [row["doc_uri"]]}) + "\n"
                                   for row in GOLD), encoding="utf-8")
    labels = tmp_path / "doc-labels.jsonl"
    labels.write_text("".join(json.dumps({k: v for k, v in row.items() if k != "span"}) + "\n" for row in GOLD),
                      encoding="utf-8")
    done = run_cli("score", "-j", str(labels), "-r", str(by_document), "--corpus", str(snapshot), "--format", "json")
    assert done.code in (0, 1), done.stderr
    assert json.loads(done.stdout)["metrics"]["recall@10"]["value"] == 1.0


def test_drift_says_how_the_span_labels_were_settled(tmp_path, snapshot):
    """The gold set as chunk labels of the recursive chunker, each with its span, drifted to the
    tokens chunker: every chunk is gone, every passage is found again at its offsets, but one
    whose words were changed, which is gone; text and JSON count them."""
    chunks = json.loads(snapshot.read_text())["chunks"]
    rows = []
    for row in GOLD:
        span = row["span"]
        chunk = next(c for c in chunks if c["doc_uri"] == row["doc_uri"]
                     and c["start_index"] <= span["start"] < c["start_index"] + len(c["text"]))
        rows.append({**row, "chunk_id": chunk["chunk_id"], "chunk_text": chunk["text"]})
    exact = rows[0]["span"]["exact"]
    rows[0] = {**rows[0], "span": {**rows[0]["span"], "exact": "Z" * len(exact)}}  # words no document holds
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    tokens = tmp_path / "tokens.json"
    assert run_cli("snapshot", str(CASE / "chunks-tokens.jsonl"), "--chunker", "tokens", "-o", str(tokens),
                   "--quiet").code == 0
    text = run_cli("drift", "-j", str(labels), "-c", str(tokens))
    assert (f"span labels: {len(GOLD) - 1} found their passage again and re-anchor ({len(GOLD) - 1} at their "
            "offsets); 1 gone from their document (these keep what their chunk says)") in text.stdout
    payload = json.loads(run_cli("drift", "-j", str(labels), "-c", str(tokens), "--format", "json").stdout)
    assert payload["spans"] == {"by_offsets": len(GOLD) - 1, "gone": 1}
    assert payload["summary"]["re_anchorable"] == len(GOLD) - 1


def test_score_audit_resolves_the_judges_and_peoples_span_labels_on_the_runs_snapshot(tmp_path, snapshot):
    """The gold set as the judge's labels, four of its queries audited by a person who agrees:
    both resolve on the run's snapshot, and the judge's labels alone score as the gold set does
    (every grade is 1: kappa is undefined, and said so). Without the snapshot, people's span labels are refused too."""
    stamp = {"labeled_at": "2026-12-01T00:00:00Z"}
    judge = tmp_path / "judge.jsonl"
    judge.write_text("".join(json.dumps({**row, **stamp, "labeled_by": "synthetic:m"}) + "\n" for row in GOLD))
    people = tmp_path / "people.jsonl"
    people.write_text("".join(json.dumps({**row, **stamp, "labeled_by": "human:ana"}) + "\n" for row in GOLD[:4]))
    run = str(CASE / "run-recursive.jsonl")
    audited = run_cli("score", "-j", str(judge), "-r", run, "--corpus", str(snapshot), "--audit", str(people),
                      "-k", "5", "--format", "json")
    assert audited.code in (0, 1), audited.stderr
    report = json.loads(audited.stdout)
    plain = json.loads(run_cli("score", "-j", str(CASE / "judgments.jsonl"), "-r", run, "--corpus", str(snapshot),
                               "-k", "5", "--format", "json").stdout)
    assert report["audit"]["queries"] == 4 and report["audit"]["kappa"] is None
    for metric in ("recall@5", "ndcg@5"):
        estimate = report["audit"]["estimates"][metric]
        assert estimate["n_labeled"] == 4 and estimate["judge_bias"] == 0.0
        assert estimate["judge_mean"] == pytest.approx(plain["metrics"][metric]["value"]) and estimate["judge_mean"] > 0
    refused = run_cli("score", "-j", str(CASE / "judgments.jsonl"), "-r", run, "--audit", str(people))
    assert refused.code == 2 and "--corpus" in refused.stderr


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


def test_score_says_which_span_labels_did_not_resolve_and_why(tmp_path, snapshot):
    """One passage whose words no document holds: score resolves the others, says the one is
    gone and scored as its chunk label, in text and in the report's inputs.spans."""
    rows = [dict(row) for row in GOLD]
    exact = rows[0]["span"]["exact"]
    rows[0]["span"] = {**rows[0]["span"], "exact": "Z" * len(exact)}
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    args = ("score", "-j", str(labels), "-r", str(CASE / "run-recursive.jsonl"), "--corpus", str(snapshot))
    text = run_cli(*args)
    assert text.code in (0, 1), text.stderr
    assert (f"{len(GOLD) - 1} of {len(GOLD)} span labels resolved to ") in text.stdout
    assert ("; 1 scored as their chunk labels: 1 gone, 0 ambiguous, 0 in documents without offsets, "
            "0 in text no chunk holds") in " ".join(text.stdout.split())
    spans = json.loads(run_cli(*args, "--format", "json").stdout)["inputs"]["spans"]
    assert (spans["labels"], spans["resolved"], spans["gone"]) == (len(GOLD), len(GOLD) - 1, 1)
