"""Invariants of scoring, stated in the test names."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import goldkeeper
from goldkeeper.core.scoring import score

DOCS = [f"d{i}" for i in range(12)]


@st.composite
def case(draw):
    labels = []
    for q in range(draw(st.integers(1, 5))):
        for doc in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True)):
            labels.append(goldkeeper.Judgment(query_id=f"q{q}", doc_uri=doc, relevance=draw(st.integers(0, 3))))
    run = [goldkeeper.RunEntry(query_id=f"q{q}", ranking=draw(st.lists(st.sampled_from(DOCS), max_size=15)))
           for q in range(draw(st.integers(0, 6)))]
    return labels, run


@settings(max_examples=200, deadline=None)
@given(case())
def test_recall_hit_rate_and_map_never_decrease_in_k_and_stay_in_0_1(data):
    labels, run = data
    result = score(labels, run, k=[1, 2, 3, 5, 10, 20])
    for values in result.per_query.values():
        for name in ("recall", "hit_rate", "map"):
            series = [values[f"{name}@{k}"] for k in (1, 2, 3, 5, 10, 20)]
            assert series == sorted(series)
        assert all(0.0 <= v <= 1.0 for v in values.values())


@settings(max_examples=200, deadline=None)
@given(case())
def test_a_cutoff_past_every_ranking_equals_the_deepest_one_except_precision(data):
    labels, run = data
    deep = score(labels, run, k=[20, 10**6])
    for values in deep.per_query.values():
        for name in ("recall", "ndcg", "ndcg_linear", "mrr", "map", "hit_rate"):
            assert values[f"{name}@{10**6}"] == values[f"{name}@20"]
        assert values["precision@1000000"] == round(values["precision@20"] * 20 / 10**6, 12)


@settings(max_examples=150, deadline=None)
@given(case())
def test_repeating_keys_changes_no_metric(data):
    labels, run = data
    doubled = [goldkeeper.RunEntry(query_id=e.query_id, ranking=[k for key in e.ranking for k in (key, key)])
               for e in run]
    assert score(labels, run, k=[1, 5, 20]).per_query == score(labels, doubled, k=[1, 5, 20]).per_query


LABEL = st.fixed_dictionaries(
    {"query_id": st.sampled_from(["q1", "q2", "q3", "q4"]), "doc_uri": st.sampled_from(["d1", "d2", "d3"]),
     "relevance": st.integers(0, 3)},
    optional={"chunk_id": st.sampled_from(["c1", "c2"]), "stratum": st.sampled_from(["a", "b", "c"])},
)


def _grouped(qrels) -> tuple:
    return ([(q, list(g.items())) for q, g in qrels.grades.items()], list(qrels.stratum.items()),
            sorted(qrels.stratum_conflicts.items()), qrels.stratified)


@settings(max_examples=300, deadline=None)
@given(st.lists(LABEL, max_size=30), st.data())
def test_qrels_merged_from_two_parts_equal_qrels_of_the_whole(rows, data):
    """Two processes group the two parts of a judgments file; merged, the grouping is what
    one pass gives: key order, last grades, first strata, conflicts."""
    from goldkeeper.core.scoring import build_qrels, merge_qrels

    cut = data.draw(st.integers(0, len(rows)))
    merged = merge_qrels(build_qrels(rows[:cut]), build_qrels(rows[cut:]))
    assert _grouped(merged) == _grouped(build_qrels(rows))
