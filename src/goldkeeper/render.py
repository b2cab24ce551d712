"""What people read: rich text and markdown renderings of results. Machines get ``--format json``."""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from goldkeeper.core.drift import span_counts
from goldkeeper.core.rejudge import Waiting
from goldkeeper.models.frames import labelled

if TYPE_CHECKING:
    from rich.console import Console

    from goldkeeper.core.validation import ValidationResult

# rich loads with the first print_* call: markdown needs none of it.

__all__ = ["print_validation"]

#: Issues shown per code in text output; JSON output always has every one.
SHOWN_PER_CODE = 10


def print_validation(source: str, result: ValidationResult, console: Console | None = None) -> None:
    from rich.console import Console
    from rich.text import Text

    console = console or Console(highlight=False, soft_wrap=True)
    console.print(
        f"{source}: {result.labels} labels, {result.queries} queries, "
        f"{len(result.strata)} strata ({result.human_labels} human, "
        f"{result.synthetic_labels} synthetic labels)"
    )
    if not result.issues:
        console.print(Text("ok  no issues", style="green"))
        return
    shown: Counter[str] = Counter()
    totals = Counter(issue.code for issue in result.issues)
    for issue in result.issues:
        shown[issue.code] += 1
        if shown[issue.code] > SHOWN_PER_CODE:
            continue
        line = Text()
        if issue.severity == "error":
            line.append("error   ", style="bold red")
        else:
            line.append("warning ", style="yellow")
        line.append(f"[{issue.code}] ", style="dim")
        line.append(issue.message)
        console.print(line)
    for code, total in sorted(totals.items()):
        if total > SHOWN_PER_CODE:
            console.print(Text(f"        ... and {total - SHOWN_PER_CODE} more [{code}] (all of them with --format json)", style="dim"))
    errors = sum(1 for i in result.issues if i.severity == "error")
    warnings = len(result.issues) - errors
    verdict = Text("FAILED" if errors else "ok", style="bold red" if errors else "green")
    verdict.append(f"  {errors} error(s), {warnings} warning(s)", style="default")
    console.print(verdict)


_STATUS_STYLE = {"PASS": "bold green", "FAIL": "bold red", "INDETERMINATE": "bold yellow"}


def _document(report) -> dict:
    """A report as its JSON document (``Report.to_json_dict``): the report renderers read
    that, so ``score`` renders what it would print as JSON without importing pydantic to build a
    model first."""
    return report if isinstance(report, dict) else report.to_json_dict()


def _shown(measurement: dict) -> str:
    shown = f"{measurement['value']:.4f}"
    ci = measurement.get("ci")
    return shown if ci is None else shown + f" [{ci[0]:.4f}, {ci[1]:.4f}]"


def _metric_rows(document: dict) -> tuple[list[tuple[str, list[str]]], list[int]]:
    """Rows of (metric label, values by cutoff) in report order, and the cutoffs."""
    names: dict[str, dict[int, str]] = {}
    for metric_id, measurement in document["metrics"].items():
        name, _, k = metric_id.partition("@")
        names.setdefault(name, {})[int(k)] = _shown(measurement)
    ks = sorted({int(m.partition("@")[2]) for m in document["metrics"]})
    return [(labelled(name), [values.get(k, "") for k in ks]) for name, values in names.items()], ks


def paired_lines(verdicts: list[dict[str, Any]]) -> list[str]:
    """``eval --paired-sequential``'s verdicts for people: each challenger against the baseline,
    the mean difference and its anytime-valid interval at the look it settled at."""
    if not verdicts:
        return ["paired sequential comparison: no query with a relevant label to pair"]
    first = verdicts[0]
    lines = [f"paired sequential comparison on {first['metric']} against {first['baseline']} "
             f"(anytime-valid {1 - first['alpha']:.0%}; undecided fails):"]
    for verdict in verdicts:
        low, high = verdict["cs"]
        when = (f"settled after {verdict['looked']} paired queries ({verdict['of']} asked)"
                if verdict["decision"] != "undecided" else f"not settled after all {verdict['of']} paired queries")
        lines.append(f"  {verdict['challenger']}: {verdict['decision']}, {verdict['difference']:+.4f} "
                     f"[{low:+.4f}, {high:+.4f}], {when}")
    return lines


def sequential_line(spent: dict[str, Any]) -> str:
    """What sequential gates saved in a live evaluation."""
    seed = f" (order seed {spent['seed']})" if "seed" in spent else ""
    who = spent.get("by", "sequential gates")
    if not spent["saved"]:
        return (f"{who}: all {spent['of']} queries were asked before they settled (or used their "
                f"budget){seed}")
    return (f"{who} settled after {spent['asked']} of {spent['of']} queries{seed}: {spent['saved']} "
            f"({spent['saved'] / spent['of']:.0%}) never asked")


def measurement_lines(document: dict) -> list[str]:
    """Summarized metrics (``score --measurement``), one line each."""
    return [f"{name}: {_shown(found)} (mean of {found['n']} samples, Student-t interval)"
            for name, found in (document.get("measurements") or {}).items()]


def stratum_order(report, metric: str) -> list[tuple[str, dict, dict | None]]:
    """(name, stratum, measurement): scored strata by value then name, then unscored by name.
    ``report`` is a ``Report`` or its document; strata and measurements are JSON objects.

    Names compare by Unicode code point, never by locale (fixture ``stratum-order``)."""
    scored, unscored = [], []
    for name, stratum in (_document(report).get("per_stratum") or {}).items():
        value = stratum["metrics"].get(metric)
        if stratum["n"] > 0 and value is not None:
            scored.append((value["value"], name, stratum, value))
        else:
            unscored.append((name, stratum, None))
    return [(n, s, v) for _, n, s, v in sorted(scored, key=lambda r: (r[0], r[1]))] + sorted(
        unscored, key=lambda r: r[0]
    )


def _headline(document: dict) -> str:
    j = document["judgments"]
    line = (f"{j['queries']} judged queries, {j['queries_scored']} scored, {j['labels']} labels; "
            f"run coverage {document.get('coverage', 0):.1%}")
    spans = (document.get("inputs") or {}).get("spans")
    return line + ("\n" + spans_line(spans) if spans else "")


def spans_line(spans: dict) -> str:
    """What resolving the span labels did, in one line (a report's or a comparison's ``spans``)."""
    unresolved = spans["labels"] - spans["resolved"]
    return (f"{spans['resolved']} of {spans['labels']} span labels resolved to {spans['chunks']} chunks of the run's "
            f"snapshot ({spans['found_again']} found again after an edit, {spans['fuzzy']} of them fuzzily)"
            + (f"; {unresolved} scored as their chunk labels: {spans['gone']} gone, {spans['ambiguous']} ambiguous, "
               f"{spans['no_offsets']} in documents without offsets, {spans['no_chunk']} in text no chunk holds"
               if unresolved else ""))


def _strata_columns(document: dict) -> list[tuple[str, str | None]]:
    """The metrics the strata are shown by, each with the name of its worst stratum (None
    when no stratum was scored): the report's ``worst_stratum`` metric (recall at the first
    cutoff), which orders the rows, then each other metric a ``worst-stratum`` gate names, so
    the stratum a gate failed on is in the table too. Ties go as ``worst_stratum``'s."""
    from goldkeeper.core.gates import parse_gate
    from goldkeeper.core.scoring import worst_stratum

    worst = document.get("worst_stratum") or {}
    first = worst.get("metric") or next(iter(document["metrics"]), "")
    strata = document["per_stratum"]
    columns = [(first, worst.get("name") if not _all_equal(strata, first) else None)]
    for gate in document["verdict"].get("gates") or []:
        try:
            parsed = parse_gate(gate["expression"])
        except ValueError:  # a gate this version does not read (an older report's)
            continue
        if parsed.kind == "worst-stratum" and parsed.metric not in dict(columns):
            lowest = worst_stratum(strata, parsed.metric)
            columns.append((parsed.metric, (lowest and not _all_equal(strata, parsed.metric) and lowest["name"]) or None))
    return columns


def _all_equal(strata: dict, metric: str) -> bool:
    """True when every scored stratum has the same value of ``metric``: none is the worst."""
    values = {round(s["metrics"][metric]["value"], 12) for s in strata.values() if s["n"] and metric in s["metrics"]}
    return len(values) == 1 and sum(1 for s in strata.values() if s["n"]) > 1


def print_report(report, console: Console | None = None, *, per_query: bool = False) -> None:
    """A ``Report`` or its JSON document, as tables for people; ``per_query`` adds each
    query's values, one table per cutoff."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    document = _document(report)
    rows, ks = _metric_rows(document)
    if console is None:
        console = Console(highlight=False, soft_wrap=True)
        if not console.is_terminal:
            # Piped output has no width to fit: make it wide enough that no cell wraps.
            width = 16 + 26 * len(ks)
            if per_query:
                longest = max(map(len, document.get("per_query") or {"": 0}), default=0)
                width = max(width, longest + 3 + 14 * len(document["metrics"]) // max(len(ks), 1))
            console = Console(highlight=False, soft_wrap=True, width=max(80, width))
    console.print(_headline(document))
    if rows:
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("metric", no_wrap=True)
        for k in ks:
            table.add_column(f"@{k}", justify="right", no_wrap=True)
        for name, values in rows:
            table.add_row(name, *values)
        console.print(table)
    else:
        console.print(Text("no metric was computed", style="dim"))
    for line in [*measurement_lines(document), *judge_audit_lines(document)]:
        console.print(line)
    if document.get("per_stratum"):
        columns = _strata_columns(document)
        metric = columns[0][0]
        table = Table(title=f"{metric} by stratum", show_edge=False, pad_edge=False, title_justify="left")
        table.add_column("stratum")
        table.add_column("n", justify="right")
        for shown_metric, _ in columns:
            table.add_column(shown_metric, justify="right")
        table.add_column("")  # the worst stratum's mark, outside the values' right-aligned columns
        for name, stratum, _ in stratum_order(document, metric):
            values = [stratum["metrics"].get(m) if stratum["n"] else None for m, _ in columns]
            worst_of = [m for m, lowest in columns if lowest == name]
            mark = ("worst" if len(columns) == 1 else "worst " + ", ".join(worst_of)) if worst_of else ""
            table.add_row(name, str(stratum["n"]), *("not scored" if v is None else _shown(v) for v in values), mark)
        console.print(table)
    if per_query:
        for k, names, query_rows in _per_query_tables(document):
            table = Table(title=f"per query @{k}", show_edge=False, pad_edge=False, title_justify="left")
            table.add_column("query", no_wrap=True)
            for name in names:
                table.add_column(name, justify="right", no_wrap=True)
            for row in query_rows:
                table.add_row(*row)
            console.print(table)
    verdict = document["verdict"]
    for gate in verdict.get("gates") or []:
        console.print(Text(f"{gate['status']:<13} {gate['expression']}", style=_STATUS_STYLE[gate["status"]]))
    for reason in verdict["reasons"]:
        console.print(Text(f"- {reason}", style="dim"))
    console.print(Text(verdict["status"], style=_STATUS_STYLE[verdict["status"]]))


def report_trec(report) -> str:
    """trec_eval ``-q``'s layout: ``measure<TAB>query<TAB>value`` for every query in the
    report's order, then the means as query ``all``; measures are goldkeeper's metric ids."""
    document = _document(report)
    lines = [f"{metric:<22}\t{query}\t{value:.4f}"
             for query, values in (document.get("per_query") or {}).items() for metric, value in values.items()]
    lines += [f"{metric:<22}\tall\t{measurement['value']:.4f}" for metric, measurement in document["metrics"].items()]
    return "".join(line + "\n" for line in lines)


def _per_query_tables(document: dict) -> list[tuple[int, list[str], list[list[str]]]]:
    """(cutoff, metric names, rows of [query, values...]) for each cutoff of the report."""
    per_query = document.get("per_query") or {}
    ks = sorted({int(m.partition("@")[2]) for m in document["metrics"]})
    tables = []
    for k in ks:
        names = [m.partition("@")[0] for m in document["metrics"] if m.endswith(f"@{k}")]
        rows = [[query, *(f"{values[f'{name}@{k}']:.4f}" for name in names)] for query, values in per_query.items()]
        tables.append((k, names, rows))
    return tables


def report_markdown(report, *, per_query: bool = False) -> str:
    """A ``Report`` or its JSON document as GitHub-flavoured markdown, for CI step summaries
    and Prefect artifacts."""
    document = _document(report)
    verdict = document["verdict"]
    mark = "✅" if verdict["status"] == "PASS" else "❌"  # INDETERMINATE fails a gate too
    lines = [f"### {mark} goldkeeper: {verdict['status']}", "", _headline(document) + "."]
    d = document["judgments"].get("drift")
    if d is not None:
        lines.append(f"Drift against the live corpus: {d['valid']} valid, {d['re_anchorable']} re-anchorable, "
                     f"{d['merged']} merged, {d['split']} split, {d['orphaned']} orphaned "
                     f"(invalid ratio {d['invalid_ratio']:.1%}).")
    lines.append("")
    rows, ks = _metric_rows(document)
    if rows:
        lines.append("| metric | " + " | ".join(f"@{k}" for k in ks) + " |")
        lines.append("|---|" + "---:|" * len(ks))
        lines.extend(f"| {name} | " + " | ".join(values) + " |" for name, values in rows)
        lines.append("")
    spent = (document.get("retrieval") or {}).get("sequential")
    if spent:
        lines.extend([sequential_line(spent) + ".", ""])
    summarized = [*measurement_lines(document), *judge_audit_lines(document)]
    if summarized:
        lines.extend([*(f"- {line}" for line in summarized), ""])
    if document.get("per_stratum"):
        columns = _strata_columns(document)
        lines.append("| stratum | n | " + " | ".join(m for m, _ in columns) + " |")
        lines.append("|---|---:|" + "---:|" * len(columns))
        for name, stratum, _ in stratum_order(document, columns[0][0]):
            cells = []
            for shown_metric, lowest in columns:
                value = stratum["metrics"].get(shown_metric) if stratum["n"] else None
                cells.append((f"{value['value']:.4f}" if value else "not scored") + (" (worst)" if name == lowest else ""))
            lines.append(f"| {name} | {stratum['n']} | " + " | ".join(cells) + " |")
        lines.append("")
    if per_query:
        for k, names, rows in _per_query_tables(document):
            lines.append(f"| query @{k} | " + " | ".join(names) + " |")
            lines.append("|---|" + "---:|" * len(names))
            lines.extend("| " + " | ".join(row) + " |" for row in rows)
            lines.append("")
    for gate in verdict.get("gates") or []:
        lines.append(f"- **{gate['status']}** `{gate['expression']}`")
    lines.extend(f"- {reason}" for reason in verdict["reasons"])
    scored = document["judgments"].get("queries_scored") or 0
    if scored:
        judgments = ((document.get("inputs") or {}).get("judgments") or {}).get("url")
        lines.extend(["", resolution_line(scored, judgments)])
    return "\n".join(lines).rstrip("\n") + "\n"


def judge_audit_lines(document: dict[str, Any]) -> list[str]:
    """What people's audit of the judge says (``score --audit``): the sample and the kappa, and
    the judge's bias on each gated metric (the first metric when none is gated), in words."""
    from goldkeeper.core.trend import gated_metrics

    audit = document.get("audit")
    if not audit:
        return []
    if audit.get("pending"):
        return [f"The judge's labels wait for people's audit of {audit['pending']} sampled queries ({audit['rule']})."]
    kappa = "undefined" if audit["kappa"] is None else f"{audit['kappa']:.3f}"
    line = f"People audited {audit['queries']} queries; the judge agrees with them at kappa {kappa}"
    if audit["set_aside"]:
        return [line + f", below the floor of {audit['floor']:g}: its labels are set aside."]
    estimates = audit["estimates"]
    shown = [m for m in gated_metrics([g["expression"] for g in document["verdict"].get("gates") or []])
             if m in estimates] or list(estimates)[:1]
    return [line + " (PPI++ estimates, judge on every query, people on the sample).",
            *(f"{metric}: {estimates[metric]['statement']}" for metric in shown)]


def resolution_line(n: int, judgments: str | None = None) -> str:
    """What a gold set of ``n`` queries can resolve, in one sentence (``power``'s ladders, with
    the command that shows them for ``judgments``, where it is known and not stdin)."""
    from goldkeeper.core.power import resolution_ladders

    gold = resolution_ladders(n)
    here = next(row for row in gold["width_ladder"] if row["this_set"])
    needed = next(row["queries_needed"] for row in gold["queries_needed"] if (row["sd"], row["effect"]) == (0.3, 0.05))
    return (f"**What {n} queries can resolve:** a 0/1 metric near 0.5 has a 95% interval "
            f"{here['binary_width_at_0.5']:.3f} wide; a paired comparison needs at least "
            f"{gold['min_differing_for_alpha']} differing queries to reach p <= 0.05; a lift of 0.05 with "
            f"per-query differences of sd 0.3 needs {needed:,} queries"
            + (f" (`goldkeeper power -j {shlex.quote(judgments)}` for the ladders)." if judgments and judgments != "-"
               else " (goldkeeper power for the ladders)."))


_MOVES_SHOWN = 10


def print_drift(result, labels: int, console: Console | None = None) -> None:
    """Counts by status, the headline ratio, and what can be done about it."""
    from rich.console import Console
    from rich.text import Text

    console = console or Console(highlight=False, soft_wrap=True)
    summary = result.summary
    console.print(f"{labels} labels; labeled at {result.judgments_fingerprint or 'unknown'}, "
                  f"live corpus at {result.corpus_fingerprint or 'unknown'}")
    rows = [("VALID", "green", summary["valid"], "chunk_id still live"),
            ("RE_ANCHORABLE", "yellow", summary["re_anchorable"], "text moved to a new chunk_id"),
            ("MERGED", "yellow", summary["merged"], "text absorbed into a coarser chunk"),
            ("SPLIT", "yellow", summary["split"], "text now spans several chunks: needs a person"),
            ("ORPHANED", "red", summary["orphaned"], "text or document gone: needs a person")]
    for label, style, count, note in rows:
        line = Text(f"{count:>7}  ", style=style)
        line.append(f"{label:<14}")
        line.append(note, style="dim")
        console.print(line)
    if summary["invalid_ratio"] > 0:
        recoverable = summary["re_anchorable"] + summary["merged"]
        console.print(Text(f"{summary['invalid_ratio']:.1%} of the labels no longer match the live corpus: "
                           f"{recoverable} recoverable, {summary['split'] + summary['orphaned']} need a person",
                           style="bold"))
    else:
        console.print(Text("every label still points at the text it was written for", style="green"))
    spans = span_counts(result.findings)
    if spans:
        console.print(span_line(spans))
    moved = [entry for entry in result.documents if entry["found_in"]]
    for entry in moved[:_MOVES_SHOWN]:
        where = ", ".join(f"{uri} ({count})" for uri, count in entry["found_in"].items())
        console.print(f"page {entry['doc_uri']} {'became' if 'moved_to' in entry else 'lives on in part in'} {where}; "
                      f"{sum(entry['found_in'].values())} of its {entry['labels']} label(s) followed their text")
    if len(moved) > _MOVES_SHOWN:
        console.print(f"and {len(moved) - _MOVES_SHOWN} more moved page(s): see --format json's documents")


_SPAN_WORDS = {"by_offsets": "at their offsets", "by_quote": "by their quote", "by_fuzzy": "fuzzily"}
_UNSETTLED_WORDS = {"gone": "gone from their document", "ambiguous": "found more than once",
                    "no_offsets": "in a snapshot without offsets", "no_chunk": "held by no live chunk"}


def span_line(spans: dict[str, int]) -> str:
    """How drift settled the span labels whose chunk was gone (``core.drift.span_counts``)."""
    found = sum(spans.get(key, 0) for key in _SPAN_WORDS)
    how = ", ".join(f"{spans[key]} {words}" for key, words in _SPAN_WORDS.items() if spans.get(key))
    line = f"span labels: {found} found their passage again and re-anchor" + (f" ({how})" if how else "")
    left = [(key, n) for key, n in spans.items() if key not in _SPAN_WORDS]
    if left:
        line += "; " + ", ".join(f"{n} {_UNSETTLED_WORDS.get(key, key)}" for key, n in left) + (
            " (these keep what their chunk says)")
    return line


def drift_next(summary: dict[str, Any], judgments: str, corpus: str, *, fixed: bool, queue: str | None) -> list[str]:
    """What to run after ``drift``, in the reference's words: ``next: <command>, <why>``."""
    from shlex import quote

    base = f"goldkeeper drift -j {quote(judgments)} -c {quote(corpus)}"
    recoverable = summary["re_anchorable"] + summary["merged"]
    waiting = Waiting(summary["split"] + summary["orphaned"], summary["merged"])  # what the queue holds
    steps = []
    if recoverable and not fixed:
        steps.append(f"next: {base} --fix, to re-anchor the {recoverable} recoverable label(s)")
    if waiting.total and queue is None:
        steps.append(f"next: {base} --queue queue.jsonl, to list with candidates what waits for a person: "
                     f"{waiting.total} ({waiting.kinds()})")
    elif waiting.total:
        steps.append(f"next: answer {quote(queue or '')}, where {waiting}; then goldkeeper queue apply -j "
                     f"{quote(judgments)} --queue {quote(queue or '')} --answers answers.jsonl -c {quote(corpus)}")
    if not steps:
        steps.append(f"next: goldkeeper score -j {quote(judgments)} -r RUN, to score a run on labels that hold")
    return steps


def print_comparison(payload, console: Console | None = None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console(highlight=False, soft_wrap=True)
    console.print(f"baseline {payload['baseline']}, {payload['queries']} paired queries, alpha {payload['alpha']}")
    table = Table(show_edge=False, pad_edge=False)
    for name, justify in (("metric", "left"), ("challenger", "left"), ("diff", "right"), ("differ", "right"),
                          ("p (Holm)", "right"), ("floor", "right"), ("verdict", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    styles = {"better": "green", "worse": "red", "unresolvable": "yellow", "no difference detected": "dim"}
    for row in payload["comparisons"]:
        table.add_row(row["metric"], row["challenger"], f"{row['difference']:+.4f}", str(row["differing_pairs"]),
                      f"{row['p_holm']:.4f}", f"{row['min_attainable_p']:.4f}",
                      Text(row["verdict"], style=styles[row["verdict"]]))
    console.print(table)
    for line in _span_runs(payload):
        console.print(line)


def _span_runs(payload) -> list[str]:
    """For runs whose span labels resolved to their own snapshot's chunks: how, one line each."""
    return [f"{run['url']} over {run['corpus']['url']}: {spans_line(run['spans'])}"
            for run in payload.get("runs") or [] if run.get("spans")]


def comparison_markdown(payload) -> str:
    """A comparison as markdown, for CI step summaries and Prefect artifacts."""
    lines = [f"### goldkeeper compare: baseline `{payload['baseline']}`", "",
             f"{payload['queries']} paired queries, alpha {payload['alpha']}, "
             "paired randomization test with Holm's correction.", "",
             "| metric | challenger | diff | queries differing | p (Holm) | floor | verdict |",
             "|---|---|---:|---:|---:|---:|---|"]
    for row in payload["comparisons"]:
        verdict = f"**{row['verdict']}**" if row["verdict"] in ("better", "worse", "unresolvable") else row["verdict"]
        lines.append(f"| {row['metric']} | `{row['challenger']}` | {row['difference']:+.4f} | {row['differing_pairs']} "
                     f"| {row['p_holm']:.4f} | {row['min_attainable_p']:.4f} | {verdict} |")
    spans = _span_runs(payload)
    return "\n".join(lines + ([""] + [f"- {line}" for line in spans] if spans else [])) + "\n"


def print_certificate(payload, console: Console | None = None) -> None:
    """A calibration certificate: what is promised, on how many queries, and at what cost."""
    from rich.console import Console
    from rich.text import Text

    console = console or Console(highlight=False, soft_wrap=True)
    splits = payload["splits"]
    console.print(f"splits: temperature {splits['temperature']} / calibration {splits['calibration']} / "
                  f"evaluation {splits['evaluation']} queries (seed {payload['seed']}); "
                  f"temperature {payload['temperature']}")
    coverage, held, risk = payload["coverage"], payload["held_out"], payload["risk"]
    if coverage["certified"]:
        console.print(f"coverage: keep passages while the softmax mass before them is <= {coverage['quantile']:.6f}; "
                      f"a relevant passage is in the set with probability >= {1 - payload['alpha']:.0%}")
        if held["coverage"] is not None:
            console.print(f"  held out: coverage {held['coverage']:.1%}, mean {held['mean_k']:.2f} passages "
                          f"on {held['n']} queries")
        if coverage["cap_binds"]:
            console.print(Text(f"  --max-k truncated {coverage['cap_binds']:.1%} of the calibration sets: the cap, "
                               "not alpha, bounds coverage", style="yellow"))
    else:
        console.print(Text(f"coverage: NOT CERTIFIED: {coverage['n']} calibration queries cannot support alpha "
                           f"{payload['alpha']} (at least {coverage['minimum_n']} needed); send every passage",
                           style="red"))
    if risk["certified"] and risk.get("abstains_on_everything"):
        console.print(Text("risk: certified only by abstaining on every query: DEGENERATE, valid and useless",
                           style="red"))
    elif risk["certified"]:
        line = (f"risk: answer when the top score is >= {risk['threshold']:.6g}; with probability >= "
                f"{1 - payload['delta']:.0%} it answers without a relevant passage at most {payload['risk_alpha']:.0%} "
                f"of the time (observed {risk['empirical_risk']:.1%} on {risk['n']} queries, p = {risk['p_value']:.4f}, "
                f"abstains on {risk['abstention']:.1%})")
        console.print(Text(line, style="red" if risk["degenerate"] else ""))
        if risk["degenerate"]:
            console.print(Text("  DEGENERATE: it abstains on (nearly) every query", style="red"))
    else:
        console.print(Text(f"risk: NOT CERTIFIED at {payload['risk_alpha']:.0%} with confidence "
                           f"{1 - payload['delta']:.0%} on {risk['n']} queries", style="red"))
    blocked = risk.get("blocked_by")
    if blocked and blocked.get("queries_needed"):
        console.print(f"  the search stopped at {blocked['threshold']:.6g} (observed risk {blocked['empirical_risk']:.1%}); "
                      f"about {blocked['queries_needed']:,} calibration queries would settle it")
    excluded = {k: v for k, v in payload["excluded"].items() if v}
    if excluded:
        console.print("left out: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in excluded.items()))


def print_power(found: dict[str, Any], power: float, target: float | None) -> None:
    """``goldkeeper power``'s answer for people: what this gold set can resolve."""
    sys.stdout.write("\n".join(resolution_lines(found, power, target)) + "\n")


def resolution_lines(found: dict[str, Any], power: float, target: float | None) -> list[str]:
    """What a gold set can resolve, as ``power`` and ``eval`` print it."""
    metric = found["metric"]
    systems = found.get("systems", [])
    among = f"{systems[1]} vs {systems[0]}, " if len(systems) == 2 else ""
    lines = [f"resolution of this gold set ({among}{metric}):",
             f"  n = {found['n']} queries, per-query difference sd = {found['sd']:.3f} ({found['sd_source']})"]
    if "note" in found:
        lines.append(f"  {found['note']}")
    else:
        lines.append(f"  smallest detectable effect at {power:.0%} power: +{found['normal']['mde']:.3f} (normal), "
                     f"+{found['t']['mde']:.3f} (paired t)")
        if target is not None:
            lines.append(f"  queries needed to resolve +{target}: {found['normal']['queries_needed']:,} (normal), "
                         f"{found['t']['queries_needed']:,} (paired t)")
    if "gold_set" in found:
        lines += ["", *ladder_lines(found["gold_set"])]
    return lines


def _columns(label: str, cells: list[str], width: int = 9) -> str:
    return f"  {label:<24}" + "".join(f"{cell:>{width}}" for cell in cells)


def ladder_lines(gold: dict[str, Any]) -> list[str]:
    """What a gold set of n queries can resolve with no run: the three ladders of ``power``."""
    n, alpha = gold["n"], gold["alpha"]
    floors = gold["floor_ladder"]
    lines = [f"what {n} queries can resolve at all (alpha {alpha}, {gold['power']:.0%} power):",
             _columns("differing queries", [str(row["differing"]) for row in floors]),
             _columns("smallest attainable p", [f"{row['min_attainable_p']:.4f}" for row in floors]),
             f"  a paired comparison needs at least {gold['min_differing_for_alpha']} differing queries to reach "
             f"p <= {alpha}, whatever the systems", ""]
    widths = gold["width_ladder"]
    lines.append(_columns(f"{gold['confidence']:.0%} interval width",
                          [f"n={row['n']}" + ("*" if row["this_set"] else "") for row in widths]))
    for key, label in (("binary_width_at_0.5", "0/1 metric at 0.5"), ("binary_width_at_0.9", "0/1 metric at 0.9"),
                       ("graded_width_at_0.5", "graded, widest at 0.5")):
        lines.append(_columns(label, [f"{row[key]:.3f}" for row in widths]))
    lines.append("  (* this set; a width over 0.100 leaves even a figure's first decimal unsettled)")
    lines.append("")
    effects = sorted({row["effect"] for row in gold["queries_needed"]})
    lines.append(_columns("queries needed, by effect", [f"+{effect:.2f}" for effect in effects]))
    for sd in sorted({row["sd"] for row in gold["queries_needed"]}):
        cells = [f"{row['queries_needed']:,}" + ("*" if row["within_this_set"] else "")
                 for row in gold["queries_needed"] if row["sd"] == sd]
        lines.append(_columns(f"sd of differences {sd}", cells))
    lines.append(f"  (* within this set's {n} queries; `power --run BASE --run CAND` measures the sd)")
    return lines


def audit_lines(found: dict[str, Any]) -> list[str]:
    """``goldkeeper audit``'s answer for people (text and the markdown step summary)."""
    n, metric, value = found["n"], found["metric"], found["value"]
    lo, hi = found["interval"]
    lines = [f"{metric} = {value:.3f} on {n} queries"]
    if "successes" in found:
        lines.append(f"  that is {found['successes']}/{n} successes")
    lines.append(f"  bound: {found['bound']} ({found['bound_chosen']})")
    lines.extend(f"  note: {note}" for note in found["notes"])
    lines.append("")
    lines.append(f"  {found['confidence']:.0%} interval   [{lo:.3f}, {hi:.3f}]   width {hi - lo:.3f}   "
                 f"({found['interval_method']})")
    if found["wide"]:  # a narrow interval is not editorialised (as the page, and rag-eval-gate)
        lines.append(f"  The reported figure is {found['width_points']} points wide. Quoting it to two decimal "
                     f"places implies a precision {n} queries cannot deliver.")
    lift = found.get("lift")
    if not lift:
        return lines
    least, most, alpha = lift["differing_least"], lift["differing_most"], lift["alpha"]
    lines += ["", f"Claimed lift {lift['difference']:+.3f} over {lift['baseline']:.3f}"]
    if lift["determined"]:
        lines.append(f"  the two means determine it exactly: {most} of {n} queries differ")
    elif found["bound"] == "binary":
        lines.append(f"  between {least} and {most} of {n} queries differ, depending on which ones each system won")
    else:
        lines.append(f"  at least {least} of {n} queries differ (each moves the mean by at most 1/{n}), at most all")
    if lift["determined"]:
        lines.append(f"  smallest attainable p   {lift['min_attainable_p']:.4f}")
    else:
        lines.append(f"  smallest attainable p   {lift['min_attainable_p']:.4g} (best case) to "
                     f"{lift['min_attainable_p_worst']:.4g} (worst)")
    verdict = lift["verdict"]
    if verdict == "unresolvable":
        lines.append(f"  UNRESOLVABLE: even with {most} differing queries a paired test cannot reach p <= {alpha}, "
                     "so no outcome of that comparison could have been significant. This is a fact about the "
                     "sample size, not about the systems.")
    elif verdict == "possibly-unresolvable":
        lines.append("  POSSIBLY UNRESOLVABLE: it depends on which queries each system won, which the table "
                     "does not say; ask for the per-query scores or the paired test.")
    else:
        lines.append("  resolvable in principle: whether it was resolved needs the paired test on the per-query values")
    if lift["queries_to_resolve"]:
        lines.append(f"  queries to resolve a lift of {abs(lift['difference']):.3f} at {lift['power']:.0%} power: "
                     f"{lift['queries_to_resolve']:,}")
        lines.append(f"    (assuming {lift['assumed_spread']}, sd {lift['assumed_sd']:.3f})")
    return lines


def print_audit(found: dict[str, Any]) -> None:
    sys.stdout.write("\n".join(audit_lines(found)) + "\n")


def print_agreement(found: dict[str, Any], threshold: int) -> None:
    """``goldkeeper agreement``'s answer for people: the judge against the hand labels."""
    lines = [f"{found['pairs']} pairs labelled by both a person and the judge "
             f"({found['human_only']} by people only, {found['judge_only']} by the judge only)"]
    if found["pairs"]:
        kappa = found["kappa"]
        lines.append(f"  relevant at grade >= {threshold}: people {found['base_rate']['human']:.1%}, "
                     f"judge {found['base_rate']['judge']:.1%} (bias {found['judge_bias']:+.1%})")
        lines.append(f"  agreement {found['observed_agreement']:.1%}, by chance {found['chance_agreement']:.1%}; "
                     f"Cohen's kappa " + ("undefined" if kappa is None else f"{kappa:.3f}"))
        if found.get("weighted_kappa") is not None:
            lines.append(f"  quadratic-weighted kappa on grades {found['weighted_kappa']:.3f}")
        share = found.get("relevant_share")
        if share:
            low, high = share["ppi"]["ci"]
            lines.append(f"  share relevant over all {share['ppi']['labeled'] + share['ppi']['unlabeled']} judged pairs: "
                         f"[{low:.3f}, {high:.3f}] by PPI++ (judge alone says {share['judge_only']:.3f}, "
                         f"the {share['ppi']['labeled']} hand labels {share['hand_labels_only']:.3f})")
            lines.append(f"  {share['ppi']['statement']}")
    if found.get("note"):
        lines.append(f"  {found['note']}")
    sys.stdout.write("\n".join(lines) + "\n")
