"""Sharded snapshots: manifest plus JSONL (gzip) shards, written atomically, read as a stream."""

from __future__ import annotations

import gzip
import json

import pytest

from goldkeeper.core.drift import classify, parse_corpus
from goldkeeper.errors import InputError
from goldkeeper.io.snapshots import open_corpus, write_sharded_snapshot
from tests.conftest import FIXTURES, run_cli


def _chunker_rows(case="merge"):
    corpus = json.loads((FIXTURES / case / "corpus.json").read_text())
    return corpus, [{k: c[k] for k in ("doc_uri", "doc_revision", "ordinal", "text")} for c in corpus["chunks"]]


@pytest.mark.parametrize("gzip_flag", ["--gzip", "--no-gzip"])
def test_sharded_snapshot_from_the_cli_reads_back_and_drifts_like_corpus_json(tmp_path, gzip_flag):
    corpus, rows = _chunker_rows()
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "snap"
    result = run_cli("snapshot", str(chunks), "--chunker", corpus["chunker_fingerprint"], "--out", str(out),
                     "--sharded", "--shard-chunks", "2", gzip_flag)
    assert result.code == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["chunks"] == len(rows) and manifest["counts"]["shards"] == -(-len(rows) // 2)
    assert all(s["path"].endswith(".jsonl.gz" if gzip_flag == "--gzip" else ".jsonl") for s in manifest["shards"])
    streamed = open_corpus(str(out))
    assert [c.chunk_id for c in streamed] == [c["chunk_id"] for c in corpus["chunks"]]
    judgments = FIXTURES / "merge" / "judgments.jsonl"
    whole = run_cli("drift", "-j", str(judgments), "-c", str(FIXTURES / "merge" / "corpus.json"), "--format", "json")
    sharded = run_cli("drift", "-j", str(judgments), "-c", str(out / "manifest.json"), "--format", "json")
    assert sharded.code == whole.code == 1
    assert json.loads(sharded.stdout)["findings"] == json.loads(whole.stdout)["findings"]


def test_a_changed_shard_is_refused_by_its_sha256(tmp_path):
    _corpus, rows = _chunker_rows()
    write_sharded_snapshot(str(tmp_path), rows, "fp", shard_chunks=3, compress=False)
    shard = tmp_path / "chunks-00000.jsonl"
    shard.write_bytes(shard.read_bytes().replace(b'"ordinal":0', b'"ordinal":9'))
    with pytest.raises(InputError, match="sha256"):
        list(open_corpus(str(tmp_path)))
    result = run_cli("drift", "-j", str(FIXTURES / "merge" / "judgments.jsonl"), "-c", str(tmp_path))
    assert result.code == 2 and "chunks-00000.jsonl: sha256: does not match the manifest" in result.stderr


def test_a_truncated_gzip_shard_is_a_clear_error(tmp_path):
    _, rows = _chunker_rows()
    write_sharded_snapshot(str(tmp_path), rows, "fp", shard_chunks=100)
    shard = tmp_path / "chunks-00000.jsonl.gz"
    shard.write_bytes(shard.read_bytes()[:-12])
    result = run_cli("drift", "-j", str(FIXTURES / "merge" / "judgments.jsonl"), "-c", str(tmp_path))
    assert result.code == 2 and "chunks-00000.jsonl.gz" in result.stderr and "Traceback" not in result.stderr


def test_a_bad_row_leaves_no_half_built_snapshot(tmp_path):
    _, rows = _chunker_rows()
    rows = rows * 3 + [{"doc_uri": "d", "ordinal": "first", "text": "x"}]
    with pytest.raises(InputError, match="ordinal"):
        write_sharded_snapshot(str(tmp_path / "snap"), rows, "fp", shard_chunks=2)
    assert list((tmp_path / "snap").glob("*")) == []


def test_a_manifest_that_is_not_ours_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other", "shards": []}))
    result = run_cli("drift", "-j", str(FIXTURES / "merge" / "judgments.jsonl"), "-c", str(tmp_path))
    assert result.code == 2 and "manifest.json: format: " in result.stderr


def test_gzip_shards_are_reproducible(tmp_path):
    _, rows = _chunker_rows()
    first = write_sharded_snapshot(str(tmp_path / "a"), rows, "fp", shard_chunks=2)
    second = write_sharded_snapshot(str(tmp_path / "b"), rows, "fp", shard_chunks=2)
    assert first == second
    with gzip.open(tmp_path / "a" / "chunks-00000.jsonl.gz") as handle:
        assert json.loads(handle.readline())["text"] == rows[0]["text"]


def test_classify_reads_a_sharded_corpus_at_most_twice(tmp_path):
    """Two passes at most: the first settles VALID and RE_ANCHORABLE by hash; only labels left
    with text make a second pass, over their own documents."""
    corpus, rows = _chunker_rows()
    write_sharded_snapshot(str(tmp_path), rows, corpus["chunker_fingerprint"], shard_chunks=2)
    streamed = open_corpus(str(tmp_path))
    passes = []

    class Counting:
        corpus_fingerprint = streamed.corpus_fingerprint
        chunker_fingerprint = streamed.chunker_fingerprint

        def __iter__(self):
            passes.append(1)
            return iter(streamed)

    labels = [json.loads(line) for line in (FIXTURES / "merge" / "judgments.jsonl").read_text().splitlines()]
    result = classify(labels, Counting())
    assert len(passes) == 2
    assert result.findings == classify(labels, parse_corpus((FIXTURES / "merge" / "corpus.json").read_bytes())).findings
    passes.clear()
    classify([dict(label, chunk_text=None) for label in labels], Counting())
    assert len(passes) == 1


def test_the_manifest_fits_its_schema(tmp_path):
    import jsonschema

    from tests.unit.test_schemas import SCHEMAS

    _, rows = _chunker_rows()
    manifest = write_sharded_snapshot(str(tmp_path), rows, "fp", shard_chunks=2)
    jsonschema.validate(manifest, json.loads((SCHEMAS / "snapshot-manifest.schema.json").read_text()))
    jsonschema.validate(json.loads((tmp_path / "manifest.json").read_text()),
                        json.loads((SCHEMAS / "snapshot-manifest.schema.json").read_text()))


@pytest.mark.parametrize("content", [
    b"",
    b"not json",
    b'{"chunks": [{"chunk_id": "", "doc_uri": "d"}]}',
    b'{"chunks": [{"chunk_id": "c1:x", "doc_uri": "d", "ordinal": -1}]}',
    b'{"corpus_fingerprint": "f", "chunks": [{"chunk_id": "c1:x", "doc_uri": "d", "text": "caf\xc3\xa9"}]}',
])
def test_a_mapped_corpus_json_reads_as_its_bytes_do(tmp_path, content):
    """open_corpus maps a local corpus.json; what it gives, or the error it words, is what
    core's reader gives for the same bytes."""
    from tests.unit.test_corpus_json import _facts

    path = tmp_path / "corpus.json"
    path.write_bytes(content)
    outcomes = []
    for read in (lambda: open_corpus(str(path)), lambda: parse_corpus(content, str(path))):
        try:
            outcomes.append(_facts(read()))
        except InputError as error:
            outcomes.append(("error", str(error)))
    assert outcomes[0] == outcomes[1]


def _documents():
    """Three documents of four paragraphs (chunker rows), and labels on an older chunking:
    MERGED (half a paragraph), SPLIT (across two), ORPHANED (edited) and RE_ANCHORABLE."""
    import goldkeeper

    rows, labels = [], []
    for d in "abc":
        paragraphs = [f"Document {d} paragraph {p}: refunds for plan {p} are handled within {p + 3} days." for p in range(4)]
        rows.extend({"doc_uri": f"doc://{d}", "doc_revision": "r2", "ordinal": p, "text": t} for p, t in enumerate(paragraphs))
        for n, text in enumerate((paragraphs[0][:40], paragraphs[1][30:] + " " + paragraphs[2][:30],
                                  paragraphs[3].replace("refunds", "credits"), paragraphs[2])):
            labels.append({"query_id": f"{d}{n}", "doc_uri": f"doc://{d}", "relevance": 1, "chunk_text": text,
                           "chunk_id": goldkeeper.chunk_id(f"doc://{d}", "r1", n, text, "old")})
    return rows, labels


@pytest.mark.parametrize("order", ["documents-as-runs", "documents-interleaved"])
def test_a_streamed_second_pass_settles_as_a_whole_corpus_does(tmp_path, order):
    """Documents that come as runs are settled as each run ends (one document's chunks held);
    interleaved ones are gathered first. Either way the findings are the in-memory corpus's."""
    from goldkeeper.core.drift import build_snapshot
    from goldkeeper.core.drift.classification import _hash_pass, _wants

    rows, labels = _documents()
    if order == "documents-interleaved":
        rows = sorted(rows, key=lambda r: (r["ordinal"], r["doc_uri"]))
    write_sharded_snapshot(str(tmp_path), rows, "paragraphs/v2", shard_chunks=5)
    streamed = open_corpus(str(tmp_path))
    whole = parse_corpus(json.dumps(build_snapshot(iter(rows), "paragraphs/v2")).encode())
    found = classify(labels, streamed).findings
    assert found == classify(labels, whole).findings
    assert [f["status"] for f in found][:4] == ["MERGED", "SPLIT", "ORPHANED", "RE_ANCHORABLE"]
    assert _hash_pass(streamed, _wants(labels, streamed), None, None).contiguous == (order == "documents-as-runs")
