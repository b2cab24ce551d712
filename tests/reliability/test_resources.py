"""Issue 26, class 6: resources are bounded by what the inputs hold. (Cutoffs: see
test_bad_input_not_internal.) Lines are read in time linear in their length and refused past
``MAX_LINE_BYTES``, in plain files and in gzip shards, whose memory then stays near one line
whatever they expand to; a corpus file is read, not mapped, so a truncated one is a message;
drift holds a few fields of each label, not its text, and streams a large corpus.json."""

from __future__ import annotations

import gzip
import hashlib
import json
import tracemalloc

import pytest

from goldkeeper.errors import InputError
from goldkeeper.io import files
from goldkeeper.io.snapshots import FORMAT, ShardedCorpus
from tests.conftest import run_cli

LIMIT = 1 << 20  # the tests lower the limit to 1 MiB, so that a line past it is cheap to make


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(files, "MAX_LINE_BYTES", LIMIT)


def test_a_line_past_the_limit_is_refused_with_its_number(tmp_path, small_limit):
    path = tmp_path / "judgments.jsonl"
    good = b'{"query_id":"q","doc_uri":"d","relevance":1}\n'
    path.write_bytes(good * 3 + b'{"notes":"' + b"x" * (LIMIT + 10) + b'"}\n')
    with pytest.raises(InputError) as caught:
        list(files.iter_blocks(str(path), 4096))
    assert str(caught.value) == (f"{path}:4: line: a line longer than 1 MiB, which goldkeeper does not read, "
                                 "got no newline within the limit")
    with pytest.raises(InputError, match=":4: line: a line longer than 1 MiB"):
        list(files.iter_lines(str(path)))


def test_long_lines_under_the_limit_come_back_whole(tmp_path, small_limit):
    lines = [b"a" * (LIMIT - 1) + b"\n", b"b\n", b"c" * 70_000 + b"\n", b"tail"]
    path = tmp_path / "lines"
    path.write_bytes(b"".join(lines))
    blocks = list(files.iter_blocks(str(path), 4096))
    assert b"".join(blocks) == b"".join(lines) and all(b.endswith(b"\n") for b in blocks[:-1])
    assert list(files.iter_lines(str(path))) == lines


def test_a_gzip_shard_that_expands_to_one_huge_line_is_refused_in_bounded_memory(tmp_path, small_limit):
    data = gzip.compress(b"x" * (64 * LIMIT))  # 64 MiB of one line from about 64 KB
    assert len(data) < 200_000
    (tmp_path / "s0.jsonl.gz").write_bytes(data)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": FORMAT, "shards": [
        {"path": "s0.jsonl.gz", "sha256": hashlib.sha256(data).hexdigest(), "chunks": 1}]}))
    corpus = ShardedCorpus(str(tmp_path / "manifest.json"))
    tracemalloc.start()
    with pytest.raises(InputError, match=r"s0\.jsonl\.gz:1: line: a line longer than 1 MiB"):
        list(corpus.read_shard(0))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 * LIMIT  # about one line and the decompressor's buffers, not 64 MiB


def test_a_truncated_corpus_is_a_message_not_a_crash(tmp_path):
    assert run_cli("example", str(tmp_path)).code == 0
    whole = (tmp_path / "corpus.json").read_bytes()
    (tmp_path / "corpus.json").write_bytes(whole[: len(whole) // 2])
    result = run_cli("drift", "-j", "judgments.jsonl", "-c", "corpus.json", cwd=tmp_path)
    assert result.code == 2 and result.stderr.startswith("error: corpus.json: json: not valid JSON")
    assert len(result.stderr.splitlines()) == 1


def test_a_decompression_bomb_is_refused_before_it_fills_memory(tmp_path):
    """Many short lines (no line is long), a thousand times smaller compressed: the whole-file
    readers (a TREC run, nested JSON) would hold it all (20 GB of memory for this one, before
    the bound). Refused once the stream has expanded past it, with the memory of a few blocks."""
    import gzip
    import subprocess
    import sys

    line = b"q1 Q0 d1 1 1.0 t\n"
    with gzip.open(tmp_path / "bomb.trec.gz", "wb", compresslevel=9) as out:
        for _ in range(64):
            out.write(line * (1 << 20))  # 1.1 GB of lines, about 1 MB stored
    (tmp_path / "labels.qrels").write_text("q1 0 d1 1\n")
    stored = (tmp_path / "bomb.trec.gz").stat().st_size
    assert stored < 3 << 20
    # VmHWM is this process's own peak; getrusage's ru_maxrss carries over, through exec,
    # the peak of the process that started it (pytest's, over 1 GiB late in a full run)
    code = ("import re, sys\nfrom goldkeeper.cli import main\n"
            "try:\n    main(sys.argv[1:])\nfinally:\n"
            "    peak = re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read())[1]\n"
            "    sys.stderr.write(f'peak {peak}\\n')\n")
    done = subprocess.run([sys.executable, "-c", code, "score", "-j", "labels.qrels", "-r", "bomb.trec.gz"],
                          cwd=tmp_path, capture_output=True, timeout=300)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert stderr.startswith("error: bomb.trec.gz: encoding: expands more than 200 times as it is decompressed"), stderr
    peak_kib = int(stderr.rsplit("peak ", 1)[1])
    assert peak_kib < 1 << 20  # under 1 GiB: the 1.1 GB of lines were never held


def test_a_highly_compressible_real_input_is_still_read(tmp_path):
    """The bound leaves room: 64 MiB may expand any amount (a small file of repeated lines)."""
    import gzip

    from tests.conftest import run_cli

    with gzip.open(tmp_path / "labels.jsonl.gz", "wb") as out:
        out.write(b'{"query_id": "q1", "doc_uri": "d1", "relevance": 1}\n')
    assert run_cli("validate", str(tmp_path / "labels.jsonl.gz")).code in (0, 1)


def _labeled_corpus(tmp_path, labels=400, text_bytes=20_000):
    """Live chunks kept as ids and hashes (no text), and a judgments file whose labels point
    at them, each carrying a long text: what drift must not hold is the labels' texts."""
    import goldkeeper
    from goldkeeper.core.identity import text_sha

    texts = [f"label {n} " + "words of a judged passage " * (text_bytes // 26) for n in range(labels)]
    live = [{"chunk_id": goldkeeper.chunk_id(f"doc://{n % 20}", "r1", n, text, "words/v1"), "doc_uri": f"doc://{n % 20}",
             "ordinal": n, "text_sha": text_sha(text)} for n, text in enumerate(texts)]
    rows = [{"query_id": f"q{n}", "doc_uri": chunk["doc_uri"], "chunk_id": chunk["chunk_id"], "chunk_text": text,
             "relevance": 1} for n, (chunk, text) in enumerate(zip(live, texts))]
    (tmp_path / "judgments.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows, live


def test_drift_holds_a_few_fields_of_each_label_not_its_text(tmp_path):
    """Labels read by ``LabelRows`` stream: classify keeps each label's ids and hash, not its
    text, so 8 MB of judged text is never held at once (a list of the rows would hold it all)."""
    from goldkeeper.core.drift import Corpus, LiveChunk, classify
    from goldkeeper.io.snapshots import LabelRows

    rows, live = _labeled_corpus(tmp_path)
    corpus = Corpus([LiveChunk(c["chunk_id"], c["doc_uri"], c["ordinal"], None, c["text_sha"]) for c in live])
    streamed = type("Streamed", (), {"corpus_fingerprint": None, "chunker_fingerprint": None,
                                     "__iter__": lambda self: iter(corpus.chunks)})()
    total = sum(len(row["chunk_text"]) for row in rows)
    del rows
    labels = LabelRows(str(tmp_path / "judgments.jsonl"))
    classify(labels, streamed)  # (what is imported on first use is not the labels)
    tracemalloc.start()
    result = classify(labels, streamed)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert result.summary["valid"] == 400 and total > 8_000_000
    assert peak < total / 8


def test_a_large_corpus_json_is_spooled_and_drifts_as_one_held(monkeypatch):
    """Past ``HOLD_UP_TO`` drift streams a corpus.json from an unnamed temporary (nothing is
    left behind, even after kill -9), with the findings, the fix and the queue of the held one."""
    import tempfile

    from goldkeeper.io import snapshots
    from tests.conftest import FIXTURES

    fixture = FIXTURES / "goldkeeper-drift-rules"
    outputs = {}
    for hold in (snapshots.HOLD_UP_TO, 0):
        monkeypatch.setattr(snapshots, "HOLD_UP_TO", hold)
        rows, result, corpus, sha = snapshots.classify_url(str(fixture / "judgments.jsonl"), str(fixture / "corpus.json"))
        from goldkeeper.core.drift import fixed_rows, rejudgment_queue

        outputs[hold] = (result.findings, list(fixed_rows(rows, result)), rejudgment_queue(rows, result, corpus), sha)
        assert isinstance(corpus, snapshots.SpooledCorpus) == (hold == 0)
        if hold == 0:
            assert snapshots.chunk_count(corpus) == len(json.loads((fixture / "corpus.json").read_text())["chunks"])
            assert not [p for p in __import__("os").listdir(tempfile.gettempdir()) if p.startswith("goldkeeper-corpus-")]
    first, second = outputs.values()
    assert first == second and {f["status"] for f in first[0]} >= {"VALID", "RE_ANCHORABLE", "MERGED", "SPLIT", "ORPHANED"}


def test_labels_changed_between_drift_passes_are_refused(tmp_path):
    """drift reads the labels again for its later passes: a file that changed meanwhile (other
    bytes, or more lines) is an error, never findings zipped with other labels."""
    from goldkeeper.io.snapshots import LabelRows

    path = tmp_path / "judgments.jsonl"
    line = '{"query_id":"q%d","doc_uri":"d","chunk_id":"c1:x","relevance":1}\n'
    path.write_text(line % 1 + line % 2)
    for changed in (line % 1 + line % 3, line % 1 + line % 2 + line % 3):
        labels = LabelRows(str(path))
        assert [row["query_id"] for row in labels] == ["q1", "q2"] and labels.count == 2
        path.write_text(changed)
        with pytest.raises(InputError, match=r"judgments\.jsonl: sha256: changed while it was read"):
            list(labels)
        path.write_text(line % 1 + line % 2)
