"""`goldkeeper score` end to end: formats, reproducible bytes, exit codes, bad baselines."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, run_cli

BASIC = FIXTURES / "basic"
ARGS = ["score", "--judgments", str(BASIC / "judgments.jsonl"), "--run", str(BASIC / "run.jsonl"), "-k", "1,3"]


def test_identical_bytes_with_now(tmp_path):
    first = run_cli(*ARGS, "--format", "json", "--now", "2026-11-29T12:00:00Z")
    second = run_cli(*ARGS, "--format", "json", "--now", "2026-11-29T12:00:00Z", "--report", str(tmp_path / "r.json"))
    assert first.code == second.code == 0
    assert first.stdout == second.stdout == (tmp_path / "r.json").read_text()
    report = json.loads(first.stdout)
    assert report["generated_at"] == "2026-11-29T12:00:00Z"
    assert report["k"] == [1, 3]
    assert report["inputs"]["judgments"]["sha256"] == __import__("hashlib").sha256(
        (BASIC / "judgments.jsonl").read_bytes()).hexdigest()


def test_source_date_epoch_fixes_the_time(monkeypatch):
    import os
    import subprocess
    import sys
    env = dict(os.environ, SOURCE_DATE_EPOCH="1764417600")
    out = subprocess.run([sys.executable, "-m", "goldkeeper", *ARGS, "--format", "json"], env=env,
                         capture_output=True, text=True)
    assert json.loads(out.stdout)["generated_at"] == "2025-11-29T12:00:00Z"


def test_judgments_as_qrels_and_run_as_trec(tmp_path):
    qrels = tmp_path / "j.qrels"
    qrels.write_text(run_cli("convert", str(BASIC / "judgments.jsonl"), "--to", "qrels").stdout)
    trec = tmp_path / "r.trec"
    trec.write_text(run_cli("convert", str(BASIC / "run.jsonl"), "--to", "trec-run").stdout)
    a = json.loads(run_cli(*ARGS, "--format", "json").stdout)
    b = json.loads(run_cli("score", "--judgments", str(qrels), "--run", str(trec), "-k", "1,3", "--format", "json").stdout)
    assert a["metrics"] == b["metrics"]
    assert a["per_query"] == b["per_query"]


@pytest.mark.parametrize(("content", "message"), [
    (b"not json", "not valid JSON"),
    (b"[]", "a report is an object"),
    (b'{"spec_version": "1"}', "not a goldkeeper/retrieval-eval report"),
])
def test_a_malformed_baseline_is_exit_2(tmp_path, content, message):
    path = tmp_path / "baseline.json"
    path.write_bytes(content)
    result = run_cli(*ARGS, "--gate", "recall@3:-0.1", "--baseline", str(path))
    assert result.code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_baseline_from_the_reference_implementation_works(tmp_path):
    import subprocess
    import sys
    ref = tmp_path / "ref.json"
    subprocess.run([sys.executable, "-m", "retrieval_eval.cli", "score", "--judgments", str(BASIC / "judgments.jsonl"),
                    "--run", str(BASIC / "run.jsonl"), "-k", "3", "--out", str(ref)], capture_output=True)
    if not ref.exists():  # the reference CLI module is importable as retrieval_eval.cli
        pytest.fail("the reference did not write its report")
    result = run_cli(*ARGS, "--gate", "recall@3:-0.0", "--baseline", str(ref), "--format", "json")
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["verdict"]["gates"][0]["baseline"] == 0.5


def test_bad_gate_and_bad_k_are_usage_errors():
    assert "did you mean 'recall'" in run_cli(*ARGS, "--gate", "recal@3:0.5").stderr
    assert run_cli(*ARGS, "--gate", "recal@3:0.5").code == 2
    assert run_cli(*ARGS[:-2], "-k", "0").code == 2
    assert run_cli(*ARGS, "--threshold", "0").code == 2


def test_markdown_and_text_outputs():
    md = run_cli(*ARGS, "--format", "markdown", "--gate", "recall@3:0.9")
    assert md.code == 1
    assert md.stdout.startswith("### ❌ goldkeeper: FAIL")
    assert "| recall | 0.0000 [0.0000, 0.8419] | 0.5000 [0.0126, 0.9874] |" in md.stdout  # exact CP intervals, n=2
    text = run_cli(*ARGS)
    assert "PASS" in text.stdout and "recall" in text.stdout


def test_the_text_report_keeps_the_strata_values_aligned():
    """The worst stratum's mark has a column of its own, so the values line up."""
    examples = __import__("goldkeeper.examples", fromlist=["x"]).__path__[0]
    text = run_cli("score", "-j", f"{examples}/judgments.jsonl", "-r", f"{examples}/run.jsonl", "-k", "3").stdout
    lines = text[text.index("recall@3 by stratum"):].splitlines()[3:6]
    assert [line.split()[0] for line in lines] == ["legal", "account", "billing"]
    assert len({line.index("]") for line in lines}) == 1, lines  # every interval ends in one column
    assert lines[0].rstrip().endswith("worst") and "worst" not in "".join(lines[1:])


def test_the_strata_tables_show_the_metric_of_each_worst_stratum_gate():
    """Besides recall at the first cutoff (the report's ``worst_stratum``), the strata tables
    show each metric a ``worst-stratum`` gate names, with its own worst stratum marked."""
    examples = __import__("goldkeeper.examples", fromlist=["x"]).__path__[0]
    args = ("score", "-j", f"{examples}/judgments.jsonl", "-r", f"{examples}/run.jsonl", "-k", "3", "--no-intervals",
            "--gate", "worst-stratum:mrr@3:0", "--gate", "worst-stratum:recall@3:0")
    strata = json.loads(run_cli(*args, "--format", "json").stdout)["per_stratum"]
    lowest = {metric: min((s["metrics"][metric]["value"], name) for name, s in strata.items() if s["n"])[1]
              for metric in ("recall@3", "mrr@3")}
    md = run_cli(*args, "--format", "markdown").stdout
    assert "| stratum | n | recall@3 | mrr@3 |" in md
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[2:] for line in md.splitlines()
            if line.startswith("| ") and line.split(" | ")[0][2:] in strata}
    assert [name for name, cells in rows.items() if cells[0].endswith("(worst)")] == [lowest["recall@3"]]
    assert [name for name, cells in rows.items() if "(worst)" in cells[1]] == [lowest["mrr@3"]]
    text = run_cli(*args).stdout
    table = text[text.index("recall@3 by stratum"):].splitlines()
    assert "mrr@3" in table[1]
    marks = {line.split()[0]: line.split("│")[-1].strip() for line in table[3:3 + len(strata)]}
    assert "mrr@3" in marks[lowest["mrr@3"]] and "recall@3" in marks[lowest["recall@3"]]
    assert sum(bool(mark) for mark in marks.values()) == len(set(lowest.values()))


def test_no_stratum_is_marked_worst_when_all_are_equal(tmp_path):
    """Two strata with the same recall: neither is the worst, in markdown and in text."""
    judgments = tmp_path / "j.jsonl"
    judgments.write_text("".join(json.dumps({"query_id": q, "query": q, "doc_uri": d, "relevance": 1, "stratum": s}) + "\n"
                                 for q, d, s in (("q1", "a", "one"), ("q2", "b", "two"))))
    run = tmp_path / "r.jsonl"
    run.write_text('{"query_id": "q1", "ranking": ["a"]}\n{"query_id": "q2", "ranking": ["b"]}\n')
    md = run_cli("score", "-j", str(judgments), "-r", str(run), "-k", "1", "--format", "markdown").stdout
    assert "| one | 1 | 1.0000 |" in md and "| two | 1 | 1.0000 |" in md and "worst" not in md
    assert "worst" not in run_cli("score", "-j", str(judgments), "-r", str(run), "-k", "1").stdout
    run.write_text('{"query_id": "q1", "ranking": ["a"]}\n{"query_id": "q2", "ranking": ["x"]}\n')
    assert "| two | 1 | 0.0000 (worst) |" in run_cli("score", "-j", str(judgments), "-r", str(run), "-k", "1",
                                                       "--format", "markdown").stdout
