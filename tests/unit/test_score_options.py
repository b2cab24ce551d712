"""``goldkeeper score`` read without typer (``score_command.fast_options``) means what typer reads.

The console script reads a plain ``score`` command line itself and leaves everything else to
typer. These tests hold its option table to typer's definition of the command, and check on
written and generated command lines that it either gives exactly typer's values or declines.
"""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goldkeeper import cli
from goldkeeper.score_command import (
    OPTIONS,
    REPEATED,
    SWITCHES,
    LabelsFormat,
    ReportFormat,
    ScoreOptions,
    fast_options,
)
from tests.conftest import FIXTURES


def _typer_reads(args: list[str]) -> ScoreOptions | int:
    """What typer hands the score command for ``args``, or the exit code it ends with."""
    seen: list[ScoreOptions] = []

    def capture(options: ScoreOptions) -> int:
        seen.append(options)
        return 0

    original, cli.run_score = cli.run_score, capture
    threshold = gc.get_threshold()
    try:
        with pytest.raises(SystemExit) as done:
            cli.main(["score", *args])
    finally:
        cli.run_score = original
        gc.unfreeze()  # (main sets the collector for a command's process)
        gc.set_threshold(*threshold)
    return seen[0] if seen else done.value.code


def test_the_table_is_typers_definition_of_the_command():
    from typer.main import get_command

    command = get_command(cli._narrowed("score")).commands["score"]
    params = {param.name: param for param in command.params if param.name != "help"}
    assert set(params) == set(ScoreOptions._fields)
    for name, param in params.items():
        assert param.param_type_name == "option", name
        if name == "intervals":
            assert set(param.opts) | set(param.secondary_opts) == set(SWITCHES)
            assert SWITCHES[param.opts[0]] is True and SWITCHES[param.secondary_opts[0]] is False
        else:
            assert set(param.opts) == set(OPTIONS[name][0]), name
            assert not param.secondary_opts and not param.is_flag
        assert param.multiple == (name in REPEATED), name
        assert param.required == (name not in ScoreOptions._field_defaults), name
    # Defaults, as the command receives them when an option is not given.
    plain = ["-j", "j.jsonl", "-r", "r.jsonl"]
    assert _typer_reads(plain) == fast_options(plain) == ScoreOptions("j.jsonl", "r.jsonl")


READ_ALIKE = [
    ["-j", "j.jsonl", "-r", "r.jsonl", "-k", "10", "--format", "json", "--no-intervals"],
    ["--judgments", "j", "--run", "-", "-k", "5,10", "-k", "100", "--gate", "ndcg@10:0.5", "--gate", "coverage:1"],
    ["--judgments=j", "--run=r", "--k=3", "--format=markdown", "--gate=worst-stratum:recall@3:0.1"],
    ["-j", "a", "-r", "b", "--threshold", "2", "--confidence", "0.9", "--resamples", "500", "--seed", "7"],
    ["-j", "a", "-r", "b", "--confidence", ".5", "--threshold", "007", "--seed", "0"],
    ["-j", "a", "-r", "b", "--no-intervals", "--intervals", "--format", "text", "--format", "json"],
    ["-j", "a", "-r", "b", "--judgments-format", "trec", "--run-format", "whatever", "--now", "2026-01-01T00:00:00Z"],
    ["-j", "", "-r", "b", "--baseline", "base.json", "--corpus", "s3://bucket/snap", "--report", "out=x.json"],
    ["-r", "b", "-j", "a", "-j", "c"],  # the last one given wins, as in click
    ["-j", "a", "-r", "b", "--gate", "ndcg@10:ci-lower:0.4", "--now=2026-01-01T00:00:00+02:00"],
]

#: Command lines only typer reads: help, attached or unknown options, values typer converts,
#: refuses or reads as options, missing options or values.
DECLINED = [
    [], ["--help"], ["-h"], ["-j", "a", "-r", "b", "--help"],
    ["-j", "a"], ["-r", "b"], ["-j", "a", "-r"],
    ["-ja", "-r", "b"], ["-j", "a", "-r", "b", "-k5"], ["-j=a", "-r", "b"],
    ["-j", "a", "-r", "b", "--seed", "-1"], ["-j", "a", "-r", "b", "--threshold", "+1"],
    ["-j", "a", "-r", "b", "--threshold", "1_0"], ["-j", "a", "-r", "b", "--confidence", "1e-1"],
    ["-j", "a", "-r", "b", "--confidence", "nan"], ["-j", "a", "-r", "b", "--threshold", "²"],
    ["-j", "a", "-r", "b", "--format", "JSON"], ["-j", "a", "-r", "b", "--judgments-format", "qrels"],
    ["-j", "a", "-r", "--format"], ["-j", "a", "-r", "b", "extra"], ["-j", "a", "-r", "b", "--", "x"],
    ["-j", "a", "-r", "b", "--version"], ["-j", "a", "-r", "b", "--intervals=yes"], ["-j", "a", "-r", "b", "--formats", "json"],
]


@pytest.mark.parametrize("args", READ_ALIKE)
def test_plain_command_lines_are_read_as_typer_reads_them(args):
    fast = fast_options(args)
    assert fast is not None
    assert fast == _typer_reads(args)
    assert isinstance(fast.output, ReportFormat)
    assert fast.judgments_format is None or isinstance(fast.judgments_format, LabelsFormat)


@pytest.mark.parametrize("args", DECLINED)
def test_anything_else_goes_to_typer(args):
    assert fast_options(args) is None


_TOKENS = st.sampled_from(["-j", "--judgments", "-r", "--run", "-k", "--k", "--threshold", "--gate", "--format",
                           "--judgments-format", "--confidence", "--resamples", "--seed", "--now", "--intervals",
                           "--no-intervals", "--baseline", "-", "--", "json", "trec", "JSON", "10", "5,10", "0.5",
                           "-1", "1e3", "x.jsonl", "--format=json", "--k=3", "-k3", "--help", "--bogus", ""])


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=10))
def test_generated_command_lines_are_read_as_typer_reads_them_or_declined(tokens):
    args = ["-j", "j.jsonl", "-r", "r.jsonl", *tokens]
    fast = fast_options(args)
    if fast is not None:
        assert fast == _typer_reads(args)


def test_a_plain_score_runs_without_typer():
    """The console script's score: typer's import and command building took 18-19 ms."""
    argv = ["score", "-j", str(FIXTURES / "basic" / "judgments.jsonl"), "-r", str(FIXTURES / "basic" / "run.jsonl"),
            "--format", "json", "--no-intervals"]
    code = ("import sys, json\nfrom goldkeeper import launch\n"
            f"try:\n    launch._run({argv!r})\nexcept SystemExit as done:\n    assert done.code == 0, done.code\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(__import__("json").loads(done.stderr.splitlines()[-1]))
    assert "goldkeeper.core.scoring" in loaded
    assert not {m.split(".")[0] for m in loaded} & {"typer", "click", "rich"}
    assert '"verdict"' in done.stdout


@pytest.mark.parametrize("through_typer", [False, True])
def test_an_interrupted_score_says_so_whichever_way_it_ran(monkeypatch, capsys, through_typer):
    """typer turns an interrupt inside a command into a silent exit 130; goldkeeper says it,
    on one line, with its usage code, as the typer-free path does (spec/cli.md)."""
    import goldkeeper.score_command
    from goldkeeper import launch

    def interrupt(options):
        raise KeyboardInterrupt

    monkeypatch.setattr(goldkeeper.score_command, "run_score", interrupt)
    monkeypatch.setattr(cli, "run_score", interrupt)
    args = ["score", "-j", "a", "-r", "b", *(["--seed", "-1"] if through_typer else [])]
    assert (fast_options(args[1:]) is None) == through_typer
    threshold = gc.get_threshold()
    try:
        with pytest.raises(SystemExit) as done:
            launch._run(args)
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert done.value.code == 2
    assert capsys.readouterr().err == "error: interrupted\n"
