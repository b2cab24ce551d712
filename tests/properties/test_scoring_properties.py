"""Invariants of scoring, stated in the test names."""

from __future__ import annotations

import math

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


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3", "q4", "q5"]),
                          st.lists(st.sampled_from(DOCS), max_size=15)), max_size=6, unique_by=lambda e: e[0]),
       st.integers(1, 12))
def test_run_heads_hold_each_rankings_first_distinct_keys_and_its_repeats(entries, depth):
    """pack_run's inline path and RunHeads.add (top_keys) agree, entry by entry."""
    from goldkeeper.core.scoring import RunHeads, pack_run, top_keys

    heads = pack_run([goldkeeper.RunEntry(query_id=q, ranking=r) for q, r in entries], depth)
    one_by_one = RunHeads(depth)
    for query_id, ranking in entries:
        one_by_one.add(query_id, ranking)
    assert heads == one_by_one
    assert list(heads) == [(q, top_keys(r, depth)[0]) for q, r in entries]
    assert heads.repeated == [q for q, r in entries if top_keys(r, depth)[1]]


@settings(max_examples=200, deadline=None)
@given(case(), st.data())
def test_a_strata_value_is_the_mean_of_its_queries_values(data, draw):
    """per_stratum comes from the per-query values (one stable sort by stratum), not by
    re-scoring: each stratum's n and means are those of its scored queries."""
    labels, run = data
    names = {label.query_id: draw.draw(st.sampled_from(["b", "a", "c"])) for label in labels}
    labels = [label.model_copy(update={"stratum": names[label.query_id]}) for label in labels]
    result = score(labels, run, k=[1, 5])
    assert result.per_stratum is not None and sorted(result.per_stratum) == sorted(set(names.values()))
    for name, stratum in result.per_stratum.items():
        members = [q for q in result.per_query if names[q] == name]
        assert stratum["n"] == len(members)
        for metric, measurement in stratum["metrics"].items():
            mean = sum(result.per_query[q][metric] for q in members) / len(members)
            assert abs(measurement["value"] - mean) < 1e-9


def test_query_values_refuses_a_query_given_twice_and_heads_cut_elsewhere():
    import pytest

    from goldkeeper.core.scoring import build_qrels, pack_run, query_values

    qrels = build_qrels([{"query_id": "q1", "doc_uri": "d1", "relevance": 1}])
    twice = [goldkeeper.RunEntry(query_id="q1", ranking=["d1"]), goldkeeper.RunEntry(query_id="q1", ranking=["d2"])]
    with pytest.raises(ValueError, match="more than one entry for query q1"):
        query_values(qrels, twice, [5])
    with pytest.raises(ValueError, match="cut at depth 10, the cutoffs need 5"):
        query_values(qrels, pack_run(twice[:1], 10), [5])
    assert query_values(qrels, pack_run(twice[:1], 5), [1, 5]).values


@st.composite
def graded_case(draw):
    """Labels with grades 0 to 1,023 (the schema's range; near its top an exponential IDCG
    overflows a float), rankings with repeats, unjudged keys, empty rankings, queries missing
    from the run and run-only queries."""
    grade = st.one_of(st.integers(0, 4), st.integers(0, 1023), st.integers(1018, 1023))
    grades = {}
    for q in range(draw(st.integers(1, 8))):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=12, unique=True))
        grades[f"q{q}"] = {doc: draw(grade) for doc in docs}
    run = [goldkeeper.RunEntry(query_id=f"q{q}", ranking=draw(st.lists(st.sampled_from([*DOCS, "x", "y"]), max_size=20)))
           for q in draw(st.lists(st.integers(0, 10), unique=True, max_size=10))]
    return grades, run


def test_every_rank_is_discounted_by_the_c_librarys_log2():
    """From rank 1,620 numpy's log2 and the C library's differ by an ulp at some ranks (on
    this machine the first are 1,620, 3,241 and 7,956): the kernel takes its discounts
    from ``discounts``. One relevant key at rank r: its ndcg_linear@r is the discount."""
    import numpy as np

    from goldkeeper.core.metric_ids import MetricId
    from goldkeeper.core.scoring import _GAIN, Qrels, discounts, query_values

    for rank in (1, 2, 3, 1619, 1620, 1621, 3241, 7956):
        qrels = Qrels(grades={"q": {"hit": 1}}, stratum={"q": "_unstratified"})
        run = [goldkeeper.RunEntry(query_id="q", ranking=[f"x{i}" for i in range(rank - 1)] + ["hit"])]
        found = query_values(qrels, run, [rank], 1)
        assert found.values[MetricId("ndcg_linear", rank)] == [discounts(rank)[-1]], rank
    assert discounts(3) == [1.0, 1.0 / math.log2(3.0), 0.5]
    assert _GAIN == (np.exp2(np.arange(1024, dtype=np.float64)) - 1.0).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.integers(0, 2**20).map(lambda i: i / 2**20),
                          st.integers(1, 10**4).map(lambda i: 1 / i)), max_size=50))
def test_per_query_values_round_as_numpy_rounds(values):
    """The per-query values in reports are rounded to 12 decimals as numpy's round does it
    (ties to even after scaling), which a dict of already rounded values reproduces."""
    import numpy as np

    from goldkeeper.core.scoring import _round_values

    assert _round_values(values) == np.round(np.array(values, dtype=np.float64), 12).tolist()


def test_ndcg_of_grades_whose_exponential_gains_overflow_a_float():
    """Three labels of grade 1,023 sum past 1.8e308: the IDCG overflowed and ndcg came out
    NaN (null in the report; an internal error once values were rounded in Python). The
    kernel scales such a query's gains by 2^-1023, which leaves the ratio as it is."""
    from goldkeeper.core.metric_ids import MetricId
    from goldkeeper.core.scoring import Qrels, query_values

    grades = {"q": {"a": 1023, "b": 1023, "c": 1023, "d": 1}}
    qrels = Qrels(grades=grades, stratum={"q": "_unstratified"})
    run = [goldkeeper.RunEntry(query_id="q", ranking=["d", "a", "b", "c"])]
    tiny = 2.0 ** -1023  # the grade-1 gain, scaled
    expected = ((tiny + 1 / math.log2(3) + 1 / 2 + 1 / math.log2(5))
                / (1 + 1 / math.log2(3) + 1 / 2 + tiny / math.log2(5)))
    found = query_values(qrels, run, [1, 4], 1).values
    assert 0 < found[MetricId("ndcg", 1)][0] < 1e-300  # d's gain is 2^-1023 of a's
    assert abs(found[MetricId("ndcg", 4)][0] - expected) < 1e-12
    assert found[MetricId("ndcg_linear", 4)][0] < 1


@settings(max_examples=300, deadline=None)
@given(graded_case(), st.lists(st.integers(1, 25), min_size=1, max_size=3), st.integers(1, 3), st.data())
def test_a_run_given_to_a_scorer_block_by_block_scores_as_the_whole_run(data, ks, threshold, draw):
    """``RunScorer.add`` takes a large run a block of entries at a time (the reader frees each
    block's keys once scored): the floats and lists are those of the whole run at once."""
    from goldkeeper.core.scoring import Qrels, RunScorer, query_values

    grades, run = data
    qrels = Qrels(grades=grades, stratum=dict.fromkeys(grades, "_unstratified"))
    whole = query_values(qrels, run, ks, threshold)
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(run)), max_size=3)))
    scorer = RunScorer(qrels, ks, threshold)
    for start, stop in zip([0, *cuts], [*cuts, len(run)]):
        scorer.add(run[start:stop])
    blocks = scorer.result()
    assert (blocks.scored_ids, blocks.seen_in_run, blocks.run_queries) == (whole.scored_ids, whole.seen_in_run,
                                                                          whole.run_queries)
    assert (sorted(blocks.duplicates), sorted(blocks.run_only)) == (sorted(whole.duplicates), sorted(whole.run_only))
    for metric, column in whole.values.items():
        assert [v.hex() for v in column] == [v.hex() for v in blocks.values[metric]], metric


def test_a_scorer_refuses_a_query_given_again_in_a_later_block():
    import pytest

    from goldkeeper.core.scoring import Qrels, RunScorer

    qrels = Qrels(grades={"q1": {"d1": 1}}, stratum={"q1": "_unstratified"})
    scorer = RunScorer(qrels, 5, 1)
    scorer.add([goldkeeper.RunEntry(query_id="q1", ranking=["d1"])])
    with pytest.raises(ValueError, match="more than one entry for query q1"):
        scorer.add([goldkeeper.RunEntry(query_id="q1", ranking=["d2"])])
