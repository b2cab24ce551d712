"""Every numeric option of every command at its extremes (issue 42, item 8): 0, a negative,
NaN, infinities, 1e12 and a number no float holds. Each either runs (the value is allowed)
or is refused in one line that names the option, with exit 2; never an internal error, a
traceback, a hang or a run that tries to allocate what the value asks for.

The options are found on the command tree itself, so an option added later is tried too;
each command runs on the example's files (a real invocation, not only a parse)."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import run_cli

EXTREMES = ("0", "-1", "nan", "-1e400", "1e12", "1e400", "9" * 40)
NUMERIC = ("int", "float", "int range", "float range", "integer", "integer range")

#: A valid invocation of each command that has numeric options, on the example's files.
BASE = {
    "drift": ["-j", "judgments.jsonl", "-c", "corpus.json"],
    "snapshot": ["chunks.jsonl", "--chunker", "c/1", "--out", "snap.json"],
    "judge": ["queue.jsonl", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", "answers.jsonl"],
    "id": ["--text", "hello"],
    "score": ["-j", "judgments.jsonl", "-r", "run.jsonl"],
    "eval": ["judgments.jsonl", "--backend", "run-file", "--run-file", "run.jsonl", "--quiet"],
    "compare": ["-j", "judgments.jsonl", "-r", "run.jsonl", "-r", "run-b.jsonl"],
    "power": ["judgments.jsonl"],
    "audit": ["-n", "10", "-v", "0.8"],
    "agreement": ["judgments.jsonl"],
    "calibrate": ["-j", "judgments.jsonl", "-r", "scored.trec"],
    "suite init": ["extreme", "--storage", "file://{d}/store", "--judgments", "judgments.jsonl", "--run", "run.jsonl"],
    "suite set": ["nightly", "--storage", "file://{d}/store", "--judge-url", "http://127.0.0.1:9/v1",
                  "--judge-model", "m"],
}


def _options():
    import typer.main

    from goldkeeper.cli import app

    def walk(group, prefix=""):
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from walk(command, f"{prefix}{name} ")
            else:
                yield f"{prefix}{name}", command

    for name, command in walk(typer.main.get_command(app)):
        for param in command.params:
            if getattr(param.type, "name", "") in NUMERIC and param.opts[0].startswith("-"):
                yield name, param.opts[0], tuple(param.opts)


OPTIONS = list(_options())


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("extremes")
    assert run_cli("example", str(folder)).code == 0
    (folder / "run-b.jsonl").write_text((folder / "run.jsonl").read_text())
    (folder / "queue.jsonl").write_text("")
    corpus = json.loads((folder / "corpus.json").read_text())
    (folder / "chunks.jsonl").write_text("".join(json.dumps({k: c[k] for k in ("doc_uri", "ordinal", "text")}) + "\n"
                                                 for c in corpus["chunks"]))
    runs = [json.loads(line) for line in (folder / "run.jsonl").read_text().splitlines()]
    (folder / "scored.trec").write_text("".join(f"{r['query_id']} Q0 {doc} {rank + 1} {1 - rank / 10} x\n"
                                                for r in runs for rank, doc in enumerate(r["ranking"])))
    assert run_cli("suite", "init", "nightly", "--storage", f"file://{folder}/store", "--judgments",
                   str(folder / "judgments.jsonl"), "--run", str(folder / "run.jsonl")).code == 0
    return folder


def test_every_numeric_option_is_found_and_has_a_valid_invocation():
    commands = {command for command, _, _ in OPTIONS}
    assert commands <= set(BASE), commands - set(BASE)
    assert len(OPTIONS) >= 30  # the count when this was written: a regression in the walk would drop it


def _try(folder: Path, command: str, option: str, value: str) -> tuple[str, str, str, int, str]:
    base = [part.replace("{d}", str(folder)) for part in BASE[command]]
    argv = [*command.split(), *[p for i, p in enumerate(base) if p != option and (i == 0 or base[i - 1] != option)],
            option, value]
    try:
        done = subprocess.run([sys.executable, "-m", "goldkeeper", *argv], capture_output=True, text=True,
                              cwd=folder, timeout=90, input="")
    except subprocess.TimeoutExpired:
        return command, option, value, -1, "ran past 90 s"
    return command, option, value, done.returncode, done.stderr


def test_every_numeric_option_at_its_extremes_runs_or_is_refused_in_one_line_naming_it(folder):
    cases = [(command, option, value) for command, option, _ in OPTIONS for value in EXTREMES
             if not (option in BASE[command] and value == BASE[command][BASE[command].index(option) + 1])]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda case: _try(folder, *case), cases))
    names = {(command, option): opts for command, option, opts in OPTIONS}
    wrong = []
    for command, option, value, code, stderr in results:
        lines = stderr.strip().splitlines()
        if code in (0, 1):
            continue
        # named by its flag, or by its long name as the command's own words have it ("audit: value must be")
        named = any(f"'{opt}'" in stderr or f"{opt}:" in stderr or f"{opt} " in stderr
                    or (opt.startswith("--") and f": {opt[2:]} " in stderr) for opt in names[command, option])
        if code != 2 or len(lines) != 1 or not lines[0].startswith("error: ") or not named:
            wrong.append(f"{command} {option} {value}: exit {code}: {stderr.strip()[:200]}")
    assert not wrong, "\n".join(wrong)
