"""Ask an OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp's server, hosted
APIs) to grade each queued label's candidates, through the eval client's machinery: bounded
concurrency, a rate limit, retries with backoff on transient failures (honouring
``Retry-After``), and an answer cache that makes a rerun ask nothing it asked before.

Every failure is an error for its pair, never a grade: an HTTP error, a timeout, a refusal, a
malformed or out-of-scale answer (``core.judge.parse_answer``). The pair stays for people.

Asked for spans (``quotes``), the judge also quotes the words that answer; a quote found once
in its passage, at known offsets, goes with the answer (the label's span, proposed by the
judge); one that is not (``core.rejudge.quote_problem``) is left out and counted, and the
grade stands.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from goldkeeper.core.judge import JudgeAnswerError, messages, parse_answer, prompt_sha
from goldkeeper.core.rejudge import quote_problem
from goldkeeper.errors import UsageError
from goldkeeper.io.retrieval import MAX_RETRY_AFTER, AnswerCache, RateLimit, in_order, retry_delay
from goldkeeper.io.retrievers import retry_after_seconds

__all__ = ["ChatJudge", "JudgeCallError", "Judged", "Pair", "judge_pairs", "judge_queue", "queue_pairs"]


class JudgeCallError(Exception):
    """A call that brought no answer: ``kind`` is ``http``, ``timeout`` or ``network``."""

    def __init__(self, kind: str, message: str, *, transient: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind, self.transient, self.retry_after = kind, transient, retry_after


@dataclass(frozen=True)
class Pair:
    """One candidate of one queued label: what the judge grades."""

    item_id: str
    chunk_id: str
    query: str
    text: str
    start_index: int | None = None


@dataclass(frozen=True)
class Judged:
    """What the judge made of a pair: a grade, or the kind and words of its error."""

    pair: Pair
    grade: int | None
    error: str | None = None
    kind: str | None = None
    attempts: int = 0
    cached: bool = False
    tokens: dict[str, int] = field(default_factory=dict)
    quote: str | None = None
    unplaced: str | None = None


class ChatJudge:
    """One model behind one endpoint (``base_url`` as the OpenAI clients take it, e.g.
    ``http://127.0.0.1:8000/v1``), asked at temperature 0. ``api_key_env`` names the
    environment variable holding the key (sent as ``Authorization: Bearer``; never logged,
    never in answers or caches). ``json_mode`` asks for ``response_format`` ``json_object``;
    an endpoint that refuses the field (HTTP 400 or 422 naming it) is asked again without it,
    and from then on. httpx's client keeps the connections alive between calls."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None, timeout: float = 60.0,
                 json_mode: bool = True, concurrency: int = 16) -> None:
        import httpx

        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--base-url: an http:// or https:// URL, got {base_url}")
        if not model.strip():
            raise UsageError("--model: the model's name, as the endpoint knows it")
        headers = {"Accept": "application/json", "User-Agent": "goldkeeper"}
        if api_key_env is not None:
            key = os.environ.get(api_key_env)
            if not key:
                raise UsageError(f"--api-key-env {api_key_env}: the environment variable is not set")
            headers["Authorization"] = f"Bearer {key}"
        self.base_url, self.model, self.json_mode = base_url.rstrip("/"), model, json_mode
        self.client = httpx.Client(timeout=timeout, headers=headers, follow_redirects=False,
                                   limits=httpx.Limits(max_connections=concurrency,
                                                       max_keepalive_connections=concurrency))

    def identity(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model}

    def ask(self, chat: list[dict[str, str]]) -> dict[str, Any]:
        """The endpoint's response to ``chat``, as JSON; ``JudgeCallError`` when there is none."""
        import httpx

        body: dict[str, Any] = {"model": self.model, "messages": chat, "temperature": 0}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        try:
            response = self.client.post(f"{self.base_url}/chat/completions", json=body)
        except httpx.TimeoutException:
            raise JudgeCallError("timeout", "no answer within the timeout", transient=True) from None
        except httpx.HTTPError as error:  # the type only: a URL may carry a secret
            raise JudgeCallError("network", type(error).__name__, transient=True) from None
        status = response.status_code
        if status in (400, 422) and self.json_mode and "response_format" in response.text:
            self.json_mode = False  # an endpoint without JSON mode: the prompt asks for JSON anyway
            return self.ask(chat)
        if status >= 400:
            transient = status == 429 or status >= 500
            wait = retry_after_seconds(response.headers.get("retry-after"), time.time()) if transient else None
            raise JudgeCallError("http", f"HTTP {status}", transient=transient, retry_after=wait)
        if not 200 <= status < 300:
            raise JudgeCallError("http", f"HTTP {status}, which goldkeeper does not follow", transient=False)
        try:
            return response.json()
        except ValueError:
            raise JudgeCallError("http", "the response is not JSON", transient=False) from None

    def close(self) -> None:
        self.client.close()


def queue_pairs(items: Iterable[Mapping[str, Any]]) -> list[Pair]:
    """Every candidate of every queued item, as pairs to grade (an item without a query text or
    without candidates has none: it waits for people)."""
    pairs = []
    for item in items:
        query = item.get("query")
        for candidate in item.get("candidates") or []:
            if query and candidate.get("text"):
                pairs.append(Pair(item["item_id"], candidate["chunk_id"], query, candidate["text"],
                                  candidate.get("start_index")))
    return pairs


def _key(identity: dict[str, Any], prompt: str, top: int, pair: Pair, quotes: bool) -> str:
    asked = [identity, prompt_sha(prompt), top, pair.query, pair.text, *(["quote"] if quotes else [])]
    blob = json.dumps(asked, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def judge_pairs(judge: ChatJudge, pairs: Sequence[Pair], prompt: str, top: int, *, concurrency: int = 16,
                retries: int = 3, backoff: float = 0.5, rate: float | None = None, cache: str | None = None,
                progress: Callable[[int], None] | None = None, sleep: Callable[[float], None] = time.sleep,
                quotes: bool = False) -> list[Judged]:
    """Each pair's grade or error, and with ``quotes`` the words it quoted, in the order given
    (see the module docstring)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    identity = judge.identity()
    store = AnswerCache(cache, lambda got: {"grade": got[0], **({"quote": got[1]} if got[1] is not None else {})},
                        lambda row: (int(row["grade"]), row.get("quote")))
    limit = RateLimit(rate)

    def placed(pair: Pair, grade: int, quote: str | None, **figures: Any) -> Judged:
        problem = quote_problem(quote, pair.text, pair.start_index) if grade and quote is not None else None
        kept = quote if grade and problem is None else None
        return Judged(pair, grade, quote=kept, unplaced=problem, **figures)

    def one(pair: Pair) -> Judged:
        key = _key(identity, prompt, top, pair, quotes)
        if key in store.found:
            return placed(pair, *store.found[key], cached=True)
        chat = messages(prompt, pair.query, pair.text, top)
        attempt = 0
        while True:
            attempt += 1
            limit.wait()
            try:
                payload = judge.ask(chat)
                grade, quote = parse_answer(payload, top, quote=quotes)
            except JudgeCallError as error:
                if error.transient and attempt <= retries:
                    delay = retry_delay(attempt, backoff, error.retry_after)
                    if delay is not None:
                        sleep(delay)
                        continue
                    return Judged(pair, None, f"{error}; the endpoint asked to wait {error.retry_after:.0f} s, more "
                                              f"than goldkeeper waits ({MAX_RETRY_AFTER:.0f} s)", error.kind, attempt)
                return Judged(pair, None, str(error), error.kind, attempt)
            except JudgeAnswerError as error:  # the same question gets the same answer: not retried
                return Judged(pair, None, str(error), error.kind, attempt)
            store.put(key, (grade, quote))
            usage = payload.get("usage") if isinstance(payload, dict) else None
            tokens = {name: usage[name] for name in ("prompt_tokens", "completion_tokens")
                      if isinstance(usage, dict) and type(usage.get(name)) is int}
            return placed(pair, grade, quote, attempts=attempt, tokens=tokens)

    try:
        return in_order(one, pairs, concurrency, progress)
    finally:
        store.close()


def judge_queue(items: Iterable[Mapping[str, Any]], *, base_url: str, model: str, prompt: str, top: int,
                labeled_at: str, api_key_env: str | None = None, concurrency: int = 16, timeout: float = 60.0,
                retries: int = 3, rate: float | None = None, cache: str | None = None,
                progress: Callable[[int], None] | None = None, quotes: bool = False) -> dict[str, Any]:
    """Every candidate of the queued ``items`` graded by ``model`` behind ``base_url`` (what
    ``goldkeeper judge`` and the lifecycle's judge step do): ``answers`` (queue-answer rows,
    ``labeled_by`` synthetic:<model>, with the prompt's sha), ``failed`` (each pair without a
    grade, its kind and why) and ``summary`` (pairs, graded, errors by kind, calls, cached,
    tokens, seconds); with ``quotes``, answers carry the judge's placed ``quote``, ``unplaced``
    lists the quotes that were not, and the summary counts both."""
    pairs = queue_pairs(items)
    client = ChatJudge(base_url, model, api_key_env=api_key_env, timeout=timeout, concurrency=concurrency)
    started = time.monotonic()
    try:
        judged = judge_pairs(client, pairs, prompt, top, concurrency=concurrency, retries=retries, rate=rate,
                             cache=cache, progress=progress, quotes=quotes)
    finally:
        client.close()
    seconds = time.monotonic() - started
    named = prompt_sha(prompt)
    answers = [{"item_id": j.pair.item_id, "chunk_id": j.pair.chunk_id, "relevance": j.grade,
                "labeled_by": f"synthetic:{model}", "labeled_at": labeled_at, "prompt_sha": named,
                **({"quote": j.quote} if j.quote is not None else {})}
               for j in judged if j.grade is not None]
    unplaced = [{"item_id": j.pair.item_id, "chunk_id": j.pair.chunk_id, "why": j.unplaced}
                for j in judged if j.unplaced is not None]
    failed = [{"item_id": j.pair.item_id, "chunk_id": j.pair.chunk_id, "kind": j.kind, "error": j.error}
              for j in judged if j.grade is None]
    kinds: dict[str, int] = {}
    for entry in failed:
        kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
    summary = {"pairs": len(pairs), "graded": len(answers), "errors": len(failed), "error_kinds": kinds,
               "calls": sum(j.attempts for j in judged), "cached": sum(j.cached for j in judged),
               "prompt_tokens": sum(j.tokens.get("prompt_tokens", 0) for j in judged),
               "completion_tokens": sum(j.tokens.get("completion_tokens", 0) for j in judged),
               "seconds": round(seconds, 3), "model": model, "prompt_sha": named}
    if quotes:
        summary.update(quotes=sum(1 for answer in answers if "quote" in answer), quotes_unplaced=len(unplaced))
    return {"answers": answers, "failed": failed, "unplaced": unplaced, "summary": summary}
