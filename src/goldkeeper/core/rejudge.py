"""Answers to the re-judgment queue, merged into the judgments (spec/drift.md, "Answers").

An answer is one JSON object per line: ``item_id`` (from the queue), ``chunk_id`` (a live
chunk, or ``"none"`` when no live chunk carries what was judged), ``relevance``,
``labeled_by`` (``human:<name>``, a person's; ``synthetic:<model>``, an LLM judge's from
``goldkeeper judge``, with its ``prompt_sha``, which the label keeps) and ``labeled_at``
(ISO 8601); optionally ``quote``, the words of the answered chunk that answer the query (a
person marking the sentence that answers): the label then carries that passage as its span
(spec/spans.md), placed by the chunk's offsets.
Several answers may name one item, one per chunk (a SPLIT label judged piece by piece);
``"none"`` stands alone. Everything is checked before anything is written.

The label an item came from is replaced where it stood by one label per answered chunk,
carrying the answer's relevance and provenance, the chunk's id, document, text and hash, and
``rejudged_from`` (the item id and what the label said before); ``"none"`` removes it. Items
without answers leave their labels alone. Applying the same answers twice changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from goldkeeper.core.drift import LiveChunk, queue_item_id
from goldkeeper.core.judgments import check_row
from goldkeeper.core.spans import CONTEXT, Span, quoted
from goldkeeper.core.validation import is_iso8601
from goldkeeper.errors import InputError, describe_value
from goldkeeper.models.judgment import Judgment
from goldkeeper.models.records import MAX_RELEVANCE, QUEUE_ANSWER, FieldSpec, canonical_judgment

__all__ = ["AppliedAnswers", "Waiting", "apply_answers", "check_answers", "grade_answers", "label_on", "label_origin", "overlap",
           "pending_items", "quote_problem", "quoted_in", "reviewer_problem", "span_on", "walked"]

NONE = "none"

#: The longest reviewer name a form takes (it is recorded in every answer's ``labeled_by``).
REVIEWER_MAX = 80


@dataclass(frozen=True)
class Waiting:
    """What waits for a person, by kind: queue items to re-judge (SPLIT and ORPHANED labels,
    which score as misses until answered) and to confirm (MERGED labels that fix moved to a
    bigger chunk: they count, but the grade deserves a second look). One count, said one way
    everywhere: the form, the artifacts, the summary and the CLI."""

    rejudge: int
    review: int

    @classmethod
    def of(cls, items: Iterable[Mapping[str, Any]]) -> Waiting:
        review = rejudge = 0
        for item in items:
            if item.get("action") == "review":
                review += 1
            else:
                rejudge += 1
        return cls(rejudge, review)

    @property
    def total(self) -> int:
        return self.rejudge + self.review

    def kinds(self) -> str:
        """``5 to re-judge, 2 to confirm`` (the kinds present)."""
        parts = [f"{self.rejudge} to re-judge"] if self.rejudge else []
        parts += [f"{self.review} to confirm"] if self.review else []
        return ", ".join(parts) or "none"

    def __str__(self) -> str:
        if not self.total:
            return "nothing waits for a person"
        return f"{self.total} wait{'s' if self.total == 1 else ''} for a person ({self.kinds()})"


def reviewer_problem(name: str) -> str | None:
    """What is wrong with a reviewer's name as typed in a form, in words; None when it will do.
    The name is recorded as ``human:<name>`` with spaces collapsed."""
    bad = next((c for c in name if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        return f"your name holds a control character ({bad!r}); type it again without it"
    shown = " ".join(name.split())
    if not shown:
        return "your name is empty; type it: it is recorded with each answer as human:<your name>"
    if len(shown) > REVIEWER_MAX:
        return f"your name is {len(shown)} characters long; at most {REVIEWER_MAX} are recorded"
    return None


@dataclass
class AppliedAnswers:
    #: The judgments after the answers, as canonical label rows (``core.judgments.dump_rows``
    #: writes them).
    judgments: list[dict[str, Any]]
    replaced: int
    removed: int
    already_applied: int
    unanswered: int


#: What a value of each kind of answer field must be, in a refusal's words.
_KIND_MUST = {"id": "be a non-empty string", "grade": f"be an integer from 0 to {MAX_RELEVANCE}",
              "labeler": "be human:<name> or synthetic:<model>", "time": "be an ISO 8601 date-time"}


def _fits(spec: FieldSpec, value: Any) -> bool:
    """Whether ``value`` is what an answer field of ``spec``'s kind takes
    (``records.QUEUE_ANSWER``; the schema model says the same)."""
    if spec.kind == "grade":
        return type(value) is int and 0 <= value <= MAX_RELEVANCE
    if not isinstance(value, str) or not value:
        return False
    if spec.kind == "labeler":
        return value.startswith(("human:", "synthetic:")) and value not in ("human:", "synthetic:")
    return spec.kind != "time" or is_iso8601(value)


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
        for spec in QUEUE_ANSWER:
            if not _fits(spec, answer.get(spec.name)):
                raise refuse(spec.name, f"must {spec.must or _KIND_MUST[spec.kind]}", answer.get(spec.name))
        item_id, chunk = answer["item_id"], answer["chunk_id"]
        if item_id not in queue:
            raise refuse("item_id", "must name an item of the queue", item_id)
        if chunk != NONE and chunk not in live:
            raise refuse("chunk_id", "is not a live chunk of the corpus (re-chunked again since the queue?)", chunk)
        if "quote" in answer:
            problem = ('cannot be given with "none": a quote narrows the label to words of a live chunk'
                       if chunk == NONE else quote_problem(answer["quote"], live[chunk].text, live[chunk].start_index))
            if problem:
                raise refuse("quote", problem, answer["quote"])
        given = by_item.setdefault(item_id, [])
        if (item_id, chunk) in lines:
            raise refuse("chunk_id", f"answered twice for this item (first on line {lines[item_id, chunk]})", chunk)
        if given and NONE in {chunk, given[0][1]["chunk_id"]}:
            raise refuse("chunk_id", '"none" must be the only answer for its item', chunk)
        lines[item_id, chunk] = line
        given.append((line, answer))
    return by_item


def quote_problem(quote: Any, text: str | None, start_index: int | None) -> str | None:
    """What is wrong with a person's ``quote`` (the words that answer) for the chunk of
    ``text`` at ``start_index`` in its document, in words; None when it places a span there."""
    if not isinstance(quote, str) or not quote.strip():
        return "must be the words of the answered chunk that answer the query (a non-empty string)"
    if start_index is None:
        return "cannot be placed: the answered chunk's snapshot has no offsets (start_index) into its document"
    found = len(quoted(text or "", quote))
    if found != 1:
        return ("is not found in the answered chunk's text (copy it from the chunk)" if not found else
                f"is found {found} times in the answered chunk's text; quote enough of it to say which")
    return None


def span_on(chunk: LiveChunk, quote: str | None, span: Mapping[str, Any] | None,
            labeled_by: str = "") -> dict[str, Any] | None:
    """The span of a label answered on ``chunk`` by ``labeled_by``: the ``quote`` placed by the
    chunk's offsets (checked by ``quote_problem``; a judge's, ``synthetic:``, is marked
    ``proposed_by`` it), else the label's ``span`` while the chunk holds it at its offsets,
    else none."""
    text, start = chunk.text or "", chunk.start_index
    if quote is not None and start is not None:
        (begin, end), = quoted(text, quote)
        return Span(start + begin, start + end, text[begin:end], text[max(0, begin - CONTEXT):begin],
                    text[end:end + CONTEXT], labeled_by if labeled_by.startswith("synthetic:") else None).to_dict()
    held = span is not None and start is not None and span["start"] >= start
    return dict(span) if held and text[span["start"] - start:span["end"] - start] == span["exact"] else None


def label_origin(row: Mapping[str, Any]) -> str:
    """The queue item id of the label a row is, or was before ``fix`` re-anchored it."""
    before = row.get("reanchored_from")
    if isinstance(before, dict) and isinstance(before.get("chunk_id"), str):
        return queue_item_id({"query_id": row["query_id"], "doc_uri": before.get("doc_uri", row["doc_uri"]),
                              "chunk_id": before["chunk_id"]})
    return queue_item_id(row)


def _label(judgment: Judgment | Mapping[str, Any]) -> dict[str, Any]:
    """A label as a canonical row (``records.canonical_judgment``): a row as it is, reordered;
    a ``Judgment`` (the API's model) by its fields."""
    if isinstance(judgment, Mapping):
        return canonical_judgment(judgment)
    return judgment.canonical_dict()


def label_on(values: dict[str, Any], chunk: LiveChunk, corpus_fingerprint: str | None, source: str,
             line: int) -> dict[str, Any]:
    """An answer's label: ``values`` with the live ``chunk``'s text and its hash and the
    corpus it was read in, canonical and checked (an answer's ``line`` of ``source``)."""
    sha = chunk.sha()
    if sha is not None:
        values["text_sha"] = sha
    if chunk.text is not None:
        values["chunk_text"] = chunk.text
    if corpus_fingerprint is not None:
        values["corpus_fingerprint"] = corpus_fingerprint
    return canonical_judgment(check_row(values, source, line))


def apply_answers(
    judgments: Iterable[Judgment | Mapping[str, Any]], answers: Mapping[str, list[tuple[int, dict[str, Any]]]],
    queue: Mapping[str, Mapping[str, Any]], live: Mapping[str, LiveChunk], corpus_fingerprint: str | None,
    source: str = "answers",
) -> AppliedAnswers:
    """The judgments (checked label rows; ``Judgment`` models are taken too) with the answered
    items' labels replaced (see the module docstring), as canonical rows."""
    labels = [_label(judgment) for judgment in judgments]
    done = {row["rejudged_from"].get("item_id") for row in labels if isinstance(row.get("rejudged_from"), dict)}
    taken = {(row["query_id"], row.get("chunk_id")) for row in labels}
    answered: dict[tuple[str, str], int] = {}  # (query, chunk) -> the answer's line
    out: list[dict[str, Any]] = []
    replaced = removed = 0
    found: set[str] = set()
    for label in labels:
        item_id = label_origin(label)
        given = answers.get(item_id)
        if not given or item_id in done:
            out.append(label)
            continue
        found.add(item_id)
        before = {"item_id": item_id, "status": queue[item_id].get("status"), "relevance": label["relevance"]}
        for name in ("chunk_id", "labeled_by", "labeled_at", "span"):
            if label.get(name) is not None:
                before[name] = label[name]
        if given[0][1]["chunk_id"] == NONE:
            removed += 1
            continue
        replaced += 1
        for line, answer in given:
            chunk = live[answer["chunk_id"]]
            pair = (label["query_id"], chunk.chunk_id)
            if pair in answered:
                raise InputError(source, f"query {label['query_id']} is given this chunk by two answers (the other "
                                 f"on line {answered[pair]}); a query has one label per chunk", line=line,
                                 field="chunk_id", found=chunk.chunk_id)
            if pair in taken and chunk.chunk_id != label.get("chunk_id"):
                raise InputError(source, f"query {label['query_id']} already has another label on this chunk; "
                                 "answer that label's item instead", line=line, field="chunk_id", found=chunk.chunk_id)
            answered[pair] = line
            values = dict(label)
            values.pop("reanchored_from", None)
            values.pop("span", None)
            span = span_on(chunk, answer.get("quote"), label.get("span"), answer["labeled_by"])
            if span is not None:
                values["span"] = span
            values.update(chunk_id=chunk.chunk_id, doc_uri=chunk.doc_uri, relevance=answer["relevance"],
                          labeled_by=answer["labeled_by"], labeled_at=answer["labeled_at"], rejudged_from=before)
            values.pop("prompt_sha", None)
            if isinstance(answer.get("prompt_sha"), str):  # a judge's: the prompt it answered
                values["prompt_sha"] = answer["prompt_sha"]
            out.append(label_on(values, chunk, corpus_fingerprint, source, line))
    already = sum(1 for item_id in answers if item_id not in found)
    return AppliedAnswers(out, replaced, removed, already, len(queue) - len(answers))


def pending_items(queue: Iterable[Mapping[str, Any]], judgments: Iterable[Judgment | Mapping[str, Any]]
                  ) -> list[dict[str, Any]]:
    """The queue's items still waiting for a person, in queue order: those whose label is
    still in the judgments and was not re-judged. An answered item (re-judged, or removed by
    "none") is never pending again."""
    present: set[str] = set()
    answered: set[str] = set()
    for label in map(_label, judgments):
        present.add(label_origin(label))
        before = label.get("rejudged_from")
        if isinstance(before, dict) and isinstance(before.get("item_id"), str):
            answered.add(before["item_id"])
    return [dict(item) for item in queue if item["item_id"] in present and item["item_id"] not in answered]


def walked(pending: Sequence[Mapping[str, Any]], skipped: Iterable[str]) -> list[dict[str, Any]]:
    """The pending items with those a person skipped moved to the back, so that the next batch
    starts with items nobody has seen yet, and batch after batch walks the whole queue."""
    skip = set(skipped)
    return [dict(i) for i in pending if i["item_id"] not in skip] + [dict(i) for i in pending if i["item_id"] in skip]


def quoted_in(item: Mapping[str, Any], grades: Sequence[int | None], quote: str) -> list[int]:
    """The candidates of ``item`` graded above 0 whose text holds ``quote`` (a person's
    sentence that answers), by index: the answers that carry it."""
    return [j for j, (candidate, grade) in enumerate(zip(item.get("candidates") or [], grades))
            if grade and quoted(candidate.get("text") or "", quote)]


def grade_answers(
    items: Sequence[Mapping[str, Any]], grades: Sequence[Sequence[int | None]], removed: Sequence[bool],
    labeled_by: str, labeled_at: str, quotes: Sequence[str | None] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """A form's grades as answer rows (queue-answer.schema.json), and the ids of the items
    left unanswered. ``grades[n][j]`` is the grade of item n's candidate j (None: not graded);
    ``removed[n]`` says no live chunk carries item n's text; ``quotes[n]``, the words that
    answer item n, goes with each answer whose candidate holds them (``quoted_in``). One row
    per candidate graded above 0; an item whose every candidate was graded 0, or that was
    removed, is answered "none"; an item with no grade at all (and not removed) is skipped."""
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for n, (item, given, gone) in enumerate(zip(items, grades, removed, strict=True)):
        quote = quotes[n] if quotes else None
        carrying = set(quoted_in(item, given, quote)) if quote else set()
        graded = [(j, candidate["chunk_id"], grade) for j, (candidate, grade)
                  in enumerate(zip(item.get("candidates") or [], given)) if grade is not None]
        relevant = [(j, chunk, grade) for j, chunk, grade in graded if grade > 0]
        if relevant:
            answers = relevant
        elif gone or graded:
            answers = [(-1, NONE, 0)]
        else:
            skipped.append(item["item_id"])
            continue
        rows += [{"item_id": item["item_id"], "chunk_id": chunk, "relevance": grade, "labeled_by": labeled_by,
                  "labeled_at": labeled_at, **({"quote": quote} if j in carrying else {})} for j, chunk, grade in answers]
    return rows, skipped


_TOKEN = re.compile(r"\S+")


def _word(token: str) -> str:
    return re.sub(r"\W+", "", token.casefold())


def overlap(judged: str, candidate: str, *, shortest: int = 3) -> list[tuple[str, bool]]:
    """The candidate's text in pieces, each marked True where it repeats a run of at least
    ``shortest`` words of the judged text (words compared without case and punctuation; a
    judged text shorter than that counts whole). The pieces joined are the candidate text."""
    tokens = list(_TOKEN.finditer(candidate))
    theirs = [_word(t.group()) for t in tokens]
    ours = [_word(t) for t in judged.split()]
    least = min(shortest, max(1, len(ours)))
    marked = [False] * len(tokens)
    matcher = SequenceMatcher(None, theirs, ours, autojunk=False)
    for block in matcher.get_matching_blocks():
        if block.size >= least:
            for n in range(block.a, block.a + block.size):
                marked[n] = bool(theirs[n]) or marked[n]
    pieces: list[tuple[str, bool]] = []
    position = 0
    for token, mark in zip(tokens, marked, strict=True):
        start, end = token.span()
        pieces += [(candidate[position:start], False), (candidate[start:end], mark)]
        position = end
    pieces.append((candidate[position:], False))
    return _merged([piece for piece in pieces if piece[0]])


def _merged(pieces: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Adjacent pieces with the same mark as one; whitespace between two marked pieces marked."""
    out: list[tuple[str, bool]] = []
    for n, (text, mark) in enumerate(pieces):
        if not mark and not text.strip() and 0 < n < len(pieces) - 1 and pieces[n - 1][1] and pieces[n + 1][1]:
            mark = True
        if out and out[-1][1] == mark:
            out[-1] = (out[-1][0] + text, mark)
        else:
            out.append((text, mark))
    return out
