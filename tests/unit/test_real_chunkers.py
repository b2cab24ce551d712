"""Drift across re-chunks made by a real chunker: LangChain's RecursiveCharacterTextSplitter."""

from __future__ import annotations

import pytest

import goldkeeper
from goldkeeper.core.adapters import rows_from_langchain
from goldkeeper.core.drift import Corpus, LiveChunk, build_snapshot, classify

splitters = pytest.importorskip("langchain_text_splitters")
from langchain_core.documents import Document  # noqa: E402

TEXT = """Annual plans may be refunded within 30 days of renewal. Refunds go back to the original payment method within 5 to 10 business days.

Monthly plans are non-refundable after the billing date. A plan can be cancelled at any time, and it stays active until the end of the period.

Enterprise agreements are governed by the master service agreement. Refund eligibility for enterprise plans is negotiated per contract, and credits are issued instead of refunds.
"""


def snapshot(chunk_size: int, overlap: int) -> Corpus:
    splitter = splitters.RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=overlap)
    chunks = splitter.split_documents([Document(page_content=TEXT, metadata={"source": "kb://refunds", "rev": "7"})])
    built = build_snapshot(rows_from_langchain(chunks, revision_key="rev"), f"recursive/{chunk_size}/{overlap}")
    return Corpus([LiveChunk(c["chunk_id"], c["doc_uri"], c["ordinal"], c["text"], c["text_sha"])
                   for c in built["chunks"]], built["corpus_fingerprint"])


def labels_on(corpus: Corpus) -> list[dict]:
    return [{"query_id": f"q{i}", "doc_uri": c.doc_uri, "chunk_id": c.chunk_id, "text_sha": c.text_sha,
             "chunk_text": c.text, "relevance": 1} for i, c in enumerate(corpus.chunks)]


def test_paragraph_labels_split_across_overlapping_small_chunks():
    paragraphs = snapshot(200, 0)  # one chunk per paragraph
    small = snapshot(80, 20)  # neighbours overlap by up to 20 characters
    assert len(small.chunks) > len(paragraphs.chunks)
    result = classify(labels_on(paragraphs), small)
    assert {f["status"] for f in result.findings} == {"SPLIT"}
    for finding in result.findings:
        ordinals = [next(c.ordinal for c in small.chunks if c.chunk_id == i) for i in finding["split_into"]]
        assert ordinals == list(range(ordinals[0], ordinals[0] + len(ordinals)))  # contiguous, in order


def test_small_chunk_labels_merge_into_larger_chunks():
    small = snapshot(80, 0)
    large = snapshot(1000, 0)
    result = classify(labels_on(small), large)
    assert {f["status"] for f in result.findings} == {"MERGED"}
    assert {f["reanchor_to"] for f in result.findings} == {c.chunk_id for c in large.chunks}


def test_the_same_chunker_twice_gives_the_same_ids():
    first, second = snapshot(120, 20), snapshot(120, 20)
    assert [c.chunk_id for c in first.chunks] == [c.chunk_id for c in second.chunks]
    assert all(f["status"] == "VALID" for f in classify(labels_on(first), second).findings)
    assert first.chunks[0].chunk_id == goldkeeper.chunk_id("kb://refunds", "7", 0, first.chunks[0].text,
                                                           "recursive/120/20")


def test_a_document_without_its_source_is_refused():
    with pytest.raises(goldkeeper.InputError, match="metadata\\['source'\\]"):
        rows_from_langchain([Document(page_content="x", metadata={})])


def llamaindex_snapshot(chunk_size: int, overlap: int) -> Corpus:
    parsers = pytest.importorskip("llama_index.core.node_parser")
    from llama_index.core import Document as LlamaDocument

    from goldkeeper.core.adapters import rows_from_llamaindex

    splitter = parsers.SentenceSplitter(chunk_size=chunk_size, chunk_overlap=overlap)
    nodes = splitter.get_nodes_from_documents([LlamaDocument(text=TEXT, doc_id="kb://refunds", metadata={"rev": "7"})])
    rows = rows_from_llamaindex(nodes, revision_key="rev")
    assert all(TEXT[r["start_index"]:].startswith(r["text"]) for r in rows)  # offsets carried through
    built = build_snapshot(rows, f"llama-sentence/{chunk_size}/{overlap}")
    return Corpus([LiveChunk(c["chunk_id"], c["doc_uri"], c["ordinal"], c["text"], c["text_sha"], c["start_index"])
                   for c in built["chunks"]], built["corpus_fingerprint"])


def test_llamaindex_nodes_split_and_merge_like_langchain_documents():
    coarse, fine = llamaindex_snapshot(400, 0), llamaindex_snapshot(40, 10)
    assert len(fine.chunks) > len(coarse.chunks) >= 1
    assert {c.doc_uri for c in fine.chunks} == {"kb://refunds"}
    split = classify(labels_on(coarse), fine)
    assert {f["status"] for f in split.findings} == {"SPLIT"}
    merged = classify(labels_on(fine), coarse)
    assert {f["status"] for f in merged.findings} <= {"MERGED", "RE_ANCHORABLE"}
    assert "MERGED" in {f["status"] for f in merged.findings}
    # LangChain's chunks of the same text, seen by LlamaIndex's: the labels carry over too.
    across = classify(labels_on(snapshot(80, 0)), coarse)
    assert {f["status"] for f in across.findings} == {"MERGED"}


def test_an_adapter_refuses_a_chunk_without_a_document():
    from goldkeeper.core.adapters import rows_from_llamaindex
    from goldkeeper.errors import InputError

    class Node:
        metadata: dict = {}
        ref_doc_id = None

        def get_content(self):
            return "text"

    with pytest.raises(InputError, match=r"nodes: nodes\[0\]: ref_doc_id must name the document"):
        rows_from_llamaindex([Node()])
