"""Call a retriever for every judged query: bounded concurrency, retries with backoff on
transient failures, an optional rate limit, and a result cache that makes a rerun after a
crash resume where it stopped.

A query that failed is recorded as an error with its message, never as an empty ranking;
the caller counts errors against a budget. The cache is a JSONL file of successful answers
keyed by the sha256 of the retriever's identity (its configuration without secrets) and the
query (id, text, k, mode); each answer is appended and flushed as it arrives, and a torn
last line from a crash is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Protocol

from goldkeeper.io.retrievers import Hits, Query, RetrieverError

__all__ = [
    "MAX_RETRY_AFTER",
    "AnswerCache",
    "Outcome",
    "RateLimit",
    "Retrieved",
    "Retriever",
    "in_order",
    "judged_queries",
    "paired_stop",
    "paired_verdicts",
    "retrieve_run",
    "retrieve_runs",
    "retrieve_to_storage",
    "retry_delay",
    "run_queries",
    "sequential_plan",
    "sequential_stop",
    "spent_record",
]


class Retriever(Protocol):
    def identity(self) -> dict[str, Any]: ...

    def search(self, query: Query) -> Hits: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Outcome:
    query: Query
    hits: Hits | None
    error: str | None
    attempts: int
    cached: bool = False


def cache_key(identity: dict[str, Any], query: Query) -> str:
    blob = json.dumps([identity, query.query_id, query.text, query.k, query.mode], sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class AnswerCache:
    """Answers kept in a JSONL file, one object a line with its ``key``: read when opened (a
    line torn by a crash is skipped, so its call is simply made again), appended and flushed
    as each answer arrives. ``encode`` makes an answer a line's other fields, ``decode`` the
    answer from a line (a ``KeyError``, ``TypeError`` or ``ValueError`` skips it). No ``path``:
    nothing is kept."""

    def __init__(self, path: str | None, encode: Callable[[Any], dict[str, Any]],
                 decode: Callable[[dict[str, Any]], Any]) -> None:
        self.path, self.found, self.lock, self.handle, self.encode = path, {}, threading.Lock(), None, encode
        if path is None:
            return
        if os.path.exists(path):
            with open(path, "rb") as handle:
                for line in handle:
                    try:
                        row = json.loads(line)
                        self.found[row["key"]] = decode(row)
                    except (ValueError, KeyError, TypeError):
                        continue
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        self.handle = open(path, "ab")

    def put(self, key: str, answer: Any) -> None:
        if self.handle is None:
            return
        line = json.dumps({"key": key, **self.encode(answer)}, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8") + b"\n"
        with self.lock:
            self.handle.write(line)
            self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def _hits_row(hits: Hits) -> dict[str, Any]:
    return {"ids": list(hits.ids), "scores": None if hits.scores is None else list(hits.scores)}


def _row_hits(row: dict[str, Any]) -> Hits:
    return Hits(tuple(row["ids"]), tuple(row["scores"]) if row.get("scores") is not None else None)


class RateLimit:
    """At most ``per_second`` calls a second over all threads (None: no limit)."""

    def __init__(self, per_second: float | None) -> None:
        self.gap = 1.0 / per_second if per_second else 0.0
        self.next = 0.0
        self.lock = threading.Lock()

    def wait(self) -> None:
        if not self.gap:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next)
            self.next = start + self.gap
        if start > now:
            time.sleep(start - now)


#: The longest ``Retry-After`` goldkeeper honours; a server asking for more fails the query.
MAX_RETRY_AFTER = 120.0


def retry_delay(attempt: int, backoff: float, retry_after: float | None = None,
                uniform: Callable[[float, float], float] = random.uniform) -> float | None:
    """Seconds to wait before retry ``attempt`` (1 for the first): exponential backoff with
    "equal jitter" (between half and all of ``backoff * 2^(attempt-1)``), so that the workers a
    failure hit at once do not retry at once; at least the server's ``Retry-After``. None when
    that is longer than ``MAX_RETRY_AFTER``."""
    ceiling = backoff * 2 ** (attempt - 1)
    delay = uniform(ceiling / 2, ceiling)
    if retry_after is None:
        return delay
    return None if retry_after > MAX_RETRY_AFTER else max(delay, retry_after)


def run_queries(
    retriever: Retriever,
    queries: Sequence[Query],
    *,
    concurrency: int = 16,
    retries: int = 3,
    backoff: float = 0.2,
    rate: float | None = None,
    cache: str | None = None,
    progress: Callable[[int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Outcome]:
    """Every query's outcome, in the order given (see the module docstring). ``sleep`` waits
    between attempts (``retry_delay``)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    identity = retriever.identity()
    store = AnswerCache(cache, _hits_row, _row_hits)
    limit = RateLimit(rate)

    def one(query: Query) -> Outcome:
        key = cache_key(identity, query)
        hit = store.found.get(key)
        if hit is not None:
            return Outcome(query, hit, None, 0, cached=True)
        attempt = 0
        while True:
            attempt += 1
            limit.wait()
            try:
                hits = retriever.search(query)
            except RetrieverError as error:
                if error.transient and attempt <= retries:
                    delay = retry_delay(attempt, backoff, error.retry_after)
                    if delay is not None:
                        sleep(delay)
                        continue
                    return Outcome(query, None, f"{error}; the server asked to wait {error.retry_after:.0f} s, more "
                                                f"than goldkeeper waits ({MAX_RETRY_AFTER:.0f} s)", attempt)
                return Outcome(query, None, str(error), attempt)
            store.put(key, hits)
            return Outcome(query, hits, None, attempt)

    try:
        return in_order(one, queries, concurrency, progress)
    finally:
        store.close()


def in_order(call: Callable[[Any], Any], items: Sequence[Any], concurrency: int,
             progress: Callable[[int], None] | None = None) -> list[Any]:
    """``call`` on every item, ``concurrency`` at a time on threads; the results in the items'
    order. ``progress(done)`` after each."""
    results: list[Any] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = {pool.submit(call, item): index for index, item in enumerate(items)}
        for done, future in enumerate(as_completed(futures), 1):
            results[futures[future]] = future.result()
            if progress is not None:
                progress(done)
    return results


def judged_queries(rows: Sequence[dict[str, Any]], grades: dict[str, dict[str, int]], need_text: bool,
                   threshold: int = 1) -> dict[str, str]:
    """Query id -> text for every judged query with a relevant label (grade ``threshold`` or
    more; the first text a label gives): a query judged only not relevant is never scored,
    so asking it would spend a call, and risk an error, on nothing. With ``need_text``, a
    query without text is a usage error naming some."""
    from goldkeeper.errors import UsageError

    grades = {q: found for q, found in grades.items() if any(grade >= threshold for grade in found.values())}
    texts: dict[str, str] = {}
    for row in rows:
        if row.get("query") and row["query_id"] not in texts:
            texts[row["query_id"]] = row["query"]
    missing = sorted(set(grades) - set(texts))
    if need_text and missing:
        raise UsageError(f"{len(missing)} judged queries have no query text (the query field), "
                         f"e.g. {', '.join(missing[:3])}; a retriever needs the text")
    return {q: texts.get(q, "") for q in sorted(grades)}


@dataclass
class Retrieved:
    """One system's run as answered: entries for the queries that succeeded, errors for the
    rest; ``asked`` the query ids asked, in order (all of them unless it stopped early)."""

    name: str
    entries: list[Any]
    errors: list[dict[str, Any]]
    queries: int
    run_bytes: bytes
    asked: list[str]
    of: int


def retrieve_run(
    retriever: Retriever, name: str, texts: dict[str, str], depth: int, mode: str = "", *,
    concurrency: int = 16, retries: int = 3, rate: float | None = None, cache: str | None = None,
    progress: Callable[[int], None] | None = None,
    settled: Callable[[list[Any], list[str]], bool] | None = None,
) -> Retrieved:
    """Ask ``retriever`` the queries (``texts``, in its order) for their top ``depth``; the run
    as entries and canonical run JSONL bytes, and the errors. With ``settled``, queries are
    asked ``concurrency`` at a time, and after each batch ``settled(entries, ids asked)`` may stop
    it: the same batches every time, so a rerun asks the same queries."""
    (got,) = retrieve_runs([(retriever, name, mode)], texts, depth, concurrency=concurrency, retries=retries,
                           rate=rate, cache=cache, progress=progress,
                           settled=None if settled is None else (lambda entries, asked: settled(entries[0], asked)))
    return got


def retrieve_runs(
    systems: Sequence[tuple[Retriever, str, str]], texts: dict[str, str], depth: int, *,
    concurrency: int = 16, retries: int = 3, rate: float | None = None, cache: str | None = None,
    progress: Callable[[int], None] | None = None,
    settled: Callable[[list[list[Any]], list[str]], bool] | None = None,
) -> list[Retrieved]:
    """``retrieve_run`` for several systems (retriever, name, mode) in lockstep: each batch is
    asked of every system before the next, and ``settled(entries of each system, ids asked)``
    may stop all of them (a paired comparison that has settled); ``progress`` counts calls."""
    from goldkeeper.core.runs import dump_run
    from goldkeeper.models.run import RunEntry

    queries = [[Query(query_id, text, depth, mode) for query_id, text in texts.items()] for _, _, mode in systems]
    batch = len(texts) if settled is None else concurrency
    outcomes: list[list[Outcome]] = [[] for _ in systems]
    entries: list[list[Any]] = [[] for _ in systems]
    calls = [0]

    def advance(n: int, base: int) -> None:
        if progress is not None:
            progress(base + n)

    try:
        for start in range(0, len(texts), max(batch, 1)):
            for index, (retriever, _, _) in enumerate(systems):
                answered = run_queries(retriever, queries[index][start:start + batch], concurrency=concurrency,
                                       retries=retries, rate=rate, cache=cache,
                                       progress=lambda n, base=calls[0]: advance(n, base))
                calls[0] += len(answered)
                outcomes[index].extend(answered)
                entries[index].extend(RunEntry(query_id=o.query.query_id, ranking=list(o.hits.ids),
                                               scores=list(o.hits.scores) if o.hits.scores is not None else None)
                                      for o in answered if o.hits is not None)
            asked = [o.query.query_id for o in outcomes[0]]
            if settled is not None and len(asked) < len(texts) and settled(entries, asked):
                break
    finally:
        for retriever in {id(r): r for r, _, _ in systems}.values():
            retriever.close()
    return [Retrieved(name, entries[index],
                      [{"query_id": o.query.query_id, "error": o.error, "attempts": o.attempts}
                       for o in outcomes[index] if o.error is not None],
                      len(outcomes[index]), dump_run(entries[index]).encode("utf-8"),
                      [o.query.query_id for o in outcomes[index]], len(texts))
            for index, (_, name, _) in enumerate(systems)]


def sequential_stop(rows: list[dict[str, Any]], gates: list[Any], ks: list[int], threshold: int,
                    ) -> Callable[[list[Any], list[str]], bool]:
    """``retrieve_run``'s ``settled`` for gates that are all sequential: the run so far scored
    on the queries asked so far (a failed call counts as a miss, as in the report), then
    whether every gate has settled (looked at as ``_now_and_then`` says)."""
    from goldkeeper.core.gates import sequential_settled
    from goldkeeper.core.scoring import build_qrels, score

    def settled(entries: list[Any], asked: list[str]) -> bool:
        wanted = set(asked)
        result = score(build_qrels([r for r in rows if r["query_id"] in wanted]), entries, k=ks, threshold=threshold)
        return sequential_settled(gates, result.per_query)

    return _now_and_then(settled)


def _now_and_then(check: Callable[[Any, list[str]], bool]) -> Callable[[Any, list[str]], bool]:
    """A look computes a confidence sequence over every query asked, at a cost that grows
    with them, so past ``_CHECK_ALWAYS`` queries ``check`` is looked at again only once the
    queries asked have grown by a quarter: a few looks in all, whatever the set's size, for at
    most a quarter more queries than the first settled batch would have asked."""
    looked = [0]

    def settled(entries: Any, asked: list[str]) -> bool:
        if len(asked) > _CHECK_ALWAYS and len(asked) < looked[0] * 1.25:
            return False
        looked[0] = len(asked)
        return check(entries, asked)

    return settled


def paired_verdicts(rows: list[dict[str, Any]], runs: Sequence[list[Any]], names: Sequence[str], asked: list[str],
                    metric: str, threshold: int, alpha: float = 0.05) -> list[dict[str, Any]]:
    """Each challenger (every run after the first) against the first, paired by query on
    ``metric``, the queries watched in the order asked: ``core.sequential.paired_gate``'s
    verdict (better, worse, undecided; the look it settled at). A query a run failed on is a
    miss, as in its report; queries without a relevant label are not pairs."""
    from goldkeeper.core.metric_ids import parse_metric_id
    from goldkeeper.core.scoring import build_qrels, score
    from goldkeeper.core.sequential import paired_gate

    wanted = set(asked)
    qrels = build_qrels([r for r in rows if r["query_id"] in wanted])
    k = parse_metric_id(metric).k
    per_query = [score(qrels, entries, k=[k], threshold=threshold).per_query for entries in runs]
    pairs = [q for q in asked if q in per_query[0]]
    if not pairs:
        return []
    values = [[found.get(q, {}).get(metric, 0.0) for q in pairs] for found in per_query]
    return [{"metric": metric, "baseline": names[0], "challenger": name,
             **paired_gate(challenger, values[0], alpha).to_dict()}
            for name, challenger in zip(names[1:], values[1:])]


def paired_stop(rows: list[dict[str, Any]], metric: str, threshold: int, alpha: float = 0.05,
                ) -> Callable[[list[list[Any]], list[str]], bool]:
    """``retrieve_runs``' ``settled`` for a paired sequential comparison: every challenger
    settled better or worse than the baseline on the queries asked so far."""
    def settled(runs: list[list[Any]], asked: list[str]) -> bool:
        verdicts = paired_verdicts(rows, runs, [str(i) for i in range(len(runs))], asked, metric, threshold, alpha)
        return bool(verdicts) and all(v["decision"] != "undecided" for v in verdicts)

    return _now_and_then(settled)


def spent_record(got: Retrieved, batch: int, seed: int, by: str | None = None) -> dict[str, Any]:
    """What a retrieval that may stop early spent, as reports record it (``retrieval.sequential``);
    ``by`` what stopped it when it is not the sequential gates."""
    return {"asked": got.queries, "of": got.of, "saved": got.of - got.queries, "seed": seed,
            "order": "sha256 of '<seed>:<query id>'", "batch": batch, "query_ids": got.asked,
            **({"by": by} if by else {})}


#: Queries up to which the sequential gates are looked at after every batch.
_CHECK_ALWAYS = 256


def retrieve_to_storage(
    config: dict[str, Any], judgments_url: str, run_url: str, depth: int, mode: str = "", *,
    concurrency: int = 16, retries: int = 3, rate: float | None = None, cache: str | None = None,
    progress: Callable[[int, int], None] | None = None, gates: list[str] | None = None, threshold: int = 1,
) -> dict[str, Any]:
    """The flows' retrieval step: read the judged queries, ask the retriever made from
    ``config``, write the run to ``run_url`` (atomically); its URL, sha256, query count and
    errors. ``progress(done, total)`` is called as answers arrive. When every gate is
    sequential, queries are asked in the gates' order and asking stops once they settle: the
    result then says which were ``asked`` and of how many (``sequential_plan``)."""
    from goldkeeper.io.files import write_bytes_atomic
    from goldkeeper.io.loading import load_label_rows
    from goldkeeper.io.retrievers import make_retriever

    retriever = make_retriever(config)
    rows, _ = load_label_rows(judgments_url)
    texts, settled, spent = sequential_plan(rows, gates or [], threshold, config.get("backend") != "run-file")
    total = len(texts)
    got = retrieve_run(retriever, mode or str(config.get("backend")), texts, depth, mode, concurrency=concurrency,
                       retries=retries, rate=rate, cache=cache, settled=settled,
                       progress=None if progress is None else (lambda done: progress(done, total)))
    write_bytes_atomic(run_url, got.run_bytes)
    found = {"run_url": run_url, "sha256": hashlib.sha256(got.run_bytes).hexdigest(), "queries": got.queries,
             "errors": got.errors}
    if settled is not None:
        found["sequential"] = spent(got, concurrency)
    return found


def sequential_plan(rows: list[dict[str, Any]], gates: list[Any], threshold: int, need_text: bool,
                    ) -> tuple[dict[str, str], Any, Callable[[Retrieved, int], dict[str, Any]]]:
    """The queries to ask, in order; ``retrieve_run``'s ``settled`` when every gate (an
    expression or a ``Gate``) is sequential (else None, and the queries in id order); and how
    to record what was spent."""
    from goldkeeper.core.gates import parse_gate, sequential_order, stops_early
    from goldkeeper.core.metric_ids import parse_metric_id
    from goldkeeper.core.scoring import build_qrels
    from goldkeeper.errors import UsageError

    texts = judged_queries(rows, build_qrels(rows).grades, need_text=need_text, threshold=threshold)
    parsed = [parse_gate(gate) if isinstance(gate, str) else gate for gate in gates]
    if not stops_early(parsed):
        return texts, None, lambda got, batch: {}
    seed = parsed[0].seed
    if any(gate.seed != seed for gate in parsed):
        raise UsageError("sequential gates ask the queries in one order: give them one seed")
    ordered = {query_id: texts[query_id] for query_id in sequential_order(texts, seed)}

    def spent(got: Retrieved, batch: int) -> dict[str, Any]:
        return spent_record(got, batch, seed)

    ks = sorted({parse_metric_id(gate.metric).k for gate in parsed})
    return ordered, sequential_stop(rows, parsed, ks, threshold), spent
