"""score --audit (issue 41, item 2): a judge labelled every query, people a seeded sample;
each metric becomes its PPI++ estimate with the judge's bias beside it, gates read its
interval, the kappa is the hand computation's, and a floor above it sets the judge aside."""

from __future__ import annotations

import json
import random

from goldkeeper.core.sampling import audit_sample
from tests.conftest import run_cli

NOW = "2026-12-04T00:00:00Z"


def _world(folder, queries: int = 300, audited: int = 60) -> dict:
    rng = random.Random(41)
    judged, people, run = [], [], []
    ids = [f"q{i:03d}" for i in range(queries)]
    sample = set(audit_sample(ids, {}, audited, seed=3))
    truth = {}
    for q in ids:
        relevant = rng.random() < 0.6
        truth[q] = relevant
        said = relevant if rng.random() > 0.1 else not relevant  # the judge errs one time in ten
        judged.append({"query_id": q, "doc_uri": f"d-{q}", "relevance": int(said), "labeled_by": "synthetic:stub"})
        judged.append({"query_id": q, "doc_uri": f"other-{q}", "relevance": 1, "labeled_by": "human:ann"})
        if q in sample:
            people.append({"query_id": q, "doc_uri": f"d-{q}", "relevance": int(relevant), "labeled_by": "human:bo"})
        run.append({"query_id": q, "ranking": [f"d-{q}", f"x-{q}"]})
    for name, rows in (("judgments.jsonl", judged), ("audit.jsonl", people), ("run.jsonl", run)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"judged": judged, "people": people}


def _score(folder, *extra: str):
    result = run_cli("score", "-j", "judgments.jsonl", "-r", "run.jsonl", "-k", "1", "--now", NOW, "--format", "json",
                     *extra, cwd=folder)
    assert result.code in (0, 1), result.stderr
    return result.code, json.loads(result.stdout)


def test_the_metrics_become_ppi_estimates_and_the_gates_read_them(tmp_path):
    world = _world(tmp_path)
    _, plain = _score(tmp_path)
    code, report = _score(tmp_path, "--audit", "audit.jsonl", "--gate", "hit_rate@1:ci-lower:0.5")
    measured = report["metrics"]["hit_rate@1"]
    assert measured["ci_method"] == "ppi++" and measured["judge_value"] == plain["metrics"]["hit_rate@1"]["value"]
    estimate = report["audit"]["estimates"]["hit_rate@1"]
    assert measured["value"] == round(estimate["estimate"], 12) and estimate["n_labeled"] == 60
    assert "The judge reports" in estimate["statement"]
    (gate,) = report["verdict"]["gates"]
    assert gate["status"] == ("PASS" if measured["ci"][0] >= 0.5 else "FAIL") and code == (gate["status"] != "PASS")
    # kappa by hand on the audited pairs: relevant or not, judge against people
    judge = {r["query_id"]: r["relevance"] for r in world["judged"] if r["labeled_by"].startswith("synthetic:")}
    pairs = [(p["relevance"], judge[p["query_id"]]) for p in world["people"]]
    n = len(pairs)
    observed = sum(h == j for h, j in pairs) / n
    h_rate, j_rate = sum(h for h, _ in pairs) / n, sum(j for _, j in pairs) / n
    chance = h_rate * j_rate + (1 - h_rate) * (1 - j_rate)
    assert abs(report["audit"]["kappa"] - (observed - chance) / (1 - chance)) < 1e-12


def test_a_kappa_floor_above_the_judge_sets_it_aside(tmp_path):
    _world(tmp_path)
    _, report = _score(tmp_path, "--audit", "audit.jsonl")
    kappa = report["audit"]["kappa"]
    code, low = _score(tmp_path, "--audit", "audit.jsonl", "--kappa-floor", f"{kappa - 0.05:.3f}")
    assert low["verdict"]["status"] == "PASS" and low["metrics"]["hit_rate@1"]["ci_method"] == "ppi++"
    code, high = _score(tmp_path, "--audit", "audit.jsonl", "--kappa-floor", f"{kappa + 0.05:.3f}")
    assert code == 1 and high["verdict"]["status"] == "INDETERMINATE" and high["audit"]["set_aside"]
    assert any("below the floor" in reason for reason in high["verdict"]["reasons"])
    assert "ci_method" not in high["metrics"]["hit_rate@1"] or high["metrics"]["hit_rate@1"]["ci_method"] != "ppi++"


def test_audit_input_is_checked(tmp_path):
    _world(tmp_path)
    (tmp_path / "bad.jsonl").write_text(json.dumps({"query_id": "q000", "doc_uri": "d-q000", "relevance": 1,
                                                    "labeled_by": "synthetic:x"}) + "\n")
    result = run_cli("score", "-j", "judgments.jsonl", "-r", "run.jsonl", "--audit", "bad.jsonl", cwd=tmp_path)
    assert result.code == 2 and "people's labels only" in result.stderr and len(result.stderr.splitlines()) == 1
    result = run_cli("score", "-j", "judgments.jsonl", "-r", "run.jsonl", "--kappa-floor", "0.4", cwd=tmp_path)
    assert result.code == 2 and "--kappa-floor" in result.stderr


def test_people_read_the_audit_and_the_judges_bias_in_words(tmp_path):
    _world(tmp_path)
    result = run_cli("score", "-j", "judgments.jsonl", "-r", "run.jsonl", "-k", "1", "--audit", "audit.jsonl",
                     "--gate", "hit_rate@1:ci-lower:0.5", "--format", "markdown", cwd=tmp_path)
    assert "People audited 60 queries; the judge agrees with them at kappa" in result.stdout
    assert "hit_rate@1: The judge reports" in result.stdout and "hand labels" in result.stdout
