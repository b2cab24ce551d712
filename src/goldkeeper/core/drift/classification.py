"""Classification: every label's status against a live corpus (spec/drift.md), the corpus
read at most three times, and the pieces of the partitioned form (``partition_of``, ``unsettled``,
``find``, ``merge_found``, ``drift_summary``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goldkeeper.core import spans
from goldkeeper.core.drift import rebuild
from goldkeeper.core.drift.corpus import ChunkSource, Corpus, LiveChunk, _batches, _comparable
from goldkeeper.core.drift.moves import SHORTEST, Hit, find_moved
from goldkeeper.core.drift.rebuild import _Document, _in_order, _Pieces, _rebuild, _seamless, _texts
from goldkeeper.core.identity import normalize, normalized_sha

if TYPE_CHECKING:

    from goldkeeper.models.judgment import Judgment




@dataclass
class DriftResult:
    findings: list[dict[str, Any]]
    summary: dict[str, Any]
    judgments_fingerprint: str | None
    corpus_fingerprint: str | None
    chunks: dict[str, LiveChunk] = field(default_factory=dict, repr=False)
    """Every live chunk a finding names (re-anchor targets and split pieces), for fix and queue."""
    corpus_chunks: int = 0
    corpus_documents: int = 0
    fingerprints: frozenset[str] = frozenset()
    """Every corpus_fingerprint the labels carry (one: ``judgments_fingerprint``)."""
    documents: list[dict[str, Any]] = field(default_factory=list)
    """The document map: each labeled document that is no longer live, where its labels'
    texts were found (``document_map``)."""

    def to_dict(self) -> dict[str, Any]:
        return {"findings": self.findings, "summary": self.summary, "documents": self.documents,
                "judgments_fingerprint": self.judgments_fingerprint,
                "corpus_fingerprint": self.corpus_fingerprint}


def _better(chunk: LiveChunk, current: LiveChunk | None) -> bool:
    return current is None or chunk.order() < current.order()


def _located(chunk: LiveChunk, sha: str) -> LiveChunk:
    """A chunk found by its text's hash, without its text: a label re-anchored to it needs its
    id and document, and the hash pass holds one for every labeled text."""
    return LiveChunk(chunk.chunk_id, chunk.doc_uri, chunk.ordinal, None, sha, chunk.start_index)


def _row(judgment: Judgment | Mapping[str, Any]) -> Mapping[str, Any]:
    """A label's fields: a row as it is, a ``Judgment``'s own (pydantic keeps them in ``__dict__``)."""
    return judgment if isinstance(judgment, Mapping) else judgment.__dict__


class Labels:
    """Labels as classify, fix and the queue read them: each a row (``_row``), as often as
    asked. A one-shot iterator is read into a list; anything else (a list, or a reader that
    reads its file again on each pass) is iterated once per pass, so the rows need not all be
    held: classify keeps a few fields of each label, and the texts of those still pending."""

    def __init__(self, judgments: Iterable[Judgment | Mapping[str, Any]]) -> None:
        self.source = judgments.source if isinstance(judgments, Labels) else (
            list(judgments) if iter(judgments) is judgments else judgments)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return map(_row, self.source)


def _label_sha(row: Mapping[str, Any]) -> tuple[str | None, bool]:
    """The hash a label's text is found by, and whether its text_sha contradicts its text."""
    sha, mismatch, _ = _label_key(row)
    return sha, mismatch


def _label_key(row: Mapping[str, Any]) -> tuple[str | None, bool, str | None]:
    """``_label_sha`` and the label's ``normalize``d text (None without chunk_text)."""
    chunk_text = row.get("chunk_text")
    sha = row.get("text_sha")
    if chunk_text is not None:
        normal = normalize(chunk_text)
        own = normalized_sha(normal)
        return own, sha is not None and sha != own, normal
    return sha, False, None


def partition_of(key: str, partitions: int) -> int:
    """The partition of a key (a doc_uri for drift, a query id for scoring): the first 8 bytes
    of its sha256, modulo ``partitions``. Stable across processes and machines (Python's
    ``hash`` of a string is not)."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % partitions


@dataclass
class Found:
    """What one pass found for asked labels: which asked chunk ids are live, the best live
    chunk (ordinal, then id) for each asked text hash, and (``moved``) every document that
    holds an asked text, by the text's hash (``moves.find_moved``)."""

    live: set[str] = field(default_factory=set)
    best: dict[str, LiveChunk] = field(default_factory=dict)
    moved: dict[str, dict[str, Hit]] = field(default_factory=dict)


def unsettled(judgments: Iterable[Judgment | Mapping[str, Any]], result: DriftResult,
              ) -> tuple[set[str], set[str], dict[str, tuple[str, set[str]]]]:
    """What another partition could change of this one's findings: the chunk ids and text
    hashes of all labels but VALID ones and those re-anchored within their own document (which
    wins over any other document, spec/drift.md), and the texts of the ORPHANED ones long
    enough to be looked for in other documents (by hash: comparable text, own documents)."""
    ids: set[str] = set()
    shas: set[str] = set()
    texts: dict[str, tuple[str, set[str]]] = {}
    for judgment, finding in zip(judgments, result.findings, strict=True):
        row = _row(judgment)
        if row.get("chunk_id") is None or finding["status"] == "VALID":
            continue
        if finding["status"] == "RE_ANCHORABLE" and not finding.get("cross_document"):
            continue
        ids.add(row["chunk_id"])
        sha = _label_sha(row)[0]
        if sha is not None:
            shas.add(sha)
        if finding["status"] == "ORPHANED" and row.get("chunk_text") is not None:
            text = _comparable(row["chunk_text"])
            if len(text) >= SHORTEST:
                texts.setdefault(sha, (text, set()))[1].add(row["doc_uri"])  # type: ignore[arg-type]
    return ids, shas, texts


def find(corpus: ChunkSource, ids: set[str], shas: set[str],
         texts: Mapping[str, tuple[str, Collection[str]]] | None = None) -> Found:
    """The asked ids that are live, the best chunk per asked hash, and (``texts``, as
    ``unsettled`` gives them) every other document that holds an asked text."""
    found = Found()
    runs = _HashPass()
    for batch in _batches(corpus):
        if texts and runs.contiguous:
            _runs(runs, [chunk.doc_uri for chunk in batch])
        for chunk in batch:
            if chunk.chunk_id in ids:
                found.live.add(chunk.chunk_id)
            sha = chunk.sha()
            if sha in shas and _better(chunk, found.best.get(sha)):
                found.best[sha] = _located(chunk, sha)  # type: ignore[arg-type]
    if texts:
        found.moved = find_moved(_documents(corpus, runs.contiguous), texts)
    return found


def merge_found(parts: Iterable[Found]) -> Found:
    """The ``Found`` of the union of the partitions (the same as one pass over all of them)."""
    merged = Found()
    for part in parts:
        merged.live |= part.live
        for sha, chunk in part.best.items():
            if _better(chunk, merged.best.get(sha)):
                merged.best[sha] = chunk
        for sha, hits in part.moved.items():
            merged.moved.setdefault(sha, {}).update(hits)
    return merged


def _documents(corpus: ChunkSource, contiguous: bool, wanted: Container[str] | None = None,
               ) -> Iterator[list[LiveChunk]]:
    """The chunks of each document (of those ``wanted``, else every one), a list per document:
    as its run ends in a streamed snapshot whose documents came as runs (``contiguous``),
    holding one document's chunks; else gathered from the whole corpus first."""
    if contiguous and not isinstance(corpus, Corpus):
        current: list[LiveChunk] = []
        for chunk in corpus:
            if current and chunk.doc_uri != current[0].doc_uri:
                yield current
                current = []
            if wanted is None or chunk.doc_uri in wanted:
                current.append(chunk)
        if current:
            yield current
        return
    by_doc: dict[str, list[LiveChunk]] = {}
    for chunk in corpus:
        if wanted is None or chunk.doc_uri in wanted:
            by_doc.setdefault(chunk.doc_uri, []).append(chunk)
    yield from by_doc.values()


def classify(
    judgments: Iterable[Judgment | Mapping[str, Any]],
    corpus: ChunkSource,
    progress: Callable[[int], None] | None = None,
    *,
    elsewhere: Found | None = None,
) -> DriftResult:
    """Classify every label against a live corpus (module docstring: two passes at most).

    ``progress`` is called with the number of chunks read so far after each batch: every
    ``PROGRESS_EVERY`` chunks of a streamed snapshot, once for an in-memory one.
    ``elsewhere`` adds what the partitions of a partitioned corpus found for this one's
    unsettled labels (the module docstring); with it, the documents that hold a text that
    left its own come from ``elsewhere.moved`` alone (every partition is asked, this one too).
    """
    return _classify(Labels(judgments), corpus, progress, elsewhere, keep_orphaned=False)[0]


@dataclass
class _Wants:
    """What the labels ask of the corpus, from one pass over them: their chunk ids, the text
    hashes they are found by (``pairs``: with the documents that want each), the Python
    ``hash`` of the normalized texts that carry one (a chunk's text is hashed only on a hit, and
    the texts are not kept), each label's (hash, whether its text_sha contradicts its text,
    whether it has text), the findings begun (query, document, chunk id) and the labels'
    corpus fingerprints. ``live``: the label ids found live."""

    label_ids: set[str] = field(default_factory=set)
    hashes: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str]] = field(default_factory=set)
    by_text: set[int] = field(default_factory=set)
    hash_only: bool = False  # some label is found by a stored hash alone: every chunk's hash is needed
    keys: list[tuple[str | None, bool, bool]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    fingerprints: set[str] = field(default_factory=set)
    live: set[str] = field(default_factory=set)
    spans: list[int] = field(default_factory=list)  # the positions of the labels with a span


@dataclass
class _HashPass:
    """What one pass over the corpus with hash lookups found: every live document, the best
    chunk for each wanted hash anywhere and in each wanting document, the chunks read."""

    documents: set[str] = field(default_factory=set)
    best_any: dict[str, LiveChunk] = field(default_factory=dict)
    best_in_doc: dict[tuple[str, str], LiveChunk] = field(default_factory=dict)
    seen: int = 0
    contiguous: bool = True
    """Each document's chunks came as one run (a streamed snapshot's second pass can then settle
    a document as soon as its run ends, holding one document's chunks, not all of them)."""
    last_document: str | None = None


def _classify(rows: Labels, corpus: ChunkSource, progress: Callable[[int], None] | None,
              elsewhere: Found | None, *, keep_orphaned: bool = True) -> tuple[DriftResult, dict[str, list[LiveChunk]]]:
    """``classify``, and (``keep_orphaned``) the chunks of the documents that now hold an
    ORPHANED label with text (read in the second pass anyway; the queue's candidates come from
    them). Without a queue they are not kept: on a streamed snapshot that is most of it.
    The labels are read once for what they ask, and once more (only when some are pending
    after the hash pass) for the texts of the pending ones."""
    wants = _wants(rows, corpus)
    found = _hash_pass(corpus, wants, progress, elsewhere)
    named, pending = _settle_by_hash(wants, found)
    findings, fingerprints = wants.findings, frozenset(wants.fingerprints)
    seen, documents, contiguous = found.seen, len(found.documents), found.contiguous
    vanished = {finding["doc_uri"] for finding in findings
                if "chunk_id" in finding and finding["doc_uri"] not in found.documents}
    span_labels = [position for position in wants.spans
             if findings[position]["status"] != "VALID" and findings[position]["doc_uri"] in found.documents]
    del wants, found  # the lookups are done with before the texts are read
    orphaned: dict[str, list[LiveChunk]] | None = {} if keep_orphaned else None
    # An in-memory corpus's documents rebuilt by the second pass are kept for the third (the
    # corpus is held anyway); a streamed one's are not.
    rebuilt: dict[str, _Document] | None = {} if isinstance(corpus, Corpus) else None
    if pending:
        texts = _pending_texts(rows, pending, len(findings))
        _settle_by_text(texts, corpus, findings, named, pending, orphaned, contiguous, rebuilt)
    if span_labels:
        _settle_spans(rows, span_labels, corpus, findings, named, contiguous)
    _settle_moved(rows, corpus, findings, named, contiguous, elsewhere, rebuilt or {})
    result = _result(findings, fingerprints, corpus.corpus_fingerprint, named, seen, documents)
    result.documents = document_map(findings, vanished)
    return result, orphaned or {}


def _settle_moved(rows: Labels, corpus: ChunkSource, findings: list[dict[str, Any]], named: dict[str, LiveChunk],
                  contiguous: bool, elsewhere: Found | None, rebuilt: Mapping[str, _Document]) -> None:
    """The labels still ORPHANED whose text is long enough, looked for in every other
    document (``moves``; with ``elsewhere``, its answers): found in one, MERGED or SPLIT there,
    reported as ``cross_document``; found in several, left ORPHANED with ``found_in`` each of
    them (the queue's candidates), never guessed."""
    if elsewhere is not None and not elsewhere.moved:
        return
    asked = bytearray(len(findings))
    for position, finding in enumerate(findings):
        if finding["status"] == "ORPHANED" and "chunk_id" in finding:
            asked[position] = 1
    if not any(asked):
        return
    texts: dict[str, tuple[str, set[str]]] = {}
    shas: dict[int, str] = {}
    for position, row in zip(range(len(findings)), rows):
        if asked[position] and row.get("chunk_text") is not None:
            text = _comparable(row["chunk_text"])
            if len(text) >= SHORTEST:
                shas[position] = sha = normalized_sha(normalize(row["chunk_text"]))
                texts.setdefault(sha, (text, set()))[1].add(row["doc_uri"])
    if not texts:
        return
    if elsewhere is not None:
        moved = elsewhere.moved
    else:
        moved = find_moved((rebuilt.get(chunks[0].doc_uri) or chunks for chunks in _documents(corpus, contiguous)),
                           texts)
    for position, sha in shas.items():
        finding = findings[position]
        hits = {doc_uri: hit for doc_uri, hit in moved.get(sha, {}).items() if doc_uri != finding["doc_uri"]}
        if len(hits) == 1:
            ((doc_uri, (status, chunks)),) = hits.items()
            if status == "MERGED":
                finding.update(status="MERGED", reanchor_to=chunks[0].chunk_id, cross_document=True,
                               reanchor_doc_uri=doc_uri)
            else:
                finding.update(status="SPLIT", split_into=[c.chunk_id for c in chunks], cross_document=True,
                               split_doc_uri=doc_uri)
        elif hits:
            finding["found_in"] = [{"doc_uri": doc_uri, "status": status, "chunk_ids": [c.chunk_id for c in chunks]}
                                   for doc_uri, (status, chunks) in sorted(hits.items())]
        for _, chunks in hits.values():
            named.update((c.chunk_id, c) for c in chunks)


def _settle_spans(rows: Labels, positions: list[int], corpus: ChunkSource, findings: list[dict[str, Any]],
                  named: dict[str, LiveChunk], contiguous: bool) -> None:
    """Span labels whose chunk is gone, in a live document: each resolved by its span against
    its document's live chunks (``core.spans``, one more read of those documents' chunks).
    Resolved: RE_ANCHORABLE to its primary chunk (the one holding most of the span, then the
    first), ``by_span`` saying how it was found (offsets, quote, fuzzy) and ``span`` its
    passage there. Not resolved (gone, ambiguous, no offsets), the label keeps what its chunk
    gave (steps 2 to 6), with ``span_status`` saying why."""
    wanted = bytearray(len(findings))
    for position in positions:
        wanted[position] = 1
    asked: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for position, row in zip(range(len(findings)), rows):
        if wanted[position]:
            asked.setdefault(row["doc_uri"], []).append((position, row))
    for chunks in _documents(corpus, contiguous, asked):
        if not chunks:
            continue
        by_id = {chunk.chunk_id: chunk for chunk in chunks}
        document = spans.document_texts(chunks, {chunks[0].doc_uri})[chunks[0].doc_uri]
        for position, row in asked[chunks[0].doc_uri]:
            outcome = spans.resolve_span(row, document)
            finding = findings[position]
            if outcome["status"] != "resolved":
                finding["span_status"] = outcome["status"]
                continue
            primary = max(outcome["chunks"], key=lambda held: held[1])[0]  # max keeps the first of equals
            located = outcome["located"].to_dict()
            for key in ("reanchor_to", "split_into", "cross_document", "reanchor_doc_uri", "split_doc_uri"):
                finding.pop(key, None)
            finding.update(status="RE_ANCHORABLE", reanchor_to=primary, by_span=outcome["how"], span=located)
            named[primary] = by_id[primary]


def document_map(findings: Iterable[Mapping[str, Any]], vanished: Container[str]) -> list[dict[str, Any]]:
    """Each labeled document that is no longer live (``vanished``): its labels with a chunk,
    the live documents their texts were found in (``found_in``: how many in each), and
    ``moved_to`` the one that holds most of them (more than half), when one does: "page X
    became page Y" rather than its labels one by one. Sorted by doc_uri."""
    documents: dict[str, dict[str, Any]] = {}
    for finding in findings:
        doc_uri = finding["doc_uri"]
        if "chunk_id" not in finding or doc_uri not in vanished:
            continue
        entry = documents.setdefault(doc_uri, {"doc_uri": doc_uri, "labels": 0, "found_in": {}})
        entry["labels"] += 1
        target = finding.get("reanchor_doc_uri") or finding.get("split_doc_uri")
        if target is not None:
            entry["found_in"][target] = entry["found_in"].get(target, 0) + 1
    for entry in documents.values():
        entry["found_in"] = dict(sorted(entry["found_in"].items(), key=lambda item: (-item[1], item[0])))
        top = next(iter(entry["found_in"].items()), None)
        if top is not None and 2 * top[1] > entry["labels"]:
            entry["moved_to"] = top[0]
    return [documents[doc_uri] for doc_uri in sorted(documents)]


def _wants(rows: Labels, corpus: ChunkSource) -> _Wants:
    """Each label's hash key and finding begun, and what the labels not already live ask of
    the corpus."""
    wants = _Wants()
    live: set[str] | None = None
    if isinstance(corpus, Corpus):
        # The live labels need no hash (a VALID label is looked up no further). A streamed
        # corpus finds them in its pass.
        live = {chunk.chunk_id for chunk in corpus.chunks}
    keys, findings = wants.keys, wants.findings
    for row in rows:
        doc_uri, chunk = row["doc_uri"], row.get("chunk_id")
        finding = {"query_id": row["query_id"], "doc_uri": doc_uri}
        if row.get("span") is not None:
            wants.spans.append(len(findings))
        findings.append(finding)
        if row.get("corpus_fingerprint"):
            wants.fingerprints.add(row["corpus_fingerprint"])
        if chunk is None:
            keys.append((None, False, False))
            continue
        finding["chunk_id"] = chunk
        if live is not None and chunk in live:
            wants.live.add(chunk)
            keys.append((None, False, False))
            continue
        sha, mismatch, normal = _label_key(row)
        keys.append((sha, mismatch, normal is not None))
        wants.label_ids.add(chunk)
        if sha is not None:
            wants.hashes.add(sha)
            wants.pairs.add((sha, doc_uri))
            if normal is None:
                wants.hash_only = True
            else:
                wants.by_text.add(hash(normal))
    return wants


def _pending_texts(rows: Labels, pending: dict[str, list[int]], labels: int) -> dict[int, str]:
    """The pending labels' texts (comparable), by position, from one more pass over the labels."""
    wanted = bytearray(labels)
    for held in pending.values():
        for position in held:
            wanted[position] = 1
    return {position: _comparable(row["chunk_text"]) for position, row in zip(range(labels), rows) if wanted[position]}


def _hash_pass(corpus: ChunkSource, wants: _Wants, progress: Callable[[int], None] | None,
               elsewhere: Found | None) -> _HashPass:
    """One pass over the corpus, a batch at a time, with hash lookups only: live documents and
    label ids, and the best chunk for each wanted hash (the other partitions' answers merged
    in, ``elsewhere``)."""
    found = _HashPass()
    in_memory = isinstance(corpus, Corpus)
    wanted, pairs, by_text = wants.hashes, wants.pairs, wants.by_text
    for batch in _batches(corpus):
        # Column at a time: the set operations and comprehensions run in C, and only the
        # chunks whose hash some label wants are looked at one by one.
        found.seen += len(batch)
        if progress is not None:
            progress(found.seen)
        documents = [chunk.doc_uri for chunk in batch]
        if not in_memory:
            wants.live.update(wants.label_ids.intersection([chunk.chunk_id for chunk in batch]))
            if found.contiguous:
                _runs(found, documents)
        found.documents.update(documents)
        if wants.hash_only:
            keys = [chunk.sha() for chunk in batch]
        else:
            # Equal normalized texts have equal hashes, so an unhashed chunk is found by its
            # text, and hashed only when some label carries nothing but a hash.
            keys = [chunk.text_sha or (_hit(normalize(chunk.text), by_text) if chunk.text is not None else None)
                    for chunk in batch]
        for index in [i for i, key in enumerate(keys) if key in wanted]:
            chunk, sha = batch[index], keys[index]
            key = (sha, chunk.doc_uri)
            anywhere = _better(chunk, found.best_any.get(sha))
            in_doc = key in pairs and _better(chunk, found.best_in_doc.get(key))
            if anywhere or in_doc:
                located = _located(chunk, sha)
                if anywhere:
                    found.best_any[sha] = located
                if in_doc:
                    found.best_in_doc[key] = located
    if elsewhere is not None:
        wants.live |= elsewhere.live & wants.label_ids
        for sha, chunk in elsewhere.best.items():
            if sha in wanted and _better(chunk, found.best_any.get(sha)):
                found.best_any[sha] = chunk
    return found


def _hit(normal: str, by_text: set[int]) -> str | None:
    """A chunk's text hash when some label's text may equal its text (its ``hash`` is wanted),
    else None: wanted hashes are then checked like stored ones."""
    return normalized_sha(normal) if hash(normal) in by_text else None


def _runs(found: _HashPass, documents: list[str]) -> None:
    """Follow the documents' runs in a streamed snapshot: a document met again after another
    one began means its chunks are not contiguous."""
    last = found.last_document
    for doc_uri in documents:
        if doc_uri != last:
            if doc_uri in found.documents:
                found.contiguous = False
                return
            found.documents.add(doc_uri)
            last = doc_uri
    found.last_document = last


def _settle_by_hash(wants: _Wants, found: _HashPass) -> tuple[dict[str, LiveChunk], dict[str, list[int]]]:
    """Every label's finding from the hash pass: VALID, RE_ANCHORABLE, or ORPHANED for now;
    the chunks findings name; and, by document, the positions of the ORPHANED labels whose
    text may still be found in their (live) document."""
    named: dict[str, LiveChunk] = {}
    pending: dict[str, list[int]] = {}
    for position, (finding, (sha, mismatch, has_text)) in enumerate(zip(wants.findings, wants.keys, strict=True)):
        doc_uri = finding["doc_uri"]
        chunk = finding.get("chunk_id")
        if chunk is None:
            finding["status"] = "VALID" if doc_uri in found.documents else "ORPHANED"
            continue
        if chunk in wants.live:
            finding["status"] = "VALID"
            continue
        if mismatch:
            # The label contradicts itself; the text a person read is the better witness.
            finding["text_sha_mismatch"] = True
        target = found.best_in_doc.get((sha, doc_uri)) or found.best_any.get(sha) if sha is not None else None
        if target is not None:
            finding.update(status="RE_ANCHORABLE", reanchor_to=target.chunk_id)
            named[target.chunk_id] = target
            if target.doc_uri != doc_uri:
                finding.update(cross_document=True, reanchor_doc_uri=target.doc_uri)
            continue
        finding["status"] = "ORPHANED"
        if has_text and doc_uri in found.documents:
            pending.setdefault(doc_uri, []).append(position)
    return named, pending


def _settle_by_text(texts: dict[int, str], corpus: ChunkSource, findings: list[dict[str, Any]],
                    named: dict[str, LiveChunk], pending: dict[str, list[int]],
                    orphaned: dict[str, list[LiveChunk]] | None, contiguous: bool = False,
                    rebuilt: dict[str, _Document] | None = None) -> None:
    """The second pass: the chunks of the pending labels' documents only, each document's text
    rebuilt once and every pending label's text looked for in it (MERGED, SPLIT, or ORPHANED
    after all); into ``orphaned`` (when given) the chunks of the documents that still hold an
    ORPHANED label. A streamed snapshot whose documents came as runs (``contiguous``) settles each document as
    its run ends, holding its chunks only; otherwise every pending document's are gathered.
    Into ``rebuilt`` (when given) each document that was rebuilt."""
    for chunks in _documents(corpus, contiguous, pending):
        document = _settle_document(texts, findings, named, pending, orphaned, chunks)
        if rebuilt is not None and document is not None:
            rebuilt[document.chunks[0].doc_uri] = document


def _settle_document(texts: dict[int, str], findings: list[dict[str, Any]], named: dict[str, LiveChunk],
                     pending: dict[str, list[int]], orphaned: dict[str, list[LiveChunk]] | None,
                     document_chunks: list[LiveChunk]) -> _Document | None:
    """One pending document's labels looked for in its chunks (``_settle_by_text``); the
    document, when it had to be rebuilt."""
    if not document_chunks:
        return None
    doc_uri = document_chunks[0].doc_uri
    positions = pending[doc_uri]
    texts = {position: texts.pop(position) for position in positions}  # the texts held are the unsettled ones'
    chunks, pieces, spaced = _texts(_in_order(document_chunks))
    rest = positions
    document = _seamless(chunks, pieces, spaced)  # cheap, when it exists: no need to avoid it
    if document is None and len(positions) * (sum(map(len, pieces)) + len(pieces)) <= rebuild._SCAN_BUDGET:
        # A text inside one chunk is MERGED with no need of the rebuilt document: a
        # chunk's span in it holds an occurrence exactly when its piece does. (Past
        # the budget, the rebuilt document's anchors find texts without scanning.)
        pieces_of = _Pieces(pieces)
        rest = [position for position in positions
                if not _merged(findings[position], texts[position], chunks, pieces_of, named)]
        if not rest:
            return None
    if document is None:
        document = _rebuild(chunks, pieces)
    document.look_up([texts[position] for position in rest])
    for position in rest:
        _resolve(findings[position], texts[position], document, named)
        if orphaned is not None and findings[position]["status"] == "ORPHANED":
            orphaned[doc_uri] = document_chunks
    return document


def _result(findings: list[dict[str, Any]], fingerprints: frozenset[str], corpus_fingerprint: str | None,
            named: dict[str, LiveChunk], chunks: int, documents: int) -> DriftResult:
    counts = dict.fromkeys(_STATUSES, 0)
    for finding in findings:
        counts[finding["status"]] += 1
    return DriftResult(findings, drift_summary(counts), next(iter(fingerprints)) if len(fingerprints) == 1 else None,
                       corpus_fingerprint, named, chunks, documents, fingerprints)


_STATUSES = ("VALID", "RE_ANCHORABLE", "MERGED", "SPLIT", "ORPHANED")


def span_counts(findings: Iterable[Mapping[str, Any]]) -> dict[str, int] | None:
    """How the span labels whose chunk was gone were settled: re-anchored by their passage
    found at its offsets, by its quote, or fuzzily; or not (``span_status``: gone, ambiguous,
    no offsets...), those keeping what their chunk gave. None when no finding has either."""
    counts: dict[str, int] = {}
    for finding in findings:
        how = finding.get("by_span") or finding.get("span_status")
        if how is not None:
            key = f"by_{how}" if finding.get("by_span") else how
            counts[key] = counts.get(key, 0) + 1
    return {key: counts[key] for key in sorted(counts)} or None


def drift_summary(counts: Mapping[str, int]) -> dict[str, Any]:
    """A result's summary from its count of labels by status (``_STATUSES``), or from several
    summaries' counts summed (partitions)."""
    total = sum(counts.values())
    return {**{status.lower(): counts[status] for status in _STATUSES},
            "invalid_ratio": round((total - counts["VALID"]) / total, 12) if total else 0.0}


def concat_results(first: DriftResult, second: DriftResult) -> DriftResult:
    """The result for two label lists, one after the other, classified against one corpus:
    exactly what classifying the concatenation gives, since each label is classified alone."""
    return _result(first.findings + second.findings, first.fingerprints | second.fingerprints,
                   first.corpus_fingerprint, {**first.chunks, **second.chunks}, first.corpus_chunks,
                   first.corpus_documents)


def _merged(finding: dict[str, Any], wanted: str, chunks: list[LiveChunk], pieces: _Pieces,
            named: dict[str, LiveChunk]) -> bool:
    """MERGED when some chunk's comparable text holds ``wanted`` (the label's, comparable):
    the shortest such chunk, then the first in order, as ``_resolve`` picks it."""
    if not wanted:
        return False
    holders = [chunks[i] for i in pieces.holding(wanted)]
    if not holders:
        return False
    target = min(holders, key=lambda c: (len(c.text or ""), *c.order()))
    finding.update(status="MERGED", reanchor_to=target.chunk_id)
    named[target.chunk_id] = target
    return True


def _resolve(finding: dict[str, Any], wanted: str, document: _Document, named: dict[str, LiveChunk]) -> None:
    """MERGED or SPLIT, from where ``wanted`` (the label's text, comparable) occurs in its
    rebuilt document."""
    found = document.locate(wanted)
    if found is None:
        return
    status, chunks = found
    if status == "MERGED":
        finding.update(status="MERGED", reanchor_to=chunks[0].chunk_id)
    else:
        finding.update(status="SPLIT", split_into=[c.chunk_id for c in chunks])
    named.update((c.chunk_id, c) for c in chunks)


def drift_counts(judgments: Iterable[Judgment | Mapping[str, Any]], corpus: ChunkSource,
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Drift counts and corpus facts for a report, what ``score --corpus`` adds, as the report
    writes them (``goldkeeper.models.report``'s ``DriftCounts`` and ``CorpusInfo``)."""
    result = classify(judgments, corpus)
    info = {"fingerprint": corpus.corpus_fingerprint, "documents": result.corpus_documents,
            "chunks": result.corpus_chunks}
    return dict(result.summary), {name: value for name, value in info.items() if value is not None}
