"""goldkeeper audit reproduces the seed's worked example and refuses impossible figures."""

from __future__ import annotations

import json

import pytest

from goldkeeper.core.audit import audit
from tests.conftest import run_cli


def test_the_seeds_worked_example_through_the_cli():
    result = run_cli("audit", "-n", "10", "-m", "recall@5", "-v", "1.00", "-b", "0.70")
    assert result.code == 1  # unresolvable is a failed check
    assert "that is 10/10 successes" in result.stdout
    assert "[0.692, 1.000]" in result.stdout
    assert "the two means determine it exactly: 3 of 10 queries differ" in result.stdout
    assert "smallest attainable p   0.2500" in result.stdout
    assert "UNRESOLVABLE" in result.stdout


def test_json_and_a_resolvable_lift():
    result = run_cli("audit", "-n", "100", "-m", "hit_rate@10", "-v", "0.80", "-b", "0.70", "--format", "json")
    assert result.code == 0
    found = json.loads(result.stdout)
    assert found["lift"]["differing_least"] == 10
    assert found["lift"]["differing_most"] == 50  # min(80 + 70, 200 - 150)
    assert found["lift"]["verdict"] == "resolvable"


def test_a_graded_metric_gets_the_widest_interval_the_mean_allows():
    found = audit(100, "ndcg@10", 0.5)
    low, high = found["interval"]
    assert high - low == pytest.approx(2 * 1.959963984540054 * 0.05)
    assert "widest" in found["interval_method"]


@pytest.mark.parametrize("args", [["-n", "10", "-v", "0.55"], ["-n", "0", "-v", "0.5"], ["-n", "10", "-v", "1.5"],
                                  ["-n", "10", "-v", "0.5", "-m", "recal@5"]])
def test_impossible_figures_are_usage_errors(args):
    result = run_cli("audit", *args)
    assert result.code == 2
    assert result.stderr.startswith("error: ")
