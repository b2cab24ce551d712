"""The fast drift classifier agrees with a plain brute-force reading of spec/drift.md.

Documents of generated paragraphs are chunked, labelled, then edited (a paragraph deleted, a
word changed, a paragraph moved to another document) and re-chunked at another size and
overlap. The brute force below compares every label with every chunk, rebuilds documents by
trying every overlap length, and scans spans linearly: slow, obvious, and independent of the
indexes, bisection and KMP borders in goldkeeper.core.drift.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goldkeeper
from goldkeeper.core.drift import Corpus, LiveChunk, anchors, classify, moves, rebuild

WORDS = ["refund", "plan", "annual", "monthly", "billing", "date", "the", "a", "is", "of", "cancel",
         "credit", "enterprise", "contract", "within", "days", "sso", "audit", "log", "s", "so"]


def collapse(text: str) -> str:
    return re.sub(r"\s+", " ", goldkeeper.normalize(text)).strip()


def whole_words(text: str, piece: str, b: int) -> bool:
    starts = b == len(text) or text[len(text) - b - 1] == " "
    ends = b == len(piece) or piece[b] == " "
    return starts and ends


def brute_overlap(text: str, piece: str) -> int:
    for b in range(min(len(text), len(piece), 4096), 0, -1):
        if text.endswith(piece[:b]) and (b >= 8 or whole_words(text, piece, b)):
            return b
    return 0


def brute_rebuild(chunks):
    text, spans = "", []
    for c in sorted(chunks, key=lambda c: (c.ordinal, c.chunk_id)):
        piece = collapse(c.text)
        if not piece:
            continue
        b = brute_overlap(text, piece)
        if b:
            start = len(text) - b
            text += piece[b:]
        else:
            text += " " if text else ""
            start = len(text)
            text += piece
        spans.append((start, start + len(piece), c))
    return text, spans


def brute_classify(row, chunks):
    order = lambda c: (c.doc_uri != row["doc_uri"], c.ordinal, c.chunk_id)  # noqa: E731
    if row["chunk_id"] in {c.chunk_id for c in chunks}:
        return ("VALID",)
    sha = goldkeeper.text_sha(row["chunk_text"])
    same = sorted((c for c in chunks if c.text_sha == sha), key=order)
    if same:
        return ("RE_ANCHORABLE", same[0].chunk_id)
    wanted = collapse(row["chunk_text"])
    own = brute_find(wanted, [c for c in chunks if c.doc_uri == row["doc_uri"]])
    if own is not None:
        return own
    if len(wanted) < 16:
        return ("ORPHANED",)
    # Not in its own document (gone, or edited there): every other document, one by one.
    elsewhere = {}
    for doc_uri in sorted({c.doc_uri for c in chunks} - {row["doc_uri"]}):
        hit = brute_find(wanted, [c for c in chunks if c.doc_uri == doc_uri])
        if hit is not None:
            elsewhere[doc_uri] = hit
    if len(elsewhere) == 1:
        ((doc_uri, hit),) = elsewhere.items()
        return (*hit, doc_uri)
    if elsewhere:
        return ("ORPHANED", sorted(elsewhere))
    return ("ORPHANED",)


def brute_find(wanted, document):
    """MERGED to the shortest chunk that holds ``wanted``, or SPLIT over the chunks that
    overlap it in the rebuilt document, or None."""
    if not document or not wanted:
        return None
    holding = [c for c in document if wanted in collapse(c.text)]
    if holding:
        return ("MERGED", min(holding, key=lambda c: (len(c.text), c.ordinal, c.chunk_id)).chunk_id)
    text, spans = brute_rebuild(document)
    at = text.find(wanted)
    if at >= 0:
        return ("SPLIT", [c.chunk_id for s, e, c in spans if s < at + len(wanted) and at < e])
    return None


def got_of(finding):
    """A finding as ``brute_classify`` states it."""
    got = (finding["status"], *tuple(finding[k] for k in ("reanchor_to", "split_into") if k in finding))
    if finding.get("cross_document") and finding["status"] != "RE_ANCHORABLE":
        got += (finding.get("reanchor_doc_uri") or finding["split_doc_uri"],)
    if "found_in" in finding:
        got += ([place["doc_uri"] for place in finding["found_in"]],)
    return got


SPACES = [" ", " ", " ", "  ", "\n", " \t", "\u00a0"]


def chunked(documents: dict[str, list[str]], size: int, overlap: int, fingerprint: str,
            mess=None) -> list[LiveChunk]:
    """Chunks of ``size`` words, ``overlap`` shared; with a ``mess`` (a Random) some spaces
    are other whitespace, and some chunks start or end with some."""
    chunks = []
    for doc_uri, paragraphs in documents.items():
        words = " ".join(paragraphs).split(" ")
        step = max(1, size - overlap)
        ordinal = 0
        for start in range(0, len(words), step):
            text = " ".join(words[start:start + size])
            if mess is not None:
                text = "".join(mess.choice(SPACES) if ch == " " else ch for ch in text)
                text = mess.choice(["", "", "\n", " "]) + text + mess.choice(["", "", " ", "\n\n"])
            chunks.append(LiveChunk(goldkeeper.chunk_id(doc_uri, fingerprint, ordinal, text, fingerprint), doc_uri,
                                    ordinal, text, goldkeeper.text_sha(text)))
            ordinal += 1
            if start + size >= len(words):
                break
    return chunks


paragraph = st.lists(st.sampled_from(WORDS), min_size=3, max_size=12).map(" ".join)
corpus_strategy = st.dictionaries(st.sampled_from(["doc://a", "doc://b", "doc://c"]),
                                  st.lists(paragraph, min_size=1, max_size=5), min_size=1, max_size=3)


def reorganised(documents, edit, rng):
    """The documents after one edit: a paragraph deleted, a word changed, a paragraph moved to
    another document; or, as knowledge bases are reorganised, a document renamed, split in
    two, or merged into another."""
    edited = {uri: list(paragraphs) for uri, paragraphs in documents.items()}
    uri = rng.choice(sorted(edited))
    at = rng.randrange(len(edited[uri]))
    if edit == "delete" and len(edited[uri]) > 1:
        del edited[uri][at]
    elif edit == "edit":
        words = edited[uri][at].split(" ")
        words[rng.randrange(len(words))] = "changed"
        edited[uri][at] = " ".join(words)
    elif edit == "move":
        moved = edited[uri].pop(at)
        edited.setdefault("doc://moved", []).append(moved)
        if not edited[uri]:
            del edited[uri]
    elif edit == "rename":
        edited["doc://renamed"] = edited.pop(uri)
    elif edit == "split":
        paragraphs = edited.pop(uri)
        edited[uri + "/1"], edited[uri + "/2"] = paragraphs[:at + 1], paragraphs[at + 1:] or ["changed"]
    elif edit == "merge" and len(edited) > 1:
        other = rng.choice(sorted(set(edited) - {uri}))
        edited["doc://merged"] = edited.pop(uri) + edited.pop(other)
    return edited


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus_strategy, st.integers(2, 12), st.integers(0, 3), st.integers(2, 40), st.integers(0, 6),
       st.sampled_from(["none", "delete", "edit", "move", "rename", "split", "merge"]), st.randoms(use_true_random=False),
       st.booleans())
def test_fast_classifier_agrees_with_brute_force(documents, old_size, old_overlap, new_size, new_overlap, edit, rng,
                                                 messy):
    old = chunked(documents, old_size, min(old_overlap, old_size - 1), "old")
    edited = reorganised(documents, edit, rng)
    new = chunked(edited, new_size, min(new_overlap, new_size - 1), "new", rng if messy else None)
    rows = [{"query_id": f"q{i}", "doc_uri": c.doc_uri, "chunk_id": c.chunk_id, "chunk_text": c.text,
             "relevance": 1} for i, c in enumerate(old)]
    result = classify(rows, Corpus(new))
    for row, finding in zip(rows, result.findings, strict=True):
        assert got_of(finding) == brute_classify(row, new), (row, finding)
    # The same corpus in another file order gives the same findings.
    assert classify(rows, Corpus(new[::-1])).findings == result.findings
    # So does the anchored search that long documents with many pending labels use, and the
    # search of other documents when it batches documents and screens windows with few keys.
    with patch.object(rebuild, "_SCAN_BUDGET", 0), patch.object(anchors, "_ANCHOR_EVERY", 2), \
            patch.object(anchors, "_ANCHOR_K", 3), \
            patch.object(moves, "_BATCH_CHARACTERS", 1), patch.object(moves, "_FILTER_BITS", 2):
        assert classify(rows, Corpus(new)).findings == result.findings
    # The document map: every labeled document gone, and where its labels' texts went.
    gone = sorted({row["doc_uri"] for row in rows} - {c.doc_uri for c in new})
    assert [entry["doc_uri"] for entry in result.documents] == gone
    for entry in result.documents:
        targets = [f.get("reanchor_doc_uri") or f["split_doc_uri"] for row, f in zip(rows, result.findings)
                   if row["doc_uri"] == entry["doc_uri"] and f.get("cross_document")]
        assert entry["found_in"] == {uri: targets.count(uri) for uri in targets}
        assert entry.get("moved_to") == next((uri for uri in targets if 2 * targets.count(uri) > entry["labels"]), None)


def test_the_brute_force_itself_sees_each_status():
    """The generator reaches every status, so the agreement above is not vacuous."""
    documents = {"doc://a": ["annual plan refund within days", "monthly billing date is the date"],
                 "doc://b": ["enterprise contract credit audit log"]}
    old = chunked(documents, 4, 0, "old")
    seen = set()
    for size, overlap in ((4, 0), (2, 0), (20, 0), (3, 1)):
        new = chunked(documents, size, overlap, "new" + str(size))
        for c in old:
            seen.add(brute_classify({"doc_uri": c.doc_uri, "chunk_id": c.chunk_id, "chunk_text": c.text}, new)[0])
    gone = chunked({"doc://a": ["nothing of it left"]}, 4, 0, "gone")
    seen.add(brute_classify({"doc_uri": "doc://a", "chunk_id": old[0].chunk_id, "chunk_text": old[0].text}, gone)[0])
    assert seen == {"RE_ANCHORABLE", "MERGED", "SPLIT", "ORPHANED"}
    # And every status across documents: doc://a renamed and re-chunked coarser (MERGED) and
    # finer (SPLIT), and copied into two documents (ORPHANED, found in both).
    renamed = {"doc://x": documents["doc://a"], "doc://b": documents["doc://b"]}
    twice = {"doc://x": documents["doc://a"], "doc://y": documents["doc://a"]}
    across = set()
    for edited, size in ((renamed, 20), (renamed, 3), (twice, 20)):
        new = chunked(edited, size, 0, f"new{size}")
        for c in old:
            if c.doc_uri == "doc://a":
                got = brute_classify({"doc_uri": c.doc_uri, "chunk_id": c.chunk_id, "chunk_text": c.text}, new)
                across.add((got[0], got[-1] if isinstance(got[-1], str) else tuple(got[-1])))
    assert across >= {
        ("MERGED", "doc://x"), ("SPLIT", "doc://x"), ("ORPHANED", ("doc://x", "doc://y"))}
    assert unicodedata.is_normalized("NFC", collapse(" a \n b "))


@st.composite
def neighbours(draw):
    """Chunks of a text cut at random places, with random overlaps (or gaps), start offsets
    kept, dropped or wrong, and the pieces sometimes short, repeated or word-aligned."""
    text = " ".join(draw(st.lists(st.sampled_from([*WORDS, "x", "ab"]), min_size=1, max_size=40)))
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=8)) | {0, len(text)})
    chunks = []
    for ordinal, (start, end) in enumerate(itertools.pairwise(cuts)):
        start = max(0, start - draw(st.integers(0, 12)))  # overlap with the previous piece
        piece = text[start:end].strip()
        if not piece:
            continue
        offsets = draw(st.sampled_from(["kept", "none", "shifted"]))
        start_index = {"kept": start, "none": None, "shifted": start + draw(st.integers(-3, 3))}[offsets]
        chunks.append(LiveChunk(f"c1:{ordinal}", "d", ordinal, piece, None,
                                start_index if start_index is None or start_index >= 0 else None))
    return chunks


@settings(max_examples=600, deadline=None)
@given(neighbours())
def test_a_seamless_document_is_the_one_stitched_seam_by_seam(chunks):
    chunks, pieces, spaced = rebuild._texts(chunks)
    seamless = rebuild._seamless(chunks, pieces, spaced)
    if seamless is not None:
        stitched = rebuild._stitched(chunks, pieces)
        assert (seamless.text, seamless.starts, seamless.ends, seamless.chunks, seamless.floor) == (
            stitched.text, stitched.starts, stitched.ends, stitched.chunks, stitched.floor)
