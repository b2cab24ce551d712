"""Paired comparisons against scipy, and the seed's floor of 0.25."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from goldkeeper.core.significance import holm, min_attainable_p, paired_permutation_test
from tests.conftest import FIXTURES, run_cli


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_exact_test_equals_scipys_exact_paired_permutation_test(seed, alternative):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    # Discrete, with ties and zero differences, on a dyadic grid so that sums are exact in
    # binary floating point: with thirds, scipy counts a tie that float error broke (0.5
    # where the exact answer, and ours, is 0.75); see test_ties_are_exact below.
    a = rng.integers(0, 5, n) / 4
    b = np.clip(a + rng.integers(-1, 2, n) / 4, 0, 1)
    ours = paired_permutation_test(a, b, alternative=alternative)
    theirs = stats.permutation_test((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), vectorized=True,
                                    permutation_type="samples", n_resamples=np.inf,
                                    alternative=alternative).pvalue
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_monte_carlo_agrees_with_scipy_beyond_the_exact_range():
    rng = np.random.default_rng(7)
    a = rng.random(60)
    b = a + rng.normal(0.03, 0.15, 60)
    ours = paired_permutation_test(a, b, resamples=40_000, seed=1)
    theirs = stats.permutation_test((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), vectorized=True,
                                    permutation_type="samples", n_resamples=40_000, random_state=2).pvalue
    assert ours == pytest.approx(theirs, abs=0.015)
    assert ours >= 1 / 40_001  # the add-one correction: never exactly 0


def test_ties_are_exact_where_float_error_would_break_them():
    a = [1.0, 2 / 3]
    b = [2 / 3, 1.0]  # differences -1/3 and +1/3: the observed mean is exactly 0
    # Sign patterns give 0, 2/3, -2/3, 0: three of four are >= 0.
    assert paired_permutation_test(a, b, alternative="greater") == 0.75


def test_the_seeds_three_of_ten():
    a = [1.0] * 7 + [0.0] * 3
    b = [1.0] * 10
    assert min_attainable_p(3) == 0.25
    assert paired_permutation_test(a, b) == 0.25


def test_identical_runs_give_p_one():
    assert paired_permutation_test([0.1, 0.5], [0.1, 0.5]) == 1.0
    assert min_attainable_p(0) == 1.0


def test_holm_against_its_definition():
    p = [0.01, 0.04, 0.03, 0.2]
    # sorted 0.01, 0.03, 0.04, 0.2 times 4, 3, 2, 1, running maximum
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm([0.5, 0.6]) == [1.0, 1.0]


def test_refusals():
    with pytest.raises(ValueError):
        paired_permutation_test([1, 2], [1])
    with pytest.raises(ValueError):
        paired_permutation_test([float("nan")], [1])
    with pytest.raises(ValueError):
        holm([1.2])


def test_compare_cli_pairs_by_query_and_calls_small_sets_unresolvable(tmp_path):
    case = FIXTURES / "basic"
    better = tmp_path / "better.jsonl"
    better.write_text('{"query_id": "q2", "ranking": ["d5"]}\n{"query_id": "q1", "ranking": ["d1", "d2"]}\n')
    result = run_cli("compare", "-j", str(case / "judgments.jsonl"), "-r", str(case / "run.jsonl"),
                     "-r", str(better), "-k", "3", "-m", "recall@3", "--format", "json")
    assert result.code == 0, result.stderr
    payload = json.loads(result.stdout)
    (row,) = payload["comparisons"]
    assert (row["baseline_mean"], row["challenger_mean"], row["differing_pairs"]) == (0.5, 1.0, 1)
    assert row["min_attainable_p"] == 1.0
    assert row["verdict"] == "unresolvable"


def test_compare_cli_refusals(tmp_path):
    case = FIXTURES / "basic"
    run = str(case / "run.jsonl")
    assert run_cli("compare", "-j", str(case / "judgments.jsonl"), "-r", run).code == 2
    same = run_cli("compare", "-j", str(case / "judgments.jsonl"), "-r", run, "-r", run)
    assert same.code == 2 and "never compared with itself" in same.stderr


def test_compare_markdown_for_ci_summaries(tmp_path):
    case = FIXTURES / "basic"
    result = run_cli("compare", "-j", str(case / "judgments.jsonl"), "-r", str(case / "run.jsonl"),
                     "-r", str(case / "run.jsonl").replace("run.jsonl", "run.jsonl"), "--format", "markdown")
    assert result.code == 2  # the same run twice is refused before any output
    other = tmp_path / "other.jsonl"
    other.write_text('{"query_id": "q1", "ranking": ["d1"]}\n{"query_id": "q2", "ranking": ["d5"]}\n')
    result = run_cli("compare", "-j", str(case / "judgments.jsonl"), "-r", str(case / "run.jsonl"),
                     "-r", str(other), "-m", "recall@3", "--format", "markdown")
    assert result.code == 0, result.stderr
    assert result.stdout.startswith("### goldkeeper compare: baseline")
    assert "| recall@3 |" in result.stdout and "**unresolvable**" in result.stdout


def test_holm_matches_statsmodels_multipletests_on_random_grids():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(17)
    for _ in range(60):  # statsmodels takes about 45 ms a call
        m = int(rng.integers(1, 12))
        pvalues = rng.choice([rng.random(), rng.random() ** 4, 0.05, 1.0, 0.0], size=m).tolist()
        _, expected, _, _ = multitest.multipletests(pvalues, alpha=0.05, method="holm")
        assert holm(pvalues) == pytest.approx(list(expected), abs=1e-12), pvalues
