"""Every CLI entry point that scores writes the report bytes it wrote before the evaluation
core was made one (tests/one_road.py): score, eval on run files, sequential eval."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.one_road import NOW, check, examples, many


@pytest.fixture
def folder(tmp_path):
    examples(tmp_path)
    many(tmp_path)
    return tmp_path


def _score(folder, case: str, *args: str) -> bytes:
    result = run_cli("score", "--now", NOW, "--format", "json", *args, cwd=folder)
    assert result.code in (0, 1), result.stderr
    check(case, result.stdout.encode(), folder)
    return result.stdout.encode()


def test_score_writes_the_bytes_it_wrote(folder):
    first = _score(folder, "score-examples", "-j", "judgments.jsonl", "-r", "run.jsonl",
                   "--gate", "recall@10:ci-lower:0.5", "--gate", "ndcg@10:0.3")
    (folder / "baseline.json").write_bytes(first)
    _score(folder, "score-examples-everything", "-j", "judgments.jsonl", "-r", "run-reversed.jsonl", "-k", "1,5,10",
           "--no-intervals", "--corpus", "corpus.json", "--baseline", "baseline.json", "--gate", "recall@5:-0.05",
           "--measurement", "faithfulness=judge.json", "--gate", "faithfulness:ci-lower:0.7")
    _score(folder, "score-trec", "-j", "qrels.test", "-r", "results.test", "-k", "5,10,100")
    _score(folder, "score-trec-settings", "-j", "qrels.test", "-r", "results.test", "--confidence", "0.9",
           "--resamples", "2000", "--seed", "3", "--min-ndcg10", "0.3", "--gate-policy", "ci-lower")


def _eval(folder, case: str, out: str, *args: str) -> None:
    result = run_cli("eval", "--now", NOW, "--format", "json", "--out", out, *args, cwd=folder)
    assert result.code in (0, 1), result.stderr
    for report in sorted((folder / out).glob("report-*.json")):
        check(f"{case}/{report.name}", report.read_bytes(), folder)
    if (folder / out / "comparison.json").exists():
        check(f"{case}/comparison.json", (folder / out / "comparison.json").read_bytes(), folder)


def test_eval_writes_the_bytes_it_wrote(folder):
    _eval(folder, "eval-examples", "a", "-j", "judgments.jsonl", "--backend", "run-file", "--run-file", "run.jsonl",
          "--run-file", "run-reversed.jsonl", "--gate", "recall@10:0.5", "-k", "5,10")
    _eval(folder, "eval-trec", "b", "-j", "qrels.test", "--backend", "run-file", "--run-file", "results.test",
          "-k", "10,100", "--no-intervals")
    _eval(folder, "eval-sequential", "c", "-j", "many.jsonl", "--backend", "run-file", "--run-file", "many-run.jsonl",
          "-k", "1", "--gate", "recall@1:sequential:0.5", "--no-intervals")
