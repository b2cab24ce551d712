"""Shared helpers: run the real `goldkeeper` command in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "spec" / "fixtures"


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> Result:
    """Run ``python -m goldkeeper ARGS`` exactly as a user's shell would, no stdin by default."""
    proc = subprocess.run(
        [sys.executable, "-m", "goldkeeper", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=cwd,
        timeout=120,
    )
    return Result(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def trec_eval_dir() -> Path:
    """trec_eval's own test collection, shipped in shared/ beside the repository."""
    for base in (REPO.parent / "shared", REPO.parent.parent / "shared"):
        candidate = base / "data" / "trec_eval"
        if (candidate / "qrels.test").is_file():
            return candidate
    pytest.fail("shared/data/trec_eval not found beside the repository")
