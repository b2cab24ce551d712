"""rag-eval-gate's own tests/test_pipeline.py HarnessTest, GatePolicyTest and SequentialGateTest
(0.2.1, from its sdist), restated against ``goldkeeper eval`` with a Python retriever that,
like the peer's StubBackend, puts each query's document at a chosen rank and counts calls.
Each test names the peer test it restates."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

STUB = '''
def search(query, k=10, mode=""):
    with open("calls.log", "a") as log:
        log.write(mode + " " + query + "\\n")
    i = int(query.split()[-1])
    rank = {"good": 1, "broken": None, "low": 4, "graded": 1 + i % 3, "bm25": 1 if i > 1 else None}[mode]
    ranked = [f"filler-{i}-{j}" for j in range(10)]
    if rank is not None:
        ranked[rank - 1] = f"d{i}"
    return ranked
'''
QUERIES = 150  # as the peer's: a sequential gate at 0.90 needs about seventy queries to stop


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "stub.py").write_text(STUB)
    (tmp_path / "gold.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i:03d}", "query": f"query {i}", "doc_uri": f"d{i}", "relevance": 1}) + "\n"
        for i in range(QUERIES)))
    return tmp_path


def _eval(folder, modes: str, *extra: str, out: str = "out") -> tuple[int, dict, list[str]]:
    (folder / "calls.log").unlink(missing_ok=True)
    result = run_cli("eval", "-j", "gold.jsonl", "--backend", "python", "--python", "stub:search", "--modes", modes,
                     "-k", "5,10", "--out", out, "--cache", f"{out}/cache-{modes}.jsonl", "--resamples", "500",
                     "--format", "json", *extra, cwd=folder)
    assert result.code in (0, 1), result.stderr
    log = folder / "calls.log"
    return result.code, json.loads(result.stdout), log.read_text().splitlines() if log.exists() else []


def test_evaluate_scores_every_query_once(folder):
    """HarnessTest::test_evaluate_scores_every_query_once."""
    _, found, calls = _eval(folder, "good")
    assert len(calls) == QUERIES and found["systems"]["good"]["metrics"]["mrr@10"]["value"] == 1.0


def test_intervals_pick_the_method_from_the_metric_and_a_graded_one_gets_the_bootstrap(folder):
    """HarnessTest::test_intervals_pick_the_method_from_the_metric and ::test_a_graded_metric_gets_the_bootstrap."""
    _, good, _ = _eval(folder, "good")
    recall = good["systems"]["good"]["metrics"]["recall@5"]
    assert recall["ci_method"] == "clopper-pearson" and recall["ci"][0] < 1.0  # a perfect score is bounded
    _, graded, _ = _eval(folder, "graded")
    assert graded["systems"]["graded"]["metrics"]["mrr@10"]["ci_method"] == "bca"


def test_comparisons_are_holm_corrected_and_never_call_an_underpowered_win(folder):
    """HarnessTest::test_comparisons_are_holm_corrected_and_never_call_an_underpowered_win."""
    _, found, _ = _eval(folder, "bm25,good")
    (row,) = [r for r in found["comparison"]["comparisons"] if r["metric"] == "recall@5"]
    assert row["differing_pairs"] == 2 and row["verdict"] == "unresolvable" and row["p_holm"] >= row["p"]


def test_point_passes_a_good_system_and_fails_a_bad_one(folder):
    """GatePolicyTest::test_point_passes_a_good_system_and_fails_a_bad_one."""
    assert _eval(folder, "good", "--gate")[0] == 0
    assert _eval(folder, "broken", "--gate")[0] == 1


def test_ci_lower_is_strictly_harder_than_point(folder):
    """GatePolicyTest::test_ci_lower_is_strictly_harder_than_point."""
    code, found, _ = _eval(folder, "good", "--gate", "--gate-policy", "ci-lower")
    for gate in found["systems"]["good"]["verdict"]["gates"]:
        if gate["expression"].endswith(("ci-lower:0.9", "ci-lower:0.85")):
            metric = gate["expression"].split(":")[0]
            assert gate["observed"] <= found["systems"]["good"]["metrics"][metric]["value"]
    assert code == 0


def test_regression_passes_against_an_identical_baseline_and_catches_a_drop(folder):
    """GatePolicyTest::test_regression_passes_against_an_identical_baseline and ::test_regression_catches_a_drop."""
    _eval(folder, "good", "--report", "good.json", out="first")
    same, found, _ = _eval(folder, "good", "--gate", "mrr@10:regression", "--baseline", "good.json")
    assert same == 0 and found["systems"]["good"]["verdict"]["gates"][0]["status"] == "PASS"
    drop, found, _ = _eval(folder, "low", "--gate", "mrr@10:regression", "--baseline", "good.json")
    assert drop == 1 and "mrr@10 regressed by 0.7500 against the baseline" in found["systems"]["low"]["verdict"]["reasons"][0]


def test_a_good_system_is_cleared_without_spending_every_query_and_a_broken_one_fails_faster(folder):
    """SequentialGateTest::test_a_good_system_is_cleared_without_spending_every_query,
    ::test_a_broken_system_fails_faster_than_a_good_one_passes and
    ::test_the_shuffle_is_seeded_so_two_runs_agree. (The saving is calls not made.)"""
    good_code, good, good_calls = _eval(folder, "good", "--gate", "--gate-policy", "sequential")
    spent = good["systems"]["good"]["retrieval"]["sequential"]
    assert good_code == 0 and spent["asked"] < QUERIES and len(good_calls) == spent["asked"]
    bad_code, bad, bad_calls = _eval(folder, "broken", "--gate", "--gate-policy", "sequential")
    assert bad_code == 1 and len(bad_calls) == bad["systems"]["broken"]["retrieval"]["sequential"]["asked"]
    assert len(bad_calls) < len(good_calls)
    _, again, _ = _eval(folder, "good", "--gate", "--gate-policy", "sequential", out="again")
    assert again["systems"]["good"]["retrieval"]["sequential"] == spent


def test_undecided_fails_rather_than_passing_by_default(folder):
    """SequentialGateTest::test_undecided_fails_rather_than_passing_by_default: a system exactly
    at the line, with too few queries to tell, fails, and says the queries ran out."""
    code, found, _ = _eval(folder, "good", "--gate", "recall@5:sequential:1.0")
    gate = found["systems"]["good"]["verdict"]
    assert code == 1 and "undecided" in gate["reasons"][0] and "after all 150 queries" in gate["reasons"][0]


def test_the_installed_script_finds_a_retriever_module_beside_the_judgments(folder):
    """`goldkeeper eval --python stub:search`, run as the installed script (whose own directory,
    not the current one, leads sys.path), imports stub.py from the current directory, as
    `python -m goldkeeper` does."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    script = shutil.which("goldkeeper") or str(Path(sys.executable).parent / "goldkeeper")
    done = subprocess.run([script, "eval", "-j", "gold.jsonl", "--backend", "python", "--python", "stub:search",
                           "--modes", "good", "--quiet"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
