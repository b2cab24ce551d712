"""The judge in the lifecycle, on a real Prefect server: drift -> fix -> judge -> audit form
-> score with PPI++ intervals, and a judge below the kappa floor set aside (issue 41)."""

from __future__ import annotations

import json
import re
import threading

import pytest

from tests.flows.conftest import finished, paused_run

pytestmark = pytest.mark.usefixtures("prefect_server")

QUERIES = 24  # each labelled on one paragraph, which the re-index splits in two
UNCHANGED = 6  # documents the re-index leaves alone: their labels stay valid
WORDS = ["amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "krypton",
         "lagoon", "meadow", "nickel", "onyx", "prairie", "quartz", "russet", "sierra", "tundra", "umber", "violet",
         "willow", "xenon", "yarrow", "zephyr", "alder", "birch", "cedar", "dune"]


def _docs() -> dict[str, list[str]]:
    """Per document, its sentences: the first answers its query (two of its words), the
    second does not."""
    return {f"kb://doc/{n:02d}": [f"The {WORDS[n]} {WORDS[(n + 7) % 30]} procedure is described here in full.",
                                  f"Unrelated remarks follow about the {WORDS[(n + 13) % 30]} weather."]
            for n in range(QUERIES + UNCHANGED)}


def _suite(tmp_path, storage: str, judge_url: str, offsets: bool = False, **judge) -> dict:
    """The suite on storage: judgments on the paragraphs, a run over the re-chunked
    sentences (first sentence first), the configuration with the judge; the new chunks'
    file and the truth for the stub (query, sentence) -> grade."""
    from goldkeeper.core.drift import snapshot_rows
    from goldkeeper.core.judgments import dump_rows
    from goldkeeper.io.storage import write_judgments_version, write_suite
    from goldkeeper.models.suite import SuiteConfig

    docs = _docs()
    old = [{"doc_uri": uri, "doc_revision": "1", "ordinal": 0, "text": " ".join(s)} for uri, s in docs.items()]
    new = [{"doc_uri": uri, "doc_revision": "2" if n < QUERIES else "1", "ordinal": i, "text": text,
            **({"start_index": len(sentences[0]) + 1 if i else 0} if offsets else {})}
           for n, (uri, sentences) in enumerate(docs.items())
           for i, text in enumerate(sentences if n < QUERIES else [" ".join(sentences)])]
    before = {c["doc_uri"]: c for c in snapshot_rows(old, "para/v1")}
    after = list(snapshot_rows(new, "sentences/v2"))
    labels, truth, run = [], {}, []
    for n, uri in enumerate(docs):
        query = f"{WORDS[n]} {WORDS[(n + 7) % 30]} procedure"
        chunk = before[uri]
        labels.append({"query_id": f"q{n:02d}", "query": query, "doc_uri": uri, "chunk_id": chunk["chunk_id"],
                       "text_sha": chunk["text_sha"], "chunk_text": chunk["text"], "relevance": 1,
                       "labeled_by": "human:team", "labeled_at": "2026-11-01T00:00:00Z",
                       "stratum": "even" if n % 2 else "odd"})
        mine = [c for c in after if c["doc_uri"] == uri]
        for c in mine:
            truth[(query, c["text"])] = 1 if c["ordinal"] == 0 else 0
        others = [c for c in after if c["doc_uri"] != uri][:3]
        for c in others:  # ranked, never labelled for this query: the pool, not relevant
            truth[(query, c["text"])] = 0
        # the retriever finds the answer first on most queries, second on every fifth
        ranked = [c["chunk_id"] for c in mine]
        run.append({"query_id": f"q{n:02d}", "ranking": (ranked[::-1] if n % 5 == 0 else ranked)
                    + [c["chunk_id"] for c in others]})
    (tmp_path / "chunks-v2.jsonl").write_text("".join(json.dumps(c) + "\n" for c in new))
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run))
    write_judgments_version(storage, "kb", b"".join(dump_rows(labels)), None)
    write_suite(storage, SuiteConfig(suite="kb", runs=[str(tmp_path / "run.jsonl")], k=[1, 5],
                                     gates=["recall@1:0.5"], chunker="sentences/v2",
                                     judge={"base_url": judge_url, "model": "stub-judge", **judge}))
    return {"chunks": str(tmp_path / "chunks-v2.jsonl"), "truth": truth}


def _answer_audit(storage: str, outcome: dict, grade_first: bool = True, then_stop: bool = False) -> None:
    """Run the rejudge flow and answer its audit form as a person who grades the first
    sentence of each item relevant, and (``then_stop``) stop at the queue's next form."""
    from prefect.flow_runs import resume_flow_run

    from goldkeeper.flows.rejudge import rejudge

    worker = threading.Thread(target=lambda: outcome.update(rejudge(
        suite="kb", storage_url=storage, batch=20, poll_interval=1, timeout=300)))
    worker.start()
    paused = paused_run(storage)
    form = json.loads(_input_schema(paused))["properties"]
    items = sorted({name.split("_")[1] for name in form if name.startswith("item_")}, key=int)
    assert "Audit the judge" in form["reviewer"]["description"]
    assert not any("stub-judge" in json.dumps(p) for p in form.values()), "the judge's grade is shown"
    # the split paragraphs' first sentences answer; the pool's chunks (other documents) do not
    split = [n for n in items if "**SPLIT**" in form[f"item_{n}_1_1"]["description"]]
    assert split and len(split) < len(items)
    # (_sync: where Playwright's loop runs in this thread, Prefect would hand back a coroutine)
    resume_flow_run(paused.id, run_input={"reviewer": "ana", **({f"item_{n}_1_1": True for n in split}
                                                                if grade_first else {})}, _sync=True)
    if then_stop:
        from tests.flows.conftest import next_form

        next_form(paused.id, paused.state.state_details.run_input_keyset["schema"])
        resume_flow_run(paused.id, run_input={"reviewer": "ana", "stop": True}, _sync=True)
    worker.join(300)
    assert not worker.is_alive()


def _audit_in_the_browser(prefect_server, storage: str, browser) -> None:
    """The rejudge flow in a process of its own, its audit form answered in Prefect's UI at
    1280x720 with the mouse: the name typed, the first sentence of each split paragraph
    switched on, the pool's chunks (other documents) left off."""
    from playwright.sync_api import expect

    from tests.browser import SCREENSHOTS, new_page
    from tests.flows.test_ui_in_a_browser import (
        _field,
        _rejudge_in_a_process,
        _resume_form,
        _submit_and_finish,
        _switch,
    )

    with _rejudge_in_a_process(prefect_server, suite="kb", storage_url=storage, batch=20) as flow:
        paused = paused_run(storage)
        form = json.loads(_input_schema(paused))["properties"]
        assert not any("stub-judge" in json.dumps(p) for p in form.values()), "the judge's grade is shown"
        split = [name for name, field in form.items() if name.endswith("_1_1") and "**SPLIT**" in field["description"]]
        pool = [name for name, field in form.items() if name.endswith("_1_1") and "**UNJUDGED**" in field["description"]]
        assert split and pool and len(split) + len(pool) == len([n for n in form if n.endswith("_none")])
        page = new_page(browser, 1280, 720)
        dialog = _resume_form(page, prefect_server["PREFECT_API_URL"].removesuffix("/api"), paused.id)
        expect(dialog.get_by_text(re.compile(r"Audit the judge: items 1 to \d+ of \d+ in kb \(8 sampled queries\)"))
               ).to_be_visible()
        page.screenshot(path=str(SCREENSHOTS / "13a-audit-form-1280x720-top.png"))
        dialog.locator("textarea, input[type=text]").first.fill("ana")
        for name in split:
            _switch(dialog, form[name]["title"]).click()
            expect(_switch(dialog, form[name]["title"])).to_have_attribute("aria-checked", "true")
        first_pool = form[pool[0]]["title"]
        _field(dialog, first_pool).first.scroll_into_view_if_needed()
        expect(dialog.get_by_text("nobody had graded them for this query").first).to_be_visible()
        page.screenshot(path=str(SCREENSHOTS / "13b-audit-form-1280x720-pool-item.png"))
        _submit_and_finish(dialog, flow)


def _input_schema(run) -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run_input(run.id, run.state.state_details.run_input_keyset["schema"])


@pytest.fixture
def stub():
    from goldkeeper.examples.stub_judge import StubJudge

    started = []

    def start(**rules):
        judge = StubJudge(**rules)
        started.append(judge)
        return judge, judge.start()

    yield start
    for judge in started:
        judge.stop()


def test_the_lifecycle_judges_people_audit_a_sample_and_the_gate_reads_ppi_intervals(tmp_path, stub, prefect_server,
                                                                                     browser):
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import read_current_judgments, read_history, read_latest_audit
    from tests.flows.test_ui_in_a_browser import _artifacts  # the sync client: Playwright's loop is in this thread
    from tests.flows.test_verdicts import events_about

    storage = f"file://{tmp_path}/store"
    judge, url = stub()
    suite = _suite(tmp_path, storage, url, audit_at_most=8, kappa_floor=0.6)
    judge.truth = suite["truth"]
    outcome = finished(on_reindex, suite="kb", chunks_url=suite["chunks"], storage_url=storage)
    drift = outcome["drift"]
    assert drift["split"] == QUERIES and drift["valid"] + drift["re_anchorable"] == UNCHANGED
    summary, workload = outcome["judge"]["summary"], outcome["judge"]["workload"]
    pool = 3 * (QUERIES + UNCHANGED)  # each query's run ranks 3 chunks of other documents nobody graded for it
    assert (summary["pairs"], summary["graded"], summary["errors"]) == (2 * QUERIES + pool,) * 2 + (0,)
    _, record, people = read_latest_audit(storage, "kb")
    audited = {item["query_id"] for item in record["items"] if item["action"] == "rejudge"}
    assert workload == {"queued": QUERIES, "judged": QUERIES, "pooled": QUERIES + UNCHANGED, "pooled_labels": pool,
                        "audited": 8 + len(audited), "for_people": 8 + len(audited)}  # a pool item per query
    (evaluation,) = outcome["evaluations"].values()
    assert evaluation["verdict"] == "INDETERMINATE" and "not audited yet: 8 sampled queries" in evaluation["message"]
    pending = _artifacts(["goldkeeper-kb-summary"])["goldkeeper-kb-summary"].data
    assert "The judge's labels wait for people's audit of 8 sampled queries" in pending
    data, _ = read_current_judgments(storage, "kb")
    judged = [json.loads(line) for line in data.decode().splitlines() if "synthetic:stub-judge" in line]
    assert len(judged) == 2 * QUERIES + pool and all(row["prompt_sha"] == summary["prompt_sha"] for row in judged)
    assert sum("pooled_from" in row for row in judged) == pool
    assert people is None and len(record["queries"]) == 8 and len(record["items"]) == 8 + len(audited)
    assert set(record["queries"]) <= {f"q{n:02d}" for n in range(QUERIES + UNCHANGED)}  # the pool: every query
    assert {int(q[1:]) % 2 for q in record["queries"]} == {0, 1}  # both strata sampled
    artifact = _artifacts(["goldkeeper-kb-judge"])["goldkeeper-kb-judge"]
    assert f"**for people now** | **{8 + len(audited)}**" in artifact.data
    assert f"graded {2 * QUERIES + pool} of {2 * QUERIES + pool} candidate(s)" in artifact.data
    api = prefect_server["PREFECT_API_URL"]
    assert events_about(api, "goldkeeper.suite.kb", "goldkeeper.judge.answered")
    opened = events_about(api, "goldkeeper.suite.kb", "goldkeeper.audit.opened")
    assert opened[0]["payload"]["queries"] == 8

    _audit_in_the_browser(prefect_server, storage, browser)
    _, _, people = read_latest_audit(storage, "kb")
    assert people is not None
    audit_artifact = _artifacts(["goldkeeper-kb-audit"])["goldkeeper-kb-audit"].data
    assert "agrees with them at Cohen's kappa 1.000 (floor 0.6)" in audit_artifact
    _, _, people = read_latest_audit(storage, "kb")
    assert len(people) == 2 * len(audited) + 3 * 8 and {row["labeled_by"] for row in people} == {"human:ana"}
    latest = read_history(storage, "kb")[-1]
    assert latest["kappa"] == pytest.approx(1.0) and latest["audited_queries"] == 8
    report = json.loads((tmp_path / latest["report"].removeprefix(f"file://{tmp_path}/")).read_text())
    recall = report["metrics"]["recall@1"]
    assert recall["ci_method"] == "ppi++" and recall["ci"][0] <= recall["value"] <= recall["ci"][1]
    # every fifth query of the split ones ranks the answer second: 5 of 30 miss at 1, and the
    # judge, right on every pair, says so; PPI++ (power-tuned) covers it
    assert recall["judge_value"] == pytest.approx(25 / 30) and recall["ci"][0] <= 25 / 30 <= recall["ci"][1]
    estimate = report["audit"]["estimates"]["recall@1"]
    assert estimate["n_labeled"] == 8 and estimate["n_unlabeled"] == QUERIES + UNCHANGED - 8  # the pool: all judged
    assert report["audit"]["queries"] == 8 and report["verdict"]["status"] == "PASS"
    # the pool: every chunk of every query's top 5 is now graded (by the judge, audited)
    assert report["metrics"]["judged@5"]["judge_value"] == pytest.approx(1.0)
    summary_artifact = _artifacts(["goldkeeper-kb-summary"])["goldkeeper-kb-summary"].data
    assert "People audited 8 queries; the judge agrees with them at kappa 1.000" in summary_artifact
    assert "Measured against" in summary_artifact  # the judge's bias, in words
    assert "judge's kappa" in _artifacts(["goldkeeper-kb-trend"])["goldkeeper-kb-trend"].data
    answered_events = events_about(api, "goldkeeper.suite.kb", "goldkeeper.audit.answered")
    assert answered_events[0]["payload"]["kappa"] == pytest.approx(1.0)


def test_a_judge_below_the_kappa_floor_is_set_aside_and_the_whole_queue_goes_to_people(tmp_path, stub,
                                                                                     prefect_server):
    from goldkeeper.core.rejudge import pending_items
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.loading import judgment_rows_of
    from goldkeeper.io.storage import read_current_judgments, read_history, read_latest_queue
    from tests.flows.test_verdicts import events_about

    storage = f"file://{tmp_path}/store"
    judge, url = stub(bias=1.0)  # every grade one too high: everything is relevant
    suite = _suite(tmp_path, storage, url, audit_at_most=8, kappa_floor=0.6)
    judge.truth = suite["truth"]
    outcome = finished(on_reindex, suite="kb", chunks_url=suite["chunks"], storage_url=storage)
    assert outcome["judge"]["workload"]["pooled_labels"] == 3 * (QUERIES + UNCHANGED)
    answered: dict = {}
    _answer_audit(storage, answered, then_stop=True)
    audit = answered["audit"]
    assert audit["set_aside"] and audit["kappa"] < 0.6
    data, _ = read_current_judgments(storage, "kb")
    assert b"synthetic:" not in data  # the judge's labels are gone (the pool's too), the stale ones back
    rows = judgment_rows_of(data, "judgments")
    _, queue = read_latest_queue(storage, "kb")
    assert len(pending_items(queue, rows)) == QUERIES  # the whole queue waits for people
    set_aside = events_about(prefect_server["PREFECT_API_URL"], "goldkeeper.suite.kb", "goldkeeper.judge.set_aside")
    assert set_aside[0]["payload"]["returned"] == QUERIES and set_aside[0]["payload"]["kappa"] < 0.6
    latest = read_history(storage, "kb")[-1]
    assert latest["verdict"] == "INDETERMINATE" and latest["kappa"] < 0.6
    assert any("below the floor of 0.6" in reason for reason in latest["reasons"])


def test_the_judge_proposes_spans_in_the_lifecycle_and_its_labels_carry_them(tmp_path, stub):
    """A suite whose judge has ``spans``: the judge quotes the words that answer, and each label
    it grades relevant names that passage of the live document at the chunk's offsets,
    proposed by the judge; the labels it grades 0 name none."""
    from goldkeeper.core.judge import SPAN_PROMPT, prompt_sha
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import read_current_judgments

    storage = f"file://{tmp_path}/store"
    judge, url = stub()
    suite = _suite(tmp_path, storage, url, offsets=True, spans=True, audit_at_most=8)
    judge.truth = suite["truth"]
    outcome = finished(on_reindex, suite="kb", chunks_url=suite["chunks"], storage_url=storage)
    summary = outcome["judge"]["summary"]
    assert summary["prompt_sha"] == prompt_sha(SPAN_PROMPT) and summary["errors"] == 0
    data, _ = read_current_judgments(storage, "kb")
    judged = [json.loads(line) for line in data.decode().splitlines() if "synthetic:stub-judge" in line]
    relevant = [row for row in judged if row["relevance"]]
    assert len(relevant) == QUERIES == summary["quotes"] and summary["quotes_unplaced"] == 0
    docs = _docs()
    for row in relevant:
        span, document = row["span"], " ".join(docs[row["doc_uri"]])
        assert span["proposed_by"] == "synthetic:stub-judge" and document[span["start"]:span["end"]] == span["exact"]
        assert span["exact"] == docs[row["doc_uri"]][0]  # the first sentence, the one that answers
    assert not any("span" in row for row in judged if not row["relevance"])


def test_a_judge_that_cannot_answer_fails_closed_and_the_whole_queue_waits_for_people(tmp_path, prefect_server):
    """An endpoint nobody listens on: every pair is an error, no label is the judge's, no
    audit opens, and the evaluations score as they would without a judge. A key the worker
    does not have: the judge is not asked at all, and an event says so."""
    import socket

    from goldkeeper.core.rejudge import pending_items
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.loading import judgment_rows_of
    from goldkeeper.io.storage import read_current_judgments, read_latest_audit, read_latest_queue
    from tests.flows.test_verdicts import events_about

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    storage = f"file://{tmp_path}/store"
    suite = _suite(tmp_path, storage, f"http://127.0.0.1:{port}/v1", retries=0)
    outcome = finished(on_reindex, suite="kb", chunks_url=suite["chunks"], storage_url=storage)
    summary = outcome["judge"]["summary"]
    assert summary["graded"] == 0 and summary["errors"] == summary["pairs"] > 0
    assert set(summary["error_kinds"]) == {"network"}
    assert outcome["judge"]["audit_url"] is None and read_latest_audit(storage, "kb") is None
    data, _ = read_current_judgments(storage, "kb")
    assert b"synthetic:" not in data
    _, queue = read_latest_queue(storage, "kb")
    assert len(pending_items(queue, judgment_rows_of(data, "judgments"))) == QUERIES
    (evaluation,) = outcome["evaluations"].values()
    assert "audit" not in evaluation["message"]  # scored as without a judge

    from goldkeeper.io.storage import read_suite, write_suite

    config = read_suite(storage, "kb")
    write_suite(storage, config.model_copy(update={"judge": config.judge.model_copy(
        update={"api_key_env": "GOLDKEEPER_TEST_KEY_NOBODY_SET"})}))
    again = finished(on_reindex, suite="kb", chunks_url=suite["chunks"], storage_url=storage)
    assert again["judge"] is None
    failed = events_about(prefect_server["PREFECT_API_URL"], "goldkeeper.suite.kb", "goldkeeper.judge.failed")
    assert "GOLDKEEPER_TEST_KEY_NOBODY_SET" in failed[0]["payload"]["error"]
