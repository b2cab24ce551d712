"""retrieval-eval's own tests/test_cli.py (0.1.1, from its sdist), restated against goldkeeper
(issue 42): each test names the peer test it restates, on the reference package's own
fixtures. The deliberate difference throughout is the wording: goldkeeper says
``error: <where>: <what is wrong>, got <what>`` (STYLE.md) where retrieval-eval says
``error  <what>``; each test asserts goldkeeper's words and the behaviour both share (exit
code, one line, the option or file named)."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

from tests.conftest import run_cli

SPEC = Path(str(resources.files("retrieval_eval") / "spec" / "fixtures"))


def fixture(*parts: str) -> str:
    return str(SPEC.joinpath(*parts))


def test_version_prints_alone():
    """TestInvocation::test_version_prints_alone."""
    result = run_cli("--version")
    assert result.code == 0 and result.stdout.startswith("goldkeeper ") and result.stdout.count("\n") == 1


def test_help_is_zero_and_a_bare_call_is_two():
    """TestInvocation::test_help_is_zero_and_a_bare_call_is_two."""
    assert run_cli("--help").code == 0 and run_cli("help").code == 0
    bare = run_cli()
    assert bare.code == 2 and "Usage" in bare.stdout


def test_suggests_the_command_a_typo_meant():
    """TestInvocation::test_suggests_the_command_a_typo_meant."""
    result = run_cli("drif")
    assert result.code == 2 and result.stderr == "error: No such command 'drif'. Did you mean 'drift'?\n"


def test_names_the_offending_option():
    """TestInvocation::test_names_the_offending_option."""
    result = run_cli("drift", "--nope")
    assert result.code == 2 and result.stderr.startswith("error: No such option: --nope")
    assert result.stderr.count("\n") == 1


def test_names_missing_flags():
    """TestInvocation::test_names_missing_flags_with_the_command_that_documents_them."""
    result = run_cli("score", "--judgments", fixture("basic", "judgments.jsonl"))
    assert result.code == 2 and result.stderr == "error: Missing option '--run' / '-r'.\n"


def test_missing_file_is_one_line_never_a_traceback():
    """TestInvocation::test_missing_file_is_one_line_never_a_traceback."""
    result = run_cli("drift", "--judgments", "nope.jsonl", "--corpus", "nope.json")
    assert result.code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.endswith("cannot be read: no such file or directory\n")


def test_rejects_a_k_that_cannot_be_a_cutoff():
    """TestInvocation::test_rejects_a_k_that_cannot_be_a_cutoff."""
    result = run_cli("score", "--judgments", fixture("basic", "judgments.jsonl"), "--run", fixture("basic", "run.jsonl"),
                     "-k", "0")
    assert result.code == 2
    assert result.stderr == "error: -k: every cutoff must be a whole number from 1 to 1,000,000, got '0'\n"


def test_color_never_always_and_a_mode_it_does_not_have():
    """TestColor::test_no_color_is_honoured, ::test_color_always_overrides, ::test_rejects_a_mode_it_does_not_have."""
    args = ("validate", "--judgments", fixture("basic", "judgments.jsonl"))
    assert "\033[" not in run_cli(*args, "--color", "never").stdout
    assert "\033[" in run_cli(*args, "--color", "always").stdout
    mauve = run_cli(*args, "--color", "mauve")
    assert mauve.code == 2 and mauve.stderr == "error: --color: must be one of auto, always, never, got 'mauve'\n"


DRIFT = ("drift", "--judgments", fixture("drift", "judgments.jsonl"), "--corpus", fixture("drift", "corpus.json"))


def test_exits_one_on_decay():
    """TestDrift::test_exits_one_on_decay."""
    result = run_cli(*DRIFT)
    assert result.code == 1
    assert "RE_ANCHORABLE" in result.stdout and "1 recoverable, 2 need a person" in result.stdout


def test_rewrites_recoverable_labels_in_place_and_a_second_pass_changes_nothing(tmp_path):
    """TestDrift::test_rewrites_recoverable_labels_in_place."""
    path = tmp_path / "judgments.jsonl"
    shutil.copy(fixture("drift", "judgments.jsonl"), path)
    args = ("drift", "--judgments", str(path), "--corpus", fixture("drift", "corpus.json"), "--fix")
    first = run_cli(*args)
    assert "re-anchored 1 label(s)" in first.stdout and "2 still need a person" in first.stdout
    after = path.read_text()
    assert after != Path(fixture("drift", "judgments.jsonl")).read_text()
    again = run_cli(*args)
    assert "re-anchored 0 label(s)" in again.stdout and path.read_text() == after


def test_json_carries_every_finding():
    """TestDrift::test_json_carries_every_finding."""
    assert len(json.loads(run_cli(*DRIFT, "--json").stdout)["findings"]) == 4


SCORE = ("score", "--judgments", fixture("strata", "judgments.jsonl"), "--run", fixture("strata", "run.jsonl"), "-k", "3")


def test_average_gate_passes_while_the_worst_stratum_fails():
    """TestScore::test_average_gate_passes_while_the_worst_stratum_fails."""
    result = run_cli(*SCORE, "--gate", "recall@3:0.5", "--gate", "worst-stratum:recall@3:0.7")
    assert result.code == 1
    assert "PASS          recall@3:0.5" in result.stdout and "FAIL          worst-stratum:recall@3:0.7" in result.stdout


def test_marks_the_weakest_query_class():
    """TestScore::test_marks_the_weakest_query_class."""
    result = run_cli(*SCORE)
    assert result.code == 0 and "legal" in result.stdout and "worst" in result.stdout


def test_writes_the_report_while_printing_for_a_human(tmp_path):
    """TestScore::test_writes_the_report_while_printing_for_a_human (goldkeeper's --report)."""
    result = run_cli(*SCORE, "--report", str(tmp_path / "report.json"))
    assert "recall@3" in result.stdout
    assert json.loads((tmp_path / "report.json").read_text())["spec_version"] == "1"


def test_warnings_exit_zero_and_errors_exit_one(tmp_path):
    """TestValidateAndConvert::test_warnings_exit_zero_and_errors_exit_one."""
    warned = run_cli("validate", "--judgments", fixture("strata", "judgments.jsonl"))
    assert warned.code == 0 and "warning" in warned.stdout
    broken = tmp_path / "no-positives.jsonl"
    broken.write_text('{"query_id":"q1","doc_uri":"d1","relevance":0}\n')
    failed = run_cli("validate", "--judgments", str(broken))
    assert failed.code == 1 and "[no-positives]" in failed.stdout


def test_qrels_goes_to_stdout_and_nothing_else():
    """TestValidateAndConvert::test_qrels_goes_to_stdout_and_nothing_else (convert --judgments, as the reference names it)."""
    result = run_cli("convert", "--judgments", fixture("basic", "judgments.jsonl"), "--to", "qrels")
    assert result.code == 0 and result.stderr == ""
    assert all(len(line.split(" ")) == 4 for line in result.stdout.strip().split("\n"))


def test_refuses_a_format_it_cannot_produce():
    """TestValidateAndConvert::test_refuses_a_format_it_cannot_produce."""
    result = run_cli("convert", "--judgments", fixture("basic", "judgments.jsonl"), "--to", "csv")
    assert result.code == 2 and result.stderr.startswith("error: Invalid value for '--to': 'csv' is not one of")
