"""The evaluate flow on a real (temporary, loopback) Prefect server; artifacts read back."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

import goldkeeper
from goldkeeper.io.storage import read_history
from tests.conftest import FIXTURES, run_cli
from tests.flows.conftest import finished, next_form

pytest.importorskip("prefect")


def _artifacts(keys):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def read():
        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
            return {a.key: a for a in sorted(found, key=lambda a: a.created)}  # the newest of each key

    return asyncio.run(read())


def test_evaluate_publishes_report_history_and_artifacts(prefect_server, tmp_path):
    from goldkeeper.flows.evaluate import evaluate

    root = f"file://{tmp_path}/store"
    case = FIXTURES / "basic"
    outcome = finished(evaluate, suite="Basic Suite", judgments_url=str(case / "judgments.jsonl"),
                       run_url=str(case / "run.jsonl"), storage_url=root, k=[1, 3],
                       gates=["recall@3:0.9"], generated_at="2026-11-29T12:00:00Z")
    assert outcome["verdict"] == "FAIL"
    report = json.loads(open(outcome["report_url"][len("file://"):]).read())
    assert report["metrics"]["recall@3"]["value"] == 0.5
    assert report["verdict"]["status"] == "FAIL"
    history = read_history(root, "Basic Suite")
    assert len(history) == 1 and history[0]["verdict"] == "FAIL"

    keys = ["goldkeeper-basic-suite-34a9c0-metrics", "goldkeeper-basic-suite-34a9c0-summary", "goldkeeper-basic-suite-34a9c0-trend"]
    found = _artifacts(keys)
    assert set(found) == set(keys)
    summary = found["goldkeeper-basic-suite-34a9c0-summary"].data
    assert summary.startswith("### ❌ goldkeeper: FAIL")
    # A local report is named as a path, never offered as a link a browser cannot open.
    assert f"Full report on storage: `{outcome['report_url']}`" in summary and "](file://" not in summary
    table = found["goldkeeper-basic-suite-34a9c0-metrics"].data
    table = json.loads(table) if isinstance(table, str) else table
    assert table[0] == {"metric": "recall@3", "value": "0.5000", "interval": table[0]["interval"], "n": "2",
                        "threshold": "0.9", "gate": "FAIL (recall@3:0.9)"}


def test_the_same_inputs_are_evaluated_once_and_new_inputs_append_to_history(prefect_server, tmp_path):
    from goldkeeper.flows.evaluate import evaluate

    root = f"file://{tmp_path}/store"
    case = FIXTURES / "no-positives"
    run = tmp_path / "run.jsonl"
    run.write_bytes((case / "run.jsonl").read_bytes())
    first = finished(evaluate, suite="np", judgments_url=str(case / "judgments.jsonl"), run_url=str(run), storage_url=root,
                     k=[3], generated_at="2026-11-29T12:00:00Z")
    again = finished(evaluate, suite="np", judgments_url=str(case / "judgments.jsonl"), run_url=str(run), storage_url=root,
                     k=[3], generated_at="2026-11-30T12:00:00Z")
    assert again["cached"] and again["report_url"] == first["report_url"] and again["verdict"] == first["verdict"]
    run.write_bytes(run.read_bytes().replace(b"\n", b"\n\n", 1))  # other bytes: a new evaluation
    third = finished(evaluate, suite="np", judgments_url=str(case / "judgments.jsonl"), run_url=str(run), storage_url=root,
                     k=[3], generated_at="2026-11-30T12:00:00Z")
    assert not third["cached"]
    history = read_history(root, "np")
    assert [h["time"] for h in history] == ["2026-11-29T12:00:00Z", "2026-11-30T12:00:00Z"]
    assert len(list((tmp_path / "store" / "reports" / "np").iterdir())) == 2
    other_k = finished(evaluate, suite="np", judgments_url=str(case / "judgments.jsonl"), run_url=str(run), storage_url=root,
                       k=[5], generated_at="2026-12-01T12:00:00Z")
    assert not other_k["cached"]  # settings are part of the key


@pytest.mark.slow
def test_goldkeeper_demo_runs_the_whole_lifecycle_end_to_end(tmp_path, monkeypatch):
    # As on a fresh machine: no server configured, so Prefect starts a temporary one.
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    result = run_cli("demo", "--judge", "--storage", f"file://{tmp_path}/store", cwd=tmp_path)
    assert result.code == 0, result.stderr[-2000:]
    out, judged = result.stdout.split("with a judge (help-center-judged)", 1)
    assert "drift after the re-index: 0 valid, 3 re-anchorable, 2 merged, 4 split, 1 orphaned" in out
    assert "re-anchored 5 label(s)" in out and "7 wait for a person (5 to re-judge, 2 to confirm), in file://" in out
    assert "made a new judgments version, and now 2 wait for a person (2 to confirm)" in out
    assert "run-a: verdict PASS" in out and "run-b: verdict FAIL" in out
    assert "recall@1 is 0.2000, below 0.4" in out and "http://127.0.0.1:4200/artifacts" in out
    # The bracket by hand: with each queued (SPLIT, ORPHANED) label put first in its query's
    # ranking, recall@1 of run-b over the fixed judgments (one label a query).
    example = Path(goldkeeper.__file__).parent / "examples" / "lifecycle"
    version = re.search(r"new judgments version: file://(\S+)", out).group(1)
    labels = {}
    for row in map(json.loads, Path(version).read_text().splitlines()):
        labels.setdefault(row["query_id"], set()).add(row["chunk_id"])
    queued = {json.loads(line)["query_id"] for line in next((tmp_path / "store" / "queue" / "help-center").iterdir())
              .read_text().splitlines() if json.loads(line)["action"] == "rejudge"}
    first = {row["query_id"]: row["ranking"][0] for row in map(json.loads, (example / "run-b.jsonl").read_text().splitlines())}
    scored = sum(first.get(q) in keys for q, keys in labels.items()) / len(labels)
    found = sum(q in queued or first.get(q) in keys for q, keys in labels.items()) / len(labels)
    assert f"recall@1 {scored:.4f} as scored, {found:.4f} if every queued label is found" in out
    # Day two: the reviewer's answers make a new version; run-b passes on it, and the whole
    # change is the labels' (the retriever did not change).
    assert "a reviewer's answers (5 label(s) re-judged) made a new judgments version" in out
    assert "run-b: verdict PASS" in out.split("a reviewer's answers", 1)[1]
    assert re.search(r"recall@1 changed \+0\.3000: \+0\.3000 from the labels, \+0\.0000 from the retriever", out)
    history = read_history(f"file://{tmp_path}/store", "help-center")  # one suite, two systems, two days each
    assert [(entry["system"], entry["verdict"]) for entry in history] == [
        ("run-a", "PASS"), ("run-b", "FAIL"), ("run-a", "PASS"), ("run-b", "PASS")]
    for entry, split in zip(history, (4, 4, 0, 0)):
        assert json.loads(Path(entry["report"].removeprefix("file://")).read_text())["judgments"]["drift"]["split"] == split
    queue = next((tmp_path / "store" / "queue" / "help-center").iterdir()).read_text().splitlines()
    assert sorted(json.loads(line)["status"] for line in queue) == ["MERGED"] * 2 + ["ORPHANED"] + ["SPLIT"] * 4
    # With the stub judge: it answers the 7 queued items and grades the runs' unjudged top-5
    # chunks (the pool), people audit 3 queries (at most 3 asked), and the suite is scored on
    # PPI++ estimates of its metrics.
    assert "a STUB judge on loopback" in judged and "the judge graded 48 of 48 candidate(s)" in judged
    assert "7 queued item(s) before the judge, 4 after (4 to audit, 0 the judge could not answer)" in judged
    assert "it also graded 35 unjudged chunk(s) of the runs' top k" in judged
    assert re.search(r"audited 4 item\(s\) of 3 sampled queries .*: kappa 1\.000", judged)
    judged_history = read_history(f"file://{tmp_path}/store", "help-center-judged")
    assert [e["verdict"] for e in judged_history[:2]] == ["INDETERMINATE"] * 2  # before the audit
    for entry in judged_history[2:]:
        report = json.loads(Path(entry["report"].removeprefix("file://")).read_text())
        recall = report["metrics"]["recall@1"]
        assert recall["ci_method"] == "ppi++" and report["audit"]["kappa"] == 1.0 and entry["kappa"] == 1.0
        assert f"recall@1 {recall['value']:.3f} [{recall['ci'][0]:.3f}, {recall['ci'][1]:.3f}] (ppi++" in judged
    again = run_cli("demo", "--storage", f"file://{tmp_path}/store", cwd=tmp_path)
    assert again.code == 0 and "re-anchored 0 label(s); new judgments version: none" in again.stdout
    assert len(list((tmp_path / "store" / "reports" / "help-center").iterdir())) == 4  # nothing twice


@pytest.mark.parametrize("partitioned", [{}, {"partitions": 3}], ids=["one-task", "partitioned"])
def test_on_reindex_fixes_queues_versions_and_evaluates(prefect_server, tmp_path, partitioned):
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import write_judgments_version

    root = f"file://{tmp_path}/store"
    case = FIXTURES / "drift"
    original = (case / "judgments.jsonl").read_bytes()
    write_judgments_version(root, "refunds", original, None)
    run = tmp_path / "run.jsonl"
    run.write_text('{"query_id": "q1", "ranking": ["c1:926073213714b1c617790e335bb0fabc"]}\n')
    outcome = finished(on_reindex, suite="refunds", corpus_url=str(case / "corpus.json"), run_urls=[str(run)], storage_url=root,
                         k=[1], gates=["drift:0.1"], **partitioned)
    assert outcome["drift"]["invalid_ratio"] == 0.75
    assert outcome["reanchored"] == 1
    versions = sorted(p.name for p in (tmp_path / "store" / "judgments" / "refunds" / "versions").iterdir())
    assert len(versions) == 2  # the original and the fixed one, both kept
    current = (tmp_path / "store" / "judgments" / "refunds" / "current.jsonl").read_text()
    assert "reanchored_from" in current
    queue = [json.loads(line) for line in open(outcome["queue_url"][len("file://"):])]
    assert [item["status"] for item in queue] == ["SPLIT", "ORPHANED"]
    evaluation = outcome["evaluations"][str(run)]
    assert evaluation["verdict"] == "FAIL"  # after the fix, half the labels still need a person
    assert "50% of judgments no longer match the live corpus" in evaluation["reasons"]
    found = _artifacts(["goldkeeper-refunds-drift", "goldkeeper-refunds-summary"])
    drift = found["goldkeeper-refunds-drift"].data
    assert "Of 4 labels, 1 still pointed at the text they were written for. goldkeeper re-anchored 1" in drift
    assert "| still point at their text | 1 | 2 |" in drift and "| text split across chunks (needs a person) | 1 | 1 |" in drift
    assert "75.0% before the fix, 50.0% after" in drift and "; 2 wait for a person (2 to re-judge); those to re-judge count as misses" in drift
    assert "run the `goldkeeper-rejudge` flow for suite `refunds`" in drift
    again = finished(on_reindex, suite="refunds", corpus_url=str(case / "corpus.json"), run_urls=[str(run)],
                       storage_url=root, k=[1], gates=["drift:0.1"], **partitioned)
    assert not (tmp_path / "store" / "work" / "refunds").exists() or \
        not any((tmp_path / "store" / "work" / "refunds").iterdir())  # partitions cleaned up
    assert again["queue_url"] == outcome["queue_url"] and again["judgments_version"] is None  # nothing twice
    assert again["evaluations"][str(run)]["cached"]
    assert "Drift against the live corpus: 2 valid, 0 re-anchorable, 0 merged, 1 split, 1 orphaned" in \
        found["goldkeeper-refunds-summary"].data


def test_a_stale_rewrite_loses_cleanly(tmp_path):
    from goldkeeper.errors import StorageError
    from goldkeeper.io.storage import read_current_judgments, write_judgments_version

    root = f"file://{tmp_path}/store"
    _, first = write_judgments_version(root, "s", b"one\n", None)
    write_judgments_version(root, "s", b"two\n", first)  # another flow wins
    with pytest.raises(StorageError, match="changed since it was read"):
        write_judgments_version(root, "s", b"three\n", first)  # the loser read version one
    assert read_current_judgments(root, "s")[0] == b"two\n"
    assert len(list((tmp_path / "store" / "judgments" / "s" / "versions").iterdir())) == 2


def test_deployments_point_at_real_flows_of_the_installed_package_with_nothing_to_fill_in():
    from pathlib import Path

    import yaml
    from prefect import Flow
    from prefect.utilities.importtools import import_object

    text = (Path(__file__).resolve().parents[2] / "deployments" / "prefect.yaml").read_text()
    spec = yaml.safe_load(text)
    names = set()
    for deployment in spec["deployments"]:
        assert ".py" not in deployment["entrypoint"]  # a module path: no file of a clone
        target = import_object(deployment["entrypoint"])
        assert isinstance(target, Flow)
        parameters = set(target.parameters.properties)
        given = set(deployment.get("parameters", {}))
        for trigger in deployment.get("triggers", []):
            given |= set(trigger.get("parameters", {}))
        assert given <= parameters, (deployment["name"], given - parameters)
        # only the suite is left to the event, the schedule or the person starting the run
        assert set(target.parameters.required or []) <= given | {"suite"}, deployment["name"]
        assert deployment["schedules"] is None  # shipped off; kept on redeploy
        names.add(f"{target.name}/{deployment['name']}")
    assert names == {"goldkeeper-on-reindex/on-reindex", "goldkeeper-evaluate-suite/nightly", "goldkeeper-rejudge/rejudge"}
    assert "<" not in "".join(line.split("#")[0] for line in text.splitlines())  # no placeholder
    (step,) = spec["pull"]
    assert step["prefect.deployments.steps.run_shell_script"]["script"] == "goldkeeper --version"


def test_on_reindex_from_chunker_output_snapshots_first(prefect_server, tmp_path):
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import write_judgments_version

    root = f"file://{tmp_path}/store"
    corpus = json.loads((FIXTURES / "merge" / "corpus.json").read_text())
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(json.dumps({k: c[k] for k in ("doc_uri", "doc_revision", "ordinal", "text")}) + "\n"
                              for c in corpus["chunks"]))
    write_judgments_version(root, "wiki", (FIXTURES / "merge" / "judgments.jsonl").read_bytes(), None)
    outcome = finished(on_reindex, suite="wiki", chunks_url=str(chunks), chunker=corpus["chunker_fingerprint"], storage_url=root)
    assert outcome["drift"]["merged"] == 2 and outcome["reanchored"] == 3
    manifests = list((tmp_path / "store" / "snapshots" / "wiki").glob("*/manifest.json"))
    assert len(manifests) == 1
    from goldkeeper.io.snapshots import open_corpus

    assert [c.chunk_id for c in open_corpus(str(manifests[0]))] == [c["chunk_id"] for c in corpus["chunks"]]
    # The same chunker output again: the stored snapshot is found, not rebuilt.
    before = {p.name: p.stat().st_mtime_ns for p in manifests[0].parent.iterdir()}
    again = finished(on_reindex, suite="wiki", chunks_url=str(chunks), chunker=corpus["chunker_fingerprint"], storage_url=root)
    # (the same re-index, taken up from its record: its drift again, and no version made twice)
    assert again["drift"] == outcome["drift"] and again["judgments_version"] is None
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterType

    async def progress():
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(type=ArtifactFilterType(any_=["progress"])))
    drift_progress = [a for a in asyncio.run(progress()) if (a.description or "").startswith("drift: reading")]
    assert drift_progress and all(a.data == 100.0 for a in drift_progress)
    assert {p.name: p.stat().st_mtime_ns for p in manifests[0].parent.iterdir()} == before


def retrieve_for_flow(query, k, mode):  # the eval flow's Python retriever in the test below
    if mode == "down":
        raise ConnectionError("index offline")
    return [query.split()[-1], "d-other"]


def test_eval_flow_produces_runs_per_mode_and_fails_closed_on_errors(prefect_server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterType

    from goldkeeper.flows.eval import eval_retriever

    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps({"query_id": f"q{i}", "query": f"find d{i}", "doc_uri": f"d{i}",
                                             "relevance": 1}) + "\n" for i in range(12)))
    root = f"file://{tmp_path}/store"
    state = eval_retriever(suite="live", judgments_url=str(judgments), modes=["dense", "down"], storage_url=root,
                           k=[1], gates=["recall@1:0.9"], intervals=False, return_state=True,
                           retriever={"backend": "python", "python": "tests.flows.test_evaluate:retrieve_for_flow"})
    assert state.is_failed() and state.message.startswith("1 of 2 evaluation(s) did not pass: live (down) FAIL")
    outcome = state.result(raise_on_failure=False).outcome["evaluations"]
    assert outcome["dense"]["verdict"] == "PASS"
    assert outcome["down"]["verdict"] == "FAIL" and any("calls failed" in r or "every retriever call" in r
                                                        for r in outcome["down"]["reasons"])
    runs = sorted(p.parent.name for p in (tmp_path / "store" / "runs").glob("*/*.jsonl"))
    assert runs == ["live-dense", "live-down"]
    assert (tmp_path / "store" / "cache" / "live.jsonl").read_text().count("\n") == 12  # answers cached

    async def progress():
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(type=ArtifactFilterType(any_=["progress"])))
    found = asyncio.run(progress())
    assert found and max(a.data for a in found) == 100.0


def test_eval_flow_stops_asking_once_its_sequential_gates_settle(prefect_server, tmp_path):
    from goldkeeper.flows.eval import eval_retriever

    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps({"query_id": f"q{i}", "query": f"find d{i}", "doc_uri": f"d{i}",
                                             "relevance": 1}) + "\n" for i in range(200)))
    root = f"file://{tmp_path}/store"
    state = eval_retriever(suite="seq", judgments_url=str(judgments), storage_url=root, k=[1], concurrency=8,
                           gates=["recall@1:sequential:0.5"], intervals=False, return_state=True,
                           retriever={"backend": "python", "python": "tests.flows.test_evaluate:retrieve_for_flow"})
    assert state.is_completed(), state.message
    report_url = state.result()["evaluations"]["seq"]["report_url"]
    report = json.loads((tmp_path / report_url.removeprefix(f"file://{tmp_path}/")).read_text())
    spent = report["retrieval"]["sequential"]
    assert spent["of"] == 200 and spent["asked"] < 200 and spent["asked"] % 8 == 0
    assert report["judgments"]["queries"] == spent["asked"]
    run = next((tmp_path / "store" / "runs").glob("seq/*.jsonl"))
    assert run.read_text().count("\n") == spent["asked"]


def _event(resource):
    import datetime
    import uuid

    from prefect.server.events.schemas.events import ReceivedEvent

    return ReceivedEvent(occurred=datetime.datetime.now(datetime.timezone.utc), event="goldkeeper.corpus.reindexed",
                         resource=resource, id=uuid.uuid4())


def test_the_reindex_trigger_renders_with_prefects_own_renderer_and_never_drops_a_key():
    """Server-less: the yaml's trigger equals the code's, Prefect's hydration renders it, a
    missing key falls back to its default, and an event about another resource starts nothing."""
    import copy

    import yaml
    from prefect.server.events.actions import RunDeployment
    from prefect.server.events.schemas.automations import EventTrigger
    from prefect.utilities.schema_tools.hydration import HydrationContext, hydrate

    from goldkeeper.flows.lifecycle import REINDEX_EVENT, REINDEX_MATCH, REINDEX_PARAMETERS

    spec = yaml.safe_load((FIXTURES.parents[1] / "deployments" / "prefect.yaml").read_text())
    (trigger,) = next(d for d in spec["deployments"] if d["name"] == "on-reindex")["triggers"]
    assert trigger["parameters"] == REINDEX_PARAMETERS and trigger["match"] == REINDEX_MATCH
    assert trigger["expect"] == [REINDEX_EVENT]

    def render(resource):
        parameters = copy.deepcopy(REINDEX_PARAMETERS)
        RunDeployment._upgrade_v1_templates(parameters)
        return hydrate(parameters, HydrationContext(raise_on_error=True, render_jinja=True,
                                                    jinja_context={"event": _event(resource)}))

    full = render({"prefect.resource.id": "goldkeeper.corpus.wiki", "goldkeeper.suite": "wiki-qa",
                   "goldkeeper.snapshot_url": "s3://b/snap/manifest.json"})
    none = {"chunks_url": None, "chunker": None, "store_url": None, "store_fields": None}
    assert full == {"suite": "wiki-qa", "corpus_url": "s3://b/snap/manifest.json", **none}
    bare = render({"prefect.resource.id": "goldkeeper.corpus.wiki"})
    assert bare == {"suite": "wiki", "corpus_url": None, **none}
    store = render({"prefect.resource.id": "goldkeeper.corpus.wiki", "goldkeeper.chunker": "rcts-400",
                    "goldkeeper.store_url": "lancedb:/data/lance#chunks", "goldkeeper.store_fields": "text=body"})
    assert store == {"suite": "wiki", "corpus_url": None, "chunks_url": None, "chunker": "rcts-400",
                     "store_url": "lancedb:/data/lance#chunks", "store_fields": "text=body"}
    covering = EventTrigger(expect={REINDEX_EVENT}, match=REINDEX_MATCH, posture="Reactive", threshold=1)
    assert covering.covers(_event({"prefect.resource.id": "goldkeeper.corpus.wiki"}))
    assert not covering.covers(_event({"prefect.resource.id": "other.corpus.wiki"}))


def test_on_reindex_refuses_a_rendered_event_without_a_snapshot(prefect_server, tmp_path):
    from goldkeeper.flows.lifecycle import on_reindex

    with pytest.raises(ValueError, match="give corpus_url, or chunks_url or store_url with chunker"):
        on_reindex(suite="wiki", corpus_url=None, chunks_url=None, chunker=None, storage_url=f"file://{tmp_path}")


def test_emit_reindex_refuses_without_a_target_or_a_server(tmp_path, monkeypatch):
    missing = run_cli("emit-reindex", "wiki")
    assert missing.code == 2 and "--snapshot-url" in missing.stderr
    monkeypatch.setenv("PREFECT_API_URL", "")
    nowhere = run_cli("emit-reindex", "wiki", "--snapshot-url", "s3://b/s")
    assert nowhere.code == 2 and "PREFECT_API_URL" in nowhere.stderr


def test_rejudge_pauses_for_a_form_refuses_invalid_answers_and_writes_a_new_version(prefect_server, tmp_path):
    import threading

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.flow_runs import resume_flow_run

    from goldkeeper.flows.rejudge import rejudge
    from goldkeeper.io.storage import read_current_judgments
    from tests.flows.conftest import paused_run, queued_suite

    case = FIXTURES / "drift"
    root = f"file://{tmp_path}/store"
    items = queued_suite(root, "drifted")
    split = next(i for i in items if i["status"] == "SPLIT")

    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(rejudge(
        suite="drifted", corpus_url=str(case / "corpus.json"), storage_url=root, poll_interval=1, timeout=300,
        evaluate_after=False)))
    worker.start()

    async def paused():
        async with get_client() as client:
            runs = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["goldkeeper-rejudge"])))
            return [r for r in runs if r.state and r.state.is_paused()]
    found = [paused_run(root)]  # paused, with its form saved
    run_id = found[0].id
    orphan = next(i for i in items if i["status"] == "ORPHANED")
    assert not orphan["candidates"]
    # The split's first piece graded 2, its second left off; the orphan (no candidate) removed.
    answers = {"reviewer": "ana", "item_1_1_2": True, "item_2_none": True}
    assert [i["item_id"] for i in items] == [split["item_id"], orphan["item_id"]]
    with pytest.raises(RuntimeError, match="Cannot resume"):  # not a switch's value: the server refuses it
        resume_flow_run(run_id, run_input={**answers, "item_1_1_2": "7"})
    with pytest.raises(RuntimeError, match="Cannot resume"):  # no such field
        resume_flow_run(run_id, run_input={**answers, "item_1_1": "2"})
    assert asyncio.run(paused()), "an invalid answer must leave the run paused"
    # Answers the server takes but the flow cannot: a blank name, two grades for one piece. The
    # form is asked again, filled with them, the problems written at its top; nothing is written.
    first = found[0].state.state_details.run_input_keyset["schema"]
    resume_flow_run(run_id, run_input={**answers, "reviewer": "  ", "item_1_1_1": True})
    again = next_form(run_id, first)
    header = again["properties"]["reviewer"]["description"]
    assert "Not saved" in header and "your name is empty" in header
    assert "1.1: 2 grades are switched on \\(1, 2\\); keep the one it deserves" in header  # markdown, escaped
    assert again["properties"]["item_1_1_1"]["default"] is True and again["properties"]["item_2_none"]["default"] is True
    assert read_current_judgments(root, "drifted")[0] == (case / "judgments.jsonl").read_bytes()
    resume_flow_run(run_id, run_input={**answers, "item_1_1_1": False})  # what is left out keeps the form's value
    worker.join(120)
    assert outcome["replaced"] == 1 and outcome["removed"] == 1 and outcome["left"] == 0
    from tests.flows.test_verdicts import events_about

    shrunk = events_about(prefect_server["PREFECT_API_URL"], "goldkeeper.suite.drifted", "goldkeeper.queue.shrunk")
    assert any(e["payload"]["answered"] == len(items) and e["payload"]["left"] == 0 for e in shrunk), shrunk
    data, _ = read_current_judgments(root, "drifted")
    rejudged = [json.loads(line) for line in data.decode().splitlines() if "rejudged_from" in line]
    assert len(rejudged) == 1 and rejudged[0]["labeled_by"] == "human:ana" and rejudged[0]["relevance"] == 2
    assert rejudged[0]["chunk_id"] == split["candidates"][0]["chunk_id"] and rejudged[0]["labeled_at"].endswith("Z")
    assert orphan["doc_uri"] not in data.decode()  # removed: answered "none"
    assert _artifacts(["goldkeeper-drifted-rejudge"]) and _artifacts(["goldkeeper-drifted-queue"])
    # what people answered is kept as queue-answer lines, and `queue apply` takes that file as is
    (kept,) = outcome["answers"]
    lines = [json.loads(line) for line in (tmp_path / kept.removeprefix(f"file://{tmp_path}/")).read_text().splitlines()]
    assert [(a["chunk_id"], a["relevance"]) for a in lines] == [(split["candidates"][0]["chunk_id"], 2), ("none", 0)]


def test_a_storage_failure_mid_lifecycle_keeps_the_previous_version_and_a_rerun_succeeds(prefect_server, tmp_path):
    import shutil

    from goldkeeper.errors import StorageError
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import write_judgments_version

    root = f"file://{tmp_path}/store"
    write_judgments_version(root, "wiki", (FIXTURES / "merge" / "judgments.jsonl").read_bytes(), None)
    suite_dir = tmp_path / "store" / "judgments" / "wiki"
    before = (suite_dir / "current.jsonl").read_bytes()
    shutil.move(suite_dir / "versions", tmp_path / "versions-aside")
    (suite_dir / "versions").write_text("not a directory")  # the fixed version cannot be stored
    with pytest.raises(StorageError, match=r"versions/.*cannot be written"):
        on_reindex(suite="wiki", corpus_url=str(FIXTURES / "merge" / "corpus.json"), storage_url=root)
    assert (suite_dir / "current.jsonl").read_bytes() == before  # nothing half-written
    (suite_dir / "versions").unlink()
    shutil.move(tmp_path / "versions-aside", suite_dir / "versions")
    outcome = finished(on_reindex, suite="wiki", corpus_url=str(FIXTURES / "merge" / "corpus.json"), storage_url=root)
    assert outcome["reanchored"] == 3 and outcome["judgments_version"]
    assert (suite_dir / "current.jsonl").read_bytes() != before


def test_two_concurrent_lifecycles_on_one_suite_lose_nothing(prefect_server, tmp_path):
    import hashlib
    import threading

    from goldkeeper.errors import StorageError
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import read_current_judgments, write_judgments_version

    root = f"file://{tmp_path}/store"
    original = (FIXTURES / "merge" / "judgments.jsonl").read_bytes()
    write_judgments_version(root, "race", original, None)
    outcomes, errors = [], []

    def lifecycle():
        try:
            outcomes.append(finished(on_reindex, suite="race", corpus_url=str(FIXTURES / "merge" / "corpus.json"),
                                       storage_url=root))
        except StorageError as error:
            errors.append(str(error))

    threads = [threading.Thread(target=lifecycle) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert outcomes, errors  # at least one lifecycle completed
    assert all("changed since it was read" in e for e in errors)  # a loser fails cleanly, nothing else
    assert len(outcomes) + len(errors) == 2
    data, _ = read_current_judgments(root, "race")
    assert b"reanchored_from" in data  # the fix is current
    versions = {p.name for p in (tmp_path / "store" / "judgments" / "race" / "versions").iterdir()}
    assert f"{hashlib.sha256(original).hexdigest()}.jsonl" in versions  # the previous version is kept
    assert f"{hashlib.sha256(data).hexdigest()}.jsonl" in versions
