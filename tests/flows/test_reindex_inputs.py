"""A re-index that names what is not there fails at once, with its reason, and writes nothing
(issue 42, item 9): a suite without judgments, a snapshot or chunker output that does not
exist. And chunker output named without a chunker is snapshotted with the suite's own."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import FIXTURES

pytest.importorskip("prefect")


def _task_runs(flow_run_id):
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            return await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    return asyncio.run(read())


def _files(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)


def _chunks(path) -> str:
    corpus = json.loads((FIXTURES / "merge" / "corpus.json").read_text())
    path.write_text("".join(json.dumps({k: c[k] for k in ("doc_uri", "ordinal", "text")}) + "\n"
                            for c in corpus["chunks"]))
    return str(path)


@pytest.mark.parametrize("case", ["no-suite", "no-chunks", "no-snapshot"])
def test_a_reindex_naming_what_is_not_there_fails_at_once_and_writes_nothing(prefect_server, tmp_path, case):
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import write_judgments_version

    root = tmp_path / "store"
    if case != "no-suite":
        write_judgments_version(f"file://{root}", "wiki", (FIXTURES / "merge" / "judgments.jsonl").read_bytes(), None)
    before = _files(root) if root.exists() else []
    named = {"no-suite": {"chunks_url": _chunks(tmp_path / "chunks.jsonl"), "chunker": "sentences/v2"},
             "no-chunks": {"chunks_url": str(tmp_path / "missing.jsonl"), "chunker": "sentences/v2"},
             "no-snapshot": {"corpus_url": str(tmp_path / "missing" / "manifest.json")}}[case]
    state = on_reindex(suite="wiki", storage_url=f"file://{root}", return_state=True, **named)
    assert state.is_failed()
    message = str(state.result(raise_on_failure=False))
    expected = {"no-suite": f"re-index: suite: names a suite with no judgments at file://{root}",
                "no-chunks": "re-index: chunks_url: names nothing that exists",
                "no-snapshot": "re-index: snapshot_url: names nothing that exists"}[case]
    assert expected in message, message
    assert (_files(root) if root.exists() else []) == before  # no snapshot, queue or version written
    (check,) = [t for t in _task_runs(state.state_details.flow_run_id) if t.name.startswith("check_reindex")]
    assert check.run_count == 1  # refused, not retried: waiting makes no missing suite or file appear


def test_chunker_output_without_a_chunker_is_snapshotted_with_the_suites(prefect_server, tmp_path):
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import read_suite, write_judgments_version, write_suite
    from goldkeeper.models.suite import SuiteConfig

    root = f"file://{tmp_path}/store"
    write_judgments_version(root, "wiki", (FIXTURES / "merge" / "judgments.jsonl").read_bytes(), None)
    write_suite(root, SuiteConfig(suite="wiki", chunker="sentences/v9"))
    state = on_reindex(suite="wiki", storage_url=root, chunks_url=_chunks(tmp_path / "chunks.jsonl"),
                       return_state=True)
    assert state.is_completed(), state
    from goldkeeper.io.files import read_bytes

    corpus_url = read_suite(root, "wiki").corpus_url  # the snapshot made, now the suite's live corpus
    assert corpus_url.endswith("manifest.json"), corpus_url
    assert json.loads(read_bytes(corpus_url))["chunker_fingerprint"] == "sentences/v9"
