"""Names people already use (issue 28, item 3): ir_measures' and trec_eval's spellings read as
the goldkeeper metric with the same definition, checked per query against pytrec_eval (which
is trec_eval) on trec_eval's own test collection."""

from __future__ import annotations

import pytest
import pytrec_eval

import goldkeeper
from goldkeeper.core.metric_ids import parse_metric_id


@pytest.mark.parametrize(("spelling", "canonical"), [
    ("nDCG@10", "ndcg_linear@10"), ("ndcg_cut_10", "ndcg_linear@10"), ("P@5", "precision@5"), ("P_5", "precision@5"),
    ("R@100", "recall@100"), ("recall_100", "recall@100"), ("RR@10", "mrr@10"), ("RR", "mrr@1000"),
    ("recip_rank", "mrr@1000"), ("AP@100", "map@100"), ("map_cut_100", "map@100"), ("AP", "map@1000"),
    ("map", "map@1000"), ("Success@5", "hit_rate@5"), ("success_5", "hit_rate@5"), ("ndcg@10", "ndcg@10"),
])
def test_other_tools_spellings_are_goldkeepers_metrics(spelling, canonical):
    assert str(parse_metric_id(spelling)) == canonical


@pytest.mark.parametrize(("spelling", "canonical"), [
    ("MRR@10", "mrr@10"), ("Recall@5", "recall@5"), ("NDCG@10", "ndcg@10"), ("HitRate@3", "hit_rate@3"),
    ("MAP@100", "map@100"), ("hit-rate@5", "hit_rate@5"), ("PRECISION@5", "precision@5"), ("Judged@10", "judged@10"),
    ("nDCG@10", "ndcg_linear@10"), ("NDCG_Linear@10", "ndcg_linear@10"),
])
def test_names_as_people_write_them_are_read_case_insensitively(spelling, canonical):
    """Issue 42, item 2. Folded, ir_measures' nDCG and goldkeeper's ndcg are one word: it is
    goldkeeper's (equal on 0/1 labels); nDCG spelled exactly keeps ir_measures' linear gain."""
    assert str(parse_metric_id(spelling)) == canonical


def test_each_command_says_how_it_read_a_spelling_and_which_gain(tmp_path):
    from tests.conftest import run_cli

    assert run_cli("example", str(tmp_path)).code == 0
    base = ["-j", "judgments.jsonl", "-r", "run.jsonl", "--no-intervals"]
    gated = run_cli("score", *base, "--gate", "NDCG@3:0.1", "--gate", "MRR@3:0.1", cwd=tmp_path)
    assert gated.code == 0, gated.stderr
    assert gated.stderr.splitlines() == ["note: metric 'NDCG@3' read as ndcg@3 (exponential gain 2^grade - 1)",
                                         "note: metric 'MRR@3' read as mrr@3"]
    linear = run_cli("score", *base, "--gate", "nDCG@3:0.1", cwd=tmp_path)
    assert "note: metric 'nDCG@3' read as ndcg_linear@3 (linear gain, as ir_measures and trec_eval)" in linear.stderr
    (tmp_path / "run-b.jsonl").write_text((tmp_path / "run.jsonl").read_text())
    compared = run_cli("compare", "-j", "judgments.jsonl", "-r", "run.jsonl", "-r", "run-b.jsonl", "-m", "Recall@5",
                       cwd=tmp_path)
    assert "note: metric 'Recall@5' read as recall@5" in compared.stderr and "recall@5" in compared.stdout
    powered = run_cli("power", "judgments.jsonl", "-m", "HitRate@3", cwd=tmp_path)
    assert powered.code == 0 and "note: metric 'HitRate@3' read as hit_rate@3" in powered.stderr
    audited = run_cli("audit", "-n", "50", "-v", "0.8", "-m", "MAP@100")
    assert audited.code == 0 and "map@100 = 0.800 on 50 queries" in audited.stdout
    own = run_cli("score", *base, "--gate", "ndcg@3:0.1", cwd=tmp_path)
    assert "note:" not in own.stderr


@pytest.mark.parametrize(("spelling", "words"), [
    ("ndcg", "goldkeeper's ndcg has exponential gain; trec_eval's ndcg, linear gain, is nDCG or ndcg_cut_10"),
    ("precison_5", "did you mean 'precision'?"),
    ("ndgc@10", "did you mean 'ndcg'?"),
])
def test_unknown_spellings_get_a_suggestion_over_every_spelling(spelling, words):
    with pytest.raises(ValueError) as caught:
        parse_metric_id(spelling)
    assert words in str(caught.value)


def test_the_spellings_give_trec_evals_numbers_per_query(trec_eval_dir):
    qrels_text = (trec_eval_dir / "qrels.test").read_text()
    run_text = (trec_eval_dir / "results.test").read_text()
    labels = goldkeeper.parse_trec_qrels(qrels_text)
    run = goldkeeper.parse_trec_run(run_text)
    pairs = {"nDCG@10": "ndcg_cut_10", "P@5": "P_5", "R@100": "recall_100", "AP@100": "map_cut_100",
             "recip_rank": "recip_rank", "success_5": "success_5", "map": "map"}
    ids = {spelling: parse_metric_id(spelling) for spelling in pairs}
    result = goldkeeper.score(labels, run, k=sorted({m.k for m in ids.values()}))
    qrels, scores = {}, {}
    for line in qrels_text.splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    for line in run_text.splitlines():
        q, _, d, _, s, *_ = line.split()
        scores.setdefault(q, {})[d] = float(s)
    expected = pytrec_eval.RelevanceEvaluator(qrels, set(pairs.values())).evaluate(scores)
    for spelling, measure in pairs.items():
        for query, values in expected.items():
            assert result.per_query[query][str(ids[spelling])] == pytest.approx(values[measure], abs=1e-12), \
                (spelling, query)


def test_a_gate_and_compare_take_other_spellings(tmp_path):
    from tests.conftest import run_cli

    assert run_cli("example", str(tmp_path)).code == 0
    gated = run_cli("score", "-j", "judgments.jsonl", "-r", "run.jsonl", "--gate", "nDCG@3:0.1", "--no-intervals",
                    cwd=tmp_path)
    assert gated.code == 0 and "PASS          nDCG@3:0.1" in gated.stdout
    refused = run_cli("score", "-j", "judgments.jsonl", "-r", "run.jsonl", "--gate", "nDGC@3:0.1", cwd=tmp_path)
    assert refused.code == 2 and "did you mean 'nDCG'?" in refused.stderr


def test_every_declared_metric_is_computed_read_in_every_spelling_and_takes_a_min_flag():
    """A metric is one entry of METRICS (issue 39, item 3): the kernel fills its column (a
    ranking with the one relevant key first scores 1 on every metric at k = 1, and 0 without
    it), its other tools' spellings read as it, and --min-<name><k> gates it."""
    from goldkeeper.cli.scoring import min_thresholds, policy_gates
    from goldkeeper.core.metric_ids import METRICS, MIN_FLAG_NAMES

    labels = [{"query_id": "q", "doc_uri": "d", "relevance": 1}]
    hit = goldkeeper.score(labels, [{"query_id": "q", "ranking": ["d", "x"]}], k=[1], intervals=False).metrics
    miss = goldkeeper.score(labels, [{"query_id": "q", "ranking": ["x"]}], k=[1], intervals=False).metrics
    assert list(hit) == [f"{metric.name}@1" for metric in METRICS]
    for metric in METRICS:
        assert hit[f"{metric.name}@1"]["value"] == 1.0 and miss[f"{metric.name}@1"]["value"] == 0.0
        if metric.ir_measures:
            assert str(parse_metric_id(f"{metric.ir_measures}@7")) == f"{metric.name}@7"
        if metric.trec_eval:
            assert str(parse_metric_id(f"{metric.trec_eval}_7")) == f"{metric.name}@7"
        for spelling in metric.whole_ranking:
            assert parse_metric_id(spelling).name == metric.name
        flags = [spelling for spelling, name in MIN_FLAG_NAMES.items() if name == metric.name]
        assert metric.name in flags
        for spelling in flags:
            assert policy_gates(None, min_thresholds([f"--min-{spelling}5", "0.8"])[0]) == [f"{metric.name}@5:0.8"]
