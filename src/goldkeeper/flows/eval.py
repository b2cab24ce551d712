"""Produce runs from a live retriever and evaluate them: the CLI's `eval` as a flow.

    eval_retriever = retrieve (per mode, with a progress artifact) -> evaluate (per mode)

When every gate is sequential, each mode's queries are asked in the gates' order and asking
stops once they settle; the evaluation scores the queries asked and its report says how many
were saved.

Each mode's run is written to storage under runs/<suite>-<mode>/, then scored and published (a
system of the suite, named by its mode) by the
`evaluate` flow with the retrieval errors counted against the budget (fail closed). Header
values come from the environment of the process running the flow, named in the config's
`header_env`; they never enter parameters, runs, reports or artifacts.
"""

from __future__ import annotations

import os
import re
from typing import Any

from prefect import flow
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.states import State

from goldkeeper.flows.clock import now
from goldkeeper.flows.evaluate import evaluate, outcome_of, rolled_up
from goldkeeper.flows.faults import step, storage_root
from goldkeeper.io.files import is_local, local_path
from goldkeeper.io.retrieval import retrieve_to_storage
from goldkeeper.io.storage import suite_slug

__all__ = ["eval_retriever"]


@step(timeout_seconds=7200)
def retrieve(config: dict[str, Any], judgments_url: str, run_url: str, depth: int, mode: str, concurrency: int,
             retries: int, rate: float | None, cache: str | None, gates: list[str]) -> dict[str, Any]:
    artifact = create_progress_artifact(progress=0.0, description=f"retrieving {mode or config.get('backend')}")
    step = {"next": 0.0}

    def progress(done: int, total: int) -> None:
        share = 100.0 * done / total if total else 100.0
        if share >= step["next"] or done == total:  # every 5%, not every answer
            update_progress_artifact(artifact_id=artifact, progress=share)
            step["next"] = share + 5.0

    return retrieve_to_storage(config, judgments_url, run_url, depth, mode, concurrency=concurrency,
                               retries=retries, rate=rate, cache=cache, progress=progress, gates=gates)


@flow(name="goldkeeper-eval", log_prints=True)
def eval_retriever(
    suite: str,
    judgments_url: str,
    retriever: dict[str, Any],
    modes: list[str] = [],  # noqa: B006 - Prefect parameters are validated copies
    storage_url: str | None = None,
    k: list[int] = [10],  # noqa: B006
    gates: list[str] = [],  # noqa: B006
    max_errors: float = 0.0,
    concurrency: int = 16,
    retries: int = 3,
    rate: float | None = None,
    intervals: bool = True,
) -> State:
    """Ask the retriever (``{"backend": "http", "url_template": ..., ...}``, the CLI's flags as
    keys) every judged query, once per mode, and evaluate each run as a system of the suite
    (the mode is its name). Returns each mode's verdict and report URL."""
    storage_url = storage_root(storage_url)
    stamp = re.sub(r"[^0-9TZ]", "", now())
    cache = None
    if is_local(storage_url):  # the answer cache appends line by line: local storage only
        cache = os.path.join(local_path(storage_url), "cache", f"{suite_slug(suite)}.jsonl")
    results = {}
    for mode in modes or [""]:
        name = suite_slug(f"{suite}-{mode}" if mode else suite)
        run_url = f"{storage_url.rstrip('/')}/runs/{name}/{stamp}.jsonl"
        if is_local(run_url):
            os.makedirs(os.path.dirname(local_path(run_url)), exist_ok=True)
        got = retrieve(retriever, judgments_url, run_url, max(k), mode, concurrency, retries, rate, cache, gates)
        retrieval = {"queries": got["queries"], "errors": got["errors"], "budget": max_errors}
        if "sequential" in got:  # every gate sequential: it stopped asking once they settled
            retrieval["sequential"] = got["sequential"]
        results[mode or name] = outcome_of(evaluate(suite=suite, system=mode or None, judgments_url=judgments_url,
                                                    run_url=got["run_url"], storage_url=storage_url, k=k, gates=gates,
                                                    intervals=intervals, retrieval=retrieval, return_state=True))
        print(f"{name}: {len(got['errors'])} of {got['queries']} calls failed; {results[mode or name]['verdict']}")
    return rolled_up({"suite": suite, "evaluations": results})
