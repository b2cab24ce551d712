"""Span labels resolved under real chunkers, checked against an oracle computed from offsets.

Real text (the standard library's own help texts, as pydoc prints them, so nothing is fetched) is chunked
by chunkers installed from PyPI, at several sizes and overlaps: LangChain's
RecursiveCharacterTextSplitter (``add_start_index``), LlamaIndex's SentenceSplitter (its nodes'
``start_char_idx``) and chonkie's TokenChunker and SentenceChunker. A span is drawn in the
document, the document is edited (text inserted or removed before the span, after it, or a
few characters inside it), the new revision is re-chunked, and the label is resolved against
the new chunks. The oracle is written plainly here: where the edit put the span (offset
arithmetic), and which chunks the rule makes relevant there (a plain scan over the chunker's
own (start, text) pairs, not goldkeeper's document rebuilding).
"""

from __future__ import annotations

import argparse
import difflib
import json
import pydoc
import textwrap

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from goldkeeper.core.spans import MAX_EDIT_SHARE, DocumentText, Located, locate, resolve_span, span_for_chunk

#: Each module's help text as ``pydoc`` prints it (its first 12,000 characters).
DOCUMENTS = [pydoc.render_doc(module, renderer=pydoc.plaintext)[:12_000] for module in (json, difflib, argparse, textwrap)]


def langchain(size, overlap):
    splitters = pytest.importorskip("langchain_text_splitters")
    splitter = splitters.RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, add_start_index=True)
    return lambda text: [(d.metadata["start_index"], d.page_content) for d in splitter.create_documents([text])]


def llamaindex(size, overlap):
    parsers = pytest.importorskip("llama_index.core.node_parser")
    from llama_index.core import Document

    splitter = parsers.SentenceSplitter(chunk_size=size, chunk_overlap=overlap)
    return lambda text: [(n.start_char_idx, n.text) for n in splitter.get_nodes_from_documents([Document(text=text)])]


def chonkie(kind, size, overlap):
    module = pytest.importorskip("chonkie")
    chunker = getattr(module, kind)(tokenizer="character", chunk_size=size, chunk_overlap=overlap)
    return lambda text: [(c.start_index, c.text) for c in chunker.chunk(text)]


CHUNKERS = {
    "langchain/120/0": lambda: langchain(120, 0),
    "langchain/300/60": lambda: langchain(300, 60),
    "langchain/800/150": lambda: langchain(800, 150),
    "llamaindex/64/10": lambda: llamaindex(64, 10),
    "llamaindex/200/40": lambda: llamaindex(200, 40),
    "chonkie-token/250/50": lambda: chonkie("TokenChunker", 250, 50),
    "chonkie-sentence/400/0": lambda: chonkie("SentenceChunker", 400, 0),
}
_MADE: dict = {}


def chunked(name, text):
    """The chunker's (chunk id, start, text) triples; every one checked to lie where it says."""
    if name not in _MADE:
        _MADE[name] = CHUNKERS[name]()
    out = []
    for n, (start, piece) in enumerate(_MADE[name](text)):
        assert start is not None and text[start:start + len(piece)] == piece, (name, start)
        if piece.strip():
            out.append((f"c{n}", start, piece))
    return out


def oracle(start, end, chunks):
    """The rule, read plainly: a chunk holding half the span, lying inside it, or holding the
    most of it (the first such chunk in document order)."""
    held = {}
    for chunk_id, chunk_start, text in chunks:
        chunk_end = chunk_start + len(text)
        held[chunk_id] = (min(end, chunk_end) - max(start, chunk_start), start <= chunk_start and chunk_end <= end)
    most = max(h for h, _ in held.values())
    first = sorted((chunk_start, chunk_id) for chunk_id, chunk_start, _ in chunks if held[chunk_id][0] == most)
    return [chunk_id for chunk_id, (h, inside) in held.items()
            if h > 0 and (2 * h >= end - start or inside or chunk_id == first[0][1])]


def levenshtein(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


EDITS = ["none", "insert before", "remove before", "insert after", "inside"]


@st.composite
def cases(draw):
    document = DOCUMENTS[draw(st.integers(0, len(DOCUMENTS) - 1))]
    length = draw(st.integers(40, 400))
    start = draw(st.integers(0, len(document) - length))
    end = start + length
    edit = draw(st.sampled_from(EDITS))
    piece = draw(st.sampled_from(["Note: this paragraph was added in a later release. ", "\n\n", "x", "Added.\n"]))
    if edit == "none":
        new, moved = document, (start, end)
    elif edit == "insert before":
        at = draw(st.integers(0, start))
        new, moved = document[:at] + piece + document[at:], (start + len(piece), end + len(piece))
    elif edit == "remove before":
        cut = draw(st.integers(0, start))
        at = draw(st.integers(0, cut))
        new, moved = document[:at] + document[cut:], (start - (cut - at), end - (cut - at))
    elif edit == "insert after":
        at = draw(st.integers(end, len(document)))
        new, moved = document[:at] + piece + document[at:], (start, end)
    else:  # a few characters changed inside the span, within the bound
        changes = draw(st.integers(1, max(1, int(MAX_EDIT_SHARE * length) // 2)))
        chars = list(document[start:end])
        for n in range(changes):
            chars[(n * 7919) % length] = "#"
        new, moved = document[:start] + "".join(chars) + document[end:], (start, end)
    return Case(document, (start, end), new, moved, edit)


class Case(tuple):
    """A drawn case, shown briefly when a property fails (the documents are long)."""

    def __new__(cls, *fields):
        return super().__new__(cls, fields)

    def __repr__(self):
        document, span, new, moved, edit = self
        return f"Case({edit!r}, span {span} -> {moved}, text {document[span[0]:span[1]]!r}, {len(new)} characters)"


@pytest.mark.parametrize("chunker", list(CHUNKERS))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(case=cases())
def test_a_span_resolves_to_exactly_the_chunks_that_hold_it_wherever_the_edit_moved_it(chunker, case):
    document, (start, end), new, (true_start, true_end), edit = case
    span = span_for_chunk(document, start, end)
    assume(document.count(span.exact) == 1)  # a passage its document holds once, as an answer is
    chunks = chunked(chunker, new)
    found = locate(DocumentText(chunks), span)
    exact_places = new.count(span.prefix + span.exact + span.suffix) if edit != "inside" else 0
    # The same passage with the same context at two places is ambiguous, and goes to people.
    assume(exact_places <= 1 and not (edit != "inside" and new.count(span.exact) > 1 and found == "ambiguous"))
    assert isinstance(found, Located), (edit, found)
    if edit == "inside":
        # Found fuzzily: where it is give or take the bound (a boundary in a run of one
        # repeated character is anywhere along it), within the stated bound of the quote.
        bound = MAX_EDIT_SHARE * len(span.exact)
        assert abs(found.start - true_start) <= bound and abs(found.end - true_end) <= bound, (found, true_start)
        assert levenshtein(new[found.start:found.end], span.exact) <= MAX_EDIT_SHARE * len(span.exact)
    else:
        assert (found.start, found.end) == (true_start, true_end), (edit, found)
        assert new[found.start:found.end] == span.exact
    resolved = resolve_span({"span": span.to_dict()}, DocumentText(chunks))
    want = oracle(found.start, found.end, chunks)
    got = [chunk_id for chunk_id, _ in resolved.get("chunks", [])]
    assert got == want
    by_id = {chunk_id: (s, s + len(text)) for chunk_id, s, text in chunks}
    for chunk_id in got:  # no span resolves to a chunk that does not hold it
        s, e = by_id[chunk_id]
        assert min(e, true_end) > max(s, true_start)


@pytest.mark.parametrize("chunker", ["langchain/300/60", "chonkie-sentence/400/0"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_span_whose_text_is_gone_is_never_resolved_to_text_beyond_the_bound(chunker, data):
    document = DOCUMENTS[data.draw(st.integers(0, len(DOCUMENTS) - 1))]
    length = data.draw(st.integers(60, 300))
    start = data.draw(st.integers(0, len(document) - length))
    span = span_for_chunk(document, start, start + length)
    new = document[:start] + document[start + length:]
    found = locate(DocumentText(chunked(chunker, new)), span)
    if isinstance(found, Located):  # the same words elsewhere: only within the bound
        assert levenshtein(new[found.start:found.end], span.exact) <= MAX_EDIT_SHARE * length
    else:
        assert found in ("gone", "ambiguous")


def test_every_document_holds_the_longest_span_drawn():
    assert all(len(text) > 5000 for text in DOCUMENTS)
