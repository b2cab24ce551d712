"""Every flow that scores writes the report bytes it wrote before the evaluation core was
made one (tests/one_road.py): evaluate (plain, with a corpus, in partitions), the partitioned
scoring flow and eval_retriever (sequential), on a real Prefect server."""

from __future__ import annotations

import pytest

from goldkeeper.io.files import read_bytes
from tests.flows.conftest import finished
from tests.one_road import NOW, check, examples, many

pytest.importorskip("prefect")


def test_evaluate_writes_the_bytes_it_wrote(prefect_server, tmp_path):
    from goldkeeper.flows.evaluate import evaluate

    folder = examples(tmp_path)
    root = f"file://{tmp_path}/store"
    outcome = finished(evaluate, suite="road", judgments_url=str(folder / "judgments.jsonl"),
                       run_url=str(folder / "run.jsonl"), storage_url=root, k=[1, 5, 10],
                       gates=["recall@10:ci-lower:0.5", "ndcg@10:0.3"], generated_at=NOW)
    check("flow-evaluate-examples", read_bytes(outcome["report_url"]), tmp_path)
    outcome = finished(evaluate, suite="road-corpus", judgments_url=str(folder / "judgments.jsonl"),
                       run_url=str(folder / "run-reversed.jsonl"), storage_url=root, k=[10], intervals=False,
                       corpus_url=str(folder / "corpus.json"), gates=["mrr@10:0.5"], generated_at=NOW)
    check("flow-evaluate-corpus", read_bytes(outcome["report_url"]), tmp_path)
    outcome = finished(evaluate, suite="road-trec", judgments_url=str(folder / "qrels.test"),
                       run_url=str(folder / "results.test"), storage_url=root, k=[5, 10, 100], partitions=3,
                       gates=["ndcg@10:0.2"], generated_at=NOW)
    check("flow-evaluate-partitions", read_bytes(outcome["report_url"]), tmp_path)


def test_partitioned_scoring_writes_the_bytes_it_wrote(prefect_server, tmp_path):
    from goldkeeper.flows.scale import score_partitioned
    from goldkeeper.io.files import report_bytes

    folder = examples(tmp_path)
    report = score_partitioned(str(folder / "qrels.test"), str(folder / "results.test"), str(tmp_path / "work"), 4,
                               k=[5, 10], gates=["ndcg@10:0.2"], generated_at=NOW)
    check("flow-score-partitioned", report_bytes(report), tmp_path)


def test_eval_retriever_writes_the_bytes_it_wrote(prefect_server, tmp_path, monkeypatch):
    from goldkeeper.flows.eval import eval_retriever

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")
    many(tmp_path)
    root = f"file://{tmp_path}/store"
    for suite, gates in (("plain", ["recall@1:0.5"]), ("sequential", ["recall@1:sequential:0.5"])):
        state = eval_retriever(suite=suite, judgments_url=str(tmp_path / "many.jsonl"), storage_url=root, k=[1],
                               gates=gates, max_errors=0.1, return_state=True,
                               retriever={"backend": "run-file", "run_file": str(tmp_path / "many-run.jsonl")})
        outcome = state.result(raise_on_failure=False, _sync=True)
        outcome = getattr(outcome, "outcome", outcome)
        (evaluation,) = outcome["evaluations"].values()
        check(f"flow-eval-{suite}", read_bytes(evaluation["report_url"]), tmp_path)


def test_the_evaluate_flow_resolves_span_labels_on_the_suites_snapshot_as_score_does(prefect_server, tmp_path):
    """A suite whose gold set is span labels (spec/fixtures/goldkeeper-one-gold-set), evaluated
    with its snapshot: the report scores the labels resolved to that snapshot's chunks, equal to
    `goldkeeper score --corpus`, and says how they resolved."""
    import json

    from goldkeeper.flows.evaluate import evaluate
    from tests.conftest import FIXTURES, run_cli

    case = FIXTURES / "goldkeeper-one-gold-set"
    corpus = tmp_path / "tokens.json"
    assert run_cli("snapshot", str(case / "chunks-tokens.jsonl"), "--chunker", "tokens", "-o", str(corpus),
                   "--quiet").code == 0
    outcome = finished(evaluate, suite="spans", judgments_url=str(case / "judgments.jsonl"),
                       run_url=str(case / "run-tokens.jsonl"), storage_url=f"file://{tmp_path}/store", k=[1, 5],
                       corpus_url=str(corpus), gates=["recall@5:0.5"], generated_at=NOW)
    flowed = json.loads(read_bytes(outcome["report_url"]))
    cli = run_cli("score", "-j", str(case / "judgments.jsonl"), "-r", str(case / "run-tokens.jsonl"), "--corpus",
                  str(corpus), "-k", "1,5", "--gate", "recall@5:0.5", "--now", NOW, "--format", "json")
    scored = json.loads(cli.stdout)
    assert flowed["metrics"] == scored["metrics"] and flowed["per_query"] == scored["per_query"]
    assert flowed["inputs"]["spans"] == scored["inputs"]["spans"] and flowed["inputs"]["spans"]["resolved"] == 8
    assert flowed["verdict"] == scored["verdict"]
    # In query partitions: the same labels resolved, the same report but for where it was made
    parted = finished(evaluate, suite="spans-partitioned", judgments_url=str(case / "judgments.jsonl"),
                      run_url=str(case / "run-tokens.jsonl"), storage_url=f"file://{tmp_path}/store", k=[1, 5],
                      corpus_url=str(corpus), gates=["recall@5:0.5"], partitions=2, generated_at=NOW)
    split = json.loads(read_bytes(parted["report_url"]))
    for part in ("metrics", "per_query", "verdict", "inputs", "validation"):
        assert split[part] == flowed[part], part
    assert not list((tmp_path / "store" / "work").rglob("*.jsonl"))  # the resolved labels' work file is gone
    # Without the snapshot, partitions refuse a span label without a chunk_id, as score does
    with pytest.raises(Exception, match="a span label without a chunk_id is scored on the chunks that hold its span"):
        finished(evaluate, suite="spans-partitioned", judgments_url=str(case / "judgments.jsonl"),
                 run_url=str(case / "run-tokens.jsonl"), storage_url=f"file://{tmp_path}/store", k=[1, 5],
                 partitions=2, generated_at=NOW)
