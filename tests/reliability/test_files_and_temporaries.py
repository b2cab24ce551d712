"""Issue 26, class 8: files goldkeeper writes follow the umask like any Unix tool's, a
rewritten file keeps its mode, and the temporaries of writers killed mid-write are removed
by the next writer of the same target (never one that is still writing)."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

LIFECYCLE = Path(__file__).resolve().parents[2] / "src" / "goldkeeper" / "examples" / "lifecycle"


def _goldkeeper(*args: str, cwd: Path, umask: int = 0o022) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "goldkeeper", *args], cwd=cwd, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=300, preexec_fn=lambda: os.umask(umask))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_files_follow_the_umask(tmp_path, umask):
    assert _goldkeeper("example", "ex", cwd=tmp_path, umask=umask).returncode == 0
    ex = tmp_path / "ex"
    assert _goldkeeper("score", "-j", "judgments.jsonl", "-r", "run.jsonl", "--report", "report.json", cwd=ex,
                       umask=umask).returncode == 0
    assert _goldkeeper("snapshot", str(LIFECYCLE / "chunks-v2.jsonl"), "--chunker", "sentences/v2", "-o", "v2.json",
                       cwd=ex, umask=umask).returncode == 0
    assert _goldkeeper("snapshot", str(LIFECYCLE / "chunks-v2.jsonl"), "--chunker", "sentences/v2", "--sharded",
                       "-o", "shards", cwd=ex, umask=umask).returncode == 0
    shutil.copy(LIFECYCLE / "judgments.jsonl", ex / "lifecycle.jsonl")
    assert _goldkeeper("drift", "-j", "lifecycle.jsonl", "-c", "v2.json", "--fix", "--out", "fixed.jsonl",
                       "--queue", "queue.jsonl", cwd=ex, umask=umask).returncode == 1
    written = [ex / name for name in ("judgments.jsonl", "report.json", "v2.json", "fixed.jsonl", "queue.jsonl")]
    written += sorted((ex / "shards").iterdir())
    assert {p.name: _mode(p) for p in written} == {p.name: 0o666 & ~umask for p in written}


def test_a_file_rewritten_in_place_keeps_its_mode(tmp_path):
    shutil.copy(LIFECYCLE / "judgments.jsonl", tmp_path / "judgments.jsonl")
    assert _goldkeeper("snapshot", str(LIFECYCLE / "chunks-v2.jsonl"), "--chunker", "sentences/v2", "-o", "v2.json",
                       cwd=tmp_path).returncode == 0
    os.chmod(tmp_path / "judgments.jsonl", 0o640)
    before = (tmp_path / "judgments.jsonl").read_bytes()
    assert _goldkeeper("drift", "-j", "judgments.jsonl", "-c", "v2.json", "--fix", "--in-place",
                       cwd=tmp_path).returncode == 1
    assert (tmp_path / "judgments.jsonl").read_bytes() != before and _mode(tmp_path / "judgments.jsonl") == 0o640


def _left_by_a_killed_writer(target: Path) -> Path:
    """A temporary made by a real writer process that was then killed, before its rename."""
    code = ("import os, signal, sys; from goldkeeper.io.files import temporary_beside; "
            "fd, name = temporary_beside(sys.argv[1]); os.write(fd, b'half a file'); print(name, flush=True); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    done = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, timeout=60)
    assert done.returncode == -9
    left = Path(done.stdout.decode().strip())
    assert left.exists() and left.parent == target.parent
    return left


def test_the_next_writer_removes_what_a_killed_writer_left(tmp_path):
    shutil.copy(LIFECYCLE / "judgments.jsonl", tmp_path / "judgments.jsonl")
    assert _goldkeeper("snapshot", str(LIFECYCLE / "chunks-v2.jsonl"), "--chunker", "sentences/v2", "-o", "v2.json",
                       cwd=tmp_path).returncode == 0
    killed = [_left_by_a_killed_writer(tmp_path / "judgments.jsonl") for _ in range(3)]
    host = socket.gethostname().replace("-", "_")
    alive = tmp_path / f".judgments.jsonl.goldkeeper-{host}-{os.getpid()}-0000.tmp"  # this test is still running
    elsewhere = tmp_path / ".judgments.jsonl.goldkeeper-otherhost-1-0000.tmp"  # another machine's (shared disk)
    # A writer of another target in the directory that died: garbage too (a rerun may write
    # under a later name than the attempt that was killed, and would never meet it).
    dead = killed[0].name.split("-")[-2]
    other_target = tmp_path / f".queue.jsonl.goldkeeper-{host}-{dead}-0000.tmp"
    for path in (alive, elsewhere, other_target):
        path.write_bytes(b"x")
    assert _goldkeeper("drift", "-j", "judgments.jsonl", "-c", "v2.json", "--fix", "--in-place",
                       cwd=tmp_path).returncode == 1
    assert not any(path.exists() for path in killed) and not other_target.exists()
    assert alive.exists() and elsewhere.exists()
