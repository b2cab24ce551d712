"""What a finished evaluation tells Prefect besides its state: tags on its run (suite and
verdict, for filters and dashboards) and an event about the suite, for automations.

Events are about the resource ``goldkeeper.suite.<slug>`` and carry the figures in their
payload (spec/prefect.md lists every event and its payload):

    goldkeeper.evaluation.passed | .failed | .indeterminate
    goldkeeper.drift.found              counts and invalid ratio after a re-index
    goldkeeper.queue.opened             a re-judgment queue with items for people
    goldkeeper.judgments.versioned      a new judgments version made current
"""

from __future__ import annotations

from typing import Any

from prefect.events import emit_event
from prefect.runtime import flow_run

from goldkeeper.core.trend import gated_metrics
from goldkeeper.flows.faults import step
from goldkeeper.io.storage import suite_slug

__all__ = ["EVALUATION_EVENTS", "announce", "signal", "suite_resource", "tag_run"]

EVALUATION_EVENTS = {"PASS": "goldkeeper.evaluation.passed", "FAIL": "goldkeeper.evaluation.failed",
                     "INDETERMINATE": "goldkeeper.evaluation.indeterminate"}


def suite_resource(suite: str) -> dict[str, str]:
    return {"prefect.resource.id": f"goldkeeper.suite.{suite_slug(suite)}", "prefect.resource.name": suite}


def _related() -> list[dict[str, str]]:
    if not flow_run.id:
        return []
    return [{"prefect.resource.id": f"prefect.flow-run.{flow_run.id}", "prefect.resource.role": "flow-run",
             "prefect.resource.name": flow_run.name or ""}]


@step(timeout_seconds=60)
def tag_run(suite: str, verdict: str, system: str | None = None) -> list[str]:
    """Add ``goldkeeper``, ``suite:<slug>``, ``verdict:<pass|fail|indeterminate>`` and, for
    one of a suite's several systems, ``system:<slug>`` to the flow run's tags (its tags are
    set when it is created; the verdict is known at its end)."""
    from prefect.client.orchestration import get_client

    run_id = flow_run.id
    if not run_id:
        return []
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(run_id)
        tags = sorted({*run.tags, "goldkeeper", f"suite:{suite_slug(suite)}", f"verdict:{verdict.lower()}",
                       *([f"system:{suite_slug(system)}"] if system else [])})
        client.update_flow_run(run_id, tags=tags)
    return tags


def signal(event: str, suite: str, payload: dict[str, Any]) -> None:
    """Emit one goldkeeper event about a suite, related to the flow run that found it."""
    emit_event(event, resource=suite_resource(suite), related=_related(), payload=payload)


@step(timeout_seconds=60)
def announce(suite: str, document: dict[str, Any], outcome: dict[str, Any]) -> None:
    """The evaluation's verdict as an event, with the gates that did not pass and the
    gated metrics' values and intervals."""
    gates = document["verdict"].get("gates") or []
    signal(EVALUATION_EVENTS[outcome["verdict"]], suite, {
        "suite": suite,
        **({"system": outcome["system"]} if outcome.get("system") else {}),
        "verdict": outcome["verdict"],
        "message": outcome["message"],
        "failing_gates": [g for g in gates if g["status"] != "PASS"],
        "metrics": {name: {k: v for k, v in document["metrics"][name].items() if k in ("value", "ci", "n")}
                    for name in gated_metrics([g["expression"] for g in gates]) if name in document["metrics"]},
        "report_url": outcome["report_url"],
        "cached": outcome["cached"],
    })
