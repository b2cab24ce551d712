"""Reading and writing by path and URL; atomic writes leave no half-written file."""

from __future__ import annotations

import os

import fsspec
import pytest

import goldkeeper
from goldkeeper.errors import StorageError
from goldkeeper.io import files
from tests.conftest import FIXTURES

LABELS = (FIXTURES / "drift" / "judgments.jsonl").read_bytes()


@pytest.mark.parametrize("scheme", ["path", "file"])
def test_local_round_trip_is_canonical(tmp_path, scheme):
    src = tmp_path / "in.jsonl"
    src.write_bytes(LABELS)
    url = str(src) if scheme == "path" else f"file://{src}"
    labels = goldkeeper.read_judgments(url)
    out = tmp_path / "out.jsonl"
    goldkeeper.write_judgments(str(out), labels)
    assert out.read_text(encoding="utf-8") == goldkeeper.dump_judgments(labels)
    assert [j.canonical_dict() for j in goldkeeper.read_judgments(str(out))] == [j.canonical_dict() for j in labels]


def test_memory_url_round_trip():
    fs = fsspec.filesystem("memory")
    fs.pipe("/suite/current.jsonl", LABELS)
    labels = goldkeeper.read_judgments("memory://suite/current.jsonl")
    goldkeeper.write_judgments("memory://suite/next.jsonl", labels)
    assert fs.cat("/suite/next.jsonl").decode() == goldkeeper.dump_judgments(labels)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "labels.jsonl"
    target.write_bytes(LABELS)

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StorageError, match="no space left on device"):
        files.write_bytes_atomic(str(target), b"new bytes\n")
    assert target.read_bytes() == LABELS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.jsonl"]


def test_atomic_write_keeps_the_file_mode(tmp_path):
    target = tmp_path / "labels.jsonl"
    target.write_bytes(LABELS)
    target.chmod(0o640)
    files.write_bytes_atomic(str(target), b"x\n")
    assert target.read_bytes() == b"x\n"
    assert target.stat().st_mode & 0o777 == 0o640


def test_unreadable_locations_are_storage_errors(tmp_path):
    with pytest.raises(StorageError, match="no such file"):
        goldkeeper.read_judgments(str(tmp_path / "missing.jsonl"))
    with pytest.raises(StorageError, match="is a directory"):
        goldkeeper.read_judgments(str(tmp_path))
    with pytest.raises(StorageError, match="no such file or object"):
        goldkeeper.read_judgments("memory://nowhere/x.jsonl")


def test_writing_into_a_missing_directory_is_a_storage_error(tmp_path):
    with pytest.raises(StorageError, match="cannot be written"):
        files.write_bytes_atomic(str(tmp_path / "no" / "dir" / "x.jsonl"), b"x")


def test_stdin_is_read_with_dash(cli):
    result = cli("validate", "-", "--format", "json", stdin=LABELS)
    assert result.code == 0, result.stderr
    assert '"source": "<stdin>"' in result.stdout


def test_blocks_are_cut_at_newlines(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"".join(b'{"n":%d}\n' % i for i in range(5000)))
    blocks = list(files.iter_blocks(str(path), size=1000))
    assert b"".join(blocks) == path.read_bytes()
    assert all(block.endswith(b"\n") for block in blocks)


