"""``fix``: RE_ANCHORABLE and MERGED labels moved to the chunk that holds their text; nothing
else is touched, and no ground truth is invented."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from goldkeeper.core.drift.classification import DriftResult
from goldkeeper.core.identity import text_sha
from goldkeeper.models.records import canonical_judgment

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
        values = _reanchored(judgment.canonical_dict(), finding, result)
        out.append(judgment if values is None else Judgment.model_construct(**values))
        moved += values is not None
    return out, moved


def fixed_rows(rows: Iterable[Mapping[str, Any]], result: DriftResult) -> Iterator[dict[str, Any]]:
    """``fix`` on label rows as read (no models): each row in canonical order, the moved ones
    re-anchored, one at a time, so a caller that writes them as they come holds none."""
    for row, finding in zip(rows, result.findings, strict=True):
        values = canonical_judgment(row)
        yield _reanchored(values, finding, result) or values


def _reanchored(values: dict[str, Any], finding: Mapping[str, Any], result: DriftResult) -> dict[str, Any] | None:
    """A label's canonical fields moved to its finding's live chunk; None when it stays."""
    if finding["status"] not in ("RE_ANCHORABLE", "MERGED"):
        return None
    target = result.chunks[finding["reanchor_to"]]
    before = {"chunk_id": values.get("chunk_id"), "status": finding["status"]}
    if values["doc_uri"] != target.doc_uri:
        before["doc_uri"] = values["doc_uri"]
    moved = dict(values)
    if "span" in finding and finding["span"] != values.get("span"):
        before["span"] = values["span"]
        moved["span"] = finding["span"]
    moved.update(chunk_id=target.chunk_id, doc_uri=target.doc_uri, reanchored_from=before)
    if moved.get("text_sha") is None and moved.get("chunk_text") is not None:
        moved["text_sha"] = text_sha(moved["chunk_text"])
    if result.corpus_fingerprint is not None:
        moved["corpus_fingerprint"] = result.corpus_fingerprint
    return canonical_judgment(moved)
