"""``fix``: RE_ANCHORABLE and MERGED labels moved to the chunk that holds their text; nothing
else is touched, and no ground truth is invented."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from goldkeeper.core.drift.classification import DriftResult
from goldkeeper.core.identity import text_sha

if TYPE_CHECKING:

    from goldkeeper.models.judgment import Judgment


def fix(judgments: Iterable[Judgment], result: DriftResult) -> tuple[list[Judgment], int]:
    """Re-anchor RE_ANCHORABLE and MERGED labels; leave every other label exactly as it was.

    A moved label gets the live chunk's id, the document of its new chunk and the corpus
    fingerprint. Its judged text (``chunk_text``, ``text_sha``) is kept: a label is a statement
    about text a person read, and a MERGED chunk holds more than that. So after a re-chunk back
    to finer chunks the label's own text finds its chunk again (RE_ANCHORABLE), where the
    coarser chunk's text would span several (SPLIT). A label that had only ``chunk_text`` gains
    its ``text_sha``. What it pointed at before is kept in ``reanchored_from`` (id, status, and
    the document when it changed). SPLIT and ORPHANED labels are never touched: a fix never
    invents ground truth. Fixing a fixed set changes nothing, since every moved label is then
    VALID. Returns the labels and how many moved.
    """
    from goldkeeper.models.judgment import Judgment

    out: list[Judgment] = []
    moved = 0
    for judgment, finding in zip(judgments, result.findings, strict=True):
        if finding["status"] not in ("RE_ANCHORABLE", "MERGED"):
            out.append(judgment)
            continue
        target = result.chunks[finding["reanchor_to"]]
        before = {"chunk_id": judgment.chunk_id, "status": finding["status"]}
        if judgment.doc_uri != target.doc_uri:
            before["doc_uri"] = judgment.doc_uri
        values = judgment.canonical_dict()
        values.update(chunk_id=target.chunk_id, doc_uri=target.doc_uri, reanchored_from=before)
        if judgment.text_sha is None and judgment.chunk_text is not None:
            values["text_sha"] = text_sha(judgment.chunk_text)
        if result.corpus_fingerprint is not None:
            values["corpus_fingerprint"] = result.corpus_fingerprint
        out.append(Judgment.model_construct(**values))
        moved += 1
    return out, moved
