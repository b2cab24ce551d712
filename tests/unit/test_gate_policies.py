"""rag-eval-gate's gate policies as flags, sugar over goldkeeper's gate expressions, and a
summarized metric (repeated samples) gated by its interval's lower bound."""

from __future__ import annotations

import json

import pytest

from goldkeeper.core.summary import summarize
from tests.conftest import FIXTURES, run_cli

BASIC = FIXTURES / "basic"
SCORE = ["score", "-j", str(BASIC / "judgments.jsonl"), "-r", str(BASIC / "run.jsonl"), "--format", "json",
         "--now", "2026-01-01T00:00:00Z"]


def _verdict(*args: str) -> tuple[int, dict]:
    result = run_cli(*SCORE, *args)
    assert result.code in (0, 1), result.stderr
    return result.code, json.loads(result.stdout)["verdict"]


@pytest.mark.parametrize(("policy", "gates"), [
    ("point", ["recall@5:0.4", "mrr@10:0.2"]),
    ("ci-lower", ["recall@5:ci-lower:0.4", "mrr@10:ci-lower:0.2"]),
    ("sequential", ["recall@5:sequential:0.4", "mrr@10:sequential:0.2"]),
])
def test_a_policy_is_the_gates_it_stands_for(policy, gates):
    flags = _verdict("--gate-policy", policy, "--min-recall5", "0.4", "--min-mrr10=0.2")
    spelled = _verdict(*(arg for gate in gates for arg in ("--gate", gate)))
    assert flags == spelled
    assert [g["expression"] for g in flags[1]["gates"]] == gates


def test_point_is_the_default_policy_and_names_may_drop_their_underscore():
    _, verdict = _verdict("--min-hitrate5", "0.5", "--min-hit_rate3", "0.5", "--min-ndcglinear10", "0.1")
    assert [g["expression"] for g in verdict["gates"]] == ["hit_rate@5:0.5", "hit_rate@3:0.5", "ndcg_linear@10:0.1"]


def test_regression_adds_the_paired_test_against_the_baseline(tmp_path):
    baseline = tmp_path / "baseline.json"
    run_cli(*SCORE, "--report", str(baseline))
    code, verdict = _verdict("--gate-policy", "regression", "--min-recall5", "0.4", "--baseline", str(baseline))
    assert [g["expression"] for g in verdict["gates"]] == ["recall@5:0.4", "recall@5:regression"]
    assert code == (0 if verdict["status"] == "PASS" else 1)


@pytest.mark.parametrize(("args", "message"), [
    (["--min-recal5", "0.4"], "error: no such option: --min-recal5; thresholds are --min-<metric><k>, e.g. --min-recall5 0.9\n"),
    (["--gate-policy", "point"], "error: --gate-policy: needs at least one --min-<metric><k> threshold, e.g. --min-mrr10 0.85\n"),
    (["--min-mrr10"], "error: --min-mrr10: needs a threshold from 0 to 1\n"),
    (["--min-mrr10", "1.5"], "error: gate 'mrr@10:1.5': the threshold must be from 0 to 1, got 1.5\n"),
    (["stray"], "error: unexpected argument: stray\n"),
], ids=["unknown-metric", "policy-without-threshold", "no-value", "out-of-range", "stray-argument"])
def test_bad_threshold_flags_are_refused(args, message):
    result = run_cli(*SCORE, *args)
    assert (result.code, result.stderr) == (2, message)


def test_a_summarized_metric_is_reported_and_gated_by_its_lower_bound(tmp_path):
    samples = [0.82, 0.85, 0.88, 0.86, 0.84]
    as_json = tmp_path / "faithfulness.json"
    as_json.write_text(json.dumps(samples))
    as_lines = tmp_path / "faithfulness.txt"
    as_lines.write_text("".join(f"{v}\n" for v in samples))
    for path in (as_json, as_lines):
        result = run_cli(*SCORE, "--measurement", f"faithfulness={path}", "--gate", "faithfulness:ci-lower:0.8")
        report = json.loads(result.stdout)
        expected = summarize(samples).model_dump(exclude_none=True)
        assert report["measurements"]["faithfulness"] == json.loads(json.dumps(expected))
        assert report["verdict"]["gates"] == [{"expression": "faithfulness:ci-lower:0.8", "status": "PASS",
                                               "observed": expected["ci"][0]}]
    failing = run_cli(*SCORE, "--measurement", f"faithfulness={as_json}", "--gate", "faithfulness:ci-lower:0.83")
    assert failing.code == 1
    assert "faithfulness lower bound is 0.8222, below 0.83" in json.loads(failing.stdout)["verdict"]["reasons"]
    text = run_cli(*SCORE[:-4], "--measurement", f"faithfulness={as_json}")
    assert "faithfulness: 0.8500 [0.8222, 0.8778] (mean of 5 samples, Student-t interval)" in text.stdout
    absent = run_cli(*SCORE, "--gate", "faithfulness:ci-lower:0.8")
    assert absent.code == 1 and "metric 'faithfulness' not present" in absent.stdout


@pytest.mark.parametrize(("spec", "content", "message"), [
    ("recall=f", "[1]", "--measurement: expected NAME=SAMPLES_FILE"),
    ("faith", "[1]", "--measurement: expected NAME=SAMPLES_FILE"),
    ("faith=f", "0.8\nhigh\n", "f:2: sample: must be a finite number, got \"high\""),
    ("faith=f", "[0.8, NaN]", "f: samples[1]: must be a finite number, got nan"),
    ("faith=f", "\n", "f: samples: holds no sample, got nothing"),
], ids=["a-metrics-name", "no-file", "not-a-number", "nan", "empty"])
def test_bad_samples_are_refused_with_the_file_and_line(tmp_path, spec, content, message):
    (tmp_path / "f").write_text(content)
    result = run_cli(*SCORE, "--measurement", spec, cwd=tmp_path)
    assert result.code == 2
    assert message in result.stderr
