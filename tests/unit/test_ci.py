"""CI runs exactly the README's test command, and fails when any step of it fails."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.conftest import REPO


def _readme_test_command() -> str:
    readme = (REPO / "README.md").read_text()
    (command,) = [block for block in re.findall(r"```bash\n(.*?)\n```", readme, re.S) if "pytest" in block]
    return command


def test_ci_runs_the_readmes_test_command_with_the_lint_first():
    command = _readme_test_command()
    assert command.index("ruff check") < command.index("python -m pytest")
    assert f"\n{command} || exit $?\n" in (REPO / ".ci" / "run").read_text()


@pytest.mark.parametrize(("failing", "ran"), [
    ("pip", ["pip"]),
    ("ruff", ["pip", "ruff"]),
    ("python", ["pip", "ruff", "python"]),
    (None, ["pip", "ruff", "python"]),
], ids=["install", "lint", "suite", "none"])
def test_ci_stops_and_fails_at_the_step_that_fails(tmp_path, failing, ran):
    """.ci/run in a copy of the repository with each step's program replaced by one that
    records it ran (and fails, for ``failing``): nothing after a failed step runs, and the
    script's exit code is that step's."""
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run").write_text((REPO / ".ci" / "run").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "ran.txt"
    for name in ("pip", "ruff", "python", "chromium", "fc-list"):
        code = 7 if name == failing else 0
        out = "echo 'Noto Color Emoji'" if name == "fc-list" else f"echo {name} >> {log}"
        (bin_dir / name).write_text(f"#!/bin/sh\n{out}\nexit {code}\n")
        (bin_dir / name).chmod(0o755)
    done = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "CI": "true"})
    assert done.returncode == (7 if failing else 0), done.stderr
    assert log.read_text().split() == ran
