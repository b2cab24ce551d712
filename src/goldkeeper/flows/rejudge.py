"""People re-judge the labels drift could not repair: human-in-the-loop on Prefect.

    rejudge = read_suite_config -> (read queue and judgments -> show_queue -> pause for a form
              -> check -> apply -> new version, answers and what is left published)*
              -> evaluate_suite

The flow pauses (as a deployment run it suspends; called directly it pauses in place) with a
form for a batch (5 by default) of the suite's pending queue items. Each text stands with the
field that answers it: the item's query, why it needs a person and the text that was judged
above its first candidate, each candidate's text (what it shares with the judged text in bold)
above its grades. Every field is a switch: per candidate one per grade above 0, per item "none
of these" (the label is removed), and the reviewer's name once. Answers that contradict
themselves or a name that will not do are not taken: the form is asked again, filled with
what was given and the problems written at its top (``ask``). Graded answers
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
from collections.abc import Callable
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.flow_runs import pause_flow_run, suspend_flow_run
from prefect.input import RunInput
from pydantic import Field, create_model

from goldkeeper.core.judgments import dump_rows
from goldkeeper.core.rejudge import (
    AppliedAnswers,
    Waiting,
    apply_answers,
    check_answers,
    grade_answers,
    pending_items,
    quote_problem,
    quoted_in,
    reviewer_problem,
    walked,
)
from goldkeeper.dashboard import (
    batch_markdown,
    candidate_markdown,
    description_blocks,
    grade_words,
    item_markdown,
    queue_markdown,
)
from goldkeeper.flows.clock import now
from goldkeeper.flows.faults import step, storage_root
from goldkeeper.flows.lifecycle import evaluate_suite, read_suite_config
from goldkeeper.flows.signals import signal
from goldkeeper.io.loading import judgment_rows_of
from goldkeeper.io.snapshots import open_corpus
from goldkeeper.io.storage import (
    current_judgments_url,
    newest_answers_time,
    publish_answers,
    publish_queue,
    read_current_judgments,
    read_latest_queue,
    suite_slug,
    write_judgments_version,
)

__all__ = ["answer_form", "ask", "close_audit", "grades_of", "quotes_of", "rejudge"]


def _grade_field(n: int, j: int, grade: int) -> str:
    return f"item_{n}_{j}_{grade}"


def answer_form(items: list[dict[str, Any]], max_grade: int, header: str,
                given: dict[str, Any] | None = None, audit: bool = False) -> type[RunInput]:
    """A RunInput in which every text a reviewer must read stands in the description of the
    field that answers it (Prefect renders a field's description as markdown in the modal's
    scroll area; the modal's own description is squeezed to nothing at ordinary heights). All
    fields are switches, which work with a mouse (Prefect's select opens only from the
    keyboard), but the name and the quotes:

    - ``reviewer``, described by ``header`` (the batch, how to answer it, what was wrong);
    - per item n and candidate j, one switch per grade g above 0, ``item_<n>_<j>_<g>`` (the item's
      query, status and judged text above its first candidate, each candidate's text above its
      first grade);
    - per item with candidates, ``item_<n>_quote`` (not in an audit): the sentence that answers,
      copied from the candidate graded; the label then names that passage (``quotes_of``);
    - per item, ``item_<n>_none``: no candidate answers it, or, without candidates, the label is
      gone (either way the label is removed);
    - ``stop``: no batch after this one.

    In an ``audit`` of the judge, "none" grades the item's candidates 0 and removes nothing.
    ``given``: values to fill in (the answers of a form asked again). ``with_initial_data``
    would drop the fields' titles and descriptions.
    """
    given = given or {}

    def switch(name: str, title: str, description: str | None = None) -> tuple[type, Any]:
        return bool, Field(bool(given.get(name, False)), title=title,
                           **({"description": description} if description else {}))

    # No pattern or length on the name: Prefect's UI leaves its modal open without a word when
    # the server refuses a value, so the flow checks it (core.rejudge.reviewer_problem) and asks
    # again with the problem written in the form.
    fields: dict[str, Any] = {"reviewer": (str, Field(str(given.get("reviewer") or ""), title="Who is answering?",
                                                      description=header))}
    for n, item in enumerate(items, start=1):
        about = item_markdown(n, len(items), item)
        candidates = item.get("candidates") or []
        for j in range(1, len(candidates) + 1):
            text = description_blocks(about if j == 1 else "", candidate_markdown(n, j, item))
            for grade in range(1, max_grade + 1):
                name = _grade_field(n, j, grade)
                fields[name] = switch(name, f"{n}.{j} {grade_words(grade, max_grade)}", text if grade == 1 else None)
        if candidates and not audit:
            name = f"item_{n}_quote"
            fields[name] = (str, Field(str(given.get(name) or ""), title=f"{n}: the words that answer it, copied from the piece graded",
                                       description=QUOTE_HELP))
        none = "grade them all 0" if audit else "remove the label"
        fields[f"item_{n}_none"] = switch(
            f"item_{n}_none", f"{n}: none of these candidates answers it ({none})" if candidates
            else f"{n}: no live chunk carries it; remove the label", None if candidates else about)
    fields["stop"] = switch("stop", "Stop after this batch?", "Otherwise the next batch of the queue follows.")
    return create_model("RejudgeAnswers", __base__=RunInput, **fields)


def grades_of(answers: Any, items: list[dict[str, Any]], max_grade: int,
              ) -> tuple[list[list[int | None]], list[bool], list[str]]:
    """The form's switches as grades per candidate (None: not graded) and removals per item,
    and what is contradictory in them, in words (two grades for one candidate; a removal with
    a grade): while any is, nothing is taken."""
    grades: list[list[int | None]] = []
    removed: list[bool] = []
    problems: list[str] = []
    for n, item in enumerate(items, start=1):
        gone = bool(getattr(answers, f"item_{n}_none", False))
        given: list[int | None] = []
        for j in range(1, len(item.get("candidates") or []) + 1):
            on = [g for g in range(1, max_grade + 1) if getattr(answers, _grade_field(n, j, g), False)]
            if len(on) > 1:
                problems.append(f"{n}.{j}: {len(on)} grades are switched on ({', '.join(map(str, on))}); "
                                "keep the one it deserves")
            if on and gone:
                problems.append(f"{n}.{j}: it is graded {on[-1]}, and item {n} says none of its candidates answers "
                                "it; switch one of them off")
            given.append(on[-1] if on else (0 if gone else None))
        grades.append(given)
        removed.append(gone)
    return grades, removed, problems


QUOTE_HELP = ("Copy the sentence that answers the query from the candidate you grade, if you like: the label then "
              "names that passage, which any later chunking finds again (spec/spans.md).")


def quotes_of(answers: Any, items: list[dict[str, Any]], grades: list[list[int | None]]
              ) -> tuple[list[str | None], list[str]]:
    """The form's quotes per item (None: none given), and what is wrong with them, in words: a
    quote goes with the candidates graded above 0 whose text holds it (``core.rejudge.quoted_in``),
    so it must be in one of them, once, and that candidate's offsets must be known."""
    quotes: list[str | None] = []
    problems: list[str] = []
    for n, (item, given) in enumerate(zip(items, grades), start=1):
        quote = " ".join(str(getattr(answers, f"item_{n}_quote", "") or "").split()) or None
        quotes.append(quote)
        if quote is None:
            continue
        holding = quoted_in(item, given, quote)
        if not holding:
            problems.append(f"{n}: the quote you gave is in none of the candidates you graded above 0; copy it "
                            "from the one that answers, or clear it")
        for j in holding:
            candidate = item["candidates"][j]
            problem = quote_problem(quote, candidate.get("text"), candidate.get("start_index"))
            if problem:
                problems.append(f"{n}.{j + 1}: the quote you gave {problem}")
    return quotes, problems


def given_answers(answers: Any) -> dict[str, Any]:
    """The values a reviewer gave, to fill the form again when it is asked again."""
    return {name: getattr(answers, name) for name in type(answers).model_fields if name not in RunInput.model_fields}


# What storage holds now, read afresh each batch (and after a suspended run restarts): never
# Prefect's cache of an earlier read in the same run.
@step(timeout_seconds=300, cache_policy=NO_CACHE)
def read_queue(storage_url: str, suite: str) -> tuple[str, list[dict[str, Any]]]:
    return read_latest_queue(storage_url, suite)


@step(timeout_seconds=600, cache_policy=NO_CACHE)
def read_judgments(storage_url: str, suite: str) -> tuple[bytes, str]:
    return read_current_judgments(storage_url, suite)


@step(timeout_seconds=1800)
def live_chunks(corpus_url: str, wanted: list[str]):
    """The chosen chunks as they are live now, and the snapshot's fingerprint."""
    corpus = open_corpus(corpus_url)
    return {chunk.chunk_id: chunk for chunk in corpus if chunk.chunk_id in set(wanted)}, corpus.corpus_fingerprint


@step(timeout_seconds=300)
def check_form_answers(answers, queue, live):
    return check_answers(answers, queue, live, "rejudge form")


@step(timeout_seconds=600)
def merge_answers(labels, checked, queue, live, fingerprint) -> AppliedAnswers:
    return apply_answers(labels, checked, queue, live, fingerprint, "rejudge form")


@step(timeout_seconds=300)
def write_version(storage_url: str, suite: str, data: bytes, expected_sha: str) -> tuple[str, str]:
    return write_judgments_version(storage_url, suite, data, expected_sha)


@step(timeout_seconds=300)
def keep_answers(storage_url: str, suite: str, rows: list[dict[str, Any]], stamp: str
                 ) -> tuple[str, list[dict[str, Any]]] | None:
    return publish_answers(storage_url, suite, rows, stamp)


@step(timeout_seconds=300)
def answers_time(storage_url: str, suite: str) -> str | None:
    return newest_answers_time(storage_url, suite)


@step(timeout_seconds=300)
def publish_left(storage_url: str, suite: str, left: list[dict[str, Any]], stamp: str) -> str | None:
    return publish_queue(storage_url, suite, left, stamp, keep_empty=True)


@step(timeout_seconds=60)
def show_queue(suite: str, pending: list[dict[str, Any]], queue_url: str) -> None:
    create_markdown_artifact(key=f"goldkeeper-{suite_slug(suite)}-queue", markdown=queue_markdown(suite, pending, queue_url),
                             description=f"{suite}: what is left of the re-judgment queue")


@step(timeout_seconds=60)
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


def ask(suite: str, items: list[dict[str, Any]], header: Callable[[list[str]], str], max_grade: int, key: str,
        reviewer: str, timeout: int, poll_interval: int, audit: bool = False,
        ) -> tuple[Any, list[list[int | None]], list[bool]]:
    """Pause for a batch's answers until they can be taken: a name that will do and no
    contradiction. Otherwise the form is asked again (under the next key, so a restarted run
    finds each answer where it was given) filled with what was given and the problems written
    above it (``header`` writes the form's top from them). The answers, and their grades and
    removals (``grades_of``)."""
    given: dict[str, Any] = {"reviewer": reviewer}
    problems: list[str] = []
    attempt = 1
    while True:
        form = answer_form(items, max_grade, header(problems), given, audit)
        answers = _wait_for(form, key if attempt == 1 else f"{key}-{attempt}", timeout, poll_interval)
        name = reviewer_problem(answers.reviewer)
        grades, removed, problems = grades_of(answers, items, max_grade)
        problems = ([f"Who is answering? {name}"] if name else []) + problems + quotes_of(answers, items, grades)[1]
        if not problems:
            return answers, grades, removed
        get_run_logger().error(f"{suite}: the answers were not taken, and the form is asked again: "
                               + "; ".join(problems))
        given = given_answers(answers)
        attempt += 1


def _key(prefix: str, items: list[dict[str, Any]]) -> str:
    return prefix + hashlib.sha256("\n".join(i["item_id"] for i in items).encode()).hexdigest()[:16]


def _labeler(answers: Any) -> str:
    return f"human:{' '.join(answers.reviewer.split())}"


@flow(name="goldkeeper-rejudge", log_prints=True, persist_result=True)
def rejudge(
    suite: str,
    storage_url: str | None = None,
    corpus_url: str | None = None,
    batch: int = 5,
    timeout: int = 86_400,
    poll_interval: int = 10,
    evaluate_after: bool = True,
    reviewer: str = "",
) -> dict[str, Any]:
    """Pause for people's answers on the suite's pending queue, ``batch`` items at a time,
    and write each batch's answers into a new judgments version; then evaluate the suite again
    (``evaluate_after``, when it has runs configured). ``corpus_url`` defaults to the suite's
    configured live corpus; ``reviewer`` fills the form's name (each batch after the first is
    filled with the name given before). Returns the counts, the versions and the answers' URLs."""
    storage_url = storage_root(storage_url)
    if batch < 1:
        raise ValueError(f"rejudge: batch is at least 1, got {batch}")
    config = read_suite_config(storage_url, suite)
    corpus_url = corpus_url or (config.corpus_url if config else None)
    if not corpus_url:
        raise ValueError(f"rejudge: suite '{suite}' has no live corpus configured; give corpus_url")
    done: dict[str, Any] = {"answered": 0, "replaced": 0, "removed": 0, "versions": [], "answers": [], "left": None}
    left: list[dict[str, Any]] = []
    answered_at = None  # when the answers this run applied were given
    audited = _audit(storage_url, suite, config.max_grade if config else 1, batch, reviewer, timeout, poll_interval)
    if audited is not None:
        done["audit"], reviewer = audited, audited.get("reviewer") or reviewer
        done["versions"] += [audited["version"]] if audited.get("version") else []
    while audited is None or not audited["stop"]:
        queue_url, queued = read_queue(storage_url, suite)
        data, sha = read_judgments(storage_url, suite)
        labels = judgment_rows_of(data, current_judgments_url(storage_url, suite))
        pending = pending_items(queued, labels)
        show_queue(suite, pending, queue_url)
        done["left"], left = len(pending), pending
        if len(pending) < len(queued):
            # The queue still lists items whose answers are in the judgments: a run killed
            # between writing the version and publishing what is left. Published now, at the
            # time those answers were given.
            answered_at = answers_time(storage_url, suite)
            queue_url = publish_left(storage_url, suite, pending, answered_at or now())
        if not pending:
            print(f"{suite}: nothing waits for a person in {queue_url}")
            break
        items = pending[:batch]
        grades = config.max_grade if config else max(1, max(label["relevance"] for label in labels))
        print(f"{suite}: waiting for answers on {len(items)} item(s); {Waiting.of(pending)}, in {queue_url}")
        waiting = Waiting.of(pending)
        answers, given, removed = ask(
            suite, items, lambda problems: batch_markdown(suite, len(items), waiting, grades, problems),  # noqa: B023
            grades, _key("answers-", items), reviewer, timeout, poll_interval)
        rows, skipped = grade_answers(items, given, removed, _labeler(answers), now(), quotes_of(answers, items, given)[0])
        reviewer = answers.reviewer
        applied = _apply(storage_url, suite, corpus_url, labels, sha, items, rows) if rows else None
        if applied is not None:
            done["answered"] += len(items) - len(skipped)
            done["replaced"] += applied["replaced"]
            done["removed"] += applied["removed"]
            done["versions"] += [applied["version"]] if applied["version"] else []
            done["answers"].append(applied["answers"])
        answered = {row["item_id"] for row in rows}
        left = walked([item for item in pending if item["item_id"] not in answered], skipped)
        answered_at = applied["labeled_at"] if applied else answered_at
        publish_left(storage_url, suite, left, answered_at or now())
        signal_answers(suite, len(answered), len(left), applied and applied["version"],
                       applied["replaced"] if applied else 0, queue_url)
        done["left"] = len(left)
        if answers.stop or not rows:
            show_queue(suite, left, queue_url)
            break
    create_markdown_artifact(
        key=f"goldkeeper-{suite_slug(suite)}-rejudge",
        markdown=(f"### goldkeeper re-judgment: {suite}\n\n{done['answered']} item(s) answered: {done['replaced']} "
                  f"label(s) re-judged, {done['removed']} removed; now {Waiting.of(left)}. New judgments "
                  f"version(s): {', '.join(f'`{v}`' for v in done['versions']) or 'none'}.\n"),
        description=f"{suite}: re-judgment",
    )
    if (done["versions"] or (audited or {}).get("done")) and evaluate_after and config is not None and config.runs:
        done["evaluation"] = evaluate_suite(suite, storage_url, generated_at=answered_at, return_state=True).message
    return done


@step(timeout_seconds=300, cache_policy=NO_CACHE)
def read_open_audit(storage_url: str, suite: str):
    from goldkeeper.io.storage import read_latest_audit

    return read_latest_audit(storage_url, suite)


@step(timeout_seconds=300)
def keep_audit(url: str, data: bytes) -> str:
    from goldkeeper.io.storage import publish_audit_people

    return publish_audit_people(url, data)


@step(timeout_seconds=600)
def judge_audit_of(rows, record, people, threshold: int = 1):
    from goldkeeper.core.evaluation import audit_for

    return audit_for(rows, record, people, threshold)


@step(timeout_seconds=300)
def returned_items(record: dict[str, Any], queue_url: str | None) -> list[dict[str, Any]]:
    """The queue with the judge's items back in it: its latest, then the items the judge
    answered from the queue it was given."""
    from goldkeeper.errors import GoldkeeperError
    from goldkeeper.io.storage import read_queue

    latest = read_queue(queue_url) if queue_url else []
    try:
        judged = read_queue(record["queue_url"]) if record.get("queue_url") else []
    except GoldkeeperError:
        judged = []
    wanted = set(record["judged_items"])
    seen = {item["item_id"] for item in latest}
    return latest + [item for item in judged if item["item_id"] in wanted and item["item_id"] not in seen]


def _audit(storage_url: str, suite: str, max_grade: int, batch: int, reviewer: str, timeout: int,
           poll_interval: int) -> dict[str, Any] | None:
    """People's audit of the suite's judge, when one is open and its labels are in use: the
    sample's items in batches (grades not shown; a candidate left off is 0), then people's
    labels kept beside the audit, the kappa, and below the floor the judge set aside (its
    labels replaced by those it replaced, its items back in the queue). None: nothing to audit."""
    from goldkeeper.core.sampling import people_labels
    from goldkeeper.dashboard import audit_batch_markdown

    found = read_open_audit(storage_url, suite)
    if found is None or found[2] is not None:
        return None
    url, record, _ = found
    data, sha = read_judgments(storage_url, suite)
    rows = judgment_rows_of(data, current_judgments_url(storage_url, suite))
    if judge_audit_of(rows, record, None) is None:
        return None
    items, people, name, stop = record["items"], [], reviewer, False
    for start in range(0, len(items), batch):
        part = items[start:start + batch]
        print(f"{suite}: waiting for the audit of items {start + 1} to {start + len(part)} of {len(items)}")
        answers, grades, _ = ask(
            suite, part, lambda problems: audit_batch_markdown(
                suite, start + 1, len(part), len(items), len(record["queries"]), max_grade, problems),  # noqa: B023
            max_grade, _key("audit-", part), name, timeout, poll_interval, audit=True)
        name, stop = answers.reviewer, bool(answers.stop)
        people += people_labels(rows, part, grades, _labeler(answers), now())
        if stop and start + batch < len(items):
            return {"done": False, "stop": True, "audited": start + len(part), "of": len(items), "reviewer": name}
    closed = close_audit(storage_url, suite, url, record, rows, sha, people)
    return {**closed, "done": True, "audited": len(items), "of": len(items), "reviewer": name, "stop": stop}


def close_audit(storage_url: str, suite: str, url: str, record: dict[str, Any], rows: list[dict[str, Any]],
                sha: str, people: list[dict[str, Any]]) -> dict[str, Any]:
    """People's labels on the audit at ``url`` kept beside it, the kappa, and below the floor
    the judge set aside: its labels replaced by those it replaced (in a new version of the
    judgments ``rows``, read at ``sha``) and its items back in the queue. Artifact and events."""
    from goldkeeper.core.sampling import set_aside
    from goldkeeper.dashboard import audit_markdown

    kept = keep_audit(url, b"".join(dump_rows(people)))
    audit = judge_audit_of(rows, record, people)
    below = audit is not None and audit.floor is not None and (audit.kappa is None or audit.kappa < audit.floor)
    version, returned = None, 0
    if below:
        version, _ = write_version(storage_url, suite, b"".join(dump_rows(set_aside(rows, record["replaced_labels"],
                                                                                   record["judged_items"]))), sha)
        queue_url, _ = read_queue(storage_url, suite)
        back = returned_items(record, queue_url)
        publish_left(storage_url, suite, back, now())
        returned = len({item["item_id"] for item in back} & set(record["judged_items"]))
    kappa = audit.kappa if audit is not None else None
    create_markdown_artifact(key=f"goldkeeper-{suite_slug(suite)}-audit",
                             markdown=audit_markdown(suite, record, kappa, below, returned),
                             description=f"{suite}: people's audit of the judge")
    signal_audit(suite, record, kappa, below, returned, kept)
    return {"kappa": kappa, "set_aside": below, "people": kept, "version": version}


@step(timeout_seconds=60)
def signal_audit(suite: str, record: dict[str, Any], kappa: float | None, below: bool, returned: int,
                 people_url: str) -> None:
    """The audit is answered (with its kappa); the judge set aside, when it fell below the floor."""
    figures = {"kappa": kappa, "kappa_floor": record.get("kappa_floor"), "queries": len(record["queries"]),
               "items": len(record["items"]), "set_aside": below, "people_url": people_url}
    signal("goldkeeper.audit.answered", suite, figures)
    if below:
        signal("goldkeeper.judge.set_aside", suite, {**figures, "returned": returned})


def _apply(storage_url: str, suite: str, corpus_url: str, labels, sha: str, items: list[dict[str, Any]],
           rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One batch's answer rows, kept on storage first (so that no answer is lost if the
    version cannot be written), then checked against the live corpus and merged into a new
    version."""
    kept, rows = keep_answers(storage_url, suite, rows, rows[0]["labeled_at"])
    live, fingerprint = live_chunks(corpus_url, [row["chunk_id"] for row in rows if row["chunk_id"] != "none"])
    queue = {item["item_id"]: item for item in items}
    applied = merge_answers(labels, check_form_answers(list(enumerate(rows, start=1)), queue, live), queue, live,
                            fingerprint)
    version = None
    if applied.replaced or applied.removed:
        version, _ = write_version(storage_url, suite, b"".join(dump_rows(applied.judgments)), sha)
    return {"replaced": applied.replaced, "removed": applied.removed, "version": version, "answers": kept,
            "labeled_at": rows[0]["labeled_at"]}
