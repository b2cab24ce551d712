"""Issue 26, class 2: a command that fails changes nothing. Every output is written in full
beside its target before any target is replaced, so an output that cannot be written fails
the command with every input and every other output byte-identical."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

LIFECYCLE = Path(__file__).resolve().parents[2] / "src" / "goldkeeper" / "examples" / "lifecycle"


@pytest.fixture
def rechunked(tmp_path):
    """The lifecycle example's judgments and a re-chunked snapshot that moves some of them."""
    shutil.copy(LIFECYCLE / "judgments.jsonl", tmp_path / "judgments.jsonl")
    assert run_cli("snapshot", str(LIFECYCLE / "chunks-v2.jsonl"), "--chunker", "sentences/v2",
                   "-o", str(tmp_path / "v2.json")).code == 0
    return tmp_path


def _state(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) and its sha256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# a folder where the file is due; a file where a folder is due, at one level and at two
@pytest.mark.parametrize("queue", ["a-folder", "a-file/queue.jsonl", "a-file/missing/queue.jsonl"])
def test_an_unwritable_queue_leaves_the_judgments_as_they_were(rechunked, queue):
    (rechunked / "a-folder").mkdir()
    (rechunked / "a-file").write_text("x")
    before = _state(rechunked)
    result = run_cli("drift", "-j", "judgments.jsonl", "-c", "v2.json", "--fix", "--in-place", "--queue", queue,
                     cwd=rechunked)
    assert result.code == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"error: {queue}")
    assert _state(rechunked) == before  # no input changed, and no temporary left behind


def test_a_fix_that_succeeds_writes_both_outputs(rechunked):
    result = run_cli("drift", "-j", "judgments.jsonl", "-c", "v2.json", "--fix", "--in-place", "--queue", "queue.jsonl",
                     cwd=rechunked)
    assert result.code == 1, result.stderr  # labels still need a person
    assert (rechunked / "queue.jsonl").read_text().count("\n") == 7
    assert "re-anchored 5 label(s)" in result.stdout
    assert not [p for p in os.listdir(rechunked) if p.endswith(".tmp")]


def test_queue_apply_with_an_unwritable_out_changes_nothing(rechunked):
    assert run_cli("drift", "-j", "judgments.jsonl", "-c", "v2.json", "--fix", "--queue", "queue.jsonl",
                   cwd=rechunked).code == 1
    shutil.copy(LIFECYCLE / "answers.jsonl", rechunked / "answers.jsonl")
    (rechunked / "out").mkdir()
    before = _state(rechunked)
    result = run_cli("queue", "apply", "-j", "judgments.jsonl", "-q", "queue.jsonl", "-a", "answers.jsonl",
                     "-c", "v2.json", "-o", "out", cwd=rechunked)
    assert (result.code, result.stderr) == (2, "error: out: is a directory, not a file\n")
    assert _state(rechunked) == before


def test_a_failed_eval_writes_no_report_over_the_last_one(tmp_path):
    assert run_cli("example", str(tmp_path)).code == 0
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"kept": True}))
    result = run_cli("score", "-j", "judgments.jsonl", "-r", "missing-run.jsonl", "--report", "report.json",
                     cwd=tmp_path)
    assert result.code == 2 and json.loads(report.read_text()) == {"kept": True}


def test_an_output_written_in_blocks_that_fails_midway_changes_nothing(tmp_path):
    """Outputs may come as blocks, written as they are made (drift --fix writes its labels so);
    a failure while they are made leaves every target as it was and no temporary behind."""
    from goldkeeper.io.files import write_together

    first, second = tmp_path / "judgments.jsonl", tmp_path / "queue.jsonl"
    first.write_bytes(b"before\n")
    second.write_bytes(b"queue before\n")

    def blocks():
        yield b"half of the new labels\n"
        raise RuntimeError("made while writing")

    with pytest.raises(RuntimeError, match="made while writing"):
        write_together([(str(second), b"new queue\n"), (str(first), blocks())])
    assert first.read_bytes() == b"before\n" and second.read_bytes() == b"queue before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judgments.jsonl", "queue.jsonl"]
    write_together([(str(first), iter([b"new ", b"labels\n"])), (str(tmp_path / "out.jsonl.gz"), iter([b"x\n"]))])
    assert first.read_bytes() == b"new labels\n"
    import gzip

    assert gzip.decompress((tmp_path / "out.jsonl.gz").read_bytes()) == b"x\n"  # compressed targets are joined first
