"""A re-index that names the vector store instead of a chunks file (spec/stores.md): the
lifecycle on a real Prefect server snapshots the LanceDB table to storage, keeps the store's
ids, drifts the suite's labels exactly as against the JSONL snapshot of the same chunks, and
a second event for the same chunks stores nothing new."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import run_cli
from tests.flows.conftest import finished
from tests.io.test_stores import CHUNKER, _chunks, _lancedb

pytestmark = pytest.mark.usefixtures("prefect_server")


def test_on_reindex_snapshots_the_store_and_drifts_as_against_its_jsonl(tmp_path):
    pytest.importorskip("lancedb")
    from goldkeeper.core.judgments import dump_rows
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.snapshots import open_corpus
    from goldkeeper.io.storage import write_judgments_version, write_suite
    from goldkeeper.models.suite import SuiteConfig

    before, after = _chunks(400, 80, False), _chunks(600, 0, True)
    chunks = tmp_path / "v1.jsonl"
    chunks.write_text("".join(json.dumps(r) + "\n" for r in before))
    assert run_cli("snapshot", str(chunks), "--chunker", CHUNKER, "-o", str(tmp_path / "v1.json"), "--quiet").code == 0
    first = json.loads((tmp_path / "v1.json").read_text())["chunks"]
    labels = [{"query_id": f"q{n}", "doc_uri": c["doc_uri"], "chunk_id": c["chunk_id"], "chunk_text": c["text"],
               "text_sha": c["text_sha"], "relevance": 1, "labeled_by": "human:ana",
               "labeled_at": "2026-12-01T00:00:00Z"} for n, c in enumerate(first[::20])]
    storage = f"file://{tmp_path}/store"
    write_judgments_version(storage, "docs", b"".join(dump_rows(labels)), None)
    write_suite(storage, SuiteConfig(suite="docs", chunker=CHUNKER))
    (tmp_path / "labels.jsonl").write_bytes(b"".join(dump_rows(labels)))
    store = _lancedb(tmp_path, "chunks_v2", after)

    outcome = finished(on_reindex, suite="docs", store_url=store, storage_url=storage)
    snapshot = open_corpus(outcome["corpus_url"])
    assert outcome["corpus_url"].startswith(f"{storage}/snapshots/docs/") and outcome["corpus_url"].endswith(
        "manifest.json")
    stored = [json.loads(line) for shard in sorted((tmp_path / "store" / "snapshots").rglob("chunks-*.jsonl.gz"))
              for line in gzip.open(shard, "rt")]
    assert {row["store_id"] for row in stored} == {r["store_id"] for r in after}
    v2 = tmp_path / "v2.jsonl"
    v2.write_text("".join(json.dumps(r) + "\n" for r in after))
    assert run_cli("snapshot", str(v2), "--chunker", CHUNKER, "-o", str(tmp_path / "v2.json"), "--quiet").code == 0
    expected = json.loads(run_cli("drift", "-j", str(tmp_path / "labels.jsonl"), "-c", str(tmp_path / "v2.json"),
                                  "--format", "json").stdout)["summary"]
    assert outcome["drift"] == expected and expected["valid"] < len(labels)
    assert len(list(snapshot)) == len(after)
    again = finished(on_reindex, suite="docs", store_url=store, storage_url=storage)
    assert again["corpus_url"] == outcome["corpus_url"]  # the same chunks: the snapshot stored once
    assert len(list((tmp_path / "store" / "snapshots" / "docs").iterdir())) == 1
