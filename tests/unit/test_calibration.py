"""calibrate: exact conformal ranks, parity with retrieval-eval-gate where it is right, and
the guarantees by simulating the whole calibrate-then-deploy cycle."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from goldkeeper.core.calibration import (
    CalibrationQuery,
    _conformity,
    _losses,
    calibrate,
    conformal_rank,
    hoeffding_bentkus_p,
    queries_for_risk,
    set_sizes,
)
from tests.conftest import run_cli


def test_the_conformal_rank_is_exact_where_floating_point_is_one_off():
    wrong_in_float = 0
    for n in range(1, 201):
        for hundredths in range(1, 100):
            alpha = hundredths / 100
            exact = -(-(n + 1) * (100 - hundredths) // 100)  # integer ceil((n+1)(1-alpha))
            assert conformal_rank(n, alpha) == (exact if exact <= n else None), (n, alpha)
            wrong_in_float += math.ceil((n + 1) * (1 - alpha)) != exact
    assert wrong_in_float > 0  # the float formula really is off somewhere on this grid
    assert math.ceil(25 * (1 - 0.44)) == 15 and conformal_rank(24, 0.44) == 14


def test_parity_with_retrieval_eval_gate_where_it_is_right():
    conformal = pytest.importorskip("rag_eval_gate.conformal")
    rng = np.random.default_rng(5)
    float_count_errors = 0
    for _ in range(400):
        n = int(rng.integers(5, 300))
        count = int(rng.integers(0, n))
        risk = count / n
        alpha = float(rng.choice([0.01, 0.05, 0.1, 0.2]))
        ours, theirs = hoeffding_bentkus_p(risk, n, alpha), conformal.hoeffding_bentkus_p(risk, n, alpha)
        if math.ceil(n * risk) == count:
            assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)
        else:
            # The reference recovers the loss count as ceil(n * risk) in floating point, one
            # too many when n * (count / n) lands just above count: a p-value too large.
            float_count_errors += 1
            assert ours <= theirs
    assert float_count_errors > 0
    sizer = conformal.AdaptiveSetSizer(alpha=0.1, temperature=1.0)
    for _ in range(200):
        scores = tuple(sorted(rng.normal(size=int(rng.integers(1, 30))).tolist(), reverse=True))
        relevant = int(rng.integers(0, len(scores)))
        query = CalibrationQuery("q", scores, relevant)
        assert _conformity(query, 1.0) == pytest.approx(sizer.nonconformity(list(scores), relevant), abs=1e-12)
    queries = [CalibrationQuery(f"q{i}", tuple(sorted(rng.normal(size=20).tolist(), reverse=True)),
                                int(rng.integers(0, 20))) for i in range(150)]
    theirs = sizer.calibrate([(list(q.scores), q.relevant) for q in queries])
    from goldkeeper.core.calibration import _fit_quantile

    ours = _fit_quantile(queries, 0.1, 1.0)
    assert ours == pytest.approx(theirs.threshold, abs=1e-12)  # n = 150: the float rank is right here
    assert set_sizes(queries, ours, 1.0) == [sizer.size(list(q.scores)) for q in queries]


def _world(rng, n, informative=True):
    """Queries whose relevant passage sits higher when the retriever is confident."""
    out = []
    for i in range(n):
        scores = np.sort(rng.normal(0, 1, 20))[::-1]
        if informative:
            gap = scores[0] - scores[1]
            relevant = int(min(rng.geometric(min(0.95, 0.35 + gap)) - 1, 25))
        else:
            relevant = int(rng.integers(0, 30))
        out.append(CalibrationQuery(f"q{i}", tuple(scores.tolist()), relevant if relevant < 20 else None))
    return out


def test_coverage_and_risk_hold_over_repeated_calibrate_then_deploy():
    rng = np.random.default_rng(11)
    alpha, risk_alpha, delta = 0.1, 0.15, 0.1
    coverages, risk_breaks, certified = [], 0, 0
    fresh = _world(rng, 2000)
    fresh_relevant = [q for q in fresh if q.relevant is not None]
    for repeat in range(100):
        cert = calibrate(_world(rng, 600), alpha=alpha, risk_alpha=risk_alpha, delta=delta, seed=repeat)
        quantile, temperature = cert.coverage["quantile"], cert.temperature
        sizes = set_sizes(fresh_relevant, quantile, temperature)
        coverages.append(np.mean([q.relevant < k for q, k in zip(fresh_relevant, sizes)]))
        if cert.risk["certified"]:
            certified += 1
            threshold = math.inf if cert.risk["threshold"] is None else cert.risk["threshold"]
            bad, _ = _losses(fresh, set_sizes(fresh, quantile, temperature), threshold)
            risk_breaks += bad / len(fresh) > risk_alpha
    assert np.mean(coverages) >= 1 - alpha - 0.01  # marginal coverage, over calibration draws
    assert certified >= 70  # the guarantee is not met vacuously
    assert risk_breaks / certified <= delta + 0.05


def test_an_uninformative_retriever_buys_its_certificate_with_abstention_and_says_so():
    rng = np.random.default_rng(3)
    cert = calibrate(_world(rng, 400, informative=False), alpha=0.1, risk_alpha=0.05, delta=0.05)
    risk = cert.risk
    assert not risk["certified"] or risk["abstention"] >= 0.9
    assert risk["blocked_by"]["queries_needed"] > risk["n"]  # and how many queries would get further


def test_a_certificate_that_abstains_on_everything_is_labelled_degenerate():
    queries = [CalibrationQuery(f"q{i}", (2.0, 1.0), None) for i in range(400)]  # nothing relevant retrieved
    cert = calibrate(queries, risk_alpha=0.05, delta=0.05)
    assert cert.risk["certified"] and cert.risk["degenerate"] and cert.risk["abstains_on_everything"]
    assert cert.risk["threshold"] is None and cert.held_out["abstention"] == 1.0


def test_too_few_queries_cannot_certify_and_say_how_many_would():
    queries = [CalibrationQuery(f"q{i}", (3.0, 1.0, 0.5), 0) for i in range(12)]
    cert = calibrate(queries, alpha=0.05, fractions=(0.25, 0.5, 0.25))
    assert cert.coverage["certified"] is False and cert.coverage["minimum_n"] == 19
    assert cert.held_out["mean_k"] == 3  # uncertified: every passage
    assert queries_for_risk(0.01, 0.05, 0.05) == math.ceil(math.log(20) / (
        0.01 * math.log(0.01 / 0.05) + 0.99 * math.log(0.99 / 0.95)))
    assert Fraction(repr(0.44)) == Fraction(11, 25)


def _files(tmp_path, queries, with_scores=True):
    judgments = tmp_path / "judgments.jsonl"
    run = tmp_path / "run.trec" if with_scores else tmp_path / "run.jsonl"
    labels, lines = [], []
    for q in queries:
        if q.relevant is not None:
            labels.append({"query_id": q.query_id, "doc_uri": f"d{q.relevant}", "relevance": 1})
        else:
            labels.append({"query_id": q.query_id, "doc_uri": "d-missing", "relevance": 1})
        if with_scores:
            lines += [f"{q.query_id} Q0 d{i} {i + 1} {s:.9f} sys" for i, s in enumerate(q.scores)]
        else:
            lines.append(json.dumps({"query_id": q.query_id, "ranking": [f"d{i}" for i in range(len(q.scores))]}))
    judgments.write_text("".join(json.dumps(label) + "\n" for label in labels))
    run.write_text("\n".join(lines) + "\n")
    return judgments, run


def test_the_cli_certifies_from_a_trec_run_and_refuses_a_run_without_scores(tmp_path):
    queries = _world(np.random.default_rng(8), 800)
    judgments, run = _files(tmp_path, queries)
    result = run_cli("calibrate", "-j", str(judgments), "-r", str(run), "--alpha", "0.1", "--risk-alpha", "0.2",
                     "--delta", "0.1", "--format", "json")
    assert result.code in (0, 1), result.stderr
    payload = json.loads(result.stdout)
    assert payload["splits"] == {"temperature": 200, "calibration": 400, "evaluation": 200}
    assert payload["coverage"]["certified"] and payload["held_out"]["coverage"] >= 0.8
    assert payload["risk"]["certified"] and result.code == 0
    text = run_cli("calibrate", "-j", str(judgments), "-r", str(run), "--alpha", "0.1", "--risk-alpha", "0.2",
                   "--delta", "0.1")
    assert "a relevant passage is in the set with probability >= 90%" in text.stdout
    again = run_cli("calibrate", "-j", str(judgments), "-r", str(run), "--alpha", "0.1", "--risk-alpha", "0.2",
                    "--delta", "0.1", "--format", "json")
    assert again.stdout == result.stdout  # seeded: the same certificate every time
    _, no_scores = _files(tmp_path, queries, with_scores=False)
    refused = run_cli("calibrate", "-j", str(judgments), "-r", str(no_scores))
    assert refused.code == 2 and "scores: calibration needs the retriever's scores" in refused.stderr
    bad = run_cli("calibrate", "-j", str(judgments), "-r", str(run), "--alpha", "1.5")
    assert bad.code == 2 and "'--alpha': must be between 0 and 1, exclusive, got 1.5" in bad.stderr
