"""Drift of a large judgments file on two processes: exactly the one-process result."""

from __future__ import annotations

import json
import random

import pytest

import goldkeeper
from goldkeeper.errors import InputError
from goldkeeper.io.drifting import PARALLEL_MIN_BYTES, classify_url
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    rng = random.Random(3)
    root = tmp_path_factory.mktemp("drifting")
    words = ["refund", "plan", "annual", "billing", "credit", "contract", "audit", "export", "region", "quota"]
    chunks, labels = [], []
    for d in range(400):
        doc = f"doc://{d}"
        texts = [" ".join(rng.choice(words) for _ in range(60)) + f" n{d}.{i}" for i in range(12)]
        for i, text in enumerate(texts):
            chunks.append({"chunk_id": goldkeeper.chunk_id(doc, "r2", i, text, "new"), "doc_uri": doc, "ordinal": i,
                           "text": text, "text_sha": goldkeeper.text_sha(text)})
        for i in range(11):
            kind = (d + i) % 4
            text = [texts[i], texts[i][:150], texts[i][200:] + " " + texts[i + 1][:100], texts[i] + " edited"][kind]
            labels.append({"query_id": f"q{d}-{i}", "doc_uri": doc,
                           "chunk_id": goldkeeper.chunk_id(doc, "r1", i, text, "old"), "chunk_text": text,
                           "relevance": 1, "corpus_fingerprint": "old"})
    judgments = root / "judgments.jsonl"
    judgments.write_text("".join(json.dumps(row) + "\n" for row in labels))
    corpus = root / "corpus.json"
    corpus.write_text(json.dumps({"corpus_fingerprint": "new", "chunker_fingerprint": "new", "chunks": chunks}))
    assert judgments.stat().st_size >= PARALLEL_MIN_BYTES
    return judgments, corpus


def test_two_processes_give_the_one_process_result(big):
    judgments, corpus = big
    rows1, one, _ = classify_url(str(judgments), str(corpus), workers=1)
    rows2, two, _ = classify_url(str(judgments), str(corpus), workers=2)
    assert rows1 == rows2
    assert two.findings == one.findings and two.summary == one.summary
    assert {s for s in ("VALID", "RE_ANCHORABLE", "MERGED", "SPLIT", "ORPHANED")} == {f["status"] for f in one.findings} | {"VALID"}
    assert two.judgments_fingerprint == one.judgments_fingerprint == "old"
    assert two.chunks.keys() == one.chunks.keys()


def test_the_first_bad_line_in_file_order_is_reported(big, tmp_path):
    judgments, corpus = big
    lines = judgments.read_text().splitlines(keepends=True)
    late = len(lines) - 5
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines[:late] + ['{"query_id": "x"}\n'] + lines[late + 1:]))
    with pytest.raises(InputError) as raised:
        classify_url(str(broken), str(corpus), workers=2)
    assert raised.value.line == late + 1
    early = lines[:]
    early[3] = '{"query_id": "y"}\n'
    early[late] = '{"query_id": "x"}\n'
    broken.write_text("".join(early))
    result = run_cli("drift", "-j", str(broken), "-c", str(corpus))
    assert result.code == 2 and f"{broken}:4: " in result.stderr


def test_fix_and_queue_on_two_processes_match_one(big, tmp_path, monkeypatch):
    judgments, corpus = big
    outputs = {}
    for workers in ("1", "2"):
        monkeypatch.setattr("goldkeeper.io.drifting.PARALLEL_MIN_BYTES", 1 if workers == "2" else 1 << 40)
        out, queue = tmp_path / f"fixed{workers}.jsonl", tmp_path / f"queue{workers}.jsonl"
        from goldkeeper.cli import main

        with pytest.raises(SystemExit) as done:
            main(["drift", "-j", str(judgments), "-c", str(corpus), "--fix", "--out", str(out), "--queue", str(queue)])
        assert done.value.code == 1
        outputs[workers] = (out.read_bytes(), queue.read_bytes())
    assert outputs["1"] == outputs["2"]
    assert b"reanchored_from" in outputs["1"][0] and b"rq1:" in outputs["1"][1]


def test_classify_and_queue_reads_less_and_gives_the_same_queue(big):
    """The queue from the documents classify rebuilt equals the queue read from the corpus."""
    from goldkeeper.core.drift import classify, classify_and_queue, parse_corpus, rejudgment_queue

    judgments, corpus_path = big
    labels = goldkeeper.parse_judgments(judgments.read_bytes())
    corpus = parse_corpus(corpus_path.read_bytes())
    reads = []

    class Counted:
        corpus_fingerprint = corpus.corpus_fingerprint

        def __iter__(self):
            reads.append(1)
            return iter(corpus)

    result, queue = classify_and_queue(labels, Counted())
    assert len(reads) == 2  # the hash pass and the rebuild; none for the queue
    one = classify(labels, corpus)
    assert result.findings == one.findings
    assert queue == rejudgment_queue(labels, one, corpus)
    assert any(item["status"] == "ORPHANED" and item["candidates"] for item in queue)
