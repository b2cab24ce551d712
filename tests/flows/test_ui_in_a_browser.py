"""What an ops person sees, in a real browser: headless Chromium (Debian's package) driven by
Playwright through ``executable_path``, on the real Prefect UI of the session's server and on
a suite's HTML page. Screenshots go to test-output/screenshots/ (GOLDKEEPER_SCREENSHOTS)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

pytest.importorskip("prefect")
expect = pytest.importorskip("playwright.sync_api").expect
expect.set_options(timeout=60_000)  # the UI fills panels as its API calls return

SCREENSHOTS = Path(os.environ.get("GOLDKEEPER_SCREENSHOTS", Path(__file__).parents[2] / "test-output" / "screenshots"))


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs Debian's chromium package")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        yield launched
        launched.close()


def _page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    return page


def _shot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def _ui(prefect_server) -> str:
    return prefect_server["PREFECT_API_URL"].removesuffix("/api")


def _two_days(tmp_path):
    """A suite evaluated twice: a pass, then a fail; the fail's state."""
    from goldkeeper.flows.evaluate import evaluate

    case = FIXTURES / "basic"
    common = dict(suite="Browser Suite", judgments_url=str(case / "judgments.jsonl"), run_url=str(case / "run.jsonl"),
                  storage_url=f"file://{tmp_path}/store", k=[1, 3])
    evaluate(**common, gates=["recall@3:0.4"], generated_at="2026-11-28T03:00:00Z", return_state=True)
    return evaluate(**common, gates=["recall@3:0.9"], generated_at="2026-11-29T03:00:00Z", return_state=True)


def test_a_failed_evaluation_is_red_in_the_prefect_ui_with_its_reason_and_trend(prefect_server, tmp_path, browser):
    from prefect.client.orchestration import get_client

    state = _two_days(tmp_path)
    run_id = state.state_details.flow_run_id
    page = _page(browser)

    page.goto(f"{_ui(prefect_server)}/runs/flow-run/{run_id}")
    page.get_by_text("verdict:fail").first.wait_for()
    expect(page.get_by_text("suite:browser-suite").first).to_be_visible()
    badge = page.locator(".state-badge").first
    expect(badge).to_have_text("Failed")
    expect(badge).to_have_class(re.compile(r"\bfailed\b"))
    # the reason, in the run's logs (the verdict is logged as an error)
    page.get_by_text("Browser Suite: FAIL: recall@3 is 0.5000, below 0.9").first.wait_for()
    _shot(page, "01-failed-run")

    page.goto(f"{_ui(prefect_server)}/dashboard")
    page.get_by_text("goldkeeper-evaluate").first.wait_for()  # listed under the failed runs, the tab shown first
    _shot(page, "02-dashboard")

    with get_client(sync_client=True) as client:
        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

        (trend,) = [a for a in client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["goldkeeper-browser-suite-trend"]))) if a.flow_run_id == run_id]
        (summary,) = [a for a in client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["goldkeeper-browser-suite-summary"]))) if a.flow_run_id == run_id]
    page.goto(f"{_ui(prefect_server)}/artifacts/artifact/{trend.id}")
    page.get_by_text("Trend: Browser Suite").first.wait_for()
    assert page.get_by_text("2026-11-29T03:00:00Z").first.is_visible()
    assert page.get_by_text("2026-11-28T03:00:00Z").first.is_visible()
    chart = page.locator("img[src^='data:image/svg+xml']")
    chart.first.wait_for()  # the chart, inline: it shows whatever the storage
    assert chart.count() == 1 and chart.evaluate("img => img.naturalWidth") > 400
    _shot(page, "03-trend-artifact")

    page.goto(f"{_ui(prefect_server)}/artifacts/artifact/{summary.id}")
    page.get_by_text("Next steps").first.wait_for()
    assert page.get_by_text("A gate failed: compare this run").first.is_visible()
    # the run's state message, in the side panel the UI fills once it has read the flow run
    expect(page.get_by_text("FAIL: recall@3 is 0.5000, below 0.9").first).to_be_visible()
    _shot(page, "04-summary-artifact")


def test_the_suite_page_shows_the_chart_the_trend_and_the_next_steps(prefect_server, tmp_path, browser):
    assert _two_days(tmp_path).is_failed()
    page = _page(browser)
    page.goto(f"file://{tmp_path}/store/pages/browser-suite/index.html")
    assert page.locator("#verdict").inner_text() == "FAIL"
    chart = page.locator("#chart svg")
    assert chart.is_visible() and chart.bounding_box()["width"] > 400
    # one marker per evaluation on the metric's line, and the threshold drawn
    assert page.locator("#chart svg [id='line-recall@3'] use").count() == 2
    assert page.locator("#trend tr").count() == 3  # header and two evaluations
    assert "A gate failed: compare this run" in page.locator("#next-steps").inner_text()
    assert page.locator("#metrics tr").nth(1).inner_text().split("\t")[:2] == ["recall@3", "0.5000"]
    _shot(page, "05-suite-page")


@pytest.mark.slow
def test_the_readmes_ui_path_shows_the_demo_on_the_prefect_ui(prefect_server, tmp_path, browser):
    """`goldkeeper demo` against a server, as the README says: the lifecycle is red and says
    which evaluation failed, run-b's trend has its two evaluations with the judgments change
    marked, and its page shows the chart and the attribution's effect."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, FlowFilter, FlowFilterName

    from tests.conftest import run_cli

    root = f"file://{tmp_path}/ui-store"
    demo = run_cli("demo", "--storage", root, cwd=tmp_path)
    assert demo.code == 0, demo.stderr[-2000:]
    with get_client(sync_client=True) as client:
        (lifecycle,) = [r for r in client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(
            any_=["goldkeeper-on-reindex"]))) if r.parameters.get("storage_url") == root]
        trends = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(
            any_=["goldkeeper-help-center-run-b-trend"])))
    assert lifecycle.state.type.value == "FAILED"
    assert lifecycle.state.message.startswith("1 of 2 evaluation(s) did not pass: help-center-run-b FAIL")
    page = _page(browser)
    page.goto(f"{_ui(prefect_server)}/runs/flow-run/{lifecycle.id}")
    page.get_by_text("1 of 2 evaluation(s) did not pass").first.wait_for()  # logged as an error
    expect(page.locator(".state-badge").first).to_have_text("Failed")
    _shot(page, "06-demo-lifecycle")

    latest = max(trends, key=lambda a: a.created)
    page.goto(f"{_ui(prefect_server)}/artifacts/artifact/{latest.id}")
    page.get_by_text("Trend: help-center-run-b").first.wait_for()
    assert page.get_by_text("(changed)").count() >= 1 and page.get_by_text("(+0.3000)").count() >= 1
    _shot(page, "07-demo-trend")

    page.goto(f"file://{tmp_path}/ui-store/pages/help-center-run-b/index.html")
    assert page.locator("#verdict").inner_text() == "PASS"
    assert page.locator("#chart svg [id='line-recall@1'] use").count() == 2
    assert page.get_by_text("new judgments").count() >= 1
    assert page.locator("#attribution tr").nth(1).inner_text().split("\t") == ["recall@1", "+0.3000", "+0.3000", "+0.0000"]
    _shot(page, "08-demo-suite-page")
