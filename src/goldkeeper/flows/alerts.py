"""An automation that tells people when a suite's evaluation did not pass.

Prefect runs it on the server: the trigger matches the ``goldkeeper.evaluation.failed`` and
``.indeterminate`` events about ``goldkeeper.suite.*`` (flows/signals.py), and the action
posts the event's suite, verdict, message and report to a webhook (a Slack or Teams
incoming webhook, or any HTTP endpoint) through a ``CustomWebhookNotificationBlock``.
``goldkeeper alert --webhook URL`` creates both; running it again replaces them.
"""

from __future__ import annotations

from uuid import UUID

__all__ = ["ALERT_BLOCK", "ALERT_NAME", "alert_automation", "create_alert"]

ALERT_NAME = "goldkeeper: an evaluation did not pass"
ALERT_BLOCK = "goldkeeper-alert"

_SUBJECT = "goldkeeper: {{ event.payload.suite }} is {{ event.payload.verdict }}"
_BODY = ("{{ event.payload.suite }}: {{ event.payload.verdict }}: {{ event.payload.message }}\n"
         "report: {{ event.payload.report_url }}\nrun: {{ flow_run.name if flow_run else 'unknown' }}")


def alert_automation(block_id: UUID, suites: list[str] | None = None):
    """The automation: reactive, one event is enough, on every suite or the ones named."""
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

    from goldkeeper.flows.signals import EVALUATION_EVENTS
    from goldkeeper.io.storage import suite_slug

    match = {"prefect.resource.id": [f"goldkeeper.suite.{suite_slug(s)}" for s in suites] if suites
             else "goldkeeper.suite.*"}
    trigger = EventTrigger(expect={EVALUATION_EVENTS["FAIL"], EVALUATION_EVENTS["INDETERMINATE"]}, match=match,
                           posture=Posture.Reactive, threshold=1, within=0)
    return AutomationCore(name=ALERT_NAME, description="Posts to a webhook when a goldkeeper evaluation fails or "
                          "cannot decide.", trigger=trigger,
                          actions=[SendNotification(block_document_id=block_id, subject=_SUBJECT, body=_BODY)])


def create_alert(webhook_url: str, suites: list[str] | None = None) -> UUID:
    """Save the webhook block and (re)create the automation on the configured server; the
    automation's id."""
    from prefect.blocks.notifications import CustomWebhookNotificationBlock
    from prefect.client.orchestration import get_client

    block = CustomWebhookNotificationBlock(name=ALERT_BLOCK, url=webhook_url, method="POST",
                                           json_data={"subject": "{{subject}}", "text": "{{body}}"})
    block_id = block.save(ALERT_BLOCK, overwrite=True)
    with get_client(sync_client=True) as client:
        for existing in client.read_automations_by_name(ALERT_NAME):
            client.delete_automation(existing.id)
        return client.create_automation(alert_automation(block_id, suites))
