"""What an ops person sees of a suite on the Prefect UI and on its HTML page: the verdict in
one line, the gated metrics against their thresholds, the drift in words, the trend as a
table and a chart, and what to do next.

Values are shown at 4 decimals, intervals too; a link is one a browser can open or none at
all (a local path is shown as text). Everything here renders values it is given: the flows
fetch, score and publish.
"""

from __future__ import annotations

import html
import io
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from goldkeeper.core.gates import parse_gate
from goldkeeper.core.rejudge import Waiting, overlap
from goldkeeper.core.trend import gate_thresholds, gated_metrics, latest_by_system, systems
from goldkeeper.render import report_markdown

__all__ = [
    "NOTHING_WAITS",
    "batch_markdown",
    "candidate_markdown",
    "description_blocks",
    "drift_markdown",
    "grade_words",
    "item_markdown",
    "metric_rows",
    "queue_markdown",
    "suite_page",
    "summary_markdown",
    "trend_chart_svg",
    "trend_markdown",
    "verdict_line",
]

#: The longest state message: Prefect shows it on the run page and in lists.
_MESSAGE_CHARS = 240


def _f(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _interval(measurement: Mapping[str, Any] | None) -> str:
    ci = (measurement or {}).get("ci")
    return "" if not ci else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def _gates(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(document["verdict"].get("gates") or [])


def verdict_line(document: Mapping[str, Any]) -> str:
    """The verdict in one line, without the status that every place shows beside it: why it
    did not pass (the failing and undecided gates' reasons, else the first reason), or that
    every gate passed."""
    verdict = document["verdict"]
    gates = _gates(document)
    reasons = list(verdict.get("reasons") or [])
    if verdict["status"] == "PASS":
        line = f"{len(gates)} gate(s) passed" if gates else "no gate failed"
    else:
        open_gates = sum(1 for gate in gates if gate["status"] != "PASS")
        shown = reasons[-open_gates:] if open_gates and len(reasons) >= open_gates else reasons[:1]
        line = "; ".join(shown) or verdict["status"]
    return line if len(line) <= _MESSAGE_CHARS else line[: _MESSAGE_CHARS - 3] + "..."


def metric_rows(document: Mapping[str, Any]) -> list[dict[str, str]]:
    """The overall metrics as table rows for people: the gated ones first, each with its
    interval, its threshold and whether its gates passed; values at 4 decimals."""
    gates = _gates(document)
    by_metric: dict[str, list[dict[str, Any]]] = {}
    for gate in gates:
        try:
            parsed = parse_gate(gate["expression"])
        except ValueError:
            continue
        by_metric.setdefault(parsed.metric, []).append(gate)
    floors = gate_thresholds([g["expression"] for g in gates])
    metrics = document["metrics"]
    order = [m for m in metrics if m in by_metric] + [m for m in metrics if m not in by_metric]
    rows = []
    for metric in order:
        measurement = metrics[metric]
        gated = by_metric.get(metric, [])
        rows.append({
            "metric": metric,
            "value": _f(measurement["value"]),
            "interval": _interval(measurement),
            "n": "" if measurement.get("n") is None else str(measurement["n"]),
            "threshold": "" if metric not in floors else f"{floors[metric]:g}",
            "gate": ", ".join(f"{g['status']} ({g['expression']})" for g in gated),
        })
    return rows


NOTHING_WAITS = Waiting(0, 0)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None) -> list[str]:
    right = right or [False] * len(header)
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if r else "---" for r in right) + "|",
            *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)]


def drift_markdown(suite: str, summary: Mapping[str, Any], reanchored: int, waiting: Waiting,
                   version: str | None, queue_location: str | None,
                   documents: Sequence[Mapping[str, Any]] = ()) -> str:
    """The drift after a re-index, before and after the fix, in words; and the pages that
    moved (``documents``: the document map), page by page."""
    total = sum(summary[name] for name in ("valid", "re_anchorable", "merged", "split", "orphaned"))
    after_valid = summary["valid"] + reanchored
    rows = [
        ("still point at their text", summary["valid"], after_valid),
        ("text moved to another chunk (fixed)", summary["re_anchorable"] + summary["merged"],
         summary["re_anchorable"] + summary["merged"] - reanchored),
        ("text split across chunks (needs a person)", summary["split"], summary["split"]),
        ("text gone or edited (needs a person)", summary["orphaned"], summary["orphaned"]),
    ]
    stale_after = total - after_valid
    lines = [f"### Drift after the re-index: {suite}", "",
             f"Of {total} labels, {summary['valid']} still pointed at the text they were written for. "
             f"goldkeeper re-anchored {reanchored}"
             + (f" in a new judgments version (`{version}`)" if version else "")
             + f"; {waiting}" + ("; those to re-judge count as misses until answered." if waiting.rejudge else "."), "",
             *_table(["labels", "before the fix", "after the fix"], [(r[0], r[1], r[2]) for r in rows], [False, True, True]),
             "",
             f"Labels that no longer match the live corpus: {summary['invalid_ratio']:.1%} before the fix, "
             f"{(stale_after / total if total else 0):.1%} after.", ""]
    lines += document_moves(documents)
    lines += _next_steps(suite, waiting, queue_location, [], None)
    return "\n".join(lines).rstrip("\n") + "\n"


#: Pages of the document map shown in an artifact; the rest are counted.
_MOVES_SHOWN = 25


def document_moves(documents: Sequence[Mapping[str, Any]]) -> list[str]:
    """The document map as a reader takes it in: each page that is gone but whose labels'
    texts live on, and where (most labels first), then how many pages are gone for good."""
    found = [entry for entry in documents if entry["found_in"]]
    gone = len(documents) - len(found)
    if not documents:
        return []
    lines = ["#### Pages that moved", ""]
    if found:
        found.sort(key=lambda entry: (-entry["labels"], entry["doc_uri"]))
        rows = [(f"`{entry['doc_uri']}`",
                 ("became " if "moved_to" in entry else "in part: ")
                 + ", ".join(f"`{uri}` ({count})" for uri, count in entry["found_in"].items()),
                 f"{sum(entry['found_in'].values())} of {entry['labels']}") for entry in found[:_MOVES_SHOWN]]
        lines += ["A page that is gone whose labelled texts live on in other pages; its labels followed them "
                  "(MERGED or SPLIT across documents) and count where their text is now.", "",
                  *_table(["page before", "where its text is now (labels)", "labels found"], rows, [False, False, True]),
                  ""]
        if len(found) > _MOVES_SHOWN:
            lines += [f"and {len(found) - _MOVES_SHOWN} more pages (all of them in the drift JSON's `documents`).", ""]
    if gone:
        lines += [f"{gone} labelled page(s) are gone, with no live page holding their labels' text.", ""]
    return lines


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~-])")

#: Why each status needs a person, as a reviewer reads it.
_WHY = {
    "SPLIT": "the judged text now spans several chunks; grade each piece (one, several or all may carry the answer)",
    "MERGED": "the judged text was absorbed into a bigger chunk (the label was moved there); check the bigger chunk "
              "still deserves the grade",
    "ORPHANED": "the judged text is gone or was edited; the closest live chunks of its document are below",
    "UNJUDGED": "the runs rank these chunks in their top k and nobody had graded them for this query; grade each",
}


#: Why an item without candidates needs a person.
_WHY_ALONE = "the judged text is gone or was edited, and no live chunk of its document shares its words"


def _escaped(text: str) -> str:
    """Text shown literally in markdown, on one paragraph."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", re.sub(r"\s+", " ", text))


def _marked(judged: str | None, text: str) -> str:
    """A candidate's text with what it shares with the judged text in bold."""
    if not judged:
        return _escaped(text)
    out = []
    for piece, shared in overlap(judged, text):
        shown = _escaped(piece)
        if shared and shown.strip():
            lead, core, tail = shown[: len(shown) - len(shown.lstrip())], shown.strip(), shown[len(shown.rstrip()):]
            shown = f"{lead}**{core}**{tail}"
        out.append(shown)
    return "".join(out)


def grade_words(grade: int, max_grade: int) -> str:
    """A grade above 0 on the suite's scale, in words, as the form's switches name it."""
    if max_grade == 1:
        return "answers the query"
    if grade == max_grade:
        return f"fully answers the query ({grade} of {max_grade})"
    return f"answers it in part ({grade} of {max_grade})"


#: Blocks of a form field's description: Prefect's UI runs paragraphs separated by one blank
#: line together (a quote swallows what follows it); two blank lines keep them apart.
_BLOCK = "\n\n\n"


def batch_markdown(suite: str, shown: int, waiting: Waiting, max_grade: int, problems: Sequence[str] = ()) -> str:
    """What a reviewer reads first, above the name: which batch this is of what waits, how to
    answer it, and what was wrong with the answers sent last (``problems``: nothing was kept)."""
    blocks = []
    if problems:
        blocks += ["**Not saved: change what is said here, then submit again.**",
                   *(f"- {_escaped(problem)}" for problem in problems)]
    grades = "switch on the grade it deserves" if max_grade > 1 else "switch it on if it answers the query"
    blocks += [f"#### Re-judge {shown} of the {waiting.total} waiting in {_escaped(suite)} ({waiting.kinds()})",
               f"Each item below shows its query, the text that was judged and why it needs you. Under each "
               f"candidate chunk's text, {grades}; leave it off when it does not answer the query. Switch on "
               "*none of these* when no candidate answers it: the label is removed. An item left untouched is "
               "skipped and comes back after the rest of the queue.",
               "Your name is recorded with each answer, as human:*your name*."]
    return _BLOCK.join(blocks) + "\n"


def audit_batch_markdown(suite: str, first: int, shown: int, total: int, queries: int, max_grade: int,
                         problems: Sequence[str] = ()) -> str:
    """What an auditor reads first: which items of the audit these are, and that every
    candidate gets their own grade (the judge's is not shown)."""
    blocks = []
    if problems:
        blocks += ["**Not saved: change what is said here, then submit again.**",
                   *(f"- {_escaped(problem)}" for problem in problems)]
    grades = "switch on the grade it deserves" if max_grade > 1 else "switch it on if it answers the query"
    blocks += [f"#### Audit the judge: items {first} to {first + shown - 1} of {total} in {_escaped(suite)} "
               f"({queries} sampled queries)",
               f"An LLM judge graded these candidates; you grade them again without seeing its grades, and the "
               f"scores are corrected by how far it agrees with you (PPI++). Under each candidate chunk's text, "
               f"{grades}; a candidate left off is graded 0, not relevant. *None of these* grades every candidate "
               "of its item 0.",
               "Your name is recorded with each grade, as human:*your name*."]
    return _BLOCK.join(blocks) + "\n"


def judge_markdown(suite: str, summary: Mapping[str, Any], failed: Sequence[Mapping[str, Any]],
                   workload: Mapping[str, int], plan: Mapping[str, Any], version: str | None,
                   audit_url: str | None) -> str:
    """The judge's step in words: what it was asked and answered, at what cost, what it could
    not answer and why, the audit sample it opened, and people's workload before and after."""
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(summary["error_kinds"].items()))
    lines = [f"### The judge on the queue: {_escaped(suite)}", "",
             f"`{_escaped(summary['model'])}` (prompt `{summary['prompt_sha']}`) graded {summary['graded']} of "
             f"{summary['pairs']} candidate(s)"
             + (f" in {summary['seconds']:.1f} s: {summary['calls']} call(s), {summary['cached']} from the cache, "
                f"{summary['prompt_tokens']} prompt and {summary['completion_tokens']} completion tokens."
                if "seconds" in summary else
                ", in an earlier attempt of this re-index, which was stopped before it finished; nothing was asked "
                "again."), ""]
    if failed:
        lines += [f"{summary['errors']} candidate(s) got no grade ({kinds}); their items wait for people whole.", ""]
    if "quotes" in summary:
        lines += [f"It quoted the words that answer in {summary['quotes']} answer(s): their labels carry them as spans, "
                  "proposed by the judge" + (f"; {summary['quotes_unplaced']} quote(s) were not found once in their "
                                             "passage and were left out (those labels have no span)"
                                             if summary["quotes_unplaced"] else "") + ".", ""]
    lines += _table(["people's workload", "items"],
                    [("queued after the re-index", str(workload["queued"])),
                     ("answered by the judge", str(workload["judged"])),
                     ("unjudged chunks of the runs' top k it graded (pool)", str(workload.get("pooled_labels", 0))),
                     ("to audit (people grade the judge's work)", str(workload["audited"])),
                     ("the judge could not answer", str(workload["queued"] - workload["judged"])),
                     ("**for people now**", f"**{workload['for_people']}**")], [False, True])
    lines.append("")
    if audit_url:
        lines += [f"The audit: {len(plan['queries'])} queries ({_escaped(plan['rule'])}; seed {plan['seed']}), every "
                  f"one of the judge's items of them, at `{audit_url}`. Until people answer it (the "
                  f"goldkeeper-rejudge flow asks it first) the judge's labels are unaudited and gates are "
                  "INDETERMINATE.", ""]
    if version:
        lines += [f"The judge's labels (labeled_by synthetic:{_escaped(summary['model'])}) are in the judgments "
                  f"version `{version}`.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def audit_markdown(suite: str, record: Mapping[str, Any], kappa: float | None, set_aside: bool,
                   returned: int) -> str:
    """People's audit of the judge, done: the sample, the agreement, and what follows."""
    said = "undefined" if kappa is None else f"{kappa:.3f}"
    floor = record.get("kappa_floor")
    lines = [f"### People's audit of the judge: {_escaped(suite)}", "",
             f"People graded {len(record['items'])} item(s) of {len(record['queries'])} sampled queries "
             f"({_escaped(record['rule'])}). The judge (`{_escaped(record['model'])}`) agrees with them at Cohen's "
             f"kappa {said}" + (f" (floor {floor:g})." if floor is not None else "."), ""]
    if set_aside:
        lines.append(f"Below the floor: the judge's labels are set aside, and its {returned} item(s) go back to the "
                     "queue for people; gates are INDETERMINATE until people answer them.")
    else:
        lines.append("The scores now carry PPI++ intervals: the judge on every query, people on the sample.")
    return "\n".join(lines) + "\n"


def item_markdown(n: int, count: int, item: Mapping[str, Any]) -> str:
    """Item ``n`` of a batch of ``count``, as the reviewer reads it before its candidates: the
    query, what kind of answer is asked, why, and the text that was judged."""
    query = item.get("query")
    ask = {"review": "confirm", "judge": "grade"}.get(item.get("action") or "", "re-judge")
    why = _WHY.get(item["status"], "needs a person") if item.get("candidates") else _WHY_ALONE
    blocks = [f"#### Item {n} of {count}: {_escaped(query) if query else 'query ' + _escaped(item['query_id'])}",
              f"To {ask}. **{item['status']}**: {why}. Query id `{item['query_id']}`, document `{item['doc_uri']}`."]
    judged = item.get("chunk_text")
    by = f" by {_escaped(item['labeled_by'])}" if item.get("labeled_by") else ""
    if item.get("action") == "judge":
        pass  # never judged: no text was
    elif judged:
        blocks += [f"Judged text (graded {item['relevance']}{by}):", f"> {_escaped(judged).strip()}"]
    else:
        blocks += [f"Judged text: not kept (graded {item['relevance']}{by}; only its hash "
                   f"`{(item.get('text_sha') or 'none')[:16]}` was recorded)."]
    if not item.get("candidates"):
        blocks += ["Say whether to remove the label."]
    return _BLOCK.join(blocks) + "\n"


def candidate_markdown(n: int, j: int, item: Mapping[str, Any]) -> str:
    """Candidate ``j`` of item ``n``: where it is and its text, with the words it shares with
    the judged text in bold."""
    candidate = item["candidates"][j - 1]
    share = candidate.get("coverage")
    about = f", holds {share:.0%} of the judged words" if share is not None else ""
    place = f"chunk {candidate['ordinal']} of " if candidate.get("ordinal") is not None else ""
    text = _marked(item.get("chunk_text"), candidate.get("text") or "").strip() or "_(no text kept)_"
    return _BLOCK.join([f"**Candidate {n}.{j}** ({place}`{candidate['doc_uri']}`{about}):", f"> {text}"]) + "\n"


def description_blocks(*parts: str) -> str:
    """Field descriptions one after the other, kept apart (see ``_BLOCK``)."""
    return _BLOCK.join(part.strip("\n") for part in parts if part) + "\n"


def queue_markdown(suite: str, pending: Sequence[Mapping[str, Any]], queue_location: str | None, shown: int = 20) -> str:
    """What is left of a suite's re-judgment queue, next first."""
    if not pending:
        return (f"### Re-judgment queue: {suite}\n\nNothing waits for a person: every queued label was answered"
                + (f" (`{queue_location}`)" if queue_location else "") + ".\n")
    rows = [(str(n), _escaped(i.get("query") or i["query_id"]), "confirm" if i.get("action") == "review" else "re-judge",
             i["status"], str(len(i.get("candidates") or [])))
            for n, i in enumerate(pending[:shown], start=1)]
    lines = [f"### Re-judgment queue: {suite}", "",
             f"{str(Waiting.of(pending)).capitalize()}"
             + (f", in `{queue_location}`" if queue_location else "")
             + ". Those to re-judge score as misses until answered. Next:", "",
             *_table(["#", "query", "to", "status", "candidates"], rows, [True, False, False, False, True])]
    if len(pending) > shown:
        lines += ["", f"... and {len(pending) - shown} more."]
    return "\n".join(lines) + "\n"


def _queue_step(suite: str, waiting: Waiting, queue_location: str | None) -> str:
    where = f" (`{queue_location}`)" if queue_location else ""
    return (f"{str(waiting).capitalize()}{where}: run the `goldkeeper-rejudge` flow for suite "
            f"`{suite}` from the Prefect UI and answer its form."
            + (" Until then those to re-judge score as misses." if waiting.rejudge else ""))


def _command(*words: str) -> str:
    """A command line as a person pastes it into a shell: each word quoted where it must be."""
    return "`" + " ".join(shlex.quote(word) for word in words) + "`"


def compare_command(document: Mapping[str, Any], point: Mapping[str, Any] | None) -> str | None:
    """``goldkeeper compare`` of the previous comparable evaluation's run and this one, on
    this evaluation's judgments, as a command to paste; None without a previous run."""
    previous = (point or {}).get("previous_entry") or {}
    inputs = document.get("inputs") or {}
    judgments, run = (inputs.get("judgments") or {}).get("url"), (inputs.get("run") or {}).get("url")
    before = previous.get("run_url")
    if not (judgments and run and before) or before == run:
        return None
    return _command("goldkeeper", "compare", "-j", judgments, "-r", before, "-r", run,
                    "-k", ",".join(map(str, document.get("k") or [10])))


def _next_steps(suite: str, waiting: Waiting, queue_location: str | None, steps: list[str],
                document: Mapping[str, Any] | None, point: Mapping[str, Any] | None = None) -> list[str]:
    found = []
    if waiting.total:
        found.append(_queue_step(suite, waiting, queue_location))
    found += steps
    if document is not None:
        inputs = document.get("inputs") or {}
        judgments = (inputs.get("judgments") or {}).get("url")
        missing = document.get("missing_queries") or []
        if missing:
            found.append(f"{len(missing)} judged query(ies) had no run entry and scored zero "
                         f"(e.g. `{missing[0]}`): check that the retriever answers every query of the suite.")
        status = document["verdict"]["status"]
        if status == "FAIL" and not found:
            compare = compare_command(document, point)
            found.append(f"A gate failed: compare this run with the previous one query by query ({compare}) "
                         "before changing the retriever or the gate." if compare else
                         "A gate failed: the report's per-query values say which queries it missed; fix the "
                         "retriever or, if the gate asks too much, the gate.")
        gated = gated_metrics([g["expression"] for g in _gates(document)])
        if status == "INDETERMINATE" and judgments and gated:
            found.append("The verdict is undecided: the query set cannot settle a gate. "
                         + _command("goldkeeper", "power", "-j", judgments, "-m", gated[0])
                         + " says how many queries would.")
    if not found:
        found.append("Nothing to do: every gate passed and no label waits for a person.")
    return ["#### Next steps", "", *(f"{n}. {step}" for n, step in enumerate(found, 1)), ""]


def summary_markdown(
    suite: str,
    document: Mapping[str, Any],
    *,
    report_link: str | None,
    report_location: str,
    waiting: Waiting = NOTHING_WAITS,
    queue_location: str | None = None,
    queue_suite: str | None = None,
    bracket: Mapping[str, Mapping[str, float]] | None = None,
    point: Mapping[str, Any] | None = None,
    attribution: Mapping[str, Any] | None = None,
    system: str | None = None,
) -> str:
    """The verdict, the metrics, and what follows: the bracket of each gated metric while
    labels are queued, the change since the last comparable evaluation (attributed to labels
    and retriever when the judgments changed), and the next steps. ``queue_suite``: the suite
    whose queue waits (the configured suite, when ``suite`` is one of its runs)."""
    lines = [report_markdown(dict(document)).rstrip("\n"), ""]
    if system is not None:  # under the heading: which of the suite's systems this is
        lines.insert(1, f"\nSuite `{suite}`, system `{system}`.")
    gated = gated_metrics([g["expression"] for g in _gates(document)])
    steps: list[str] = []
    if bracket:
        lines += ["#### What the queued labels can explain", "",
                  f"{waiting.rejudge} label(s) to re-judge score as misses. Each gated metric as scored, "
                  "and as it would be if every queued label were found (at the top of its query's ranking):", "",
                  *_table(["metric", "scored", "if every queued label is found", "at most explained"],
                          [(m, _f(b["scored"]), _f(b["found"]), _f(b["found"] - b["scored"])) for m, b in bracket.items()],
                          [False, True, True, True]), ""]
    if point is not None and point.get("previous") is not None:
        rows = []
        for metric in gated:
            change = point["delta"].get(metric)
            rows.append((metric, "" if change is None else f"{change:+.4f}"))
        marks = [name for flag, name in ((point.get("judgments_changed"), "the judgments"),
                                         (point.get("corpus_changed"), "the corpus")) if flag]
        lines += ["#### Since the last comparable evaluation", ""]
        if marks:
            lines += [f"**{' and '.join(marks).capitalize()} changed** since then: not all of the change is the retriever's.", ""]
        if rows:
            lines += [*_table(["metric", "change"], rows, [False, True]), ""]
        drops = _drops(point, gated)
        compare = compare_command(document, point)
        steps += [f"{metric} fell {abs(point['delta'][metric]):.4f}, beyond the previous evaluation's interval: "
                  + (f"compare the two runs ({compare}) to see which queries moved." if compare else
                     "the same run scored lower on these judgments: look at what changed in them.")
                  for metric in drops]
    if attribution:
        if attribution.get("metrics"):
            lines += ["#### Labels or retriever?", "",
                      "The previous run scored again on the new judgments splits each change "
                      "(spec/trend.md):", "",
                      *_table(["metric", "change", "from the labels", "from the retriever"],
                              [(m, f"{a['change']:+.4f}", f"{a['labels']:+.4f}", f"{a['retriever']:+.4f}")
                               for m, a in attribution["metrics"].items()], [False, True, True, True]), ""]
        elif attribution.get("note"):
            lines += [f"Not attributed to labels or retriever: {attribution['note']}.", ""]
    lines += _next_steps(queue_suite or suite, waiting, queue_location, steps, document, point)
    lines.append(f"Full report: [open it]({report_link})" if report_link
                 else f"Full report on storage: `{report_location}`")
    return "\n".join(lines).rstrip("\n") + "\n"


def _drops(point: Mapping[str, Any], metrics: Sequence[str]) -> list[str]:
    """Metrics whose value fell below the lower end of its previous interval."""
    previous = point.get("previous_entry") or {}
    found = []
    for metric in metrics:
        before = (previous.get("metrics") or {}).get(metric)
        now = (point.get("metrics") or {}).get(metric)
        if before and now and before.get("ci") and now["value"] < before["ci"][0]:
            found.append(metric)
    return found


def _comparable(points: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The points computed like the latest (same cutoffs and threshold), oldest first."""
    if not points:
        return []
    latest = points[-1]
    return [p for p in points if p.get("k") == latest.get("k") and p.get("threshold") == latest.get("threshold")]


#: The largest chart embedded in an artifact (base64 characters); a bigger one is linked only.
_EMBEDDED_CHART_CHARS = 400_000


def trend_markdown(suite: str, points: Sequence[Mapping[str, Any]], metrics: Sequence[str],
                   chart_link: str | None = None, page_link: str | None = None, chart_svg: bytes | None = None) -> str:
    """The suite's history as a table, newest first: each evaluation's time, judgments and
    corpus versions (a change marked), the gated metrics with intervals and the change from
    the previous comparable point, the judge's agreement with people (kappa) where an audit of
    a judge was applied, and the verdict."""
    shown = list(reversed(points))
    named = any(point.get("system") for point in points)
    audited = any("kappa" in point for point in points)
    header = ["time", *(["system"] if named else []), "judgments", "corpus", *metrics,
              *(["judge's kappa"] if audited else []), "verdict"]
    rows = []
    for point in shown:
        judgments = (point.get("judgments_sha256") or "")[:8] + (" (changed)" if point.get("judgments_changed") else "")
        corpus = (point.get("corpus_fingerprint") or "")[:18] + (" (changed)" if point.get("corpus_changed") else "")
        cells = []
        for metric in metrics:
            measurement = (point.get("metrics") or {}).get(metric)
            if measurement is None:
                cells.append("")
                continue
            change = point["delta"].get(metric)
            cells.append(f"{measurement['value']:.4f} {_interval(measurement)}"
                         + ("" if change is None else f" ({change:+.4f})"))
        system = [point.get("system") or ""] if named else []
        kappa = [_kappa(point) for _ in range(audited)]
        rows.append((point["time"], *system, f"`{judgments}`" if judgments else "", corpus, *cells, *kappa,
                     f"**{point['verdict']}**"))
    of = f" of {len(systems(points))} systems" if named else ""
    lines = [f"### Trend: {suite}", "",
             f"{len(points)} evaluation(s){of}. A change is shown against the previous evaluation of the same "
             "system with the same cutoffs and threshold; \"(changed)\" marks new judgments or a new corpus since it.",
             "", *_table(header, rows, [False, *([False] if named else []), False, False, *[True] * len(metrics),
                                        *([True] if audited else []), False]),
             ""]
    if chart_svg is not None:
        import base64

        encoded = base64.b64encode(chart_svg).decode("ascii")
        if len(encoded) <= _EMBEDDED_CHART_CHARS:
            # Inline, so the chart shows in the UI whatever the storage (a local file or a
            # private bucket is not a link the UI can follow).
            lines += [f"![{suite}: the gated metrics over time](data:image/svg+xml;base64,{encoded})", ""]
    if chart_link:
        lines.append(f"[Chart of the gated metrics]({chart_link})")
    if page_link:
        lines.append(f"[The suite's page]({page_link})")
    return "\n".join(lines).rstrip("\n") + "\n"


def _kappa(point: Mapping[str, Any]) -> str:
    """A point's kappa as the trend shows it: with its audit's size; "pending" when the audit
    is not answered; blank without a judge."""
    if "kappa" not in point:
        return ""
    if not point.get("audited_queries"):
        return "pending"
    kappa = point["kappa"]
    return ("undefined" if kappa is None else f"{kappa:.3f}") + f" ({point['audited_queries']} queries)"


def time_labels(times: Sequence[str]) -> list[str]:
    """The chart's labels of ISO times: to the minute, else to the second, else whole, the
    first that tells every evaluation apart; the date above the time."""
    for width in (16, 19, None):
        labels = [time[:width] for time in times]
        if len(set(labels)) == len(labels):
            break
    return [label.replace("T", "\n") for label in labels]


def trend_chart_svg(suite: str, points: Sequence[Mapping[str, Any]], metrics: Sequence[str],
                    thresholds: Mapping[str, float]) -> bytes:
    """The gated metrics over the evaluations computed like the latest, as an SVG: a line per
    system and metric (a colour per metric, a line style and marker per system) with its
    interval as a band, each threshold as a dashed line, and a dotted vertical line where the
    judgments or the corpus changed, a red cross on each value of an evaluation that FAILed
    (matplotlib). Times read to the minute, or to the second (or finer) where minutes would
    give two evaluations one label."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    drawn = _comparable(points)
    figure = Figure(figsize=(8, 4), dpi=100)
    axes = figure.add_subplot()
    # One x per evaluation time: a suite's systems scored by one run of a flow share it.
    times = list(dict.fromkeys(p["time"] for p in drawn))
    x = list(range(len(times)))
    colours = matplotlib.colormaps["tab10"]
    styles = ["-", "--", "-.", ":"]
    names = systems(drawn)
    failed_shown = False
    for n, metric in enumerate(metrics):
        colour = colours(n % 10)
        for m, system in enumerate(names):
            own = [p for p in drawn if p.get("system") == system]
            values = [((p.get("metrics") or {}).get(metric) or {}) for p in own]
            xs = [times.index(p["time"]) for p, v in zip(own, values) if "value" in v]
            ys = [v["value"] for v in values if "value" in v]
            label = metric if system is None else f"{system}: {metric}"
            axes.plot(xs, ys, marker="os^Dv"[m % 5], linestyle=styles[m % 4], color=colour, label=label,
                      gid=f"line-{metric}" if system is None else f"line-{system}-{metric}")
            failed = [(times.index(p["time"]), v["value"]) for p, v in zip(own, values)
                      if "value" in v and p.get("verdict") == "FAIL"]
            if failed:
                axes.scatter([i for i, _ in failed], [y for _, y in failed], marker="X", s=70, color="#b42318",
                             zorder=5, label="FAIL" if not failed_shown else None, gid=f"fail-{metric}-{m}")
                failed_shown = True
            banded = [(times.index(p["time"]), v["ci"]) for p, v in zip(own, values) if v.get("ci")]
            if banded:
                axes.fill_between([i for i, _ in banded], [ci[0] for _, ci in banded], [ci[1] for _, ci in banded],
                                  color=colour, alpha=0.18 if len(names) == 1 else 0.09, linewidth=0)
        if metric in thresholds:
            axes.axhline(thresholds[metric], color=colour, linestyle="--", linewidth=1,
                         label=f"{metric} threshold {thresholds[metric]:g}")
    marked = set()
    for point in drawn:
        i = times.index(point["time"])
        if (point.get("judgments_changed") or point.get("corpus_changed")) and i not in marked:
            marked.add(i)
            what = "judgments" if point.get("judgments_changed") else "corpus"
            axes.axvline(i - 0.5, color="grey", linestyle=":", linewidth=1)
            axes.annotate(f"new {what}", (i - 0.5, 1.02), fontsize=8, color="grey", ha="center")
    axes.set_xticks(x, time_labels(times), fontsize=7)
    axes.set_ylim(0, 1.08)
    axes.set_ylabel("value (band: interval)")
    axes.set_title(f"{suite}: gated metrics", fontsize=10)
    axes.grid(axis="y", alpha=0.3)
    if metrics:
        axes.legend(fontsize=7, loc="lower left")
    figure.tight_layout()
    out = io.BytesIO()
    # matplotlib names the SVG's clip paths and markers with random ids unless salted: with a
    # fixed salt the same trend is the same bytes, so a run repeated after a crash rewrites
    # the chart it had written, not a different one.
    with matplotlib.rc_context({"svg.hashsalt": "goldkeeper"}):
        figure.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


def suite_page(suite: str, points: Sequence[Mapping[str, Any]], metrics: Sequence[str], document: Mapping[str, Any],
               chart_svg: bytes, summary: str, attribution: Mapping[str, Any] | None = None,
               system: str | None = None) -> str:
    """The suite's static HTML page: the verdict, each system's latest evaluation (when the
    suite has several), the chart, the trend table, the latest report's metrics and strata
    (``system``'s), and the next steps. Self-contained (the chart inline), so it opens from
    any storage a browser reaches."""
    from jinja2 import Environment

    environment = Environment(autoescape=True)
    page = environment.from_string(_PAGE)
    strata = []
    for name, stratum in (document.get("per_stratum") or {}).items():
        strata.append({"name": name, "n": stratum["n"],
                       "cells": [_f((stratum["metrics"].get(m) or {}).get("value")) if stratum["n"] else "not scored"
                                  for m in metrics]})
    trend_rows = []
    for point in reversed(points):
        cells = []
        for metric in metrics:
            measurement = (point.get("metrics") or {}).get(metric)
            change = point["delta"].get(metric)
            cells.append("" if measurement is None else f"{measurement['value']:.4f} {_interval(measurement)}"
                         + ("" if change is None else f" ({change:+.4f})"))
        trend_rows.append({"time": point["time"], "system": point.get("system") or "", "verdict": point["verdict"],
                           "cells": cells,
                           "judgments": (point.get("judgments_sha256") or "")[:8],
                           "marks": [w for f, w in ((point.get("judgments_changed"), "new judgments"),
                                                    (point.get("corpus_changed"), "new corpus")) if f]})
    steps = summary.split("#### Next steps", 1)[1].strip().splitlines() if "#### Next steps" in summary else []
    named = any(point.get("system") for point in points)
    system_rows = [{"system": name or "", "time": point["time"], "verdict": point["verdict"],
                    "cells": [_f(((point.get("metrics") or {}).get(m) or {}).get("value")) for m in metrics]}
                   for name, point in latest_by_system(points).items()] if named else []
    return page.render(
        named=named, systems=system_rows, system=system,
        suite=suite, verdict=document["verdict"]["status"], line=verdict_line(document),
        generated_at=document["generated_at"], chart=chart_svg.decode("utf-8").split("?>", 1)[-1],
        metrics=metrics, trend=trend_rows, rows=metric_rows(document), strata=strata,
        attribution=[{"metric": m, "change": f"{a['change']:+.4f}", "labels": f"{a['labels']:+.4f}",
                      "retriever": f"{a['retriever']:+.4f}"} for m, a in ((attribution or {}).get("metrics") or {}).items()],
        steps=[_code(s.split(". ", 1)[-1]) for s in steps if s[:1].isdigit()])


def _code(text: str):
    """A markdown line's `code` spans as <code>, everything else escaped."""
    from markupsafe import Markup

    parts = html.escape(text).split("`")
    return Markup("".join(f"<code>{part}</code>" if n % 2 else part for n, part in enumerate(parts)))


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>goldkeeper: {{ suite }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:64rem;color:#1d2330}
.verdict{display:inline-block;padding:.2rem .6rem;border-radius:.3rem;color:#fff;font-weight:600}
.PASS{background:#1f883d}.FAIL{background:#cf222e}.INDETERMINATE{background:#9a6700}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border-bottom:1px solid #d0d7de;padding:.3rem .6rem;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}.mark{color:#9a6700;font-size:.85em}
</style></head><body>
<h1>goldkeeper: {{ suite }}</h1>
<p><span class="verdict {{ verdict }}" id="verdict">{{ verdict }}</span> {% if system %}{{ system }}: {% endif %}{{ line }} <small>({{ generated_at }})</small></p>
{% if named %}<h2>Systems</h2>
<table id="systems"><tr><th>system</th><th>latest</th>{% for m in metrics %}<th>{{ m }}</th>{% endfor %}<th>verdict</th></tr>
{% for row in systems %}<tr><td>{{ row.system }}</td><td>{{ row.time }}</td>{% for cell in row.cells %}<td class="num">{{ cell }}</td>{% endfor %}<td><span class="verdict {{ row.verdict }}">{{ row.verdict }}</span></td></tr>{% endfor %}</table>{% endif %}
<h2>Next steps</h2>
<ol id="next-steps">{% for step in steps %}<li>{{ step }}</li>{% endfor %}</ol>
<h2>Trend</h2>
<figure id="chart">{{ chart | safe }}</figure>
<table id="trend"><tr><th>time</th>{% if named %}<th>system</th>{% endif %}<th>judgments</th>{% for m in metrics %}<th>{{ m }}</th>{% endfor %}<th>verdict</th></tr>
{% for row in trend %}<tr><td>{{ row.time }}</td>{% if named %}<td>{{ row.system }}</td>{% endif %}<td><code>{{ row.judgments }}</code>{% for mark in row.marks %} <span class="mark">{{ mark }}</span>{% endfor %}</td>
{% for cell in row.cells %}<td class="num">{{ cell }}</td>{% endfor %}<td>{{ row.verdict }}</td></tr>{% endfor %}</table>
{% if attribution %}<h2>Labels or retriever?</h2>
<p>The judgments changed since the last comparable evaluation; its run scored again on the new judgments splits each change.</p>
<table id="attribution"><tr><th>metric</th><th>change</th><th>from the labels</th><th>from the retriever</th></tr>
{% for a in attribution %}<tr><td>{{ a.metric }}</td><td class="num">{{ a.change }}</td><td class="num">{{ a.labels }}</td><td class="num">{{ a.retriever }}</td></tr>{% endfor %}</table>{% endif %}
<h2>Latest report{% if system %}: {{ system }}{% endif %}</h2>
<table id="metrics"><tr><th>metric</th><th>value</th><th>interval</th><th>n</th><th>threshold</th><th>gate</th></tr>
{% for r in rows %}<tr><td>{{ r.metric }}</td><td class="num">{{ r.value }}</td><td class="num">{{ r.interval }}</td>
<td class="num">{{ r.n }}</td><td class="num">{{ r.threshold }}</td><td>{{ r.gate }}</td></tr>{% endfor %}</table>
{% if strata %}<h2>Strata</h2>
<table id="strata"><tr><th>stratum</th><th>n</th>{% for m in metrics %}<th>{{ m }}</th>{% endfor %}</tr>
{% for s in strata %}<tr><td>{{ s.name }}</td><td class="num">{{ s.n }}</td>{% for v in s.cells %}<td class="num">{{ v }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}
</body></html>
"""
