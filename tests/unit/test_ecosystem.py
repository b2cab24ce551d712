"""IR people's files and objects scored without glue code (issue 28, item 2), with the numbers
those tools give under their names (item 3), on trec_eval's own test collection.

Every library here is the real one, installed as a test extra: ir_measures, pytrec_eval,
ranx, ir_datasets and pandas.
"""

from __future__ import annotations

import gzip
import json

import ir_measures
import pandas as pd
import pytest
import pytrec_eval
from ir_datasets.formats import TrecQrels, TrecScoredDocs
from ir_datasets.util import LocalDownload

import goldkeeper
from goldkeeper.core.metric_ids import parse_metric_id
from tests.conftest import run_cli

#: ir_measures' names, each with the goldkeeper metric it is and (where trec_eval has it) the
#: pytrec_eval measure that computes the same thing.
NAMES = {"nDCG@10": "ndcg_cut_10", "P@5": "P_5", "R@100": "recall_100", "RR": "recip_rank", "AP": "map",
         "Judged@10": None}


@pytest.fixture(scope="module")
def collection(trec_eval_dir):
    qrels_path, run_path = trec_eval_dir / "qrels.test", trec_eval_dir / "results.test"
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict[str, dict[str, float]] = {}
    for line in run_path.read_text().splitlines():
        q, _, d, _, s, *_ = line.split()
        run.setdefault(q, {})[d] = float(s)
    return qrels_path, run_path, qrels, run


def _per_query(result, name: str) -> dict[str, float]:
    metric = str(parse_metric_id(name))
    return {query: values[metric] for query, values in result.per_query.items()}


def _score(judgments, run):
    ks = sorted({parse_metric_id(name).k for name in NAMES})
    return goldkeeper.score(judgments, run, k=ks)


def test_the_names_give_ir_measures_and_pytrec_evals_numbers_per_query(collection):
    _, _, qrels, run = collection
    result = _score(qrels, run)
    measures = [ir_measures.parse_measure(name) for name in NAMES]
    expected: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc(measures, qrels, run):
        expected.setdefault(str(metric.measure), {})[metric.query_id] = metric.value
    trec = pytrec_eval.RelevanceEvaluator(qrels, {m for m in NAMES.values() if m}).evaluate(run)
    for name, measure in NAMES.items():
        got = _per_query(result, name)
        assert got.keys() == expected[name].keys()
        for query, value in expected[name].items():
            assert got[query] == pytest.approx(value, abs=1e-9), (name, query)
            if measure:
                assert got[query] == pytest.approx(trec[query][measure], abs=1e-9), (name, query)


def test_ranx_numbers_agree_where_its_definition_is_the_same(collection):
    from ranx import Qrels, Run, evaluate

    _, _, qrels, run = collection
    result = _score(qrels, run)
    # ranx's ndcg is the linear-gain one (ndcg_burges is the exponential one, goldkeeper's ndcg).
    for ranx_name, ours in (("ndcg@10", "ndcg_linear@10"), ("precision@5", "precision@5"),
                            ("recall@100", "recall@100"), ("ndcg_burges@10", "ndcg@10")):
        per_query = evaluate(Qrels(qrels), Run(run), ranx_name, return_mean=False)
        expected = dict(zip(sorted(run), per_query)) if not isinstance(per_query, dict) else per_query
        ranx_queries = Run(run).keys()
        for query, value in zip(ranx_queries, per_query):
            assert result.per_query[query][ours] == pytest.approx(value, abs=1e-9), (ranx_name, query)
        assert expected


def _same(a, b) -> None:
    assert a.per_query == b.per_query
    assert a.metrics == b.metrics


def test_objects_from_each_library_score_as_the_files_they_came_from(collection):
    from ranx import Qrels, Run

    qrels_path, run_path, qrels, run = collection
    from_files = _score(goldkeeper.read_judgments(str(qrels_path)), goldkeeper.read_run(str(run_path)))
    # pytrec_eval's (and BEIR's) dicts
    _same(_score(qrels, run), from_files)
    # ranx objects
    _same(_score(Qrels.from_file(str(qrels_path), kind="trec"), Run.from_file(str(run_path), kind="trec")), from_files)
    # ir_datasets' records
    dataset_qrels = TrecQrels(LocalDownload(qrels_path), {0: "not relevant", 1: "relevant"}).qrels_iter()
    dataset_run = TrecScoredDocs(LocalDownload(run_path)).scoreddocs_iter()
    _same(_score(dataset_qrels, dataset_run), from_files)
    # ir_measures' records and data frames (its columns, and ranx's)
    _same(_score(ir_measures.read_trec_qrels(str(qrels_path)), ir_measures.read_trec_run(str(run_path))), from_files)
    qrels_frame = pd.DataFrame(list(ir_measures.read_trec_qrels(str(qrels_path))))
    run_frame = pd.DataFrame(list(ir_measures.read_trec_run(str(run_path))))
    _same(_score(qrels_frame, run_frame), from_files)
    renamed = (qrels_frame.rename(columns={"query_id": "q_id", "relevance": "score"}),
               run_frame.rename(columns={"query_id": "q_id"}))
    _same(_score(*renamed), from_files)
    # and the converters themselves, as models
    def labels(found):
        return sorted((j.query_id, j.doc_uri, j.relevance) for j in found)

    assert labels(goldkeeper.judgments_from(qrels)) == labels(goldkeeper.judgments_from(Qrels(qrels))) != []
    assert [e.ranking for e in goldkeeper.run_from(run)] == [e.ranking for e in goldkeeper.read_run(str(run_path))]


@pytest.mark.parametrize(("judgments", "run", "error", "words"), [
    ({"q1": {"d1": 1.5}}, {}, goldkeeper.InputError,
     "judgments: q1.d1: must be an integer grade; a fractional grade is refused, not truncated, got 1.5"),
    ({"q1": {"d1": 1024}}, {}, goldkeeper.InputError, "judgments: q1.d1: a grade is at most 1023"),
    ({"q1": [1]}, {}, goldkeeper.InputError, "judgments: q1: each query maps to an object of {doc_id: value}"),
    ({"q1": {"d1": 1}}, {"q1": {"d1": float("nan")}}, goldkeeper.InputError, "run: q1.d1: must be a finite number"),
    ({"q1": {"d1": 1}}, {"q1": {"d1": "0.5"}}, goldkeeper.InputError, 'run: q1.d1: must be a finite number, got "0.5"'),
    (pd.DataFrame({"qid": ["q1"], "doc": ["d1"]}), {}, goldkeeper.InputError,
     "judgments: columns: a DataFrame of qrels has columns query_id, doc_id and relevance, got qid, doc"),
    ({"q1": {"d1": 1}}, [("q1", "d1", 1.0)], TypeError, "run: an iterable of tuple is not accepted; give RunEntry"),
    (42, {}, TypeError, "judgments: int is not accepted; give Judgment models"),
])
def test_anything_else_gets_goldkeepers_own_error(judgments, run, error, words):
    with pytest.raises(error) as caught:
        goldkeeper.score(judgments, run)
    assert words in str(caught.value)


def test_a_pair_given_twice_in_records_is_refused_not_merged():
    from ir_measures import Qrel

    with pytest.raises(goldkeeper.InputError, match=r"judgments: row 1: names one document twice for one query"):
        goldkeeper.judgments_from([Qrel("q1", "d1", 1), Qrel("q1", "d1", 0)])


# Nested JSON files, read by the CLI and written by convert ---------------------------------------

def test_nested_files_score_as_the_trec_files_and_convert_both_ways(tmp_path, collection):
    qrels_path, run_path, qrels, run = collection
    (tmp_path / "qrels.json").write_text(json.dumps(qrels, indent=2))  # indented, as people save dicts
    with gzip.open(tmp_path / "results.json.gz", "wt") as out:
        json.dump(run, out)  # one line, as BEIR writes results.json
    reports = []
    for judgments, results in ((qrels_path, run_path), (tmp_path / "qrels.json", tmp_path / "results.json.gz")):
        found = run_cli("score", "--judgments", str(judgments), "--run", str(results), "-k", "5,10", "--format", "json")
        assert found.code == 0, found.stderr
        reports.append(json.loads(found.stdout))
    assert reports[0]["metrics"] == reports[1]["metrics"]
    assert reports[0]["per_query"] == reports[1]["per_query"]

    for source, target, back in ((qrels_path, "qrels-json", "qrels"), (run_path, "run-json", "trec-run")):
        nested = run_cli("convert", str(source), "--to", target)
        assert nested.code == 0, nested.stderr
        (tmp_path / f"{target}.json").write_text(nested.stdout)
        again = run_cli("convert", str(tmp_path / f"{target}.json"), "--to", back)
        assert again.code == 0, again.stderr
        assert json.loads(nested.stdout) == (qrels if target == "qrels-json" else run)
        (tmp_path / back).write_text(again.stdout)
    assert (tmp_path / "qrels").read_text() == run_cli("convert", str(qrels_path), "--to", "qrels").stdout
    back_again = goldkeeper.read_run(str(tmp_path / "trec-run"))
    assert [(e.query_id, e.ranking) for e in back_again] == [(e.query_id, e.ranking)
                                                             for e in goldkeeper.read_run(str(run_path))]


@pytest.mark.parametrize(("text", "flag", "words"), [
    ('{"q1": {"d1": 1, "d\\u0031": 2}}', "--judgments", "key appears twice in one object"),
    ('{"q1": {"d1": 1e400}}', "--run", "a number too large for a 64-bit float"),
    ('{"q1": {"d1": true}}', "--run", "q1.d1: must be a finite number, got true"),
    ('{"q1": {"d1": 0.5}}', "--judgments", "q1.d1: must be an integer grade"),
    ('{\n "q1": {"d1": 1},\n', "--judgments", "not valid JSON"),
    ("{}", "--judgments", "holds no label"),
])
def test_a_bad_nested_file_is_one_line_naming_the_place(tmp_path, text, flag, words):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    good_labels = tmp_path / "labels.json"
    good_labels.write_text('{"q1": {"d1": 1}}')
    good_run = tmp_path / "run.json"
    good_run.write_text('{"q1": {"d1": 1.0}}')
    files = {"--judgments": good_labels, "--run": good_run, flag: bad}
    found = run_cli("score", "--judgments", str(files["--judgments"]), "--run", str(files["--run"]),
                    "--judgments-format" if flag == "--judgments" else "--run-format", "json")
    assert found.code == 2, found.stdout
    assert found.stderr.startswith(f"error: {bad}") and words in found.stderr
    assert "Traceback" not in found.stderr


def test_writing_nested_json_refuses_what_it_could_not_read_back(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text('{"query_id": "q1", "ranking": ["a", "b"], "scores": [1.0, 2.0]}\n')
    found = run_cli("convert", str(run), "--to", "run-json")
    assert found.code == 2
    assert "q1.scores: scores out of the ranking's order" in found.stderr
    run.write_text('{"query_id": "q1", "ranking": ["a", "b", "a"]}\n')
    found = run_cli("convert", str(run), "--to", "run-json")
    assert found.code == 2 and "q1.ranking[2]: ranks one key twice" in found.stderr
    run.write_text('{"query_id": "q1", "ranking": ["a", "b"]}\n')
    found = run_cli("convert", str(run), "--to", "run-json")
    assert found.code == 0 and json.loads(found.stdout) == {"q1": {"a": 2.0, "b": 1.0}}


# trec_eval's habits ----------------------------------------------------------------------------

def test_format_trec_prints_what_trec_eval_q_prints(trec_eval_dir):
    """Line for line against trec_eval's own -q output for the same collection (out.test.aq),
    measure names mapped to goldkeeper's ids: the value columns are the same strings."""
    found = run_cli("score", "-j", str(trec_eval_dir / "qrels.test"), "-r", str(trec_eval_dir / "results.test"),
                    "-k", "5,10,100", "--format", "trec")
    assert found.code == 0, found.stderr
    ours = {}
    for line in found.stdout.splitlines():
        measure, query, value = line.split("\t")
        ours[measure.rstrip(), query] = value
    names = {"P_5": "precision@5", "P_10": "precision@10", "recall_100": "recall@100", "ndcg_cut_10": "ndcg_linear@10",
             "map_cut_100": "map@100", "success_5": "hit_rate@5"}
    compared = 0
    for line in (trec_eval_dir / "out.test.aq").read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        if measure in names:
            assert ours[names[measure], query] == value, (measure, query)
            compared += 1
        elif measure == "unj_10":
            assert float(ours["judged@10", query]) == pytest.approx(1 - float(value), abs=1e-4)
    assert compared == 6 * 4  # three queries and "all"


def test_per_query_shows_each_querys_values_in_text_and_markdown(trec_eval_dir):
    arguments = ["score", "-j", str(trec_eval_dir / "qrels.test"), "-r", str(trec_eval_dir / "results.test"), "-k", "10",
                 "--no-intervals", "--per-query"]
    text = run_cli(*arguments).stdout
    assert "per query @10" in text
    row = next(line for line in text.splitlines() if line.startswith("302 "))
    assert "0.7530" in row  # trec_eval's ndcg_cut_10 for query 302
    markdown = run_cli(*arguments, "--format", "markdown").stdout
    assert "| query @10 | precision | recall | ndcg | ndcg_linear | mrr | map | hit_rate | judged |" in markdown
    assert "per query" not in run_cli(*arguments[:-1]).stdout


# Notebooks and data frames ---------------------------------------------------------------------

def test_results_reports_and_comparisons_become_data_frames(collection):
    _, _, qrels, run = collection
    result = goldkeeper.score(qrels, run, k=[5, 10])
    table = result.to_pandas()
    assert list(table.columns) == ["value", "ci_low", "ci_high", "n", "ci_method"]
    assert table.loc["ndcg_linear@10", "value"] == result.metrics["ndcg_linear@10"]["value"]
    assert (table.loc["recall@5", "ci_low"], table.loc["recall@5", "ci_high"]) == tuple(result.metrics["recall@5"]["ci"])
    queries = result.to_pandas(per_query=True)
    assert queries.index.name == "query_id" and sorted(queries.index) == sorted(result.per_query)
    assert queries.loc["302", "ndcg_linear@10"] == result.per_query["302"]["ndcg_linear@10"]

    report = goldkeeper.build_report(result, goldkeeper.validate(goldkeeper.judgments_from(qrels)),
                                     generated_at="2026-12-02T00:00:00Z", gates=["recall@5:0.9"])
    assert report.to_pandas().equals(table)
    assert report.to_pandas(per_query=True).equals(queries)
    shown = report._repr_html_()
    assert "goldkeeper FAIL: 3 of 3 judged queries scored" in shown and "<code>recall@5:0.9</code>" in shown

    worse = {query: dict(list(docs.items())[::-1]) for query, docs in run.items()}
    comparison = goldkeeper.compare_scores([("base", result), ("reversed", goldkeeper.score(qrels, worse, k=[5, 10]))],
                                           metrics=["ndcg_linear@10"])
    frame = comparison.to_pandas()
    assert list(frame["challenger"]) == ["reversed"] and frame.loc[0, "p"] == comparison["comparisons"][0]["p"]
    assert json.loads(json.dumps(comparison))["baseline"] == "base"  # still the JSON document
    assert "against base on 3 queries" in comparison._repr_html_()


def test_the_notebook_display_escapes_what_it_shows():
    result = goldkeeper.score({"<q>&": {"d1": 1}}, {"<q>&": {"d1": 1.0}}, k=[1])
    queries = goldkeeper.compare_scores([("<b>base</b>", result), ("x", result)])._repr_html_()
    assert "&lt;b&gt;base&lt;/b&gt;" in queries and "<b>base</b>" not in queries
