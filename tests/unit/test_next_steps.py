"""The commands the next steps suggest run as printed (issue 39, item 5): a FAIL whose run
differs from the previous evaluation's suggests `goldkeeper compare` of the two, an undecided
verdict `goldkeeper power`, each with the files it names, quoted for a shell."""

from __future__ import annotations

import json
import re
import shlex

from goldkeeper.dashboard import summary_markdown
from tests.conftest import run_cli
from tests.one_road import NOW, examples


def _report(folder, run: str, *gates: str) -> dict:
    result = run_cli("score", "-j", str(folder / "judgments.jsonl"), "-r", str(folder / run), "-k", "1,5", "--now", NOW,
                     "--format", "json", *(a for g in gates for a in ("--gate", g)), cwd=folder)
    assert result.code in (0, 1), result.stderr
    return json.loads(result.stdout)


def _commands(markdown: str) -> list[str]:
    return re.findall(r"`(goldkeeper [^`]+)`", markdown)


def test_a_fail_suggests_comparing_with_the_previous_run_and_the_command_runs(tmp_path):
    folder = tmp_path / "with space"  # paths a shell must see quoted
    folder.mkdir()
    examples(folder)
    document = _report(folder, "run-reversed.jsonl", "recall@1:0.99")
    point = {"previous": 0, "delta": {"recall@1": -0.1}, "previous_entry": {"run_url": str(folder / "run.jsonl"),
                                                                            "metrics": {}}}
    summary = summary_markdown("s", document, report_link=None, report_location="r.json", point=point)
    (compare,) = [c for c in _commands(summary) if c.startswith("goldkeeper compare")]
    words = shlex.split(compare)
    assert words[words.index("-r") + 1] == str(folder / "run.jsonl")
    done = run_cli(*words[1:], cwd=tmp_path)
    assert done.code == 0 and "recall@1" in done.stdout, done.stderr


def test_an_undecided_verdict_suggests_power_on_the_judgments_and_the_command_runs(tmp_path):
    examples(tmp_path)
    document = _report(tmp_path, "run.jsonl", "recall@5:ci-lower:0.5")
    document["verdict"]["status"] = "INDETERMINATE"  # what a gate the interval cannot settle gives
    summary = summary_markdown("s", document, report_link=None, report_location="r.json")
    (power,) = [c for c in _commands(summary) if c.startswith("goldkeeper power") and " -m " in c]
    assert shlex.split(power)[-2:] == ["-m", "recall@5"]
    done = run_cli(*shlex.split(power)[1:], cwd=tmp_path)
    assert done.code == 0, done.stderr
    for command in _commands(summary):  # the resolution line's too
        assert run_cli(*shlex.split(command)[1:], cwd=tmp_path).code == 0, command
