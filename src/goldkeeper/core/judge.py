"""An LLM judge's question and how its answer is read (spec/judge.md).

The judge is asked, for one query and one candidate text, for the grade on the suite's scale,
as the JSON object ``{"grade": N}``. The answer is read strictly: anything but exactly that
object with a whole number from 0 to the top grade is an error for that pair (a refusal, a
malformed or an out-of-scale answer), never a grade, so the pair is left for people.

Asked for spans too (``SPAN_PROMPT``), the judge answers ``{"grade": N, "quote": "..."}``:
the words of the passage that answer the query, copied, or null; a quote is read as strictly
(a string or null, nothing else), and where it is placed is the caller's to check.

The prompt is a template with ``{query}``, ``{text}``, ``{top}`` (the top grade) and
``{scale}`` (the grades in words); its hash names it on every label it made.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_PROMPT", "SPAN_PROMPT", "JudgeAnswerError", "messages", "parse_answer", "parse_grade", "prompt_sha",
           "scale_words"]

#: The default prompt: a system message and a user message, separated by a line "---".
#: UMBRELA-style (Upadhyay et al. 2024): the grader is told what each grade means and asked for
#: the grade alone, as JSON.
DEFAULT_PROMPT = """You are a careful relevance assessor for a search system. Given a query and a passage, you \
judge how well the passage answers the query. You answer with a JSON object and nothing else.
---
Query: {query}

Passage: {text}

Grade how well the passage answers the query, on this scale:
{scale}

Answer with the JSON object {{"grade": N}}, N a whole number from 0 to {top}, and nothing else."""

#: The default prompt when the judge proposes spans: the same question, and the words that answer.
SPAN_PROMPT = DEFAULT_PROMPT.replace(
    'Answer with the JSON object {{"grade": N}}, N a whole number from 0 to {top}, and nothing else.',
    'Answer with the JSON object {{"grade": N, "quote": Q}}, N a whole number from 0 to {top}, and Q the shortest '
    'words of the passage that answer the query, copied exactly from it (null when N is 0), and nothing else.')


class JudgeAnswerError(ValueError):
    """An answer that is no grade: ``kind`` is ``refusal``, ``malformed`` or ``out-of-scale``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def scale_words(top: int) -> str:
    """The grades 0..``top`` in words, one a line."""
    if top == 1:
        return "0 = the passage does not answer the query\n1 = the passage answers the query"
    lines = ["0 = the passage has nothing to do with the query"]
    for grade in range(1, top):
        lines.append(f"{grade} = the passage is related to the query and answers it in part"
                     + (f" (more than {grade - 1})" if grade > 1 else ""))
    lines.append(f"{top} = the passage fully answers the query")
    return "\n".join(lines)


def prompt_sha(prompt: str) -> str:
    """The prompt's name on the labels it made: ``p1:`` and 16 hex digits of its sha256."""
    return "p1:" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


def messages(prompt: str, query: str, text: str, top: int) -> list[dict[str, str]]:
    """The chat messages for one pair: the template's part before a line ``---`` is the system
    message (none when it has no such line), the rest the user's, filled in."""
    system, divider, user = prompt.partition("\n---\n")
    if not divider:
        system, user = "", prompt
    values = {"query": query, "text": text, "top": top, "scale": scale_words(top)}
    filled = [{"role": "user", "content": user.format(**values)}]
    return ([{"role": "system", "content": system.format(**values)}] if system else []) + filled


@dataclass(frozen=True)
class _Reply:
    content: str | None
    refusal: str | None
    finish_reason: str | None


def _reply(payload: Any) -> _Reply:
    try:
        choice = payload["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise JudgeAnswerError("malformed", "the response has no choices[0].message") from None
    if not isinstance(message, dict):
        raise JudgeAnswerError("malformed", "choices[0].message is not an object")
    content, refusal = message.get("content"), message.get("refusal")
    return _Reply(content if isinstance(content, str) else None, refusal if isinstance(refusal, str) else None,
                  choice.get("finish_reason") if isinstance(choice, dict) else None)


def parse_answer(payload: Any, top: int, *, quote: bool = False) -> tuple[int, str | None]:
    """The grade in a chat-completions response (its JSON), and with ``quote`` the words quoted
    (None when there are none), read strictly; ``JudgeAnswerError`` for anything else."""
    reply = _reply(payload)
    if reply.refusal or reply.finish_reason == "content_filter":
        raise JudgeAnswerError("refusal", f"the judge refused: {(reply.refusal or 'content filter')[:80]}")
    if not reply.content or not reply.content.strip():
        raise JudgeAnswerError("refusal", "the judge answered nothing")
    text = reply.content.strip()
    try:
        found = json.loads(text)
    except ValueError:
        raise JudgeAnswerError("malformed", f"not a JSON object: {text[:60]!r}") from None
    if not isinstance(found, dict) or "grade" not in found or not set(found) <= ({"grade", "quote"} if quote else {"grade"}):
        shape = '{"grade": N, "quote": Q}' if quote else '{"grade": N}'
        raise JudgeAnswerError("malformed", f"not the object {shape}: {text[:60]!r}")
    grade, words = found["grade"], found.get("quote")
    if type(grade) is not int:
        raise JudgeAnswerError("malformed", f"the grade is not a whole number: {grade!r}"[:100])
    if not 0 <= grade <= top:
        raise JudgeAnswerError("out-of-scale", f"grade {grade} is off the scale 0 to {top}")
    if words is not None and not isinstance(words, str):
        raise JudgeAnswerError("malformed", f"the quote is not a string or null: {words!r}"[:100])
    return grade, (words if words and words.strip() else None)


def parse_grade(payload: Any, top: int) -> int:
    """The grade in a chat-completions response (its JSON), read strictly; ``JudgeAnswerError``
    for anything else."""
    return parse_answer(payload, top)[0]
