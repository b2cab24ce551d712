"""Drift: which labels still point at the text a person judged, after a re-chunk.

Statuses and resolution order are in spec/drift.md. Everything is indexed so the cost stays
near-linear in labels plus corpus text: chunk ids and text hashes in hash maps, and MERGED
and SPLIT searched only inside the label's own document, whose text is rebuilt once from its
live chunks (in ordinal order, neighbours' overlaps folded, whitespace at seams ignored) and
then searched with ``str.find``. No label is ever compared with every chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json

from goldkeeper.core.identity import chunk_id, normalize, text_sha
from goldkeeper.errors import InputError, describe_value
from goldkeeper.models.judgment import Judgment

__all__ = ["DriftResult", "LiveChunk", "build_snapshot", "classify", "drift_counts", "fix", "parse_corpus", "rejudgment_queue"]

_WS = re.compile(r"\s+")
_OVERLAP_WINDOW = 4096


def _collapse(text: str) -> str:
    return _WS.sub(" ", text).strip()


@dataclass(frozen=True)
class LiveChunk:
    chunk_id: str
    doc_uri: str
    ordinal: int | None
    text: str | None
    text_sha: str | None

    def order(self) -> tuple[int, str]:
        return (self.ordinal if self.ordinal is not None else 1 << 62, self.chunk_id)


@dataclass
class Corpus:
    chunks: list[LiveChunk]
    corpus_fingerprint: str | None = None
    chunker_fingerprint: str | None = None


def parse_corpus(data: bytes | str, source: str = "corpus") -> Corpus:
    """The spec's corpus.json: ``{"corpus_fingerprint", "chunker_fingerprint", "chunks"}``."""
    try:
        payload = from_json(data, allow_inf_nan=False)
    except ValueError as error:
        raise InputError(source, f"not valid JSON ({error})", field="json", found="the file") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("chunks"), list):
        raise InputError(source, "a corpus snapshot is an object with a chunks array", field="chunks",
                         found=describe_value(payload.get("chunks") if isinstance(payload, dict) else payload))
    chunks = []
    for index, raw in enumerate(payload["chunks"]):
        where = f"chunks[{index}]"
        if not isinstance(raw, dict):
            raise InputError(source, "must be an object", field=where, found=describe_value(raw))
        for name in ("chunk_id", "doc_uri"):
            if not isinstance(raw.get(name), str) or not raw[name]:
                raise InputError(source, "required, must be a non-empty string", field=f"{where}.{name}",
                                 found=describe_value(raw.get(name)))
        ordinal = raw.get("ordinal")
        if ordinal is not None and (type(ordinal) is not int or ordinal < 0):
            raise InputError(source, "must be a non-negative integer", field=f"{where}.ordinal",
                             found=describe_value(ordinal))
        for name in ("text", "text_sha"):
            if raw.get(name) is not None and not isinstance(raw[name], str):
                raise InputError(source, "must be a string", field=f"{where}.{name}", found=describe_value(raw[name]))
        text = raw.get("text")
        chunks.append(LiveChunk(raw["chunk_id"], raw["doc_uri"], ordinal, text,
                                raw.get("text_sha") or (text_sha(text) if text is not None else None)))
    fingerprints = {name: payload.get(name) for name in ("corpus_fingerprint", "chunker_fingerprint")}
    return Corpus(chunks, **{k: v if isinstance(v, str) else None for k, v in fingerprints.items()})


@dataclass
class _Document:
    """A document's live text, rebuilt from its chunks, and where each chunk lies in it."""

    text: str
    spans: list[tuple[int, int, LiveChunk]]


def _overlap(tail: str, head: str) -> int:
    """Length of the longest suffix of ``tail`` that is a prefix of ``head`` (KMP, O(n))."""
    window = min(len(tail), len(head), _OVERLAP_WINDOW)
    if window == 0:
        return 0
    probe = head[:window] + "\x00" + tail[-window:]
    prefix = [0] * len(probe)
    for i in range(1, len(probe)):
        j = prefix[i - 1]
        while j and probe[i] != probe[j]:
            j = prefix[j - 1]
        if probe[i] == probe[j]:
            j += 1
        prefix[i] = j
    return prefix[-1]


def _rebuild(chunks: list[LiveChunk]) -> _Document:
    text = ""
    spans = []
    for chunk in chunks:
        if chunk.text is None:
            continue
        piece = _collapse(normalize(chunk.text))
        if not piece:
            continue
        shared = _overlap(text, piece)
        if shared:
            start = len(text) - shared
            text += piece[shared:]
        else:
            if text:
                text += " "
            start = len(text)
            text += piece
        spans.append((start, start + len(piece), chunk))
    return _Document(text, spans)


@dataclass
class DriftResult:
    findings: list[dict[str, Any]]
    summary: dict[str, Any]
    judgments_fingerprint: str | None
    corpus_fingerprint: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"findings": self.findings, "summary": self.summary,
                "judgments_fingerprint": self.judgments_fingerprint,
                "corpus_fingerprint": self.corpus_fingerprint}


@dataclass
class _Index:
    ids: set[str] = field(default_factory=set)
    by_sha: dict[str, list[LiveChunk]] = field(default_factory=dict)
    by_doc: dict[str, list[LiveChunk]] = field(default_factory=dict)
    documents: dict[str, _Document] = field(default_factory=dict)

    def document(self, doc_uri: str) -> _Document | None:
        if doc_uri not in self.by_doc:
            return None
        found = self.documents.get(doc_uri)
        if found is None:
            found = self.documents[doc_uri] = _rebuild(self.by_doc[doc_uri])
        return found


def _index(corpus: Corpus) -> _Index:
    index = _Index()
    for chunk in corpus.chunks:
        index.ids.add(chunk.chunk_id)
        if chunk.text_sha:
            index.by_sha.setdefault(chunk.text_sha, []).append(chunk)
        index.by_doc.setdefault(chunk.doc_uri, []).append(chunk)
    for chunks in index.by_doc.values():
        chunks.sort(key=LiveChunk.order)
    return index


def _rank(doc_uri: str):
    # Same document first, then ordinal, then id: never file order.
    return lambda c: (c.doc_uri != doc_uri, *c.order())


def _classify_one(row: Mapping[str, Any], index: _Index) -> dict[str, Any]:
    doc_uri = row["doc_uri"]
    chunk = row.get("chunk_id")
    finding: dict[str, Any] = {"query_id": row["query_id"], "doc_uri": doc_uri}
    if chunk is None:
        finding["status"] = "VALID" if doc_uri in index.by_doc else "ORPHANED"
        return finding
    finding["chunk_id"] = chunk
    if chunk in index.ids:
        finding["status"] = "VALID"
        return finding
    chunk_text = row.get("chunk_text")
    sha = row.get("text_sha")
    if chunk_text is not None:
        own = text_sha(chunk_text)
        if sha is not None and sha != own:
            # The label contradicts itself; the text a person read is the better witness.
            finding["text_sha_mismatch"] = True
        sha = own
    if sha is not None and sha in index.by_sha:
        target = min(index.by_sha[sha], key=_rank(doc_uri))
        finding.update(status="RE_ANCHORABLE", reanchor_to=target.chunk_id)
        if target.doc_uri != doc_uri:
            finding.update(cross_document=True, reanchor_doc_uri=target.doc_uri)
        return finding
    document = index.document(doc_uri) if chunk_text is not None else None
    if document is not None:
        wanted = _collapse(normalize(chunk_text))
        if wanted:
            containing = [c for s, e, c in document.spans if wanted in document.text[s:e]]
            if containing:
                target = min(containing, key=lambda c: (len(c.text or ""), *c.order()))
                finding.update(status="MERGED", reanchor_to=target.chunk_id)
                return finding
            at = document.text.find(wanted)
            if at >= 0:
                end = at + len(wanted)
                pieces = [c.chunk_id for s, e, c in document.spans if s < end and at < e]
                finding.update(status="SPLIT", split_into=pieces)
                return finding
    finding["status"] = "ORPHANED"
    return finding


def classify(judgments: Iterable[Judgment | Mapping[str, Any]], corpus: Corpus) -> DriftResult:
    """Classify every label against a live corpus (see the module docstring for the cost)."""
    index = _index(corpus)
    findings = []
    fingerprints: set[str] = set()
    for judgment in judgments:
        row = judgment.__dict__ if isinstance(judgment, Judgment) else judgment
        if row.get("corpus_fingerprint"):
            fingerprints.add(row["corpus_fingerprint"])
        findings.append(_classify_one(row, index))
    counts = {"VALID": 0, "RE_ANCHORABLE": 0, "MERGED": 0, "SPLIT": 0, "ORPHANED": 0}
    for finding in findings:
        counts[finding["status"]] += 1
    total = len(findings)
    summary = {
        "valid": counts["VALID"],
        "re_anchorable": counts["RE_ANCHORABLE"],
        "merged": counts["MERGED"],
        "split": counts["SPLIT"],
        "orphaned": counts["ORPHANED"],
        "invalid_ratio": round((total - counts["VALID"]) / total, 12) if total else 0.0,
    }
    return DriftResult(findings, summary,
                       next(iter(fingerprints)) if len(fingerprints) == 1 else None,
                       corpus.corpus_fingerprint)


def fix(judgments: Iterable[Judgment], result: DriftResult, corpus: Corpus) -> tuple[list[Judgment], int]:
    """Re-anchor RE_ANCHORABLE and MERGED labels; leave every other label exactly as it was.

    A moved label gets the live chunk's id, text hash and text (when the label stored text),
    the document of its new chunk, and the corpus fingerprint; what it pointed at before is
    kept in ``reanchored_from`` (id, hash, text, status). SPLIT and ORPHANED labels are never
    touched: a fix never invents ground truth. Fixing a fixed set changes nothing, since every
    moved label is then VALID. Returns the labels and how many moved.
    """
    by_id = {chunk.chunk_id: chunk for chunk in corpus.chunks}
    out: list[Judgment] = []
    moved = 0
    for judgment, finding in zip(judgments, result.findings, strict=True):
        if finding["status"] not in ("RE_ANCHORABLE", "MERGED"):
            out.append(judgment)
            continue
        target = by_id[finding["reanchor_to"]]
        before = {"chunk_id": judgment.chunk_id, "status": finding["status"]}
        if judgment.text_sha is not None:
            before["text_sha"] = judgment.text_sha
        if judgment.chunk_text is not None:
            before["chunk_text"] = judgment.chunk_text
        if judgment.doc_uri != target.doc_uri:
            before["doc_uri"] = judgment.doc_uri
        values = judgment.canonical_dict()
        values.update(chunk_id=target.chunk_id, doc_uri=target.doc_uri, reanchored_from=before)
        if target.text_sha is not None:
            values["text_sha"] = target.text_sha
        if judgment.chunk_text is not None and target.text is not None:
            values["chunk_text"] = target.text
        if corpus.corpus_fingerprint is not None:
            values["corpus_fingerprint"] = corpus.corpus_fingerprint
        out.append(Judgment.model_construct(**values))
        moved += 1
    return out, moved


_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(normalize(text).lower()))


def rejudgment_queue(
    judgments: Iterable[Judgment | Mapping[str, Any]], result: DriftResult, corpus: Corpus, candidates: int = 3
) -> list[dict[str, Any]]:
    """One item per SPLIT or ORPHANED label, for a person to re-judge, with candidates found.

    A SPLIT label's candidates are the chunks its text now spans, in document order. An
    ORPHANED label's are the live chunks of its document (or, when the document is gone, none)
    ranked by word overlap with the labeled text (Jaccard), ties by ordinal and id. The queue
    proposes; it never decides: nothing here becomes ground truth until a person says so.
    """
    index = _index(corpus)
    by_id = {chunk.chunk_id: chunk for chunk in corpus.chunks}
    queue = []
    for judgment, finding in zip(judgments, result.findings, strict=True):
        if finding["status"] not in ("SPLIT", "ORPHANED"):
            continue
        row = judgment.__dict__ if isinstance(judgment, Judgment) else judgment
        item = {key: row[key] for key in ("query_id", "query", "doc_uri", "chunk_id", "chunk_text",
                                          "relevance", "labeled_by", "labeled_at") if row.get(key) is not None}
        item["status"] = finding["status"]
        found: list[tuple[float | None, LiveChunk]] = []
        if finding["status"] == "SPLIT":
            found = [(None, by_id[chunk_id]) for chunk_id in finding["split_into"]]
        elif row.get("chunk_text") and row["doc_uri"] in index.by_doc:
            wanted = _words(row["chunk_text"])
            scored = []
            for chunk in index.by_doc[row["doc_uri"]]:
                have = _words(chunk.text or "")
                overlap = len(wanted & have) / len(wanted | have) if wanted | have else 0.0
                if overlap > 0:
                    scored.append((-overlap, *chunk.order(), chunk))
            found = [(-s[0], s[-1]) for s in sorted(scored, key=lambda s: s[:3])[:candidates]]
        item["candidates"] = [
            {"chunk_id": c.chunk_id, "doc_uri": c.doc_uri, "ordinal": c.ordinal, "text": c.text,
             **({} if score is None else {"overlap": round(score, 6)})}
            for score, c in found
        ]
        queue.append(item)
    return queue


def build_snapshot(
    chunks: Iterable[Mapping[str, Any]], chunker_fingerprint: str, corpus_fingerprint: str | None = None,
    source: str = "chunks",
) -> dict[str, Any]:
    """A corpus.json from chunker output rows ``{doc_uri, doc_revision, ordinal, text}``.

    Ids follow spec/chunk-id.md; ``doc_revision`` defaults to the text's own hash, as the spec
    allows for sources without versions. Each row is checked, with its position on error.
    """
    out = []
    for index, row in enumerate(chunks):
        where = f"chunks[{index}]"
        if not isinstance(row, Mapping):
            raise InputError(source, "must be an object", field=where, found=describe_value(row))
        for name in ("doc_uri", "text"):
            if not isinstance(row.get(name), str) or (name == "doc_uri" and not row[name]):
                raise InputError(source, "required, must be a string", field=f"{where}.{name}",
                                 found=describe_value(row.get(name)))
        ordinal = row.get("ordinal")
        if type(ordinal) is not int or ordinal < 0:
            raise InputError(source, "required, must be a non-negative integer", field=f"{where}.ordinal",
                             found=describe_value(ordinal))
        text = row["text"]
        revision = row.get("doc_revision")
        if revision is None:
            revision = text_sha(text)
        elif not isinstance(revision, str):
            raise InputError(source, "must be a string", field=f"{where}.doc_revision", found=describe_value(revision))
        try:
            identity = chunk_id(row["doc_uri"], revision, ordinal, text, chunker_fingerprint)
        except ValueError as error:
            raise InputError(source, str(error).split(": ", 2)[-1], field=where) from None
        out.append({"chunk_id": identity, "doc_uri": row["doc_uri"], "doc_revision": revision,
                    "ordinal": ordinal, "text": text, "text_sha": text_sha(text)})
    return {"corpus_fingerprint": corpus_fingerprint or chunker_fingerprint,
            "chunker_fingerprint": chunker_fingerprint, "chunks": out}


def drift_counts(judgments: Iterable[Judgment | Mapping[str, Any]], data: bytes | str, source: str = "corpus"):
    """Drift counts and corpus facts for a report: what ``score --corpus`` adds."""
    from goldkeeper.models.report import CorpusInfo, DriftCounts

    corpus = parse_corpus(data, source)
    counts = DriftCounts(**classify(judgments, corpus).summary)
    info = CorpusInfo(fingerprint=corpus.corpus_fingerprint, chunks=len(corpus.chunks),
                      documents=len({c.doc_uri for c in corpus.chunks}))
    return counts, info
