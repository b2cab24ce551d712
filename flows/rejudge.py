"""People re-judge the labels drift could not repair: human-in-the-loop on Prefect.

    rejudge = read queue and judgments -> pause for a RunInput form -> check -> apply -> new version

The flow suspends (as a deployment run; called directly it pauses in place) with a form for a
batch of the suite's newest queue items: for each, which
chunk carries what was judged (one of the candidates found, or "none") and a relevance, and
the reviewer's name. The form's schema only admits those choices, so Prefect refuses an
invalid answer and the run stays paused. On resume the answers are checked again like
`goldkeeper queue apply`'s (live chunks, provenance) and merged into a new judgments version
with `labeled_by: human:<name>` and `labeled_at`, written with compare-and-swap.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.context import FlowRunContext
from prefect.flow_runs import pause_flow_run, suspend_flow_run
from prefect.input import RunInput
from pydantic import Field, create_model

from goldkeeper.core.judgments import dump_judgments, parse_judgments
from goldkeeper.core.rejudge import AppliedAnswers, apply_answers, check_answers
from goldkeeper.flows.faults import content_kept_out, retry_faults
from goldkeeper.flows.signals import signal
from goldkeeper.io.snapshots import open_corpus
from goldkeeper.io.storage import (
    current_judgments_url,
    default_root,
    read_current_judgments,
    read_latest_queue,
    suite_slug,
    write_judgments_version,
)

__all__ = ["answer_form", "rejudge"]


class _Reviewer(RunInput):
    reviewer: str = Field(pattern=r"^[A-Za-z0-9._@-]+$", description="Your name, recorded as human:<name>.")


def answer_form(items: list[dict[str, Any]]) -> type[RunInput]:
    """A RunInput with, per item, the chunk (a candidate or "none") and the relevance."""
    fields: dict[str, Any] = {}
    for n, item in enumerate(items):
        choices = tuple(dict.fromkeys([*(c["chunk_id"] for c in item.get("candidates", [])), "none"]))
        about = f"{item['query_id']}: {item.get('query') or ''} ({item['status']}, {item['action']})"
        fields[f"item_{n}_chunk"] = (Literal[choices], Field(description=f"{about}: the chunk that carries it, or none"))
        fields[f"item_{n}_relevance"] = (int, Field(ge=0, lt=1024, description=f"{about}: relevance"))
    return create_model("RejudgeAnswers", __base__=_Reviewer, **fields)


@task(retry_condition_fn=retry_faults, retries=2, retry_delay_seconds=[2, 10], timeout_seconds=300)
def read_queue(storage_url: str, suite: str) -> tuple[str, list[dict[str, Any]]]:
    return read_latest_queue(storage_url, suite)


@task(retry_condition_fn=retry_faults, retries=2, retry_delay_seconds=[2, 10], timeout_seconds=600)
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


@task(timeout_seconds=60)
def signal_answers(suite: str, answered: int, left: int, version: str | None, replaced: int, queue_url: str) -> None:
    """The queue shrank by the items answered; a new version, when the answers made one."""
    signal("goldkeeper.queue.shrunk", suite, {"answered": answered, "left": left, "queue_url": queue_url})
    if version:
        signal("goldkeeper.judgments.versioned", suite, {"version_url": version, "rejudged": replaced})


@flow(name="goldkeeper-rejudge", log_prints=True, persist_result=True)
def rejudge(
    suite: str,
    corpus_url: str,
    storage_url: str | None = None,
    batch: int = 20,
    timeout: int = 86_400,
    poll_interval: int = 10,
) -> dict[str, Any]:
    """Pause for people's answers on up to ``batch`` items of the suite's newest queue, then
    write them into a new judgments version. Returns the counts and the version's URL."""
    storage_url = storage_url or default_root()
    queue_url, queued = read_queue(storage_url, suite)
    items = queued[:batch]
    data, sha = read_judgments(storage_url, suite)
    form = answer_form(items)
    print(f"{suite}: waiting for answers on {len(items)} item(s) of {queue_url}")
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None and context.flow_run.deployment_id is not None:
        # A deployment run suspends: its process exits while people answer, and the resumed
        # run starts again, finding the answers under the same key.
        answers = suspend_flow_run(wait_for_input=form, timeout=timeout, key="answers")
    else:  # called directly: nothing could restart it, so it pauses in place
        answers = pause_flow_run(wait_for_input=form, timeout=timeout, poll_interval=poll_interval)
    labeled_at = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    rows = [(n + 1, {"item_id": item["item_id"], "chunk_id": getattr(answers, f"item_{n}_chunk"),
                     "relevance": getattr(answers, f"item_{n}_relevance"),
                     "labeled_by": f"human:{answers.reviewer}", "labeled_at": labeled_at})
            for n, item in enumerate(items)]
    chosen = [row["chunk_id"] for _, row in rows if row["chunk_id"] != "none"]
    live, fingerprint = live_chunks(corpus_url, chosen)
    labels = parse_judgments(data, current_judgments_url(storage_url, suite))
    queue = {item["item_id"]: item for item in items}
    applied = merge_answers(labels, check_form_answers(rows, queue, live), queue, live, fingerprint)
    version = None
    if applied.replaced or applied.removed:
        version, _ = write_version(storage_url, suite, dump_judgments(applied.judgments).encode("utf-8"), sha)
    signal_answers(suite, len(items), len(queued) - len(items), version, applied.replaced, queue_url)
    create_markdown_artifact(
        key=f"goldkeeper-{suite_slug(suite)}-rejudge",
        markdown=(f"### goldkeeper re-judgment: {suite}\n\n{answers.reviewer} answered {len(items)} item(s): "
                  f"{applied.replaced} label(s) re-judged, {applied.removed} removed, {applied.already_applied} "
                  f"already applied. New judgments version: {version or 'none'}.\n"),
        description=f"{suite}: re-judgment",
    )
    return {"replaced": applied.replaced, "removed": applied.removed, "judgments_version": version,
            "queue_url": queue_url}
