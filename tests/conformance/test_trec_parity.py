"""Every per-query value agrees with trec_eval, on real TREC data and on generated runs.

External truths: pytrec-eval-terrier (trec_eval's C code) on the Robust04 qrels and a
BM25+RM3 run from the capreolus 0.2.6 wheel, fetched from PyPI with a pinned sha256; and
trec_eval's own expected outputs for its test collection (tests/data/trec_eval).
"""

from __future__ import annotations

import random

import pytest
import pytrec_eval

import goldkeeper
from goldkeeper.core.scoring import score

KS = (5, 10, 100, 1000)
# goldkeeper metric -> trec_eval measure
MEASURES = {"precision": "P_{k}", "recall": "recall_{k}", "map": "map_cut_{k}", "ndcg_linear": "ndcg_cut_{k}"}


def _trec_eval(qrels, run, ks=KS):
    q = {}
    for j in qrels:
        q.setdefault(j.query_id, {})[j.doc_uri] = j.relevance
    r = {e.query_id: dict(zip(e.ranking, e.scores)) for e in run}
    measures = {f"{m.split('_{')[0]}.{','.join(map(str, ks))}" for m in MEASURES.values()} | {"recip_rank"}
    return pytrec_eval.RelevanceEvaluator(q, measures).evaluate(r)


def _compare(ours, theirs, ks=KS, full_depth=1000):
    compared = 0
    for query_id, values in theirs.items():
        mine = ours.per_query[query_id]
        for name, measure in MEASURES.items():
            for k in ks:
                assert mine[f"{name}@{k}"] == pytest.approx(values[measure.format(k=k)], abs=1e-9), (
                    query_id, name, k)
                compared += 1
        assert mine[f"mrr@{full_depth}"] == pytest.approx(values["recip_rank"], abs=1e-9), query_id
    return compared


@pytest.mark.slow
def test_robust04_bm25_rm3_agrees_with_trec_eval_at_every_cutoff(capreolus_data):
    qrels = goldkeeper.parse_trec_qrels(capreolus_data["qrels.robust2004.txt"].decode())
    run = goldkeeper.parse_trec_run(capreolus_data["rob04_yang19_rm3.run"].decode())
    lines = capreolus_data["rob04_yang19_rm3.run"].count(b"\n")
    assert sum(len(e.ranking) for e in run) == lines == 250_000
    ours = score(qrels, run, k=list(KS))
    theirs = _trec_eval(qrels, run)
    # 250 topics in the run; trec_eval scores the 249 that have judgments, and so do we.
    assert (len(run), len(theirs), ours.queries_scored) == (250, 249, 249)
    assert ours.run_only_queries == sorted({e.query_id for e in run} - set(theirs))
    assert _compare(ours, theirs) == 249 * 4 * 4


def test_antique_qrels_with_tabs_and_u0_tokens_parse(capreolus_data):
    text = capreolus_data["qrels.antique.txt"].decode()
    assert text.startswith("2531329\tU0\t")  # tab-separated, U0 iteration tokens
    labels = goldkeeper.parse_trec_qrels(text)
    assert len(labels) == len([line for line in text.splitlines() if line.strip()])
    grades = [int(line.split()[3]) for line in text.splitlines() if line.strip()]
    assert [j.relevance for j in labels] == [max(0, g) for g in grades]


def _generated(seed: int):
    rng = random.Random(seed)
    qrels_lines, run_lines = [], []
    for q in range(120):
        qid = f"g{q:03d}"
        docs = [f"d{rng.randrange(400):03d}" for _ in range(rng.randrange(1, 30))]
        graded = {d: rng.choice([0, 0, 1, 2, 3]) for d in docs}
        qrels_lines += [f"{qid} 0 {d} {g}" for d, g in graded.items()]
        if q % 10 == 0:
            continue  # judged, missing from the run
        depth = 0 if q % 17 == 0 else rng.randrange(1, 150)
        pool = [f"d{i:03d}" for i in rng.sample(range(400), depth)]
        for rank, d in enumerate(pool, start=1):
            score_value = round(rng.choice([1.0, 0.5, 0.25, rng.random()]), 3)  # many ties
            run_lines.append(f"{qid} Q0 {d} {rank} {score_value} gen")
    return "\n".join(qrels_lines) + "\n", "\n".join(run_lines) + "\n"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_runs_with_ties_gaps_and_graded_labels_agree_with_trec_eval(seed):
    qrels_text, run_text = _generated(seed)
    qrels = goldkeeper.parse_trec_qrels(qrels_text)
    run = goldkeeper.parse_trec_run(run_text)
    ks = (1, 3, 5, 10, 20)
    ours = score(qrels, run, k=[*list(ks), 1000])
    theirs = {q: v for q, v in _trec_eval(qrels, run, ks).items() if q in ours.per_query}
    assert len(theirs) > 50
    _compare(ours, theirs, ks)
    # Judged queries the run lacks score zero; trec_eval (without -c) leaves them out.
    missing = [q for q in ours.missing_queries if q in ours.per_query]
    assert missing
    assert all(ours.per_query[q]["recall@20"] == 0.0 for q in missing)


def test_repeated_keys_count_once_like_a_deduplicated_run_in_trec_eval():
    qrels = goldkeeper.parse_trec_qrels("q 0 a 2\nq 0 b 1\nq 0 c 0\n")
    repeated = [goldkeeper.RunEntry(query_id="q", ranking=["c", "a", "a", "c", "b", "a"])]
    deduplicated = [goldkeeper.RunEntry(query_id="q", ranking=["c", "a", "b"], scores=[3.0, 2.0, 1.0])]
    ours = score(qrels, repeated, k=[1, 2, 3, 5])
    theirs = _trec_eval(qrels, deduplicated, (1, 2, 3, 5))
    _compare(ours, theirs, (1, 2, 3, 5), full_depth=5)
    assert ours.queries_with_duplicates == ["q"]


def _trec_eval_expected(trec_eval_dir, name):
    out = {}
    for line in (trec_eval_dir / name).read_text().splitlines():
        measure, query, value = line.split()
        out.setdefault(query, {})[measure] = value
    return out


def test_the_trec_eval_test_collection_matches_its_published_output(trec_eval_dir):
    qrels = goldkeeper.parse_trec_qrels((trec_eval_dir / "qrels.test").read_text())
    run = goldkeeper.parse_trec_run((trec_eval_dir / "results.test").read_text())
    ours = score(qrels, run, k=[5, 10, 15, 20, 30, 100, 200, 500, 1000])
    expected = _trec_eval_expected(trec_eval_dir, "out.test.aq")
    checked = 0
    for query in ("301", "302", "303"):
        for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000):
            for name, measure in (("precision", f"P_{k}"), ("recall", f"recall_{k}"),
                                  ("ndcg_linear", f"ndcg_cut_{k}"), ("map", f"map_cut_{k}")):
                if measure in expected[query]:
                    assert f"{ours.per_query[query][f'{name}@{k}']:.4f}" == expected[query][measure], (query, measure)
                    checked += 1
        assert f"{ours.per_query[query]['mrr@1000']:.4f}" == expected[query]["recip_rank"]
    assert checked >= 60
