"""The suite's LLM judge answers the queue first, and people audit a sample of its work
(spec/judge.md): the lifecycle's judge step, between the queue and the scores.

    judge_queue = [pool_of_runs] -> judge_queued -> live_chunks -> merge (a new judgments
                  version) -> plan_audit -> publish_audit; artifact and events

With the suite's runs it also completes the pool (``core.pool``): the live chunks the runs
rank in their top k that nobody graded for the query are graded too, and added as labels, so
judged@k rises after a re-chunk; they are audited with the rest.

Only the items whose every candidate the judge graded take its answers; an item with one
error (HTTP, timeout, refusal, malformed or out-of-scale answer) waits for people whole. The
audit record keeps the sample, the judge's labels on it and the labels its answers replaced,
so people's audit (the rejudge flow's form asks it first) can set the judge aside when it
falls below the suite's kappa floor.
"""

from __future__ import annotations

import hashlib
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from goldkeeper.core.judgments import dump_rows
from goldkeeper.core.rejudge import apply_answers, check_answers, label_origin
from goldkeeper.core.sampling import fully_judged, plan_audit
from goldkeeper.errors import UsageError
from goldkeeper.flows.faults import step
from goldkeeper.flows.signals import signal
from goldkeeper.io.snapshots import open_corpus
from goldkeeper.io.storage import publish_audit, suite_slug, write_judge_step, write_judgments_version

#: The judge's summary figures that are the attempt's, not the answers': a rerun's differ.
ATTEMPT_FIGURES = ("calls", "cached", "seconds", "prompt_tokens", "completion_tokens")

__all__ = ["ATTEMPT_FIGURES", "judge_queue", "judge_queued", "live_chunks", "take_up_judge", "workload_line"]


def _live(corpus_url: str, wanted: list[str]):
    corpus = open_corpus(corpus_url)
    chosen = set(wanted)
    return {chunk.chunk_id: chunk for chunk in corpus if chunk.chunk_id in chosen}, corpus.corpus_fingerprint


@step(timeout_seconds=1800)
def live_chunks(corpus_url: str, wanted: list[str]):
    """The chosen chunks as they are live now, and the snapshot's fingerprint."""
    return _live(corpus_url, wanted)


@step(timeout_seconds=7200)
def judge_queued(items: list[dict[str, Any]], judge: dict[str, Any], top: int, labeled_at: str) -> dict[str, Any]:
    """Every candidate of the queued items graded by the suite's judge (``io.judge.judge_queue``):
    the answers, the pairs without a grade and the figures."""
    from goldkeeper.core.judge import DEFAULT_PROMPT, SPAN_PROMPT
    from goldkeeper.io.files import decode_utf8, read_bytes, source_name
    from goldkeeper.io.judge import judge_queue as ask_judge

    url = judge.get("prompt_url")
    spans = bool(judge.get("spans"))
    prompt = (SPAN_PROMPT if spans else DEFAULT_PROMPT) if not url else decode_utf8(read_bytes(url), source_name(url))
    return ask_judge(items, base_url=judge["base_url"], model=judge["model"], prompt=prompt, top=top,
                     labeled_at=labeled_at, api_key_env=judge.get("api_key_env"), concurrency=judge["concurrency"],
                     timeout=judge["timeout"], retries=judge["retries"], rate=judge.get("rate"), quotes=spans)


@step(timeout_seconds=1800)
def pool_of_runs(labels: list[dict[str, Any]], items: list[dict[str, Any]], run_urls: list[str], depth: int,
                 corpus_url: str) -> list[dict[str, Any]]:
    """The unjudged live chunks of the runs' top ``depth`` that no queue item asks about, as
    pool items (``core.pool``)."""
    from goldkeeper.core.pool import pool_items
    from goldkeeper.io.loading import load_run_prefixes

    runs = [load_run_prefixes(url, None, depth)[0] for url in run_urls]
    labelled = {(row["query_id"], row.get("chunk_id")) for row in labels}
    wanted = sorted({chunk for run in runs for query_id, ranking in run for chunk in ranking
                     if (query_id, chunk) not in labelled})
    live, _ = _live(corpus_url, wanted)
    return pool_items(labels, runs, depth, live, items)


@step(timeout_seconds=600)
def merge_judge_answers(labels, items: list[dict[str, Any]], pool: list[dict[str, Any]], answers: list[dict[str, Any]],
                        live, fingerprint) -> bytes:
    """The judgments with the judge's answers: queue items' labels replaced, pool labels added."""
    from goldkeeper.core.pool import pooled_labels

    queue = {item["item_id"]: item for item in items}
    mine = [answer for answer in answers if answer["item_id"] in queue]
    checked = check_answers(list(enumerate(mine, start=1)), queue, live, "the judge's answers")
    rows = apply_answers(labels, checked, queue, live, fingerprint, "the judge's answers").judgments
    return b"".join(dump_rows([*rows, *pooled_labels(pool, answers, live, fingerprint)]))


@step(timeout_seconds=300)
def write_judged_version(storage_url: str, suite: str, data: bytes, expected_sha: str) -> tuple[str, str]:
    return write_judgments_version(storage_url, suite, data, expected_sha)


@step(timeout_seconds=300)
def open_audit(storage_url: str, suite: str, record: dict[str, Any]) -> tuple[str, bool]:
    return publish_audit(storage_url, suite, record)


@step(timeout_seconds=300)
def keep_judge_step(storage_url: str, suite: str, corpus_sha: str, made: dict[str, Any]) -> str:
    return write_judge_step(storage_url, suite, corpus_sha, made)


def workload_line(workload: dict[str, int]) -> str:
    """People's workload before and after the judge, in words."""
    pooled = (f"; it also graded {workload['pooled_labels']} unjudged chunk(s) of the runs' top k"
              if workload.get("pooled_labels") else "")
    return (f"people's workload: {workload['queued']} queued item(s) before the judge, {workload['for_people']} after "
            f"({workload['audited']} to audit, {workload['queued'] - workload['judged']} the judge could not answer)"
            + pooled)


def judge_queue(storage_url: str, suite: str, judge: dict[str, Any], max_grade: int, items: list[dict[str, Any]],
                labels: list[dict[str, Any]], sha: str, corpus_url: str, corpus_sha: str, stamp: str,
                queue_url: str | None, run_urls: list[str] = (), depth: int = 10) -> dict[str, Any] | None:
    """The judge's step of the lifecycle on the queue ``items`` of the judgments ``labels``
    (the current version, ``sha``), and on the unjudged chunks of the top ``depth`` of the
    runs at ``run_urls``: what it did, the new version, the audit's URL and record; None when
    there is nothing to ask it (a repeated event, after it answered).

    What it makes is kept first (``write_judge_step``, under the re-index of ``corpus_sha``),
    then made current, then the audit opened: a rerun that finds the judged version current
    takes the step up from what was kept (``take_up_judge``)."""
    pool = pool_of_runs(labels, items, list(run_urls), depth, corpus_url) if run_urls else []
    if not (items or pool):
        return None
    try:
        judged = judge_queued(items + pool, judge, max_grade, stamp)
    except UsageError as error:  # a key not set on this worker, a prompt that will not do
        get_run_logger().error(f"{suite}: the judge was not asked ({error}); every queued item waits for people")
        signal("goldkeeper.judge.failed", suite, {"error": str(error), "queued": len(items)})
        return None
    taken = fully_judged(items, judged["answers"])
    pooled = fully_judged(pool, judged["answers"])
    ids = {item["item_id"] for item in taken}
    pool_ids = {item["item_id"] for item in pooled}
    answers = [answer for answer in judged["answers"] if answer["item_id"] in ids | pool_ids]
    plan = plan_audit(taken + pooled, width=judge.get("audit_width"), at_most=judge.get("audit_at_most"),
                      seed=judge.get("seed", 0),
                      strata={row["query_id"]: row["stratum"] for row in labels if row.get("stratum")})
    workload = {"queued": len(items), "judged": len(taken), "pooled": len(pooled),
                "pooled_labels": sum(len(item["candidates"]) for item in pooled), "audited": len(plan["items"]),
                "for_people": len(items) - len(taken) + len(plan["items"])}
    # What is kept is what the judge answered, not what this attempt cost (a rerun asks again, or reads its cache).
    kept = {key: value for key, value in judged["summary"].items() if key not in ATTEMPT_FIGURES}
    step_made = {"summary": kept, "failed": judged["failed"], "workload": workload, "plan": plan,
                 "from_sha256": sha, "judgments_sha256": sha, "audit": None}
    if taken or pooled:
        live, fingerprint = live_chunks(corpus_url, sorted({answer["chunk_id"] for answer in answers}))
        data = merge_judge_answers(labels, items, pooled, answers, live, fingerprint)
        from goldkeeper.io.loading import judgment_rows_of
        from goldkeeper.io.storage import version_url

        digest = hashlib.sha256(data).hexdigest()
        rows = judgment_rows_of(data, version_url(storage_url, suite, digest))
        audited = {item["item_id"] for item in plan["items"]}
        record = {"format": "goldkeeper-audit/1", "suite": suite, "opened_at": stamp, "model": judge["model"],
                  "prompt_sha": judged["summary"]["prompt_sha"], "rule": plan["rule"], "seed": plan["seed"],
                  "kappa_floor": judge.get("kappa_floor"), "queries": plan["queries"], "items": plan["items"],
                  "judged_items": sorted(ids | pool_ids), "queue_url": queue_url,
                  "judge_labels": [row for row in rows if (row.get("rejudged_from") or {}).get("item_id") in audited
                                   or row.get("pooled_from") in audited],
                  "replaced_labels": [row for row in labels if label_origin(row) in ids], "workload": workload}
        step_made.update(judgments_sha256=digest, audit=record)
        keep_judge_step(storage_url, suite, corpus_sha, step_made)
        write_judged_version(storage_url, suite, data, sha)
    return take_up_judge(storage_url, suite, step_made, judged["summary"])


def take_up_judge(storage_url: str, suite: str, made: dict[str, Any], summary: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """The judge step ``made`` (a ``JudgeStep``) finished once its version is current: its
    audit opened (stored once), its artifact shown; its events sent when this attempt asked
    the judge (``summary``: what it answered and cost) or opened the audit (the attempt that
    asked was stopped before it could)."""
    from goldkeeper.io.storage import version_url

    made_version = made["judgments_sha256"] != made["from_sha256"]
    version = version_url(storage_url, suite, made["judgments_sha256"]) if made_version else None
    audit_url, opened = open_audit(storage_url, suite, made["audit"]) if made["audit"] else (None, False)
    summary = summary or made["summary"]
    show_judge(suite, summary, made["failed"], made["workload"], made["plan"], version, audit_url)
    if "seconds" in summary or opened:
        signal_judge(suite, summary, made["workload"], made["plan"], audit_url)
    return {"summary": summary, "workload": made["workload"], "version": version, "audit_url": audit_url}


@step(timeout_seconds=60)
def show_judge(suite: str, summary: dict[str, Any], failed: list[dict[str, Any]], workload: dict[str, int],
               plan: dict[str, Any], version: str | None, audit_url: str | None) -> None:
    from goldkeeper.dashboard import judge_markdown

    create_markdown_artifact(key=f"goldkeeper-{suite_slug(suite)}-judge",
                             markdown=judge_markdown(suite, summary, failed, workload, plan, version, audit_url),
                             description=f"{suite}: the judge's answers and people's audit")


@step(timeout_seconds=60)
def signal_judge(suite: str, summary: dict[str, Any], workload: dict[str, int], plan: dict[str, Any],
                 audit_url: str | None) -> None:
    """What the judge answered; the audit it opened for people."""
    # (a rerun that takes up an earlier attempt's answers has no figures of what they cost)
    signal("goldkeeper.judge.answered", suite, {**{k: summary[k] for k in ("pairs", "graded", "errors", "calls",
                                                                              "seconds", "model", "prompt_sha")
                                                   if k in summary},
                                                "error_kinds": summary["error_kinds"], "workload": workload})
    if audit_url:
        signal("goldkeeper.audit.opened", suite, {"queries": len(plan["queries"]), "items": workload["audited"],
                                                  "rule": plan["rule"], "audit_url": audit_url})
