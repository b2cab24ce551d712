"""``suite init|set|show`` and ``history``: a suite's configuration on storage, and its trend."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any, Optional

import typer

from goldkeeper.cli.app import (
    GATE_HELP,
    FormatOption,
    OutputFormat,
    app,
    emit_json,
    kappa,
    parse_cutoffs,
    queries,
    use_prefect,
    width,
)
from goldkeeper.errors import UsageError
from goldkeeper.io.files import source_name
from goldkeeper.models.records import MAX_RELEVANCE

suite_app = typer.Typer(help="A suite's configuration on storage: what the flows score, how, and on which corpus.",
                        no_args_is_help=True)
app.add_typer(suite_app, name="suite")

StorageOption = Annotated[Optional[str], typer.Option(
    "--storage", help="Storage root URL (default: $GOLDKEEPER_STORAGE, else ./.goldkeeper).")]
SuiteRuns = Annotated[list[str], typer.Option("--run", "-r", help="A run file to score on each evaluation (URL). Repeat.")]
SuiteK = Annotated[list[str], typer.Option("-k", "--k", help="Cutoffs, e.g. 5,10.")]
SuiteGates = Annotated[list[str], typer.Option("--gate", help=GATE_HELP)]
SuiteCorpus = Annotated[Optional[str], typer.Option("--corpus", help="The live corpus snapshot (manifest.json or corpus.json).")]
SuiteChunker = Annotated[Optional[str], typer.Option("--chunker", help="Chunker fingerprint for events naming chunker output.")]
SuiteSchedule = Annotated[Optional[str], typer.Option("--schedule", help="Cron (UTC) for the nightly evaluation; 'off' for none.")]
SuiteGrade = Annotated[Optional[int], typer.Option("--max-grade", min=1, max=MAX_RELEVANCE, help="Top of the relevance scale reviewers grade on.")]


def _suite_changes(run: list[str], k: list[str], gate: list[str], corpus: str | None, chunker: str | None,
                   schedule: str | None, max_grade: int | None) -> dict[str, Any]:
    """The fields a `suite init` or `suite set` gives: only those named on the command line."""
    changes: dict[str, Any] = {}
    if run:
        changes["runs"] = run
    if k:
        changes["k"] = parse_cutoffs(k)
    if gate:
        from goldkeeper.core.gates import parse_gate

        changes["gates"] = [] if gate == ["none"] else gate
        for expression in changes["gates"]:
            try:
                parse_gate(expression)
            except ValueError as error:
                raise UsageError(f"--gate: {error}") from None
    for name, value in (("corpus_url", corpus), ("chunker", chunker), ("max_grade", max_grade)):
        if value is not None:
            changes[name] = value
    if schedule is not None:
        changes["schedule"] = None if schedule == "off" else schedule
    return changes


def _suite_config(values: dict[str, Any], what: str):
    from pydantic import ValidationError

    from goldkeeper.models.suite import SuiteConfig

    try:
        return SuiteConfig.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "suite"
        raise UsageError(f"{what}: {field}: {first['msg'].removeprefix('Value error, ')}") from None


def _say_suite(root: str, config, url: str, verb: str, schedule_changed: bool) -> None:
    """What was written; and, when the schedule was given, the server's schedule made to match."""
    from goldkeeper.io.storage import current_judgments_url

    sys.stdout.write(f"{verb} {url}\n" + _suite_text(config, current_judgments_url(root, config.suite)))
    if schedule_changed:
        use_prefect()
        from goldkeeper.flows.schedules import apply_schedule

        sys.stdout.write(apply_schedule(config, root) + "\n")


def _suite_text(config, judgments_url: str) -> str:
    runs = "".join(f"\n  {run}" for run in config.runs) or " none (the lifecycle re-anchors and queues, and scores nothing)"
    return (f"suite {config.suite}\n"
            f"judgments: {judgments_url}\n"
            f"runs:{runs}\n"
            f"k: {', '.join(map(str, config.k))}; gates: {', '.join(config.gates) or 'none'}\n"
            f"corpus: {config.corpus_url or 'none yet (the next re-index sets it)'}"
            + (f"; chunker {config.chunker}" if config.chunker else "") + "\n"
            f"schedule: {config.schedule + ' UTC' if config.schedule else 'off (events only)'}; "
            f"grades 0 to {config.max_grade}\n"
            + (f"judge: {config.judge.model} at {config.judge.base_url}; people audit "
               + (f"enough queries for an interval {config.judge.audit_width:g} wide" if config.judge.audit_width
                  else "every query") + (f", at most {config.judge.audit_at_most}" if config.judge.audit_at_most else "")
               + (f"; kappa floor {config.judge.kappa_floor:g}" if config.judge.kappa_floor is not None else "")
               + ("; it proposes spans" if config.judge.spans else "") + "\n"
               if config.judge else "judge: none (people answer the whole queue)\n"))


@suite_app.command("init")
def suite_init(
    suite: Annotated[str, typer.Argument(help="The suite's name.")],
    judgments: Annotated[Optional[str], typer.Option("--judgments", "-j", help="Judgments JSONL to start from, copied to the suite's current version (omit it when the suite already has judgments on storage).")] = None,
    run: SuiteRuns = [],  # noqa: B006
    k: SuiteK = [],  # noqa: B006
    gate: SuiteGates = [],  # noqa: B006
    corpus: SuiteCorpus = None,
    chunker: SuiteChunker = None,
    schedule: SuiteSchedule = None,
    max_grade: SuiteGrade = None,
    storage: StorageOption = None,
) -> None:
    """Configure a suite on storage (suites/<suite>.json) and seed its judgments
    (judgments/<suite>/current.jsonl) from a local or remote file, so that an event or a
    deployment has only to name the suite. A suite whose judgments are already on storage
    (a flow or `demo` made them) is configured with those."""
    from goldkeeper.core.judgments import parse_judgments
    from goldkeeper.errors import MissingError
    from goldkeeper.io.files import read_bytes
    from goldkeeper.io.storage import (
        current_judgments_url,
        default_root,
        read_current_judgments,
        read_suite,
        write_judgments_version,
        write_suite,
    )

    root = storage or default_root()
    if read_suite(root, suite, required=False) is not None:
        raise UsageError(f"suite '{suite}' is already configured in {root}: change it with `goldkeeper suite set`")
    try:
        existing, sha = read_current_judgments(root, suite)
    except MissingError:
        existing, sha = None, None
    if judgments is None and existing is None:
        raise UsageError(f"suite '{suite}' has no judgments in {root}: give --judgments FILE to start from")
    data = existing if judgments is None else read_bytes(judgments)
    if existing is not None and existing != data:
        raise UsageError(f"suite '{suite}' already has other judgments in {root} (a fix or a re-judgment made them); "
                         "they are kept: omit --judgments to configure the suite with them")
    source = source_name(judgments) if judgments is not None else current_judgments_url(root, suite)
    labels = parse_judgments(data, source)
    if not labels:
        raise UsageError(f"{source}: holds no judgments; a suite starts from at least one label")
    values = {"suite": suite, "max_grade": max(1, max(label.relevance for label in labels)),
              **_suite_changes(run, k, gate, corpus, chunker, schedule, max_grade)}
    config = _suite_config(values, f"suite {suite}")
    if existing is None:
        write_judgments_version(root, suite, data, sha)
    _say_suite(root, config, write_suite(root, config), "wrote", schedule is not None)


@suite_app.command("set")
def suite_set(
    suite: Annotated[str, typer.Argument(help="The suite's name.")],
    run: SuiteRuns = [],  # noqa: B006
    k: SuiteK = [],  # noqa: B006
    gate: SuiteGates = [],  # noqa: B006
    corpus: SuiteCorpus = None,
    chunker: SuiteChunker = None,
    schedule: SuiteSchedule = None,
    max_grade: SuiteGrade = None,
    judge_url: Annotated[Optional[str], typer.Option("--judge-url", help="An OpenAI-compatible endpoint whose LLM judge answers the queue first (spec/judge.md); 'off' for none.")] = None,
    judge_model: Annotated[Optional[str], typer.Option("--judge-model", help="The judge's model, as the endpoint knows it.")] = None,
    judge_key_env: Annotated[Optional[str], typer.Option("--judge-key-env", help="The environment variable (on the worker) holding the judge's API key.")] = None,
    audit_width: Annotated[Optional[float], typer.Option("--audit-width", callback=width, help="People audit enough queries for a 95% interval this wide from them alone (default 0.2).")] = None,
    audit_at_most: Annotated[Optional[int], typer.Option("--audit-at-most", callback=queries, help="People audit at most this many queries.")] = None,
    kappa_floor: Annotated[Optional[float], typer.Option("--kappa-floor", callback=kappa, help="Below this kappa on the audit the judge is set aside and people answer the whole queue.")] = None,
    judge_spans: Annotated[Optional[bool], typer.Option("--judge-spans/--no-judge-spans", help="The judge also quotes the words that answer; its labels carry them as spans, proposed by the judge (spec/spans.md).")] = None,
    storage: StorageOption = None,
) -> None:
    """Change a suite's configuration: each option given replaces that field (--run and
    --gate replace the whole list; --gate none clears the gates, --schedule off the schedule,
    --judge-url off the judge)."""
    from goldkeeper.io.storage import default_root, read_suite, write_suite

    root = storage or default_root()
    changes = _suite_changes(run, k, gate, corpus, chunker, schedule, max_grade)
    current = read_suite(root, suite).model_dump()
    judge = {name: value for name, value in (("base_url", judge_url), ("model", judge_model),
                                             ("api_key_env", judge_key_env), ("audit_width", audit_width),
                                             ("audit_at_most", audit_at_most), ("kappa_floor", kappa_floor),
                                             ("spans", judge_spans))
             if value is not None}
    if judge_url == "off":
        changes["judge"] = None
    elif judge:
        if current.get("judge") is None and not {"base_url", "model"} <= judge.keys():
            raise UsageError(f"suite {suite} has no judge yet: give --judge-url and --judge-model")
        changes["judge"] = {**(current.get("judge") or {}), **judge}
    if not changes:
        raise UsageError("nothing to change: give at least one of --run, -k, --gate, --corpus, --chunker, "
                         "--schedule, --max-grade, --judge-url")
    config = _suite_config({**current, **changes}, f"suite {suite}")
    _say_suite(root, config, write_suite(root, config), "wrote", schedule is not None)


@suite_app.command("show")
def suite_show(
    suite: Annotated[str, typer.Argument(help="The suite's name.")],
    storage: StorageOption = None,
    output: FormatOption = OutputFormat.text,
) -> None:
    """A suite's configuration, and where its judgments are."""
    from goldkeeper.io.storage import current_judgments_url, default_root, read_suite

    root = storage or default_root()
    config = read_suite(root, suite)
    if output is OutputFormat.json:
        emit_json({**config.model_dump(mode="json"), "judgments_url": current_judgments_url(root, suite)})
    else:
        sys.stdout.write(_suite_text(config, current_judgments_url(root, suite)))


@app.command()
def history(
    suite: Annotated[str, typer.Argument(help="The suite whose evaluations to show.")],
    storage: Annotated[Optional[str], typer.Option("--storage", help="Storage root URL the flows published to (default: ./.goldkeeper).")] = None,
    html: Annotated[Optional[str], typer.Option("--html", help="Also write the suite's page (trend, chart, latest report) here.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text, json or markdown.")] = "text",
) -> None:
    """A suite's trend: every evaluation's time, judgments and corpus versions (a change
    marked), the gated metrics with intervals and the change from the previous comparable
    evaluation, and the verdict; --html writes the page the flows publish."""
    from goldkeeper.core.trend import gate_thresholds, gated_metrics, trend_points
    from goldkeeper.dashboard import suite_page, summary_markdown, trend_chart_svg, trend_markdown
    from goldkeeper.io.files import read_bytes, write_bytes_atomic
    from goldkeeper.io.storage import default_root, read_history

    if fmt not in ("text", "json", "markdown"):
        raise UsageError(f"--format: text, json or markdown, got '{fmt}'")
    root = storage or default_root()
    entries = read_history(root, suite)
    if not entries:
        raise UsageError(f"suite '{suite}': no evaluation in {root} (history/ holds none for it)")
    gates = [g["expression"] for g in entries[-1].get("gates") or []]
    metrics = gated_metrics(gates) or list(entries[-1]["metrics"])[:2]
    points = trend_points(entries, metrics)
    if fmt == "json":
        sys.stdout.write(json.dumps({"suite": suite, "metrics": metrics, "points": points}, indent=2) + "\n")
    else:
        sys.stdout.write(trend_markdown(suite, points, metrics))
    if html:
        document = json.loads(read_bytes(entries[-1]["report"]))
        if points[-1]["previous"] is not None:
            points[-1]["previous_entry"] = entries[points[-1]["previous"]]
        summary = summary_markdown(suite, document, report_link=None, report_location=entries[-1]["report"],
                                   point=points[-1])
        chart = trend_chart_svg(suite, points, metrics, gate_thresholds(gates))
        write_bytes_atomic(html, suite_page(suite, points, metrics, document, chart, summary).encode("utf-8"))
        sys.stderr.write(f"the suite's page: file://{os.path.abspath(html)}\n")


