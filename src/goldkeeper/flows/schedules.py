"""A suite's schedule on the Prefect server: one schedule of the deployed nightly evaluation
(``goldkeeper-evaluate-suite/nightly``, deployments/prefect.yaml) per scheduled suite, with
the suite as its parameter and ``goldkeeper-suite-<slug>`` as its slug.

prefect.yaml ships that deployment with ``schedules: null``, so `prefect deploy --all` keeps
the schedules suites added; `goldkeeper suite set S --schedule off` removes the suite's.
"""

from __future__ import annotations

from goldkeeper.io.storage import suite_slug

__all__ = ["NIGHTLY", "apply_schedule"]

NIGHTLY = "goldkeeper-evaluate-suite/nightly"


def apply_schedule(config, storage_url: str) -> str:
    """Make the server's schedules match the suite's ``schedule`` (set, changed or removed);
    one line saying what was done, or why nothing could be."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import DeploymentScheduleCreate
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import PREFECT_API_URL

    wanted = f"{config.schedule} UTC" if config.schedule else "no schedule"
    if not PREFECT_API_URL.value():
        return (f"schedule: {wanted} stored; no Prefect server is configured (PREFECT_API_URL), so none was "
                f"changed on one: set it and run `goldkeeper suite set {config.suite} --schedule ...` again")
    slug = f"goldkeeper-suite-{suite_slug(config.suite)}"
    with get_client(sync_client=True) as client:
        try:
            deployment = client.read_deployment_by_name(NIGHTLY)
        except ObjectNotFound:
            return (f"schedule: {wanted} stored; the deployment {NIGHTLY} is not on {PREFECT_API_URL.value()}: "
                    f"run `prefect deploy --all --prefect-file deployments/prefect.yaml`, then this command again")
        existing = [s for s in deployment.schedules or [] if s.slug == slug]
        parameters = {"suite": config.suite, "storage_url": storage_url}
        if not config.schedule:
            for schedule in existing:
                client.delete_deployment_schedule(deployment.id, schedule.id)
            return f"schedule: removed from {NIGHTLY}" if existing else f"schedule: none on {NIGHTLY}"
        cron = CronSchedule(cron=config.schedule, timezone="UTC")
        if existing:
            client.update_deployment_schedule(deployment.id, existing[0].id, active=True, schedule=cron,
                                              parameters=parameters)
        else:
            client.create_deployment_schedules(deployment.id, [DeploymentScheduleCreate(
                schedule=cron, active=True, parameters=parameters, slug=slug)])
    return f"schedule: {wanted} on {NIGHTLY} (slug {slug})"
