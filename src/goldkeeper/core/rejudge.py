"""Answers to the re-judgment queue, merged into the judgments (spec/drift.md, "Answers").

An answer is one JSON object per line: ``item_id`` (from the queue), ``chunk_id`` (a live
chunk, or ``"none"`` when no live chunk carries what was judged), ``relevance``,
``labeled_by`` (``human:<name>``: the queue exists for people) and ``labeled_at`` (ISO 8601).
Several answers may name one item, one per chunk (a SPLIT label judged piece by piece);
``"none"`` stands alone. Everything is checked before anything is written.

The label an item came from is replaced where it stood by one label per answered chunk,
carrying the person's relevance and provenance, the chunk's id, document, text and hash, and
``rejudged_from`` (the item id and what the label said before); ``"none"`` removes it. Items
without answers leave their labels alone. Applying the same answers twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from goldkeeper.core.drift import LiveChunk, queue_item_id
from goldkeeper.core.validation import is_iso8601
from goldkeeper.errors import InputError, describe_value
from goldkeeper.models.judgment import Judgment

__all__ = ["AppliedAnswers", "apply_answers", "check_answers"]

NONE = "none"


@dataclass
class AppliedAnswers:
    judgments: list[Judgment]
    replaced: int
    removed: int
    already_applied: int
    unanswered: int


def check_answers(
    answers: Iterable[tuple[int, Any]], queue: Mapping[str, Mapping[str, Any]], live: Mapping[str, LiveChunk],
    source: str,
) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """Answers by item id, each checked, as ``(line, answer)``: ``answers`` are such pairs."""
    by_item: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    lines: dict[tuple[str, str], int] = {}
    for line, answer in answers:
        def refuse(field: str, problem: str, found: Any) -> InputError:
            return InputError(source, problem, line=line, field=field, found=describe_value(found))  # noqa: B023

        if not isinstance(answer, dict):
            raise refuse("answer", "must be an object", answer)
        item_id = answer.get("item_id")
        if not isinstance(item_id, str) or item_id not in queue:
            raise refuse("item_id", "must name an item of the queue", item_id)
        chunk = answer.get("chunk_id")
        if not isinstance(chunk, str) or not chunk:
            raise refuse("chunk_id", 'required: a live chunk id, or "none"', chunk)
        if chunk != NONE and chunk not in live:
            raise refuse("chunk_id", "is not a live chunk of the corpus (re-chunked again since the queue?)", chunk)
        relevance = answer.get("relevance")
        if type(relevance) is not int or not 0 <= relevance < 1024:
            raise refuse("relevance", "must be an integer from 0 to 1023", relevance)
        labeled_by = answer.get("labeled_by")
        if not isinstance(labeled_by, str) or not labeled_by.startswith("human:") or labeled_by == "human:":
            raise refuse("labeled_by", "must be human:<name> (answers come from people)", labeled_by)
        labeled_at = answer.get("labeled_at")
        if not isinstance(labeled_at, str) or not is_iso8601(labeled_at):
            raise refuse("labeled_at", "must be an ISO 8601 date-time", labeled_at)
        given = by_item.setdefault(item_id, [])
        if (item_id, chunk) in lines:
            raise refuse("chunk_id", f"answered twice for this item (first on line {lines[item_id, chunk]})", chunk)
        if given and NONE in {chunk, given[0][1]["chunk_id"]}:
            raise refuse("chunk_id", '"none" must be the only answer for its item', chunk)
        lines[item_id, chunk] = line
        given.append((line, answer))
    return by_item


def _origin(row: Mapping[str, Any]) -> str:
    """The queue item id of the label a row is, or was before ``fix`` re-anchored it."""
    before = row.get("reanchored_from")
    if isinstance(before, dict) and isinstance(before.get("chunk_id"), str):
        return queue_item_id({"query_id": row["query_id"], "doc_uri": before.get("doc_uri", row["doc_uri"]),
                              "chunk_id": before["chunk_id"]})
    return queue_item_id(row)


def apply_answers(
    judgments: Iterable[Judgment], answers: Mapping[str, list[tuple[int, dict[str, Any]]]],
    queue: Mapping[str, Mapping[str, Any]], live: Mapping[str, LiveChunk], corpus_fingerprint: str | None,
    source: str = "answers",
) -> AppliedAnswers:
    """The judgments with the answered items' labels replaced (see the module docstring)."""
    labels = list(judgments)
    done = {row.extra["rejudged_from"].get("item_id") for row in labels
            if isinstance(row.extra.get("rejudged_from"), dict)}
    taken = {(row.query_id, row.chunk_id) for row in labels}
    out: list[Judgment] = []
    replaced = removed = 0
    found: set[str] = set()
    for label in labels:
        item_id = _origin(label.__dict__ | label.extra)
        given = answers.get(item_id)
        if not given or item_id in done:
            out.append(label)
            continue
        found.add(item_id)
        before = {"item_id": item_id, "status": queue[item_id].get("status"), "relevance": label.relevance}
        for name in ("chunk_id", "labeled_by", "labeled_at"):
            if getattr(label, name) is not None:
                before[name] = getattr(label, name)
        if given[0][1]["chunk_id"] == NONE:
            removed += 1
            continue
        replaced += 1
        for line, answer in given:
            chunk = live[answer["chunk_id"]]
            if (label.query_id, chunk.chunk_id) in taken and chunk.chunk_id != label.chunk_id:
                raise InputError(source, f"query {label.query_id} already has another label on this chunk; "
                                 "answer that label's item instead", line=line, field="chunk_id", found=chunk.chunk_id)
            values = label.canonical_dict()
            values.pop("reanchored_from", None)
            values.update(chunk_id=chunk.chunk_id, doc_uri=chunk.doc_uri, relevance=answer["relevance"],
                          labeled_by=answer["labeled_by"], labeled_at=answer["labeled_at"], rejudged_from=before)
            sha = chunk.sha()
            if sha is not None:
                values["text_sha"] = sha
            if chunk.text is not None:
                values["chunk_text"] = chunk.text
            if corpus_fingerprint is not None:
                values["corpus_fingerprint"] = corpus_fingerprint
            out.append(Judgment.model_validate(values))
    already = sum(1 for item_id in answers if item_id not in found)
    return AppliedAnswers(out, replaced, removed, already, len(queue) - len(answers))
