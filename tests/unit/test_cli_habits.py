"""retrieval-eval's CLI habits, kept: --json, --color (NO_COLOR honoured), a help command,
validate --judgments, a next step after drift, TREC qrels named .tsv."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, run_cli

DRIFT = FIXTURES / "drift"
JUDGMENTS = str(DRIFT / "judgments.jsonl")
CORPUS = str(DRIFT / "corpus.json")


@pytest.mark.parametrize("where", ["after", "before"])
def test_json_is_format_json_before_or_after_the_command(where):
    plain = run_cli("validate", JUDGMENTS, "--format", "json")
    args = ["validate", JUDGMENTS, "--json"] if where == "after" else ["--json", "validate", JUDGMENTS]
    aliased = run_cli(*args)
    assert (aliased.code, aliased.stdout) == (plain.code, plain.stdout)
    assert json.loads(aliased.stdout)["ok"] is True


def test_nothing_after_a_double_dash_is_read_as_an_option():
    result = run_cli("validate", "--", "--json")
    assert result.code == 2 and "--json" in result.stderr and "No such option" not in result.stderr


def _drift_output(*args: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-m", "goldkeeper", *args, "drift", "-j", JUDGMENTS, "-c", CORPUS],
                          capture_output=True, env={**os.environ, **env}, timeout=120)
    return proc.stdout.decode()


def test_color_always_never_and_auto_with_no_color():
    quiet = {"NO_COLOR": "", "FORCE_COLOR": ""}
    assert "\x1b[" in _drift_output("--color", "always", env={"NO_COLOR": "1"})  # always beats NO_COLOR
    assert "\x1b[" not in _drift_output("--color=never", env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in _drift_output("--color", "auto", env=quiet)  # piped: no colour
    green = "\x1b[32m"  # VALID's count
    assert green in _drift_output(env={"FORCE_COLOR": "1"})
    assert green not in _drift_output(env={"FORCE_COLOR": "1", "NO_COLOR": "1"})  # NO_COLOR: no colour, dim stays
    bad = run_cli("--color", "sometimes", "validate", JUDGMENTS)
    assert (bad.code, bad.stderr) == (2, "error: --color: must be one of auto, always, never, got 'sometimes'\n")


@pytest.mark.parametrize(("args", "first_line"), [
    ([], "Usage: goldkeeper [OPTIONS] COMMAND [ARGS]..."),
    (["drift"], "Usage: goldkeeper drift [OPTIONS]"),
    (["queue", "apply"], "Usage: goldkeeper queue apply [OPTIONS]"),
])
def test_help_as_a_command(args, first_line):
    result = run_cli("help", *args)
    assert result.code == 0
    assert result.stdout.splitlines()[0] == first_line


def test_help_on_an_unknown_command_suggests_one():
    result = run_cli("help", "drfit")
    assert (result.code, result.stderr) == (2, "error: help: no command 'drfit', did you mean 'drift'?\n")


def test_validate_takes_judgments_as_the_reference_names_it():
    assert run_cli("validate", "--judgments", JUDGMENTS).stdout == run_cli("validate", JUDGMENTS).stdout
    both = run_cli("validate", JUDGMENTS, "-j", JUDGMENTS)
    assert both.code == 2 and "once" in both.stderr


def test_drift_says_what_to_run_next(tmp_path):
    shown = run_cli("drift", "-j", JUDGMENTS, "-c", CORPUS).stdout.splitlines()
    nexts = [line for line in shown if line.startswith("next: ")]
    assert nexts == [f"next: goldkeeper drift -j {JUDGMENTS} -c {CORPUS} --fix, to re-anchor the 1 recoverable label(s)",
                     f"next: goldkeeper drift -j {JUDGMENTS} -c {CORPUS} --queue queue.jsonl, to list with candidates "
                     "what waits for a person: 2 (2 to re-judge)"]
    fixed, queue = tmp_path / "fixed.jsonl", tmp_path / "queue.jsonl"
    after = run_cli("drift", "-j", JUDGMENTS, "-c", CORPUS, "--fix", "--out", str(fixed), "--queue", str(queue))
    assert after.stdout.splitlines()[-1] == (f"next: answer {queue}, where 2 wait for a person (2 to re-judge); then goldkeeper queue apply -j {fixed} --queue {queue} "
                                             f"--answers answers.jsonl -c {CORPUS}")
    clean = FIXTURES / "merge"
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes((clean / "judgments.jsonl").read_bytes())
    run_cli("drift", "-j", str(labels), "-c", str(clean / "corpus.json"), "--fix")
    done = run_cli("drift", "-j", str(labels), "-c", str(clean / "corpus.json"))
    assert done.stdout.splitlines()[-1] == f"next: goldkeeper score -j {labels} -r RUN, to score a run on labels that hold"


def test_trec_qrels_named_tsv_are_read_as_trec_by_their_four_columns(tmp_path, trec_eval_dir):
    qrels = tmp_path / "qrels.tsv"
    qrels.write_bytes((trec_eval_dir / "qrels.test").read_bytes())
    run = str(trec_eval_dir / "results.test")
    as_tsv = run_cli("score", "-j", str(qrels), "-r", run, "--no-intervals", "--format", "json", "--now", "2026-01-01T00:00:00Z")
    as_qrels = run_cli("score", "-j", str(trec_eval_dir / "qrels.test"), "-r", run, "--no-intervals", "--format", "json",
                       "--now", "2026-01-01T00:00:00Z")
    assert as_tsv.code == as_qrels.code and as_tsv.code in (0, 1), as_tsv.stderr
    assert json.loads(as_tsv.stdout)["metrics"] == json.loads(as_qrels.stdout)["metrics"]
    beir = run_cli("score", "-j", str(FIXTURES / "qrels" / "beir.tsv"), "-r", run, "--no-intervals")
    assert "header" not in beir.stderr  # BEIR's own .tsv still reads as BEIR


def _commands():
    """Every command and group subcommand, as the user types it."""
    import typer.main

    from goldkeeper.cli import app

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if hasattr(command, "commands"):
            yield from (f"{name} {sub}" for sub in command.commands)
        else:
            yield name


@pytest.mark.parametrize("command", list(_commands()))
def test_every_commands_help_ends_with_its_exit_codes(command):
    """Issue 42, item 6; restates retrieval-eval's tests/test_cli.py
    TestInvocation::test_every_command_documents_itself for every command, not four."""
    from goldkeeper.cli.app import EXIT_ONE

    result = run_cli(*command.split(), "--help")
    assert result.code == 0, result.stderr
    assert f"Usage: goldkeeper {command}" in result.stdout
    section = result.stdout[result.stdout.index("Exit codes:"):].splitlines()
    codes = [line.split()[0] for line in section[1:] if line.strip()]
    assert codes == (["0", "1", "2", "3"] if command in EXIT_ONE else ["0", "2", "3"]), section
    if command in EXIT_ONE:
        said = " ".join(line.strip() for line in section[2:] if not line.strip()[:1].isdigit() or line is section[2])
        assert said.startswith("1  ") and " ".join(EXIT_ONE[command].split()[:6]) in said, section


def test_exit_one_names_commands_that_exist():
    from goldkeeper.cli.app import EXIT_ONE

    assert set(EXIT_ONE) <= set(_commands())


def test_drift_points_at_fix_only_when_there_is_something_to_fix(tmp_path):
    """Restates retrieval-eval's tests/test_cli.py TestDrift::test_points_at_fix_only_when_there_is_something_to_fix."""
    recoverable = run_cli("drift", "-j", str(FIXTURES / "drift" / "judgments.jsonl"),
                          "-c", str(FIXTURES / "drift" / "corpus.json"))
    assert "--fix, to re-anchor the 1 recoverable label(s)" in recoverable.stdout
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps({"query_id": "c1", "doc_uri": "wiki://refunds",
                                 "chunk_id": "c1:d577264d22f91060a5abc8d3df2b1cea", "relevance": 2,
                                 "labeled_by": "human:ana"}) + "\n")
    held = run_cli("drift", "-j", str(clean), "-c", str(FIXTURES / "merge" / "corpus.json"))
    assert held.code == 0, held.stdout + held.stderr
    assert "--fix" not in held.stdout
    # once fixed, what is left needs a person: pointed at the queue, not at --fix again
    fixed = run_cli("drift", "-j", str(recoverable_copy(tmp_path)), "-c", str(FIXTURES / "drift" / "corpus.json"),
                    "--fix")
    assert fixed.code == 1 and "--fix" not in "\n".join(line for line in fixed.stdout.splitlines() if line.startswith("next:"))


def recoverable_copy(tmp_path):
    copy = tmp_path / "fixable.jsonl"
    copy.write_text((FIXTURES / "drift" / "judgments.jsonl").read_text())
    return copy
