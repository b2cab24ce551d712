"""Drift: which labels still point at the text a person judged, after a re-chunk.

    corpus          live chunks, snapshots, corpus.json
    anchors         content-defined anchors for finding long texts in long documents
    rebuild         a document's text rebuilt from its chunks
    moves           a text that left its document, looked for in every other one
    classification  every label's status; the partitioned form's pieces
    fix             re-anchoring what can be re-anchored
    queue           what a person must look at, with candidates
    snapshot        a snapshot built from chunker output


Statuses and resolution order are in spec/drift.md. The corpus is any re-iterable source of
``LiveChunk`` (an in-memory ``Corpus``, or a streamed sharded snapshot from ``goldkeeper.io``)
and is read at most three times, so memory is bounded by the labels' index, not by the corpus text:

1. one pass with hash lookups only: live ids, and the best chunk for each labeled text hash
   (same document, then ordinal, then id). This settles VALID and RE_ANCHORABLE;
2. a second pass, only when some label with text is still unresolved, that keeps the chunks
   of just those labels' documents (documents whose text changed). Each such document's text
   is rebuilt once from its chunks (ordinal order, neighbours' overlaps folded, whitespace at
   seams ignored) and every pending label is found in it with ``str.find``; which chunks hold
   or overlap an occurrence comes from a bisection over the chunks' spans.

3. a third pass, only when some label with a text of 16 characters or more is still ORPHANED
   (its document gone, or edited there), that rebuilds every document and looks for those
   texts in the documents whose windows hold all of a text's keys (``moves``): found in one
   other document, MERGED or SPLIT there (``cross_document``); in several, ORPHANED with
   ``found_in``. The document map (``document_map``) says where each vanished document went.

No label is ever compared with every chunk, in the corpus or in its document.

Partitioned (goldkeeper.io.partitioned, spec/scaling.md): labels and chunks split by a hash of
doc_uri (``partition_of``), so a document and its labels meet in one partition. Only the hash
pass and the third one look across documents (a live id elsewhere, a text that moved to another
document); the labels a partition could not settle in their own document (``unsettled``: their
ids, hashes, and the texts of the ORPHANED ones) are looked up in every partition (``find``), the answers merged (``merge_found``), and those partitions
classified again with them (``classify(..., elsewhere=...)``), which gives exactly the
one-process result (io's merge puts the outputs back in label order; ``drift_summary`` sums
the counts).
"""

from __future__ import annotations

from goldkeeper.core.drift.classification import (
    DriftResult,
    Found,
    classify,
    concat_results,
    document_map,
    drift_counts,
    drift_summary,
    find,
    merge_found,
    partition_of,
    span_counts,
    unsettled,
)
from goldkeeper.core.drift.corpus import (
    ChunkSource,
    Corpus,
    LiveChunk,
    check_unique_ids,
    chunk_from_dict,
    keys_accounted_for,
    live_keys,
    parse_corpus,
)
from goldkeeper.core.drift.fix import fix, fixed_rows
from goldkeeper.core.drift.queue import classify_and_queue, queue_item_id, rejudgment_queue
from goldkeeper.core.drift.snapshot import build_snapshot, snapshot_rows

__all__ = [
    "ChunkSource",
    "Corpus",
    "DriftResult",
    "Found",
    "LiveChunk",
    "build_snapshot",
    "check_unique_ids",
    "chunk_from_dict",
    "classify",
    "classify_and_queue",
    "concat_results",
    "document_map",
    "drift_counts",
    "drift_summary",
    "find",
    "fix",
    "fixed_rows",
    "keys_accounted_for",
    "live_keys",
    "merge_found",
    "parse_corpus",
    "partition_of",
    "queue_item_id",
    "rejudgment_queue",
    "snapshot_rows",
    "span_counts",
    "unsettled",
]
