"""The commands that run or reach Prefect: ``emit-reindex``, ``alert``, ``serve`` and ``demo``.
Each imports prefect when it runs, never at start."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Annotated, Any, Optional

import typer

from goldkeeper.cli.app import app, parse_cutoffs, use_prefect
from goldkeeper.errors import GoldkeeperError, UsageError


@app.command("emit-reindex")
def emit_reindex(
    corpus: Annotated[str, typer.Argument(help="The corpus name: the event is about goldkeeper.corpus.<name>.")],
    suite: Annotated[Optional[str], typer.Option("--suite", help="The suite to run (default: the corpus name).")] = None,
    snapshot_url: Annotated[Optional[str], typer.Option("--snapshot-url", help="The new snapshot (corpus.json or a sharded directory).")] = None,
    chunks_url: Annotated[Optional[str], typer.Option("--chunks-url", help="Or chunker output to snapshot first...")] = None,
    chunker: Annotated[Optional[str], typer.Option("--chunker", help="...with its chunker fingerprint (default: the suite's configured chunker, which the flow reads).")] = None,
    store_url: Annotated[Optional[str], typer.Option("--store-url", help="Or the vector store holding the chunks, as snapshot --store names it (spec/stores.md); the worker reads it.")] = None,
    store_field: Annotated[list[str], typer.Option("--store-field", help="With --store-url: as snapshot's --field NAME=FIELD. Repeat.")] = [],  # noqa: B006
    payload: Annotated[Optional[str], typer.Option("--payload", help="Extra JSON object for the event's payload.")] = None,
) -> None:
    """Emit goldkeeper.corpus.reindexed to the configured Prefect server, for indexers that do
    not use Prefect's SDK; a served or deployed on-reindex runs on it."""
    if not corpus or any(c.isspace() for c in corpus):
        raise UsageError(f"corpus: a name without spaces, got '{corpus}'")
    extra: dict[str, Any] = {}
    if payload:
        try:
            extra = json.loads(payload)
        except json.JSONDecodeError as error:
            raise UsageError(f"--payload: not JSON ({error.msg})") from None
        if not isinstance(extra, dict):
            raise UsageError("--payload: a JSON object")
    if sum(map(bool, (snapshot_url, chunks_url, store_url))) != 1:
        raise UsageError("give one of --snapshot-url, --chunks-url or --store-url (these two with --chunker, or the "
                         "suite's configured one)")
    if chunker and not (chunks_url or store_url):
        raise UsageError("--chunker: names the chunker of --chunks-url or --store-url, and there is none")
    if store_field and not store_url:
        raise UsageError("--store-field: maps the fields of --store-url, and there is none")
    if store_url:
        from goldkeeper.io.stores import FieldMap, parse_store

        parse_store(store_url)  # refused here, not on the worker
        FieldMap().with_given(store_field)
        if any("," in item for item in store_field):
            raise UsageError("--store-field: one NAME=FIELD each (a field's name has no comma)")
    use_prefect()
    from prefect.events import emit_event
    from prefect.settings import PREFECT_API_URL

    from goldkeeper.flows.lifecycle import REINDEX_EVENT

    if not PREFECT_API_URL.value():
        raise UsageError("no Prefect server is configured: set PREFECT_API_URL (the event would go nowhere)")
    resource = {"prefect.resource.id": f"goldkeeper.corpus.{corpus}"}
    for key, value in (("goldkeeper.suite", suite), ("goldkeeper.snapshot_url", snapshot_url),
                       ("goldkeeper.chunks_url", chunks_url), ("goldkeeper.chunker", chunker),
                       ("goldkeeper.store_url", store_url), ("goldkeeper.store_fields", ",".join(store_field))):
        if value:
            resource[key] = value
    from prefect.events.worker import EventsWorker

    event = emit_event(REINDEX_EVENT, resource=resource, payload=extra)
    if event is None:
        raise GoldkeeperError("Prefect did not accept the event")
    EventsWorker.drain_all()  # sent before this process exits
    sys.stdout.write(f"emitted {REINDEX_EVENT} {event.id} about {resource['prefect.resource.id']}\n")


@app.command()
def alert(
    webhook: Annotated[str, typer.Option("--webhook", help="The URL to post to (a Slack or Teams incoming webhook, or any HTTP endpoint).")],
    suite: Annotated[list[str], typer.Option("--suite", help="Only this suite (repeatable; default: every suite).")] = [],  # noqa: B006
) -> None:
    """Create the Prefect automation that posts to a webhook when an evaluation fails or
    cannot decide (goldkeeper.evaluation.failed / .indeterminate); run again to replace it."""
    if not webhook.startswith(("http://", "https://")):
        raise UsageError(f"--webhook: an http(s) URL, got '{webhook}'")
    use_prefect()
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value():
        raise UsageError("no Prefect server is configured: set PREFECT_API_URL (the automation would go nowhere)")
    from goldkeeper.flows.alerts import ALERT_NAME, create_alert

    automation = create_alert(webhook, suite or None)
    sys.stdout.write(f"created automation '{ALERT_NAME}' ({automation}): evaluations of "
                     f"{', '.join(suite) if suite else 'every suite'} that do not pass post to {webhook}\n")


@app.command()
def serve(
    storage: Annotated[Optional[str], typer.Option("--storage", help="Storage root URL for the flows (default: ./.goldkeeper).")] = None,
    k: Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs for the runs the lifecycle scores.")] = [],  # noqa: B006
    nightly_suite: Annotated[Optional[str], typer.Option("--nightly-suite", help="Score this suite on --cron...")] = None,
    nightly_judgments: Annotated[Optional[str], typer.Option("--nightly-judgments", help="...these judgments...")] = None,
    nightly_run: Annotated[Optional[str], typer.Option("--nightly-run", help="...against this run.")] = None,
    cron: Annotated[str, typer.Option("--cron", help="When the nightly evaluation runs (UTC).")] = "0 3 * * *",
) -> None:
    """Serve goldkeeper's deployments from this process, for single-box users without a work
    pool, each named "serve": on-reindex (run by every goldkeeper.corpus.reindexed event),
    rejudge, evaluate-suite and evaluate (run from the UI or `prefect deployment run`), and
    evaluate on --cron with --nightly-*."""
    use_prefect()
    from prefect import serve as prefect_serve
    from prefect.events import DeploymentEventTrigger

    from goldkeeper.flows.evaluate import evaluate
    from goldkeeper.flows.lifecycle import (
        REINDEX_EVENT,
        REINDEX_MATCH,
        REINDEX_PARAMETERS,
        evaluate_suite,
        on_reindex,
    )
    from goldkeeper.flows.rejudge import rejudge
    from goldkeeper.io.storage import default_root

    nightly = (nightly_suite, nightly_judgments, nightly_run)
    if any(nightly) and not all(nightly):
        raise UsageError("--nightly-suite, --nightly-judgments and --nightly-run go together")
    root = storage or default_root()
    cutoffs = {"k": parse_cutoffs(k)} if k else {}  # none given: the suite's configured cutoffs
    trigger = DeploymentEventTrigger(expect={REINDEX_EVENT}, match=REINDEX_MATCH, parameters=REINDEX_PARAMETERS)
    # Named "serve", so that they stand beside deployments/prefect.yaml's on one server.
    deployments = [
        on_reindex.to_deployment(name="serve", triggers=[trigger], parameters={"storage_url": root, **cutoffs}),
        rejudge.to_deployment(name="serve", parameters={"storage_url": root}),
        evaluate_suite.to_deployment(name="serve", parameters={"storage_url": root}),
    ]
    if all(nightly):
        deployments.append(evaluate.to_deployment(
            name="serve-nightly", cron=cron,
            parameters={"suite": nightly_suite, "judgments_url": nightly_judgments, "run_url": nightly_run,
                        "storage_url": root, "k": cutoffs.get("k", [10])}))
    else:
        deployments.append(evaluate.to_deployment(name="serve", parameters={"storage_url": root, **cutoffs}))
    prefect_serve(*deployments, print_starting_message=True)


@app.command()
def demo(
    storage: Annotated[Optional[str], typer.Option("--storage", help="Storage root URL (default: ./.goldkeeper).")] = None,
    judge: Annotated[bool, typer.Option("--judge", help="Also the judge's loop, on the suite help-center-judged: a STUB judge the demo starts on loopback (a rule, not a model) answers the queue, the demo's reviewer audits a sample, and the scores carry PPI++ intervals.")] = False,
) -> None:
    """The whole lifecycle on the example shipped in the package: a help center re-chunked
    after an edit, its judgments (made on the old chunks) checked for drift, fixed where sound,
    the rest queued for people, and two retrievers' runs scored on the result; on Prefect (a
    temporary local server unless PREFECT_API_URL names one) and local storage."""
    from importlib import resources

    use_prefect()
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import default_root, read_current_judgments, write_judgments_version

    example = resources.files("goldkeeper.examples") / "lifecycle"
    root = storage or default_root()
    suite = "help-center"
    try:
        read_current_judgments(root, suite)
    except GoldkeeperError:  # a fresh root: the judgments as people made them, on the old chunks
        write_judgments_version(root, suite, (example / "judgments.jsonl").read_bytes(), None)
    runs = [str(example / "run-a.jsonl"), str(example / "run-b.jsonl")]
    from goldkeeper.flows.evaluate import outcome_of

    state = on_reindex(suite=suite, chunks_url=str(example / "chunks-v2.jsonl"), chunker="sentences/v2",
                       run_urls=runs, storage_url=root, k=[1, 5], gates=["recall@1:0.4", "coverage:1"],
                       return_state=True)
    outcome = outcome_of(state)
    rejudged = _demo_rejudgment(root, suite, outcome, example, runs)
    drift = outcome["drift"]
    lines = [
        "",
        f"drift after the re-index: {drift['valid']} valid, {drift['re_anchorable']} re-anchorable, "
        f"{drift['merged']} merged, {drift['split']} split, {drift['orphaned']} orphaned",
        f"re-anchored {outcome['reanchored']} label(s); new judgments version: {outcome['judgments_version'] or 'none'}",
        f"{_waiting(outcome)}" + (f", in {outcome['queue_url']}" if outcome["queue_url"] else ""),
    ]
    for run_url, result in outcome["evaluations"].items():
        lines.append(f"{result.get('system') or run_url.rsplit('/', 1)[-1]}: verdict {result['verdict']}; "
                     f"report at {result['report_url']}")
        lines += [f"  {reason}" for reason in result["reasons"]]
        for metric, bracket in (result.get("bracket") or {}).items():
            lines.append(f"  {metric} {bracket['scored']:.4f} as scored, {bracket['found']:.4f} if every queued label "
                         "is found: the most the stale labels can explain")
        lines.append(f"  the suite's page (trend, chart, next steps): {result['pages']['page']}")
    if rejudged is not None:
        lines += ["", f"a reviewer's answers ({rejudged['applied']}) made a new judgments version, and now "
                      f"{rejudged['left']}; each run evaluated again on it:"]
        for name, result in rejudged["evaluations"].items():
            lines.append(f"{name}: verdict {result['verdict']}" + (f": {result['message']}" if result["verdict"] != "PASS" else ""))
            for metric, split in ((result.get("attribution") or {}).get("metrics") or {}).items():
                lines.append(f"  {metric} changed {split['change']:+.4f}: {split['labels']:+.4f} from the labels, "
                             f"{split['retriever']:+.4f} from the retriever")
    lines += [
        "",
        "Labels still queued score as misses until people re-judge them in the goldkeeper-rejudge flow's form.",
        f"The suite's trend, both systems: `goldkeeper history {suite} --storage {shlex.quote(root)}` "
        "(add `--html page.html` for its page with the chart).",
        "To see it all in the Prefect UI: run `prefect server start`, then, in another shell,",
        "`PREFECT_API_URL=http://127.0.0.1:4200/api goldkeeper demo --storage file://$PWD/.goldkeeper-ui`",
        "and open http://127.0.0.1:4200/runs and http://127.0.0.1:4200/artifacts.",
    ]
    if judge:
        lines += ["", *_demo_judge(root, example, runs)]
    sys.stdout.write("\n".join(lines) + "\n")


def _demo_judge(root: str, example: Any, runs: list[str]) -> list[str]:
    """The judge's loop on a suite of its own: the stub judge answers the queue, the demo's
    reviewer (answers.jsonl; a candidate it did not grade is 0) audits the sample the
    lifecycle drew, and the suite is evaluated on the audit. What it says, in lines."""
    from goldkeeper.core.jsonl import decode_jsonl
    from goldkeeper.core.sampling import people_labels
    from goldkeeper.examples.stub_judge import StubJudge
    from goldkeeper.flows.evaluate import outcome_of
    from goldkeeper.flows.judging import workload_line
    from goldkeeper.flows.lifecycle import evaluate_suite, on_reindex
    from goldkeeper.flows.rejudge import close_audit
    from goldkeeper.io.files import read_bytes
    from goldkeeper.io.loading import judgment_rows_of
    from goldkeeper.io.storage import (
        current_judgments_url,
        read_current_judgments,
        read_latest_audit,
        read_suite,
        write_judgments_version,
        write_suite,
    )
    from goldkeeper.models.suite import SuiteConfig

    suite = "help-center-judged"
    source = "answers.jsonl (the demo's reviewer)"
    given = {(a["item_id"], a["chunk_id"]): a["relevance"]
             for _, a in decode_jsonl((example / "answers.jsonl").read_bytes().splitlines(), source)}
    stub = StubJudge(_demo_truth(example, given), noise=0.1, model="stub-judge")
    url = stub.start()
    try:
        config = read_suite(root, suite, required=False)
        if config is None:
            write_judgments_version(root, suite, (example / "judgments.jsonl").read_bytes(), None)
            config = SuiteConfig(suite=suite, runs=runs, k=[1, 5], gates=["recall@1:0.4"], chunker="sentences/v2",
                                 max_grade=2, judge={"base_url": url, "model": "stub-judge", "audit_at_most": 3,
                                                     "kappa_floor": 0.4})
        write_suite(root, config.model_copy(update={"judge": config.judge.model_copy(update={"base_url": url})}))
        outcome = outcome_of(on_reindex(suite=suite, chunks_url=str(example / "chunks-v2.jsonl"), storage_url=root,
                                        return_state=True))
    finally:
        stub.stop()
    judged = outcome.get("judge")
    lines = [f"with a judge ({suite}): a STUB judge on loopback, {url} (no model: it gives the demo reviewer's "
             "grades, wrong one time in ten)"]
    if not judged:
        return [*lines, "  the re-index queued nothing new for the judge (run on a fresh --storage to see it)"]
    summary = judged["summary"]
    lines.append(f"  the judge graded {summary['graded']} of {summary['pairs']} candidate(s); {workload_line(judged['workload'])}")
    found = read_latest_audit(root, suite)
    if found is None:
        return lines
    audit_url, record, _ = found
    data, sha = read_current_judgments(root, suite)
    rows = judgment_rows_of(data, current_judgments_url(root, suite))
    grades = [[given.get((item["item_id"], c["chunk_id"]), 0) for c in item["candidates"]] for item in record["items"]]
    people = people_labels(rows, record["items"], grades, "human:demo-reviewer", "2026-11-20T10:00:00Z")
    closed = close_audit(root, suite, audit_url, record, rows, sha, people)
    kappa = "undefined" if closed["kappa"] is None else f"{closed['kappa']:.3f}"
    lines.append(f"  the demo's reviewer audited {len(record['items'])} item(s) of {len(record['queries'])} sampled "
                 f"queries ({record['rule']}): kappa {kappa}" + ("; the judge is set aside" if closed["set_aside"] else ""))
    state = evaluate_suite(suite=suite, storage_url=root, return_state=True)
    for name, result in outcome_of(state)["evaluations"].items():
        recall = json.loads(read_bytes(result["report_url"]))["metrics"]["recall@1"]
        low, high = recall["ci"]
        lines.append(f"  {result.get('system') or name}: recall@1 {recall['value']:.3f} [{low:.3f}, {high:.3f}] "
                     f"({recall['ci_method']}; the judge's labels alone say {recall['judge_value']:.3f}): "
                     f"{result['verdict']}; report at {result['report_url']}")
    lines.append("  (10 queries, 3 audited: an interval this wide is what so few can say; "
                 "bench/judge_workload.py runs 1,000)")
    return lines


def _demo_truth(example: Any, given: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """The stub's grades: the demo reviewer's, for every live chunk and every labelled query
    (a chunk the reviewer did not grade for it is 0)."""
    import json

    from goldkeeper.core.drift import queue_item_id, snapshot_rows

    chunks = list(snapshot_rows([json.loads(line) for line in (example / "chunks-v2.jsonl").read_text().splitlines()],
                                "sentences/v2"))
    truth = {}
    for line in (example / "judgments.jsonl").read_text().splitlines():
        label = json.loads(line)
        for chunk in chunks:
            truth[(label["query"], chunk["text"])] = given.get((queue_item_id(label), chunk["chunk_id"]), 0)
    return truth


def _waiting(outcome: dict[str, Any]) -> str:
    from goldkeeper.core.rejudge import Waiting

    waiting = outcome.get("waiting") or {}
    return str(Waiting(waiting.get("to_rejudge", 0), waiting.get("to_confirm", 0)))


def _demo_rejudgment(root: str, suite: str, outcome: dict[str, Any], example: Any, runs: list[str]) -> dict[str, Any] | None:
    """The demo's second day: a reviewer's answers to the queue (shipped with the example,
    answers.jsonl) merged into a new judgments version as `queue apply` does, and each run
    evaluated again on it, so every suite's trend has a judgments change to attribute. Once
    applied, nothing is done again."""
    from goldkeeper.core.jsonl import decode_jsonl
    from goldkeeper.core.judgments import dump_rows
    from goldkeeper.core.rejudge import Waiting, apply_answers, check_answers, pending_items
    from goldkeeper.flows.clock import now
    from goldkeeper.flows.evaluate import evaluate, outcome_of
    from goldkeeper.io.loading import judgment_rows_of
    from goldkeeper.io.snapshots import open_corpus
    from goldkeeper.io.storage import (
        current_judgments_url,
        read_current_judgments,
        read_queue,
        system_name,
        write_judgments_version,
    )

    if not outcome["queue_url"]:
        return None
    items = {item["item_id"]: item for item in read_queue(outcome["queue_url"])}
    source = "answers.jsonl (the demo's reviewer)"
    answers = [(n, a) for n, a in decode_jsonl((example / "answers.jsonl").read_bytes().splitlines(), source)
               if a["item_id"] in items]
    if not answers:
        return None
    data, sha = read_current_judgments(root, suite)
    snapshot = open_corpus(outcome["corpus_url"])
    wanted = {a["chunk_id"] for _, a in answers}
    live = {chunk.chunk_id: chunk for chunk in snapshot if chunk.chunk_id in wanted}
    applied = apply_answers(judgment_rows_of(data, "judgments"), check_answers(answers, items, live, source), items,
                            live, snapshot.corpus_fingerprint, source)
    if not (applied.replaced or applied.removed):
        return None
    write_judgments_version(root, suite, b"".join(dump_rows(applied.judgments)), sha)
    evaluations = {}
    stamp = now()
    for run_url in runs:
        name = system_name(run_url)
        evaluations[name] = outcome_of(evaluate(
            suite=suite, system=name, judgments_url=current_judgments_url(root, suite), run_url=run_url,
            storage_url=root, k=[1, 5], gates=["recall@1:0.4", "coverage:1"], corpus_url=outcome["corpus_url"],
            generated_at=stamp, return_state=True))
    left = Waiting.of(pending_items(items.values(), applied.judgments))
    return {"applied": f"{applied.replaced} label(s) re-judged", "left": str(left), "evaluations": evaluations}


