"""Issue 26, class 6: resources are bounded by what the inputs hold. (Cutoffs: see
test_bad_input_not_internal.) Lines are read in time linear in their length and refused past
``MAX_LINE_BYTES``, in plain files and in gzip shards, whose memory then stays near one line
whatever they expand to; a corpus file is read, not mapped, so a truncated one is a message."""

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
    import resource
    import subprocess
    import sys

    line = b"q1 Q0 d1 1 1.0 t\n"
    with gzip.open(tmp_path / "bomb.trec.gz", "wb", compresslevel=9) as out:
        for _ in range(64):
            out.write(line * (1 << 20))  # 1.1 GB of lines, about 1 MB stored
    (tmp_path / "labels.qrels").write_text("q1 0 d1 1\n")
    stored = (tmp_path / "bomb.trec.gz").stat().st_size
    assert stored < 3 << 20
    code = ("import resource, sys\nfrom goldkeeper.cli import main\n"
            "try:\n    main(sys.argv[1:])\nfinally:\n"
            "    sys.stderr.write(f'peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n")
    done = subprocess.run([sys.executable, "-c", code, "score", "-j", "labels.qrels", "-r", "bomb.trec.gz"],
                          cwd=tmp_path, capture_output=True, timeout=300)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert stderr.startswith("error: bomb.trec.gz: encoding: expands more than 200 times as it is decompressed"), stderr
    peak_kib = int(stderr.rsplit("peak ", 1)[1])
    assert peak_kib < 1 << 20  # under 1 GiB: the 1.1 GB of lines were never held
    del resource


def test_a_highly_compressible_real_input_is_still_read(tmp_path):
    """The bound leaves room: 64 MiB may expand any amount (a small file of repeated lines)."""
    import gzip

    from tests.conftest import run_cli

    with gzip.open(tmp_path / "labels.jsonl.gz", "wb") as out:
        out.write(b'{"query_id": "q1", "doc_uri": "d1", "relevance": 1}\n')
    assert run_cli("validate", str(tmp_path / "labels.jsonl.gz")).code in (0, 1)
