"""People re-judge the labels drift could not repair: human-in-the-loop on Prefect.

    rejudge = read_suite_config -> (read queue and judgments -> show_queue -> pause for a form
              -> check -> apply -> new version, answers and what is left published)*
              -> evaluate_suite

The flow pauses (as a deployment run it suspends; called directly it pauses in place) with a
form for a batch of the suite's pending queue items. Above the form, markdown shows each
item's query, the text that was judged, why it needs a person and each candidate's text with
what it shares with the judged text in bold; the form asks, per candidate, for a grade (0 to
the suite's top grade, or not graded yet), and once for the reviewer's name. Graded answers
become one label per chunk graded above 0 (``core.rejudge.grade_answers``), checked like
`goldkeeper queue apply`'s and merged into a new judgments version with compare-and-swap.
The answers are kept on storage as queue-answer lines (what `queue apply` reads), and the
queue is published again with what is left, skipped items last: the next batch starts with
items nobody has seen, and an answered item is never asked again. Batches follow one another
until the queue is empty, the reviewer stops, or a batch gets no answer; then, when the
judgments changed and the suite has runs configured, it is evaluated again.

A suspended run starts over when resumed. Each pause is keyed by the batch's item ids, so the
restarted run finds the answers already given for the batches before and goes on from there.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Any, Literal

from goldkeeper.flows.faults import content_kept_out, retry_faults, storage_root
from goldkeeper.flows.lifecycle import evaluate_suite, read_suite_config
from goldkeeper.flows.signals import signal
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.flow_runs import pause_flow_run, suspend_flow_run
from prefect.input import RunInput
from pydantic import Field, create_model

from goldkeeper.core.judgments import dump_judgments, parse_judgments
from goldkeeper.core.rejudge import AppliedAnswers, apply_answers, check_answers, grade_answers, pending_items, walked
from goldkeeper.dashboard import queue_markdown, rejudge_markdown
from goldkeeper.io.snapshots import open_corpus
from goldkeeper.io.storage import (
    current_judgments_url,
    publish_answers,
    publish_queue,
    read_current_judgments,
    read_latest_queue,
    suite_slug,
    write_judgments_version,
)

__all__ = ["answer_form", "grades_of", "rejudge"]

NOT_GRADED = "not graded yet"


class _Reviewer(RunInput):
    reviewer: str = Field(
        min_length=1, max_length=80, pattern=r"^\s*[^\s\x00-\x1f][^\x00-\x1f]*$", title="Who is answering?",
        description="Your name, recorded with each answer as human:your name (for example: alice smith).")


def _grades(max_grade: int) -> tuple[str, ...]:
    top = "fully answers the query" if max_grade > 1 else "answers the query"
    middle = [str(g) for g in range(1, max_grade)]
    return (NOT_GRADED, "0: does not answer it", *middle, f"{max_grade}: {top}")


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def answer_form(items: list[dict[str, Any]], max_grade: int) -> type[RunInput]:
    """A RunInput asking, per item and candidate, for a grade (field ``item_<n>_<j>``, from 1)
    and, for an item without candidates, whether to remove its label (``item_<n>_remove``);
    then whether to stop after this batch. The field titles are questions; the numbers match
    the markdown above the form."""
    fields: dict[str, Any] = {}
    grades = _grades(max_grade)
    for n, item in enumerate(items, start=1):
        about = _short(item.get("query") or f"query {item['query_id']}")
        candidates = item.get("candidates") or []
        for j, _ in enumerate(candidates, start=1):
            fields[f"item_{n}_{j}"] = (Literal[grades], Field(
                NOT_GRADED, title=f"{n}.{j}: how well does candidate {n}.{j} answer \u201c{about}\u201d?"))
        if not candidates:
            fields[f"item_{n}_remove"] = (bool, Field(
                False, title=f"{n}: no live chunk carries what was judged for \u201c{about}\u201d. Remove the label?"))
    fields["stop"] = (bool, Field(False, title="Stop after this batch?",
                                  description="Otherwise the next batch of the queue follows."))
    return create_model("RejudgeAnswers", __base__=_Reviewer, **fields)


def grades_of(answers: Any, items: list[dict[str, Any]]) -> tuple[list[list[int | None]], list[bool]]:
    """The form's answers as grades per candidate (None: not graded) and removals per item."""
    def grade(choice: str) -> int | None:
        return None if choice == NOT_GRADED else int(choice.split(":", 1)[0])

    grades = [[grade(getattr(answers, f"item_{n}_{j}")) for j in range(1, len(item.get("candidates") or []) + 1)]
              for n, item in enumerate(items, start=1)]
    removed = [bool(getattr(answers, f"item_{n}_remove", False)) for n in range(1, len(items) + 1)]
    return grades, removed


# What storage holds now, read afresh each batch (and after a suspended run restarts): never
# Prefect's cache of an earlier read in the same run.
@task(retry_condition_fn=retry_faults, retries=2, retry_delay_seconds=[2, 10], timeout_seconds=300, cache_policy=NO_CACHE)
def read_queue(storage_url: str, suite: str) -> tuple[str, list[dict[str, Any]]]:
    return read_latest_queue(storage_url, suite)


@task(retry_condition_fn=retry_faults, retries=2, retry_delay_seconds=[2, 10], timeout_seconds=600, cache_policy=NO_CACHE)
def read_judgments(storage_url: str, suite: str) -> tuple[bytes, str]:
    return read_current_judgments(storage_url, suite)


@task(timeout_seconds=1800)
def live_chunks(corpus_url: str, wanted: list[str]):
    """The chosen chunks as they are live now, and the snapshot's fingerprint."""
    with content_kept_out():
        corpus = open_corpus(corpus_url)
        return {chunk.chunk_id: chunk for chunk in corpus if chunk.chunk_id in set(wanted)}, corpus.corpus_fingerprint


@task(timeout_seconds=300)
def check_form_answers(answers, queue, live):
    return check_answers(answers, queue, live, "rejudge form")


@task(timeout_seconds=600)
def merge_answers(labels, checked, queue, live, fingerprint) -> AppliedAnswers:
    return apply_answers(labels, checked, queue, live, fingerprint, "rejudge form")


@task(retry_condition_fn=retry_faults, retries=3, retry_delay_seconds=[1, 5, 20], timeout_seconds=300)
def write_version(storage_url: str, suite: str, data: bytes, expected_sha: str) -> tuple[str, str]:
    return write_judgments_version(storage_url, suite, data, expected_sha)


@task(retry_condition_fn=retry_faults, retries=3, retry_delay_seconds=[1, 5, 20], timeout_seconds=300)
def keep_answers(storage_url: str, suite: str, rows: list[dict[str, Any]], stamp: str) -> str | None:
    return publish_answers(storage_url, suite, rows, stamp)


@task(retry_condition_fn=retry_faults, retries=3, retry_delay_seconds=[1, 5, 20], timeout_seconds=300)
def publish_left(storage_url: str, suite: str, left: list[dict[str, Any]], stamp: str) -> str | None:
    return publish_queue(storage_url, suite, left, stamp, keep_empty=True)


@task(timeout_seconds=60)
def show_queue(suite: str, pending: list[dict[str, Any]], queue_url: str) -> None:
    create_markdown_artifact(key=f"goldkeeper-{suite_slug(suite)}-queue", markdown=queue_markdown(suite, pending, queue_url),
                             description=f"{suite}: what is left of the re-judgment queue")


@task(timeout_seconds=60)
def signal_answers(suite: str, answered: int, left: int, version: str | None, replaced: int, queue_url: str) -> None:
    """The queue shrank by the items answered; a new version, when the answers made one."""
    signal("goldkeeper.queue.shrunk", suite, {"answered": answered, "left": left, "queue_url": queue_url})
    if version:
        signal("goldkeeper.judgments.versioned", suite, {"version_url": version, "rejudged": replaced})


def _wait_for(form: type[RunInput], key: str, timeout: int, poll_interval: int):
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None and context.flow_run.deployment_id is not None:
        # A deployment run suspends: its process exits while people answer, and the resumed
        # run starts again, finding the answers under the same key.
        return suspend_flow_run(wait_for_input=form, timeout=timeout, key=key)
    return pause_flow_run(wait_for_input=form, timeout=timeout, poll_interval=poll_interval, key=key)


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@flow(name="goldkeeper-rejudge", log_prints=True, persist_result=True)
def rejudge(
    suite: str,
    storage_url: str | None = None,
    corpus_url: str | None = None,
    batch: int = 10,
    timeout: int = 86_400,
    poll_interval: int = 10,
    evaluate_after: bool = True,
) -> dict[str, Any]:
    """Pause for people's answers on the suite's pending queue, ``batch`` items at a time,
    and write each batch's answers into a new judgments version; then evaluate the suite again
    (``evaluate_after``, when it has runs configured). ``corpus_url`` defaults to the suite's
    configured live corpus. Returns the counts, the versions and the answers' URLs."""
    storage_url = storage_root(storage_url)
    if batch < 1:
        raise ValueError(f"rejudge: batch is at least 1, got {batch}")
    config = read_suite_config(storage_url, suite)
    corpus_url = corpus_url or (config.corpus_url if config else None)
    if not corpus_url:
        raise ValueError(f"rejudge: suite '{suite}' has no live corpus configured; give corpus_url")
    done: dict[str, Any] = {"answered": 0, "replaced": 0, "removed": 0, "versions": [], "answers": [], "left": None}
    while True:
        queue_url, queued = read_queue(storage_url, suite)
        data, sha = read_judgments(storage_url, suite)
        labels = parse_judgments(data, current_judgments_url(storage_url, suite))
        pending = pending_items(queued, labels)
        show_queue(suite, pending, queue_url)
        done["left"] = len(pending)
        if not pending:
            print(f"{suite}: nothing waits for a person in {queue_url}")
            break
        items = pending[:batch]
        grades = config.max_grade if config else max(1, max(label.relevance for label in labels))
        key = "answers-" + hashlib.sha256("\n".join(i["item_id"] for i in items).encode()).hexdigest()[:16]
        form = answer_form(items, grades).with_initial_data(description=rejudge_markdown(suite, items, len(pending), grades))
        print(f"{suite}: waiting for answers on {len(items)} of {len(pending)} pending item(s) of {queue_url}")
        answers = _wait_for(form, key, timeout, poll_interval)
        reviewer = " ".join(answers.reviewer.split())
        rows, skipped = grade_answers(items, *grades_of(answers, items), f"human:{reviewer}", _now())
        applied = _apply(storage_url, suite, corpus_url, labels, sha, items, rows) if rows else None
        if applied is not None:
            done["answered"] += len(items) - len(skipped)
            done["replaced"] += applied["replaced"]
            done["removed"] += applied["removed"]
            done["versions"] += [applied["version"]] if applied["version"] else []
            done["answers"].append(applied["answers"])
        answered = {row["item_id"] for row in rows}
        left = walked([item for item in pending if item["item_id"] not in answered], skipped)
        publish_left(storage_url, suite, left, _now())
        signal_answers(suite, len(answered), len(left), applied and applied["version"],
                       applied["replaced"] if applied else 0, queue_url)
        done["left"] = len(left)
        if answers.stop or not rows:
            show_queue(suite, left, queue_url)
            break
    create_markdown_artifact(
        key=f"goldkeeper-{suite_slug(suite)}-rejudge",
        markdown=(f"### goldkeeper re-judgment: {suite}\n\n{done['answered']} item(s) answered: {done['replaced']} "
                  f"label(s) re-judged, {done['removed']} removed; {done['left']} left in the queue. New judgments "
                  f"version(s): {', '.join(f'`{v}`' for v in done['versions']) or 'none'}.\n"),
        description=f"{suite}: re-judgment",
    )
    if done["versions"] and evaluate_after and config is not None and config.runs:
        done["evaluation"] = evaluate_suite(suite, storage_url, return_state=True).message
    return done


def _apply(storage_url: str, suite: str, corpus_url: str, labels, sha: str, items: list[dict[str, Any]],
           rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One batch's answer rows, kept on storage first (so that no answer is lost if the
    version cannot be written), then checked against the live corpus and merged into a new
    version."""
    kept = keep_answers(storage_url, suite, rows, rows[0]["labeled_at"])
    live, fingerprint = live_chunks(corpus_url, [row["chunk_id"] for row in rows if row["chunk_id"] != "none"])
    queue = {item["item_id"]: item for item in items}
    applied = merge_answers(labels, check_form_answers(list(enumerate(rows, start=1)), queue, live), queue, live,
                            fingerprint)
    version = None
    if applied.replaced or applied.removed:
        version, _ = write_version(storage_url, suite, dump_judgments(applied.judgments).encode("utf-8"), sha)
    return {"replaced": applied.replaced, "removed": applied.removed, "version": version, "answers": kept}
