"""The re-judgment queue: every label a person must look at (SPLIT, ORPHANED), with the live
chunks most likely to hold what was judged as candidates."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from goldkeeper.core.drift.classification import DriftResult, Found, Labels, _classify
from goldkeeper.core.drift.corpus import ChunkSource, LiveChunk
from goldkeeper.core.drift.rebuild import _in_order
from goldkeeper.core.identity import normalize
from goldkeeper.core.spans import span_of

if TYPE_CHECKING:

    from goldkeeper.models.judgment import Judgment


_WORD = re.compile(r"\w+")
_POSTINGS_BUDGET = 4096
#: Documents of at most this many chunks are scored chunk by chunk, without postings.
_SCORE_WHOLE = 64


def _words(text: str) -> set[str]:
    return set(_WORD.findall(normalize(text).lower()))


def queue_item_id(row: Mapping[str, Any]) -> str:
    """A queue item's stable id: the same label gives the same id on every run."""
    key = "\x1f".join((row["query_id"], row["doc_uri"], row.get("chunk_id") or ""))
    return "rq1:" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


class _WordIndex:
    """One document's chunks by word, to find partial matches without scanning every chunk."""

    def __init__(self, chunks: list[LiveChunk]):
        self.chunks = chunks
        self.words = [_words(c.text or "") for c in chunks]
        self._postings: dict[str, list[int]] | None = None

    @property
    def postings(self) -> dict[str, list[int]]:
        """Word -> chunks holding it, built on first use: a short document is scored whole."""
        if self._postings is None:
            self._postings = {}
            for i, words in enumerate(self.words):
                for word in words:
                    self._postings.setdefault(word, []).append(i)
        return self._postings

    def best(self, text: str, limit: int) -> list[tuple[float, LiveChunk]]:
        wanted = _words(text)
        if not wanted:
            return []
        pool: set[int] | range
        if len(self.chunks) <= _SCORE_WHOLE:
            pool = range(len(self.chunks))  # every chunk: cheaper than building postings
        else:
            # Candidates are the chunks sharing the label's rarest words (a budget of
            # postings), then each is scored exactly: the share of the label's words it covers.
            rare = sorted((len(self.postings.get(w, ())), w) for w in wanted)
            pool = set()
            spent = 0
            for size, word in rare:
                if size == 0:
                    continue
                if spent and spent + size > _POSTINGS_BUDGET:
                    break
                pool.update(self.postings[word])
                spent += size
        scored = sorted((-len(wanted & self.words[i]) / len(wanted), *self.chunks[i].order(), i) for i in pool)
        return [(-s[0], self.chunks[s[-1]]) for s in scored[:limit]]


def rejudgment_queue(
    judgments: Iterable[Judgment | Mapping[str, Any]], result: DriftResult, corpus: ChunkSource, candidates: int = 3,
    *, documents: Mapping[str, list[LiveChunk]] | None = None,
) -> list[dict[str, Any]]:
    """The labels a person must look at, with candidates found (spec/drift.md, queue).

    ``action: rejudge`` for SPLIT and ORPHANED labels, whose ground truth is unknown;
    ``action: review`` for MERGED ones, which fix moved to a bigger chunk (still sound, but the
    extra text may deserve a second look for precision). Candidates: a SPLIT's pieces in
    document order; an ORPHANED label's best partial matches in its document (when it carried
    text), ranked by the share of its words each chunk covers, ties by ordinal and id; a
    MERGED label's new chunk; an ORPHANED label whose text lives on in several other
    documents (``found_in``), the chunks that hold it in each. The corpus is read once more, for ORPHANED labels' documents
    only, unless ``documents`` already holds their chunks (``classify_and_queue``: a live
    document it lacks has none). The queue proposes; nothing in it is ground truth until a
    person answers.
    """
    rows = Labels(judgments)
    orphan_docs = {row["doc_uri"] for row, finding in zip(rows, result.findings, strict=True)
                   if finding["status"] == "ORPHANED" and row.get("chunk_text") and row.get("chunk_id")}
    by_doc: dict[str, list[LiveChunk]] = {doc_uri: [] for doc_uri in orphan_docs}
    if documents is not None:
        by_doc = {doc_uri: list(documents[doc_uri]) for doc_uri in orphan_docs if doc_uri in documents}
    elif by_doc:
        for chunk in corpus:
            if chunk.doc_uri in by_doc:
                by_doc[chunk.doc_uri].append(chunk)
    indexes: dict[str, _WordIndex] = {}
    queue = []
    for row, finding in zip(rows, result.findings, strict=True):
        status = finding["status"]
        if status not in ("SPLIT", "ORPHANED", "MERGED"):
            continue
        item: dict[str, Any] = {"item_id": queue_item_id(row), "action": "review" if status == "MERGED" else "rejudge",
                                "status": status}
        item.update((key, row[key]) for key in ("query_id", "query", "doc_uri", "chunk_id", "chunk_text", "text_sha",
                                                 "relevance", "labeled_by", "labeled_at") if row.get(key) is not None)
        if row.get("span") is not None:
            item["span"] = span_of(row["span"]).to_dict()
            if "span_status" in finding:
                item["span_status"] = finding["span_status"]
        found: list[tuple[float | None, LiveChunk]] = []
        if status == "SPLIT":
            found = [(None, result.chunks[chunk_id]) for chunk_id in finding["split_into"]]
        elif status == "MERGED":
            item["reanchor_to"] = finding["reanchor_to"]
            found = [(None, result.chunks[finding["reanchor_to"]])]
        elif "found_in" in finding:
            found = [(None, result.chunks[chunk_id]) for place in finding["found_in"] for chunk_id in place["chunk_ids"]]
            item["found_in"] = [place["doc_uri"] for place in finding["found_in"]]
        elif row["doc_uri"] in by_doc and row.get("chunk_text"):
            index = indexes.get(row["doc_uri"])
            if index is None:
                index = indexes[row["doc_uri"]] = _WordIndex(_in_order(by_doc[row["doc_uri"]]))
            found = index.best(row["chunk_text"], candidates)
        if row.get("chunk_text") and found and found[0][0] is None:
            wanted = _words(row["chunk_text"])
            found = [(len(wanted & _words(c.text or "")) / len(wanted) if wanted else 0.0, c) for _, c in found]
        item["candidates"] = [
            {"chunk_id": c.chunk_id, "doc_uri": c.doc_uri, "ordinal": c.ordinal, "text": c.text,
             **({} if c.start_index is None else {"start_index": c.start_index}),
             **({} if score is None else {"coverage": round(score, 6)})}
            for score, c in found if score is None or score > 0 or status != "ORPHANED"
        ]
        queue.append(item)
    return queue


def classify_and_queue(
    judgments: Iterable[Judgment | Mapping[str, Any]],
    corpus: ChunkSource,
    progress: Callable[[int], None] | None = None,
    *,
    elsewhere: Found | None = None,
    candidates: int = 3,
) -> tuple[DriftResult, list[dict[str, Any]]]:
    """``classify`` and then ``rejudgment_queue``, sharing one read: the documents classify
    rebuilt hold every ORPHANED label's candidates, so the corpus is not read a third time."""
    rows = Labels(judgments)
    result, rebuilt = _classify(rows, corpus, progress, elsewhere)
    return result, rejudgment_queue(rows, result, corpus, candidates, documents=rebuilt)
