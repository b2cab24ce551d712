"""What an ops person sees, in a real browser: headless Chromium (Debian's package) driven by
Playwright through ``executable_path``, on the real Prefect UI of the session's server and on
a suite's HTML page. Screenshots go to test-output/screenshots/ (GOLDKEEPER_SCREENSHOTS)."""

from __future__ import annotations

import re

import pytest

from tests.browser import SCREENSHOTS, new_page, shot
from tests.conftest import FIXTURES

pytest.importorskip("prefect")
expect = pytest.importorskip("playwright.sync_api").expect
expect.set_options(timeout=60_000)  # the UI fills panels as its API calls return


def _ui(prefect_server) -> str:
    return prefect_server["PREFECT_API_URL"].removesuffix("/api")


def _two_days(tmp_path):
    """A suite evaluated twice: a pass, then a fail; the fail's state."""
    from goldkeeper.flows.evaluate import evaluate

    case = FIXTURES / "basic"
    common = {"suite": "Browser Suite", "judgments_url": str(case / "judgments.jsonl"), "run_url": str(case / "run.jsonl"),
                  "storage_url": f"file://{tmp_path}/store", "k": [1, 3]}
    evaluate(**common, gates=["recall@3:0.4"], generated_at="2026-11-28T03:00:00Z", return_state=True)
    return evaluate(**common, gates=["recall@3:0.9"], generated_at="2026-11-29T03:00:00Z", return_state=True)


def test_a_failed_evaluation_is_red_in_the_prefect_ui_with_its_reason_and_trend(prefect_server, tmp_path, browser):
    from prefect.client.orchestration import get_client

    state = _two_days(tmp_path)
    run_id = state.state_details.flow_run_id
    page = new_page(browser)

    page.goto(f"{_ui(prefect_server)}/runs/flow-run/{run_id}")
    page.get_by_text("verdict:fail").first.wait_for()
    expect(page.get_by_text("suite:browser-suite-80436d").first).to_be_visible()
    badge = page.locator(".state-badge").first
    expect(badge).to_have_text("Failed")
    expect(badge).to_have_class(re.compile(r"\bfailed\b"))
    # the reason, in the run's logs (the verdict is logged as an error)
    page.get_by_text("Browser Suite: FAIL: recall@3 is 0.5000, below 0.9").first.wait_for()
    shot(page, "01-failed-run")

    page.goto(f"{_ui(prefect_server)}/dashboard")
    page.get_by_text("goldkeeper-evaluate").first.wait_for()  # listed under the failed runs, the tab shown first
    shot(page, "02-dashboard")

    with get_client(sync_client=True) as client:
        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

        (trend,) = [a for a in client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["goldkeeper-browser-suite-80436d-trend"]))) if a.flow_run_id == run_id]
        (summary,) = [a for a in client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["goldkeeper-browser-suite-80436d-summary"]))) if a.flow_run_id == run_id]
    page.goto(f"{_ui(prefect_server)}/artifacts/artifact/{trend.id}")
    page.get_by_text("Trend: Browser Suite").first.wait_for()
    assert page.get_by_text("2026-11-29T03:00:00Z").first.is_visible()
    assert page.get_by_text("2026-11-28T03:00:00Z").first.is_visible()
    chart = page.locator("img[src^='data:image/svg+xml']")
    chart.first.wait_for()  # the chart, inline: it shows whatever the storage
    assert chart.count() == 1 and chart.evaluate("img => img.naturalWidth") > 400
    shot(page, "03-trend-artifact")

    page.goto(f"{_ui(prefect_server)}/artifacts/artifact/{summary.id}")
    page.get_by_text("Next steps").first.wait_for()
    assert page.get_by_text("A gate failed: compare this run").first.is_visible()
    # the run's state message, in the side panel the UI fills once it has read the flow run
    expect(page.get_by_text("FAIL: recall@3 is 0.5000, below 0.9").first).to_be_visible()
    shot(page, "04-summary-artifact")


def test_the_suite_page_shows_the_chart_the_trend_and_the_next_steps(prefect_server, tmp_path, browser):
    assert _two_days(tmp_path).is_failed()
    page = new_page(browser)
    page.goto(f"file://{tmp_path}/store/pages/browser-suite-80436d/index.html")
    assert page.locator("#verdict").inner_text() == "FAIL"
    chart = page.locator("#chart svg")
    assert chart.is_visible() and chart.bounding_box()["width"] > 400
    # one marker per evaluation on the metric's line, and the threshold drawn
    assert page.locator("#chart svg [id='line-recall@3'] use").count() == 2
    assert page.locator("#trend tr").count() == 3  # header and two evaluations
    assert "A gate failed: compare this run" in page.locator("#next-steps").inner_text()
    assert page.locator("#metrics tr").nth(1).inner_text().split("\t")[:2] == ["recall@3", "0.5000"]
    shot(page, "05-suite-page")


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
    page = new_page(browser)
    page.goto(f"{_ui(prefect_server)}/runs/flow-run/{lifecycle.id}")
    page.get_by_text("1 of 2 evaluation(s) did not pass").first.wait_for()  # logged as an error
    expect(page.locator(".state-badge").first).to_have_text("Failed")
    shot(page, "06-demo-lifecycle")

    latest = max(trends, key=lambda a: a.created)
    page.goto(f"{_ui(prefect_server)}/artifacts/artifact/{latest.id}")
    page.get_by_text("Trend: help-center-run-b").first.wait_for()
    assert page.get_by_text("(changed)").count() >= 1 and page.get_by_text("(+0.3000)").count() >= 1
    shot(page, "07-demo-trend")

    page.goto(f"file://{tmp_path}/ui-store/pages/help-center-run-b/index.html")
    assert page.locator("#verdict").inner_text() == "PASS"
    assert page.locator("#chart svg [id='line-recall@1'] use").count() == 2
    assert page.get_by_text("new judgments").count() >= 1
    assert page.locator("#attribution tr").nth(1).inner_text().split("\t") == ["recall@1", "+0.3000", "+0.3000", "+0.0000"]
    shot(page, "08-demo-suite-page")


def test_the_drift_artifact_says_which_pages_moved_where(prefect_server, tmp_path, browser):
    """A re-index after pages were renamed: the drift artifact on the Prefect UI shows each
    gone page, where its labels' texts are now, and the pages gone for good."""
    from goldkeeper.flows.lifecycle import on_reindex
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from goldkeeper.io.storage import write_judgments_version

    case = FIXTURES / "goldkeeper-drift-rules"
    root = f"file://{tmp_path}/store"
    write_judgments_version(root, "moved-pages", (case / "judgments.jsonl").read_bytes(), None)
    state = on_reindex(suite="moved-pages", corpus_url=str(case / "corpus.json"), storage_url=root, return_state=True)
    assert state.is_completed()  # no run to score: the re-index itself does not fail
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(
            any_=["goldkeeper-moved-pages-drift"])))
    drift = max((a for a in artifacts if a.key.startswith("goldkeeper-moved-pages")), key=lambda a: a.created)
    assert "| `case://moved-merged-old` | became `case://moved-merged-new` (1) | 1 of 1 |" in drift.data
    page = new_page(browser)
    page.goto(f"{_ui(prefect_server)}/artifacts/artifact/{drift.id}")
    page.get_by_text("Pages that moved").first.wait_for()
    row = page.locator("tr", has_text="case://moved-split-old")
    expect(row).to_contain_text("became case://moved-split-new (1)")
    expect(page.get_by_text("labelled page(s) are gone").first).to_be_visible()
    shot(page, "14-drift-pages-that-moved")


def _configured_queue(root: str, tmp_path) -> list[dict]:
    """Suite "Refunds": the spec's drift case queued on storage, configured with a run over
    the live corpus, a gate, and the live snapshot; the queue's items."""
    import json

    from goldkeeper.io.storage import write_suite
    from goldkeeper.models.suite import SuiteConfig
    from tests.flows.conftest import queued_suite

    items = queued_suite(root, "Refunds")
    corpus = FIXTURES / "drift" / "corpus.json"
    chunks = [c["chunk_id"] for c in json.loads(corpus.read_text())["chunks"]]
    queries = dict.fromkeys(json.loads(line)["query_id"]
                            for line in (FIXTURES / "drift" / "judgments.jsonl").read_text().splitlines())
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps({"query_id": q, "ranking": chunks}) + "\n" for q in queries))
    write_suite(root, SuiteConfig(suite="Refunds", runs=[str(run)], k=[3], gates=["recall@3:0.5"],
                                  corpus_url=str(corpus), max_grade=2))
    return items


def test_a_reviewer_answers_the_queue_from_the_paused_runs_form_and_the_suite_is_scored_again(
        prefect_server, tmp_path, browser):
    """A paused rejudge run on the real server, answered in the UI as a person would: the
    judged text and each candidate's text are on the page above the form; a name with a space
    and the SPLIT's two pieces graded relevant, the orphan removed; the new judgments version
    holds exactly those labels by human:<name>, the queue is empty, and the suite was scored
    again on the new version."""
    import json
    import subprocess
    import sys
    import time

    from prefect.client.orchestration import get_client

    from goldkeeper.io.storage import read_current_judgments, read_history, read_latest_queue

    root = f"file://{tmp_path}/store"
    split, orphan = _configured_queue(root, tmp_path)
    flow = subprocess.Popen([sys.executable, "-c", "import sys; from goldkeeper.flows.rejudge import rejudge; "
                             "rejudge(suite='Refunds', storage_url=sys.argv[1], poll_interval=1, timeout=600)", root],
                            env={**prefect_server}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        paused = []
        while not paused and time.monotonic() < deadline:
            with get_client(sync_client=True) as client:
                paused = [r for r in client.read_flow_runs() if r.state and r.state.is_paused()
                          and r.parameters.get("storage_url") == root]
            time.sleep(1)
        assert paused, "the rejudge run never paused"
        page = new_page(browser)
        page.goto(f"{_ui(prefect_server)}/runs/flow-run/{paused[0].id}")
        page.get_by_role("button", name="Resume").first.click()
        dialog = page.get_by_role("dialog")
        # what was judged, and each candidate's text (the words shared with it in bold)
        expect(dialog.get_by_text("Re-judge 2 of 2 waiting label(s): Refunds")).to_be_visible()
        expect(dialog.get_by_text(" ".join(split["chunk_text"].split())).first).to_be_visible()
        expect(dialog.get_by_text("only its hash").first).to_be_visible()  # the orphan kept no text
        shot(page, "09-rejudge-form")
        shown = " ".join(dialog.inner_text().split())
        for candidate in split["candidates"]:
            assert " ".join(candidate["text"].split()) in shown
        # each candidate's quote has its words shared with the judged text in bold (the UI's strong)
        assert dialog.locator("blockquote .markdown-renderer__text--strong").count() >= len(split["candidates"])
        dialog.get_by_text("Candidate 1.2").first.scroll_into_view_if_needed()  # the description scrolls
        page.screenshot(path=str(SCREENSHOTS / "09b-rejudge-candidates.png"))
        # the form's fields in order: the name, a grade per candidate, the orphan's removal, stop
        dialog.locator("textarea, input[type=text]").first.fill("alice smith")
        grades = dialog.locator(".p-select-button__control")  # the UI's own select: a button and a list
        assert grades.count() == 2
        # as a keyboard user picks from the UI's select: open it, move down to the choice, Enter
        choices = ["not graded yet", "0: does not answer it", "1", "2: fully answers the query"]
        for n, choice in ((0, "2: fully answers the query"), (1, "1")):
            grades.nth(n).focus()
            for _ in range(1 + choices.index(choice)):
                page.keyboard.press("ArrowDown")
            page.keyboard.press("Enter")
            expect(grades.nth(n)).to_have_text(choice)
        switches = dialog.locator("input[type=checkbox]")
        assert switches.count() == 2
        switches.nth(0).locator("xpath=..").click()  # the toggle drawn over the hidden checkbox
        expect(switches.nth(0)).to_be_checked()
        shot(page, "10-rejudge-form-filled")
        dialog.get_by_role("button", name="Submit").click()
        output, _ = flow.communicate(timeout=300)
        assert flow.returncode == 0, output[-3000:]
    finally:
        if flow.poll() is None:
            flow.kill()
    data, _ = read_current_judgments(root, "Refunds")
    rejudged = [json.loads(line) for line in data.decode().splitlines() if "rejudged_from" in line]
    assert sorted((r["chunk_id"], r["relevance"], r["labeled_by"]) for r in rejudged) == sorted([
        (split["candidates"][0]["chunk_id"], 2, "human:alice smith"),
        (split["candidates"][1]["chunk_id"], 1, "human:alice smith")])
    assert orphan["doc_uri"].encode() not in data
    assert read_latest_queue(root, "Refunds")[1] == []
    (evaluation,) = read_history(root, "Refunds")  # scored again, on the new version
    assert evaluation["judgments_sha256"] == __import__("hashlib").sha256(data).hexdigest()


def test_a_report_in_a_notebook_cell_reads_as_a_table(browser, trec_eval_dir):
    """What a notebook shows for a report (``_repr_html_``), rendered by Chromium as Jupyter
    puts it into an output cell: the verdict as the caption, one row per metric, numbers
    right-aligned to four decimals with their interval."""
    import goldkeeper

    labels = goldkeeper.read_judgments(str(trec_eval_dir / "qrels.test"))
    result = goldkeeper.score(labels, goldkeeper.read_run(str(trec_eval_dir / "results.test")), k=[10])
    report = goldkeeper.build_report(result, goldkeeper.validate(labels), generated_at="2026-12-02T00:00:00Z",
                                     gates=["ndcg_linear@10:0.5", "recall@10:ci-lower:0.1"])
    page = new_page(browser)
    page.set_content(f'<html><body style="font-family:sans-serif"><div class="output_html">{report._repr_html_()}'
                     "</div></body></html>")
    table = page.locator("table.goldkeeper")
    expect(table.locator("caption")).to_have_text("goldkeeper FAIL: 3 of 3 judged queries scored")
    row = table.locator("tr", has_text="ndcg_linear@10 (gain g: nDCG)")
    value = f"{result.metrics['ndcg_linear@10']['value']:.4f}"
    expect(row.locator("td").nth(1)).to_have_text(value)
    assert row.locator("td").nth(1).evaluate("cell => getComputedStyle(cell).textAlign") == "right"
    expect(table.locator("tbody tr")).to_have_count(len(result.metrics))
    expect(page.locator("li", has_text="ndcg_linear@10:0.5")).to_contain_text("FAIL")
    assert shot(page, "notebook-report").stat().st_size > 0
    page.close()
