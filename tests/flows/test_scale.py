"""Partitioned drift on Prefect's thread pool and on a real Dask LocalCluster of two worker
processes: exactly the one-process result (findings, fixed judgments, queue), including texts
that moved to a document in another partition; and a worker killed mid-run is retried."""

from __future__ import annotations

import json
import random

import pytest

import goldkeeper
from goldkeeper.core.drift import classify, fix, partition_of, rejudgment_queue
from goldkeeper.io.files import read_bytes
from goldkeeper.io.snapshots import open_corpus, write_sharded_snapshot
from tests.flows.conftest import finished

pytest.importorskip("prefect_dask")

PARTITIONS = 4


def _text(rng: random.Random, tag: str) -> str:
    words = ["refund", "plan", "annual", "billing", "credit", "contract", "audit", "export", "region", "quota"]
    return " ".join(rng.choice(words) for _ in range(40)) + f" {tag}."


def make_case(root, documents: int = 48, seed: int = 5):
    """Labels on chunks of an old chunking; a new corpus where documents were re-chunked,
    edited, renamed, and where some texts moved to (or also appear in) other documents."""
    rng = random.Random(seed)
    texts = {d: [_text(rng, f"d{d}.{i}") for i in range(8)] for d in range(documents)}
    moved = {}  # a text of document d now lives (only) in document d + 1
    for d in range(0, documents - 1, 6):
        moved[d] = texts[d][3]
    shared = _text(rng, "shared")  # the same text in several documents: a tie across partitions
    rows = []
    copies: dict[int, list[str]] = {}
    for d in range(documents):
        doc = f"doc://{d}"
        own = [t for i, t in enumerate(texts[d]) if not (d in moved and i == 3)]
        if d - 1 in moved:
            own.append(moved[d - 1])
        if d % 5 == 0:
            own.append(shared)
        if d % 4 == 1:  # re-chunked: neighbours merged
            own = [own[0] + " " + own[1], *own[2:]]
        if d % 4 == 2:  # a chunk split in two
            own = [own[0][:120], own[0][120:], *own[1:]]
        if d % 7 == 3:  # an edit
            own[2] = own[2].replace(" ", " edited ", 2)
        if d % 11 == 4:  # renamed, re-chunked: labels MERGED and SPLIT in another document
            doc = f"doc://renamed{d}"
            cut = own[2].index(" ", 100)
            own = [own[0] + " " + own[1], own[2][:cut], own[2][cut + 1:], *own[3:]]
        if d % 13 == 6:  # a text that left its document for two others: never guessed
            gone = texts[d][4]
            own = [t for t in own if t != gone]
            for other in (d + 1, d + 2):
                copies.setdefault(other, []).append(gone + " appended")
        own += copies.pop(d, [])
        rows += [{"doc_uri": doc, "doc_revision": "r2", "ordinal": i, "text": t} for i, t in enumerate(own)]
    labels = []
    for d in range(documents):
        doc = f"doc://{d}"
        for i in range(0, 8, 2 if d % 3 else 1):
            text = texts[d][i]
            labels.append({"query_id": f"q{d}.{i}", "doc_uri": doc,
                           "chunk_id": goldkeeper.chunk_id(doc, "r1", i, text, "old"), "chunk_text": text,
                           "relevance": 1 + i % 3, "corpus_fingerprint": "old"})
        if d % 5 == 0:
            labels.append({"query_id": f"q{d}.shared", "doc_uri": f"doc://{d + 1}",  # not in its own doc
                           "chunk_id": goldkeeper.chunk_id(f"doc://{d + 1}", "r1", 9, shared, "old"),
                           "text_sha": goldkeeper.text_sha(shared), "relevance": 2, "corpus_fingerprint": "old"})
        labels.append({"query_id": f"q{d}.doc", "doc_uri": doc if d % 9 else f"doc://gone{d}", "relevance": 1})
    live_elsewhere = rows[len(rows) // 2]  # a label whose doc_uri disagrees with its (live) chunk id
    labels.append({"query_id": "q-inconsistent", "doc_uri": "doc://0",
                   "chunk_id": goldkeeper.chunk_id(live_elsewhere["doc_uri"], "r2", live_elsewhere["ordinal"],
                                                   live_elsewhere["text"], "new"), "relevance": 1})
    judgments = root / "judgments.jsonl"
    judgments.write_text("".join(json.dumps(row) + "\n" for row in labels))
    snapshot = root / "snapshot"
    write_sharded_snapshot(str(snapshot), rows, "new", shard_chunks=60)
    return judgments, snapshot


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    judgments, snapshot = make_case(root)
    labels = goldkeeper.parse_judgments(judgments.read_bytes())
    corpus = open_corpus(str(snapshot))
    one = classify(labels, corpus)
    # The case reaches across partitions: a text re-anchored into a document of another one.
    crossing = [f for f in one.findings if f.get("cross_document")
                and partition_of(f["doc_uri"], PARTITIONS)
                != partition_of(f.get("reanchor_doc_uri") or f["split_doc_uri"], PARTITIONS)]
    assert crossing
    across = {(f["status"], "found_in" in f) for f in one.findings if f.get("cross_document") or "found_in" in f}
    assert across == {("RE_ANCHORABLE", False), ("MERGED", False), ("SPLIT", False), ("ORPHANED", True)}, across
    assert any("moved_to" in entry for entry in one.documents)
    assert {f["status"] for f in one.findings} == {"VALID", "RE_ANCHORABLE", "MERGED", "SPLIT", "ORPHANED"}
    return root, judgments, snapshot, labels, one, rejudgment_queue(labels, one, corpus)


def _same(case, merged):
    """The partitioned outputs, read back from the merged files, are the one-process ones."""
    _, _, _, labels, one, one_queue = case
    assert list(merged.rows("findings")) == one.findings
    assert merged.summary == one.summary and merged.labels == len(one.findings)
    assert (merged.corpus_chunks, merged.corpus_documents) == (one.corpus_chunks, one.corpus_documents)
    assert merged.judgments_fingerprint == one.judgments_fingerprint
    assert merged.documents == one.documents
    assert read_bytes(merged.urls["fixed"]).decode() == goldkeeper.dump_judgments(fix(labels, one)[0])
    assert list(merged.rows("queue")) == one_queue


def test_threads_give_the_one_process_result(prefect_server, case, tmp_path):
    from goldkeeper.flows.scale import drift_partitioned, task_runner

    _, judgments, snapshot, *_ = case
    merged = drift_partitioned.with_options(task_runner=task_runner(None, 2))(
        str(judgments), str(snapshot), str(tmp_path / "work"), PARTITIONS)
    _same(case, merged)


def test_a_dask_local_cluster_gives_the_one_process_result(prefect_server, case, tmp_path):
    from goldkeeper.flows.scale import drift_partitioned, task_runner

    _, judgments, snapshot, *_ = case
    merged = drift_partitioned.with_options(task_runner=task_runner("local", 2))(
        str(judgments), str(snapshot), str(tmp_path / "work"), PARTITIONS)
    _same(case, merged)


def test_a_parquet_snapshot_is_split_by_its_row_groups_on_the_workers(prefect_server, case, tmp_path):
    """A Parquet snapshot in row groups: each map task on a Dask worker reads only its own row
    groups (one piece per mapper in a partition), and the result is the one-process one."""
    import pyarrow.parquet as pq

    from goldkeeper.flows.scale import drift_partitioned, task_runner
    from goldkeeper.io.partitioned import source_groups
    from tests.conftest import run_cli

    _, judgments, snapshot, *_ = case
    whole = tmp_path / "whole.parquet"
    assert run_cli("convert", str(snapshot), "--to", "snapshot", "-o", str(whole)).code == 0
    grouped = tmp_path / "grouped.parquet"
    pq.write_table(pq.read_table(whole), grouped, row_group_size=50)  # keeps the schema's fingerprints
    groups = source_groups(str(grouped), PARTITIONS)
    assert len(groups) == PARTITIONS and sorted(g for group in groups for g in group) == list(range(pq.ParquetFile(grouped).num_row_groups))
    merged = drift_partitioned.with_options(task_runner=task_runner("local", 2))(
        str(judgments), str(grouped), str(tmp_path / "work"), PARTITIONS)
    _same(case, merged)
    pieces = {path.name for path in (tmp_path / "work").rglob("from-*.jsonl")}
    assert pieces == {f"from-{mapper:05d}.jsonl" for mapper in range(PARTITIONS)}


def test_a_hostile_row_of_a_parquet_snapshot_is_named_by_its_map_task(prefect_server, case, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from goldkeeper.flows.scale import drift_partitioned
    from tests.conftest import run_cli

    _, judgments, snapshot, *_ = case
    whole = tmp_path / "whole.parquet"
    assert run_cli("convert", str(snapshot), "--to", "snapshot", "-o", str(whole)).code == 0
    table = pq.read_table(whole)
    ordinals = table.column("ordinal").to_pylist()
    ordinals[137] = -1
    table = table.set_column(table.schema.get_field_index("ordinal"), "ordinal", pa.array(ordinals, pa.int64()))
    pq.write_table(table, tmp_path / "bad.parquet", row_group_size=50)
    with pytest.raises(Exception, match=r"bad.parquet: row 138: column ordinal"):
        drift_partitioned(str(judgments), str(tmp_path / "bad.parquet"), str(tmp_path / "work"), PARTITIONS)


def test_a_remote_cluster_refuses_local_storage(prefect_server, case, tmp_path):
    from goldkeeper.errors import UsageError
    from goldkeeper.flows.scale import drift_partitioned

    _, judgments, snapshot, *_ = case
    with pytest.raises(UsageError, match="workers of a remote Dask cluster cannot read"):
        drift_partitioned(str(judgments), str(snapshot), str(tmp_path / "work"), PARTITIONS, remote=True)


def _workers():
    import psutil

    return [child for child in psutil.Process().children(recursive=True)
            if any("spawn_main" in part or "forkserver" in part for part in child.cmdline())]


def test_a_worker_killed_mid_run_is_retried_and_the_result_is_unchanged(prefect_server, tmp_path):
    """Both workers are killed (SIGKILL) while partitions are being classified; the nannies
    restart them, the lost tasks run again, and the result is still the one-process one."""
    import datetime
    import threading
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        TaskRunFilter,
        TaskRunFilterName,
        TaskRunFilterStartTime,
        TaskRunFilterState,
        TaskRunFilterStateName,
    )

    from goldkeeper.flows.scale import drift_partitioned, task_runner

    judgments, snapshot = make_case(tmp_path, documents=2400, seed=9)
    labels = goldkeeper.parse_judgments(judgments.read_bytes())
    corpus = open_corpus(str(snapshot))
    one = classify(labels, corpus)
    out: dict = {}

    def run():
        try:
            out["result"] = drift_partitioned.with_options(task_runner=task_runner("local", 2))(
                str(judgments), str(snapshot), str(tmp_path / "work"), PARTITIONS)
        except BaseException as error:
            out["error"] = error

    # Only this test's task runs: a run killed in another test (the kill matrix kills inside
    # classify_one) leaves its task runs Running on the session's server for good.
    started = datetime.datetime.now(datetime.timezone.utc)
    thread = threading.Thread(target=run)
    thread.start()
    killed = []
    deadline = time.monotonic() + 300
    with get_client(sync_client=True) as client:
        while thread.is_alive() and not killed and time.monotonic() < deadline:
            running = client.read_task_runs(task_run_filter=TaskRunFilter(
                name=TaskRunFilterName(like_="classify_one"), start_time=TaskRunFilterStartTime(after_=started),
                state=TaskRunFilterState(name=TaskRunFilterStateName(any_=["Running"]))))
            if running:
                for worker in _workers():
                    worker.kill()
                    killed.append(worker.pid)
            time.sleep(0.05)
        thread.join(600)
        assert killed, "the partitions were classified before a worker could be killed"
        assert "error" not in out, out.get("error")
        merged = out["result"]
        assert list(merged.rows("findings")) == one.findings
        assert list(merged.rows("queue")) == rejudgment_queue(labels, one, corpus)
        runs = client.read_task_runs(task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="classify_one"),
                                                                   start_time=TaskRunFilterStartTime(after_=started)))
        # A partition that was running on a killed worker ran again: its history enters
        # Running twice (Dask re-ran the task run; Prefect's engine recorded it again).
        histories = {run.id: [state.name for state in client.read_task_run_states(run.id)] for run in runs}
        print(histories)
        assert any(history.count("Running") >= 2 for history in histories.values()), histories


def _scoring_case(root):
    """Judgments with strata, grades 0-3, queries without positives; a TREC run with score
    ties, queries missing and queries nobody judged."""
    rng = random.Random(11)
    labels, lines = [], []
    for q in range(400):
        stratum = ["faq", "howto", "api"][q % 3]
        for d in rng.sample(range(60), 6):
            labels.append({"query_id": f"q{q}", "doc_uri": f"doc://{d}", "relevance": rng.choice([0, 0, 1, 2, 3]),
                           "stratum": stratum})
        if q % 13 == 0:
            continue  # missing from the run
        for rank, d in enumerate(rng.sample(range(60), 30)):
            lines.append(f"q{q} Q0 doc://{d} {rank + 1} {round(30 - rank + rng.choice([0, 0, 0.5]), 2)} sys")
    lines += [f"unjudged{i} Q0 doc://1 1 1.0 sys" for i in range(5)]
    judgments = root / "judgments.jsonl"
    judgments.write_text("".join(json.dumps(row) + "\n" for row in labels))
    run = root / "run.trec"
    run.write_text("\n".join(lines) + "\n")
    return judgments, run


@pytest.mark.parametrize("cluster", [None, "local"])
def test_query_partitioned_scoring_writes_the_one_process_report(prefect_server, tmp_path, cluster):
    """Same bytes as `goldkeeper score` with the same --now: values merged per query first,
    then means, strata and intervals on the merged vectors."""
    from goldkeeper.flows.scale import score_partitioned, task_runner
    from goldkeeper.io.files import report_bytes
    from tests.conftest import run_cli

    judgments, run = _scoring_case(tmp_path)
    now = "2026-11-30T00:00:00Z"
    cli = run_cli("score", "--judgments", str(judgments), "--run", str(run), "-k", "5,10", "--now", now,
                  "--gate", "ndcg@10:0.2", "--format", "json")
    assert cli.code in (0, 1), cli.stderr
    report = score_partitioned.with_options(task_runner=task_runner(cluster, 2))(
        str(judgments), str(run), str(tmp_path / "work"), 5, k=[5, 10], gates=["ndcg@10:0.2"], generated_at=now)
    assert report["per_stratum"] and report["metrics"]["ndcg@10"]["ci"] is not None
    assert report_bytes(report) == cli.stdout.encode()


@pytest.mark.slow
def test_the_real_document_case_partitioned_on_dask_gives_the_one_process_result(prefect_server, tmp_path):
    """The drift issue's real-document case (Django 4.2 labels, 5.0 re-chunked by another
    chunker), from a corpus.json, on a Dask LocalCluster of two workers."""
    import tarfile

    from goldkeeper.core.drift import Corpus
    from goldkeeper.flows.scale import drift_partitioned, task_runner
    from tests.conformance.test_real_documents import DJANGO, SETTINGS, reorganise, snapshot
    from tests.conftest import fetch_wheel

    files = {}
    for version, sha in DJANGO.items():
        with tarfile.open(fetch_wheel("Django", version, sha, sdist=True)) as tar:
            files[version] = {"django://" + m.name.split("/", 1)[1]: tar.extractfile(m).read().decode("utf-8")
                              for m in tar.getmembers()
                              if m.isfile() and "/docs/" in m.name and m.name.endswith(".txt")
                              and m.name.split("/", 1)[1].startswith("docs/")}
    old_chunker, old_fp, new_chunker, new_fp = SETTINGS["sentences to recursive"]
    old, _ = snapshot(files["4.2"], old_chunker, old_fp)
    live, _ = snapshot(reorganise(files["5.0"]), new_chunker, new_fp)  # pages moved and split
    labels = [{"query_id": f"q{i}", "doc_uri": c.doc_uri, "chunk_id": c.chunk_id, "chunk_text": c.text,
               "relevance": 1} for i, c in enumerate(old[::3])]
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps(row) + "\n" for row in labels))
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"corpus_fingerprint": new_fp, "chunker_fingerprint": new_fp, "chunks": [
        {"chunk_id": c.chunk_id, "doc_uri": c.doc_uri, "ordinal": c.ordinal, "text": c.text,
         "text_sha": c.text_sha, "start_index": c.start_index} for c in live]}))
    parsed = goldkeeper.parse_judgments(judgments.read_bytes())
    one = classify(parsed, Corpus(live, new_fp, new_fp))
    merged = drift_partitioned.with_options(task_runner=task_runner("local", 2))(
        str(judgments), str(corpus), str(tmp_path / "work"), 6)
    assert merged.labels == len(labels) > 1000
    assert list(merged.rows("findings")) == one.findings
    assert sum(1 for f in one.findings if f.get("cross_document")) > 500
    assert merged.documents == one.documents
    assert list(merged.rows("queue")) == rejudgment_queue(parsed, one, Corpus(live, new_fp, new_fp))


def test_partitions_on_s3_with_dask_workers(prefect_server, case, s3, tmp_path):
    """Snapshot, judgments and partitions on S3 (moto's server on loopback), classified by
    Dask worker processes that reach it through their own s3fs: the shared-storage setup a
    remote cluster needs (``remote=True`` accepts s3:// URLs)."""
    import fsspec

    from goldkeeper.flows.scale import drift_partitioned, task_runner

    _, judgments, snapshot, *_ = case
    fs = fsspec.filesystem("s3")
    fs.put(str(judgments), f"{s3}/scale/judgments.jsonl")
    fs.put(str(snapshot), f"{s3}/scale/snapshot", recursive=True)
    merged = drift_partitioned.with_options(task_runner=task_runner("local", 2))(
        f"{s3}/scale/judgments.jsonl", f"{s3}/scale/snapshot", f"{s3}/scale/work", PARTITIONS, remote=True)
    _same(case, merged)
    assert fs.exists(f"{s3}/scale/work/corpus/p0000/manifest.json")


def test_the_evaluate_flow_in_query_partitions_publishes_the_same_report(prefect_server, tmp_path):
    """evaluate(partitions=3) on Dask publishes the report evaluate publishes in one task."""
    from goldkeeper.flows.evaluate import evaluate

    judgments, run = _scoring_case(tmp_path)
    root = f"file://{tmp_path}/store"
    now = "2026-11-30T00:00:00Z"
    one = finished(evaluate, suite="one", judgments_url=str(judgments), run_url=str(run), storage_url=root, k=[5, 10],
                   gates=["ndcg@10:0.2"], generated_at=now)
    parts = finished(evaluate, suite="parts", judgments_url=str(judgments), run_url=str(run), storage_url=root, k=[5, 10],
                     gates=["ndcg@10:0.2"], generated_at=now, partitions=3, cluster="local")
    assert not parts["cached"] and parts["verdict"] == one["verdict"]
    read = lambda url: json.loads(open(url[len("file://"):]).read())  # noqa: E731
    assert read(parts["report_url"]) == read(one["report_url"])
    assert not any((tmp_path / "store" / "work" / "parts").iterdir())  # partitions removed
