"""``judge``: an LLM judge grades the queued labels' candidates first (spec/judge.md)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from goldkeeper.cli.app import (
    MAX_CONCURRENCY,
    MAX_RETRIES,
    FormatOption,
    OutputFormat,
    QuietOption,
    app,
    emit_json,
    positive,
    progress,
)
from goldkeeper.errors import EXIT_FAILED, EXIT_OK, UsageError
from goldkeeper.models.records import MAX_RELEVANCE


@app.command()
def judge(
    queue: Annotated[str, typer.Argument(help="The re-judgment queue (JSONL: drift --queue, or queue/<suite>/ on storage).")],
    base_url: Annotated[str, typer.Option("--base-url", help="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (vLLM, Ollama, llama.cpp's server, a hosted API).")],
    model: Annotated[str, typer.Option("--model", help="The model's name, as the endpoint knows it.")],
    out: Annotated[str, typer.Option("--out", "-o", help="Answers JSONL: one line per graded candidate, labeled_by synthetic:<model>.")],
    api_key_env: Annotated[Optional[str], typer.Option("--api-key-env", help="The environment variable that holds the API key (sent as a bearer token).")] = None,
    prompt: Annotated[Optional[str], typer.Option("--prompt", help="A prompt template ({query}, {text}, {top}, {scale}; a '---' line ends the system part). Default: spec/judge.md's.")] = None,
    max_grade: Annotated[int, typer.Option("--max-grade", min=1, max=MAX_RELEVANCE, help="The top of the scale the judge grades on.")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, max=MAX_CONCURRENCY, help="Calls in flight.")] = 16,
    timeout: Annotated[float, typer.Option("--timeout", callback=positive, help="Seconds per call.")] = 60.0,
    retries: Annotated[int, typer.Option("--retries", min=0, max=MAX_RETRIES, help="Retries of a transient failure (timeout, 429, 5xx), with backoff.")] = 3,
    rate: Annotated[Optional[float], typer.Option("--rate", callback=positive, help="At most this many calls per second.")] = None,
    cache: Annotated[Optional[str], typer.Option("--cache", help="Answer cache (JSONL); a rerun asks nothing asked before. Default OUT.cache.jsonl.")] = None,
    errors: Annotated[Optional[str], typer.Option("--errors", help="Where the pairs that got no grade go, with why. Default OUT.errors.jsonl.")] = None,
    spans: Annotated[bool, typer.Option("--spans", help="The judge also quotes the words that answer; its answers carry them, and the labels made from them carry them as their span, marked proposed by the judge (spec/spans.md). Default prompt: spec/judge.md's span prompt.")] = False,
    now: Annotated[Optional[str], typer.Option("--now", help="labeled_at of the answers (ISO 8601); else SOURCE_DATE_EPOCH; else now.")] = None,
    output: FormatOption = OutputFormat.text,
    quiet: QuietOption = False,
) -> None:
    """Ask an LLM judge to grade every candidate of every queued label. A refusal, a malformed
    or out-of-scale answer, a timeout or an HTTP error is an error for its pair, which stays for
    people; never a grade."""
    from goldkeeper.cli.scoring import report_time
    from goldkeeper.core.judge import DEFAULT_PROMPT, SPAN_PROMPT
    from goldkeeper.io.files import decode_utf8, read_bytes, source_name, write_bytes_atomic
    from goldkeeper.io.judge import judge_queue, queue_pairs
    from goldkeeper.io.storage import read_queue

    template = (SPAN_PROMPT if spans else DEFAULT_PROMPT) if prompt is None else decode_utf8(read_bytes(prompt), source_name(prompt))
    for needed in ("{query}", "{text}"):
        if needed not in template:
            raise UsageError(f"--prompt: the template must hold {needed}")
    items = read_queue(queue)
    labeled_at = report_time(now)
    with progress("judging", len(queue_pairs(items)), quiet=quiet or output is OutputFormat.json) as advance:
        judged = judge_queue(items, base_url=base_url, model=model, prompt=template, top=max_grade,
                             labeled_at=labeled_at, api_key_env=api_key_env, concurrency=concurrency,
                             timeout=timeout, retries=retries, rate=rate, cache=cache or f"{out}.cache.jsonl",
                             progress=advance, quotes=spans)
    answers, failed, summary = judged["answers"], judged["failed"], {**judged["summary"], "out": out}
    write_bytes_atomic(out, "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers).encode("utf-8"))
    write_bytes_atomic(errors or f"{out}.errors.jsonl",
                       "".join(json.dumps(f, ensure_ascii=False) + "\n" for f in failed).encode("utf-8"))
    kinds, seconds, named = summary["error_kinds"], summary["seconds"], summary["prompt_sha"]
    if output is OutputFormat.json:
        emit_json(summary)
    else:
        why = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        sys.stdout.write(
            f"graded {summary['graded']} of {summary['pairs']} candidate(s) with {model} ({named}) in {seconds:.1f} s: "
            f"{summary['calls']} call(s), {summary['cached']} from the cache, {summary['prompt_tokens']} prompt and "
            f"{summary['completion_tokens']} completion tokens\n"
            + (f"{summary['errors']} got no grade ({why}) and stay for people: {errors or out + '.errors.jsonl'}\n"
               if failed else "")
            + (f"{summary['quotes']} answer(s) quote the words that answer"
               + (f"; {summary['quotes_unplaced']} quote(s) were not found once in their passage and were left out"
                  if summary["quotes_unplaced"] else "") + "\n" if spans else "")
            + f"answers in {out}\n")
    raise typer.Exit(EXIT_OK if answers or not summary['pairs'] else EXIT_FAILED)
