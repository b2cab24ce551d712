"""Power: the seed's numbers with the normal formula, and the paired t solved exactly."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from goldkeeper.core.power import _t_power, power_analysis
from tests.conftest import FIXTURES, run_cli


def test_the_seeds_resolution_numbers_with_the_normal_formula():
    found = power_analysis(n=10, sd=0.388, target=0.02)
    assert round(found["normal"]["mde"], 3) == 0.344  # the seed: +0.344
    assert abs(found["normal"]["queries_needed"] - 2957) <= 5  # the seed: 2,957 (its sd is rounded)


def test_the_t_answers_satisfy_their_definition():
    found = power_analysis(n=10, sd=0.388, target=0.344)
    assert _t_power(10, found["t"]["mde"], 0.388, 0.05) == pytest.approx(0.8, abs=1e-6)
    needed = found["t"]["queries_needed"]
    assert _t_power(needed, 0.344, 0.388, 0.05) >= 0.8 > _t_power(needed - 1, 0.344, 0.388, 0.05)
    assert needed > found["normal"]["queries_needed"]  # the t answer needs a few more queries


def test_t_power_against_a_simulated_paired_t_test():
    import numpy as np

    rng = np.random.default_rng(0)
    n, effect, sd = 20, 0.2, 0.4
    rejected = sum(stats.ttest_1samp(rng.normal(effect, sd, n), 0).pvalue < 0.05 for _ in range(4000))
    assert rejected / 4000 == pytest.approx(_t_power(n, effect, sd, 0.05), abs=0.025)


def test_differences_give_their_own_spread():
    found = power_analysis([0.0, 0.5, -0.5, 1.0, 0.0])
    assert found["sd"] == pytest.approx(stats.tstd([0.0, 0.5, -0.5, 1.0, 0.0]))
    assert found["sd_source"].startswith("per-query")


def test_cli_with_two_runs_and_with_none(tmp_path):
    case = FIXTURES / "basic"
    other = tmp_path / "other.jsonl"
    other.write_text('{"query_id": "q1", "ranking": ["d1"]}\n{"query_id": "q2", "ranking": ["d5"]}\n')
    result = run_cli("power", "-j", str(case / "judgments.jsonl"), "-r", str(case / "run.jsonl"), "-r", str(other),
                     "-m", "recall@3", "--format", "json")
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2
    assumed = run_cli("power", "-j", str(case / "judgments.jsonl"), "--target", "0.1")
    assert assumed.code == 0 and "(assumed)" in assumed.stdout
    assert run_cli("power", "-j", str(case / "judgments.jsonl"), "-r", str(other)).code == 2


@pytest.mark.parametrize(("n", "sd", "target"), [(10, 0.388, 0.344), (30, 0.25, 0.1), (200, 0.5, 0.05), (12, 1.3, 0.9)])
def test_the_paired_t_answers_match_statsmodels_solvers(n, sd, target):
    """statsmodels' TTestPower (one-sample t on the differences, two-sided) solves the same
    equations independently."""
    power_module = pytest.importorskip("statsmodels.stats.power")
    solver = power_module.TTestPower()
    found = power_analysis(n=n, sd=sd, target=target)
    # statsmodels' power function says our MDE has power 0.8 to 1e-9; its own root finder
    # stops earlier (its answer's power is off by about 2e-6), so the MDEs agree to 1e-4.
    assert solver.power(found["t"]["mde"] / sd, n, 0.05, alternative="two-sided") == pytest.approx(0.8, abs=1e-9)
    effect = solver.solve_power(nobs=n, alpha=0.05, power=0.8, alternative="two-sided")
    assert found["t"]["mde"] == pytest.approx(effect * sd, rel=1e-4)
    needed = solver.solve_power(effect_size=target / sd, alpha=0.05, power=0.8, alternative="two-sided")
    assert found["t"]["queries_needed"] == max(2, int(np.ceil(needed - 1e-9)))
    normal = power_module.NormalIndPower()  # the normal formula: a one-sample z test, ratio 0
    z_effect = normal.solve_power(nobs1=n, alpha=0.05, power=0.8, ratio=0, alternative="two-sided")
    assert found["normal"]["mde"] == pytest.approx(z_effect * sd, rel=1e-3)


@pytest.mark.parametrize(("alpha", "pairs"), [(0.05, 6), (0.01, 8), (0.25, 3), (0.0625, 5)])
def test_the_floor_ladder_is_two_over_two_to_the_d_and_names_the_pairs_alpha_needs(alpha, pairs):
    from goldkeeper.core.power import resolution_ladders

    gold = resolution_ladders(30, alpha=alpha)
    assert gold["min_differing_for_alpha"] == pairs
    for row in gold["floor_ladder"]:
        assert row["min_attainable_p"] == min(1.0, 2 / 2 ** row["differing"])
        assert row["can_reach_alpha"] == (row["min_attainable_p"] <= alpha)


def test_the_width_ladder_is_clopper_pearson_and_the_widest_graded_interval_at_each_size():
    from goldkeeper.core.power import resolution_ladders

    gold = resolution_ladders(40, confidence=0.9)
    assert [row["n"] for row in gold["width_ladder"]] == [10, 20, 40, 80, 160, 400]
    assert [row["this_set"] for row in gold["width_ladder"]] == [False, False, True, False, False, False]
    for row in gold["width_ladder"]:
        size = row["n"]
        for mean in (0.5, 0.9):
            k = math.floor(mean * size + 0.5)
            low = stats.beta.ppf(0.05, k, size - k + 1) if k else 0.0
            high = stats.beta.ppf(0.95, k + 1, size - k) if k < size else 1.0
            assert row[f"binary_width_at_{mean}"] == pytest.approx(high - low, abs=1e-12)
        assert row["graded_width_at_0.5"] == pytest.approx(min(1, 2 * stats.norm.ppf(0.95) * 0.5 / math.sqrt(size)))


def test_the_queries_table_is_the_normal_formula_and_marks_what_the_set_holds():
    from goldkeeper.core.power import resolution_ladders

    gold = resolution_ladders(200, alpha=0.05, power=0.9)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.9)
    assert len(gold["queries_needed"]) == 16
    for row in gold["queries_needed"]:
        assert row["queries_needed"] == max(6, math.ceil((z * row["sd"] / row["effect"]) ** 2 - 1e-9))
        assert row["within_this_set"] == (row["queries_needed"] <= 200)
    assert any(row["within_this_set"] for row in gold["queries_needed"])
    assert not all(row["within_this_set"] for row in gold["queries_needed"])


def test_power_on_a_gold_set_alone_prints_the_three_ladders():
    judgments = str(FIXTURES / "basic" / "judgments.jsonl")
    text = run_cli("power", judgments)
    assert text.code == 0, text.stderr
    assert "a paired comparison needs at least 6 differing queries to reach p <= 0.05" in text.stdout
    assert "smallest attainable p      1.0000   0.5000   0.2500" in text.stdout
    assert "n=2*" in text.stdout and "queries needed, by effect" in text.stdout
    found = json.loads(run_cli("power", "-j", judgments, "--format", "json").stdout)
    assert found["gold_set"]["n"] == found["n"] == 2
    both = run_cli("power", judgments, "-j", judgments)
    assert both.code == 2 and "once" in both.stderr
    assert run_cli("power").code == 2
