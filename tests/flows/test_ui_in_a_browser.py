"""What an ops person sees, in a real browser: headless Chromium (Debian's package) driven by
Playwright through ``executable_path``, on the real Prefect UI of the session's server and on
a suite's HTML page. Screenshots go to test-output/screenshots/ (GOLDKEEPER_SCREENSHOTS)."""

from __future__ import annotations

import contextlib
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
    assert page.get_by_text("A gate failed: the report's per-query values").first.is_visible()  # the same run both days
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
    assert "A gate failed" in page.locator("#next-steps").inner_text()
    assert page.locator("#metrics tr").nth(1).inner_text().split("\t")[:2] == ["recall@3", "0.5000"]
    shot(page, "05-suite-page")


@pytest.mark.slow
def test_the_readmes_ui_path_shows_the_demo_on_the_prefect_ui(prefect_server, tmp_path, browser):
    """`goldkeeper demo` against a server, as the README says: the lifecycle is red and says
    which system of suite help-center failed; the suite's trend holds both systems' two
    evaluations with the judgments change marked, its page draws both on one chart, and every
    goldkeeper command an artifact, the page or the demo suggests runs as printed."""
    import re
    import shlex
    import subprocess
    import sys

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, FlowFilter, FlowFilterName

    from tests.conftest import run_cli

    root = f"file://{tmp_path}/ui-store"
    demo = run_cli("demo", "--storage", root, cwd=tmp_path)
    assert demo.code == 0, demo.stderr[-2000:]
    keys = ["goldkeeper-help-center-trend", "goldkeeper-help-center-drift", "goldkeeper-help-center-run-a-summary",
            "goldkeeper-help-center-run-b-summary"]
    with get_client(sync_client=True) as client:
        (lifecycle,) = [r for r in client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(
            any_=["goldkeeper-on-reindex"]))) if r.parameters.get("storage_url") == root]
        artifacts = [a for a in client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
                     if root.removeprefix("file://") in str(a.data)]
    assert {a.key for a in artifacts} == set(keys)
    assert lifecycle.state.type.value == "FAILED"
    assert lifecycle.state.message.startswith("1 of 2 evaluation(s) did not pass: help-center (run-b) FAIL")
    page = new_page(browser)
    page.goto(f"{_ui(prefect_server)}/runs/flow-run/{lifecycle.id}")
    page.get_by_text("1 of 2 evaluation(s) did not pass").first.wait_for()  # logged as an error
    expect(page.locator(".state-badge").first).to_have_text("Failed")
    shot(page, "06-demo-lifecycle")

    latest = max((a for a in artifacts if a.key == "goldkeeper-help-center-trend"), key=lambda a: a.created)
    page.goto(f"{_ui(prefect_server)}/artifacts/artifact/{latest.id}")
    page.get_by_text("Trend: help-center").first.wait_for()
    assert page.get_by_text("4 evaluation(s) of 2 systems").count() == 1
    assert page.get_by_text("(changed)").count() >= 2 and page.get_by_text("(+0.3000)").count() >= 2
    shot(page, "07-demo-trend")

    page.goto(f"file://{tmp_path}/ui-store/pages/help-center/index.html")
    assert page.locator("#verdict").inner_text() == "PASS"
    # one chart, a line per system, each with its two evaluations
    for system in ("run-a", "run-b"):
        assert page.locator(f"#chart svg [id='line-{system}-recall@1'] use").count() == 2
    assert [row.split("\t")[0] for row in page.locator("#systems tr").all_inner_texts()[1:]] == ["run-a", "run-b"]
    assert page.get_by_text("new judgments").count() >= 1
    assert page.locator("#attribution tr").nth(1).inner_text().split("\t") == ["recall@1", "+0.3000", "+0.3000", "+0.0000"]
    shot(page, "08-demo-suite-page")

    # Every goldkeeper command suggested (artifacts, the page, the demo's output) runs as printed.
    texts = [str(a.data) for a in artifacts] + [page.locator("body").inner_text(), demo.stdout]
    commands = {found for text in texts for found in re.findall(r"`(goldkeeper [^`]+)`", text)}
    assert any(c.startswith("goldkeeper history help-center") for c in commands), commands
    for command in sorted(commands):
        words = shlex.split(command)
        done = subprocess.run([sys.executable, "-m", "goldkeeper", *words[1:]], capture_output=True, text=True,
                              cwd=tmp_path, timeout=300)
        assert done.returncode in (0, 1), (command, done.stderr[-1500:])
        assert "Traceback" not in done.stderr, (command, done.stderr[-1500:])


def test_the_drift_artifact_says_which_pages_moved_where(prefect_server, tmp_path, browser):
    """A re-index after pages were renamed: the drift artifact on the Prefect UI shows each
    gone page, where its labels' texts are now, and the pages gone for good."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from goldkeeper.flows.lifecycle import on_reindex
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
    from tests.flows.conftest import placed_drift_corpus, queued_suite

    corpus = placed_drift_corpus(tmp_path / "live.json")
    items = queued_suite(root, "Refunds", corpus)
    chunks = [c["chunk_id"] for c in json.loads(open(corpus).read())["chunks"]]
    queries = dict.fromkeys(json.loads(line)["query_id"]
                            for line in (FIXTURES / "drift" / "judgments.jsonl").read_text().splitlines())
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps({"query_id": q, "ranking": chunks}) + "\n" for q in queries))
    write_suite(root, SuiteConfig(suite="Refunds", runs=[str(run)], k=[3], gates=["recall@3:0.5"],
                                  corpus_url=str(corpus), max_grade=2))
    return items


def _words(text: str) -> str:
    return " ".join(text.split())


def _field(dialog, title: str):
    """A form field by the start of its title (Prefect appends " (Optional)")."""
    label = dialog.page.locator(".schema-form-property__label", has_text=re.compile("^" + re.escape(title)))
    return dialog.locator(".schema-form-property", has=label)


def _switch(dialog, title: str):
    return _field(dialog, title).locator("[role=switch]")


def _texts_of(dialog, items: list[dict]) -> list[tuple[str, object, str]]:
    """Every text a reviewer must read, as (what, element, text): per item its query and the
    judged text (or the note that only its hash was kept), and each candidate's text in the
    field that grades it."""
    found = []
    for n, item in enumerate(items, start=1):
        found.append((f"item {n}'s query", dialog.locator("h4", has_text=f"Item {n} of {len(items)}:"), item["query"]))
        judged = _words(item["chunk_text"]) if item.get("chunk_text") else "only its hash"
        found.append((f"item {n}'s judged text", dialog.get_by_text(judged).first, judged))
        for j, candidate in enumerate(item.get("candidates") or [], start=1):
            quote = _field(dialog, f"{n}.{j} ").first.locator("blockquote").last
            found.append((f"candidate {n}.{j}'s text", quote, _words(candidate["text"])))
    return found


def _every_text_is_seen(dialog, items: list[dict]) -> int:
    """Scrolled to in turn, each text has a non-zero box inside the modal's scroll area and
    says what it should. How many texts."""
    texts = _texts_of(dialog, items)
    for what, element, text in texts:
        element.scroll_into_view_if_needed()
        area = dialog.locator(".p-modal__body").bounding_box()
        box = element.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0, f"{what} has no box: {box}"
        assert area["y"] - 1 <= box["y"] and box["y"] + min(box["height"], area["height"]) <= area["y"] + area["height"] + 1, \
            f"{what} is outside the scroll area: {box} vs {area}"
        assert text in _words(element.inner_text()), (what, element.inner_text())
    return len(texts)


def _resume_form(page, ui: str, run_id):
    page.goto(f"{ui}/runs/flow-run/{run_id}")
    page.get_by_role("button", name="Resume").first.click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator(".p-modal__body h4").first).to_be_visible()
    return dialog


@contextlib.contextmanager
def _rejudge_in_a_process(env: dict, **parameters):
    """The rejudge flow in a process of its own, as a worker runs it, with ``parameters``
    (polling every second); killed if it is still running at the end."""
    import json
    import subprocess
    import sys

    code = "import json, sys; from goldkeeper.flows.rejudge import rejudge; rejudge(**json.loads(sys.argv[1]))"
    flow = subprocess.Popen([sys.executable, "-c", code, json.dumps({"poll_interval": 1, "timeout": 600, **parameters})],
                            env={**env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield flow
    finally:
        if flow.poll() is None:
            flow.kill()
            flow.wait(30)


def _submit_and_finish(dialog, flow) -> None:
    """Submit the form, and wait for the flow's process to end well."""
    dialog.get_by_role("button", name="Submit").click()
    output, _ = flow.communicate(timeout=300)
    assert flow.returncode == 0, output[-3000:]


def test_a_reviewer_sees_every_text_and_answers_the_batch_with_the_mouse_at_1280x720_and_1920x1080(
        prefect_server, tmp_path, browser):
    """A paused rejudge run on the real server, answered in Prefect's UI as a person would. At
    1920x1080 and 1280x720, every item's query, judged text and each candidate's text has a
    box inside the modal's scroll area. Answered with mouse clicks (the name typed): first
    with a blank name and two grades for one piece, which the flow does not take: the form
    comes back with the problems written at its top and the switches as they were; then
    fixed. The new judgments version holds exactly those answers by human:<name>, the queue
    is empty, and the suite was scored again on the new version."""
    import json

    from goldkeeper.io.storage import read_current_judgments, read_history, read_latest_queue
    from tests.flows.conftest import next_form, paused_run

    root = f"file://{tmp_path}/store"
    items = _configured_queue(root, tmp_path)
    split, orphan = items
    before = read_current_judgments(root, "Refunds")[0]
    with _rejudge_in_a_process(prefect_server, suite="Refunds", storage_url=root) as flow:
        run = paused_run(root)
        ui = _ui(prefect_server)

        large = new_page(browser, 1920, 1080)
        dialog = _resume_form(large, ui, run.id)
        expect(dialog.get_by_text("Re-judge 2 of the 2 waiting in Refunds (2 to re-judge)")).to_be_visible()
        assert _every_text_is_seen(dialog, items) == 2 + 2 + len(split["candidates"])
        dialog.locator(".p-modal__body").evaluate("area => area.scrollTo(0, 0)")
        large.screenshot(path=str(SCREENSHOTS / "09-rejudge-form-1920x1080.png"))
        large.close()

        page = new_page(browser, 1280, 720)
        dialog = _resume_form(page, ui, run.id)
        page.screenshot(path=str(SCREENSHOTS / "10a-rejudge-form-1280x720-top.png"))
        assert _every_text_is_seen(dialog, items) == 6
        # each candidate's quote has its words shared with the judged text in bold (the UI's strong)
        assert dialog.locator("blockquote .markdown-renderer__text--strong").count() >= len(split["candidates"])
        _field(dialog, "1.2 ").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / "10b-rejudge-form-1280x720-candidates.png"))
        # the fields: the name, two grades per piece of the split, "none" per item, stop; every one a switch
        assert dialog.locator("[role=switch]").count() == 2 * len(split["candidates"]) + 2 + 1
        assert dialog.locator(".p-select-button__control").count() == 0
        for title in ("1.1 answers it in part (1 of 2)", "1.1 fully answers the query (2 of 2)",
                      "2: no live chunk carries it; remove the label"):
            _switch(dialog, title).click()
            expect(_switch(dialog, title)).to_have_attribute("aria-checked", "true")
        _field(dialog, "2: no live chunk").scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / "10c-rejudge-form-1280x720-orphan.png"))
        first = run.state.state_details.run_input_keyset["schema"]
        dialog.get_by_role("button", name="Submit").click()  # no name, two grades for 1.1

        next_form(run.id, first)
        dialog = _resume_form(page, ui, run.id)
        expect(dialog.get_by_text("Not saved: change what is said here, then submit again.")).to_be_visible()
        expect(dialog.get_by_text("Who is answering? your name is empty")).to_be_visible()
        expect(dialog.get_by_text("1.1: 2 grades are switched on (1, 2); keep the one it deserves")).to_be_visible()
        page.screenshot(path=str(SCREENSHOTS / "11-rejudge-form-asked-again.png"))
        expect(_switch(dialog, "1.1 answers it in part (1 of 2)")).to_have_attribute("aria-checked", "true")
        expect(_switch(dialog, "2: no live chunk carries it")).to_have_attribute("aria-checked", "true")
        assert read_current_judgments(root, "Refunds")[0] == before  # nothing was taken
        dialog.locator("textarea, input[type=text]").first.fill("alice smith")
        _switch(dialog, "1.1 answers it in part (1 of 2)").click()
        _switch(dialog, "1.2 answers it in part (1 of 2)").click()
        expect(_switch(dialog, "1.1 answers it in part (1 of 2)")).to_have_attribute("aria-checked", "false")
        expect(_switch(dialog, "1.2 answers it in part (1 of 2)")).to_have_attribute("aria-checked", "true")
        # the words that answer, copied from piece 1.2 as the page shows them (line breaks as spaces)
        quote = " ".join(_words(split["candidates"][1]["text"]).split()[1:6])
        _field(dialog, "1: the words that answer it").locator("input, textarea").fill(quote)
        _field(dialog, "1: the words that answer it").scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / "12-rejudge-form-filled.png"))
        _submit_and_finish(dialog, flow)
    data, _ = read_current_judgments(root, "Refunds")
    rejudged = [json.loads(line) for line in data.decode().splitlines() if "rejudged_from" in line]
    assert sorted((r["chunk_id"], r["relevance"], r["labeled_by"]) for r in rejudged) == sorted([
        (split["candidates"][0]["chunk_id"], 2, "human:alice smith"),
        (split["candidates"][1]["chunk_id"], 1, "human:alice smith")])
    (narrowed,) = [r for r in rejudged if "span" in r]  # the piece the quote came from names that passage
    assert narrowed["chunk_id"] == split["candidates"][1]["chunk_id"] and _words(narrowed["span"]["exact"]) == quote
    start = split["candidates"][1]["start_index"] + split["candidates"][1]["text"].index(narrowed["span"]["exact"])
    assert (narrowed["span"]["start"], narrowed["span"]["end"]) == (start, start + len(narrowed["span"]["exact"]))
    assert orphan["doc_uri"].encode() not in data
    assert read_latest_queue(root, "Refunds")[1] == []
    (evaluation,) = read_history(root, "Refunds")  # scored again, on the new version
    assert evaluation["judgments_sha256"] == __import__("hashlib").sha256(data).hexdigest()


def _artifacts(keys: list[str]) -> dict:
    """The newest artifact of each key (the sync client: Playwright's loop runs in this thread)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
    return {a.key: a for a in sorted(found, key=lambda a: a.created)}


def test_what_waits_is_counted_one_way_everywhere_and_a_full_batch_is_answered_with_clicks_at_1280x720(
        prefect_server, tmp_path, browser):
    """The demo's re-index queues 5 labels to re-judge (SPLIT, ORPHANED) and 2 to confirm
    (MERGED, already moved): the outcome, the events, the drift, summary and queue artifacts
    and the form all say "7 wait for a person (5 to re-judge, 2 to confirm)". The rejudge run
    (started with the reviewer's name, as from the deployment's parameters) asks for its default
    batch of 5 at 1280x720: every query, judged text and candidate text is seen, and the batch
    is answered with mouse clicks only; the new version holds exactly those answers, and the
    rejudge artifact says what is left, counted the same way."""
    import json
    from importlib import resources

    import goldkeeper
    from goldkeeper.core.rejudge import Waiting, pending_items
    from goldkeeper.dashboard import grade_words
    from goldkeeper.flows.evaluate import outcome_of
    from goldkeeper.flows.lifecycle import on_reindex
    from goldkeeper.io.storage import read_current_judgments, read_latest_queue, write_judgments_version
    from tests.flows.conftest import paused_run
    from tests.flows.test_verdicts import events_about

    example = resources.files("goldkeeper.examples") / "lifecycle"
    root = f"file://{tmp_path}/store"
    write_judgments_version(root, "counted", (example / "judgments.jsonl").read_bytes(), None)
    state = on_reindex(suite="counted", chunks_url=str(example / "chunks-v2.jsonl"), chunker="sentences/v2",
                       run_urls=[str(example / "run-a.jsonl")], storage_url=root, k=[1], gates=["recall@1:0.4"],
                       return_state=True)
    outcome = outcome_of(state)
    said = "7 wait for a person (5 to re-judge, 2 to confirm)"
    assert outcome["waiting"] == {"to_rejudge": 5, "to_confirm": 2}
    api = prefect_server["PREFECT_API_URL"]
    (drift,) = events_about(api, "goldkeeper.suite.counted", "goldkeeper.drift.")
    assert (drift["payload"]["queued"], drift["payload"]["to_rejudge"], drift["payload"]["to_confirm"]) == (7, 5, 2)
    (opened,) = events_about(api, "goldkeeper.suite.counted", "goldkeeper.queue.")
    assert (opened["payload"]["items"], opened["payload"]["to_rejudge"], opened["payload"]["to_confirm"]) == (7, 5, 2)
    found = _artifacts(["goldkeeper-counted-drift", "goldkeeper-counted-summary"])
    assert f"; {said}; those to re-judge count as misses until answered." in found["goldkeeper-counted-drift"].data
    assert f"{said.capitalize()} (`{outcome['queue_url']}`)" in found["goldkeeper-counted-summary"].data
    assert "5 label(s) to re-judge score as misses" in found["goldkeeper-counted-summary"].data

    with _rejudge_in_a_process(prefect_server, suite="counted", storage_url=root, corpus_url=outcome["corpus_url"],
                               evaluate_after=False, reviewer="dana k") as flow:
        run = paused_run(root)
        (queue,) = _artifacts(["goldkeeper-counted-queue"]).values()
        assert f"{said.capitalize()}, in `{outcome['queue_url']}`" in queue.data
        page = new_page(browser, 1280, 720)
        dialog = _resume_form(page, _ui(prefect_server), run.id)
        expect(dialog.get_by_text("Re-judge 5 of the 7 waiting in counted (5 to re-judge, 2 to confirm)")).to_be_visible()
        data, _ = read_current_judgments(root, "counted")
        batch = pending_items(read_latest_queue(root, "counted")[1], goldkeeper.parse_judgments(data))[:5]
        assert _every_text_is_seen(dialog, batch) == sum(2 + len(i.get("candidates") or []) for i in batch)
        confirm = next(n for n, item in enumerate(batch, start=1) if item["action"] == "review")
        expect(dialog.get_by_text(f"Item {confirm} of 5:")).to_be_visible()
        expect(dialog.get_by_text("To confirm. MERGED").first).to_be_visible()
        shot(page, "13-rejudge-batch-of-five-1280x720")
        # clicks only: the name came with the run; each item's first candidate fully answers it,
        # or, without candidates, its label is removed; and no batch after this one
        top = max(label.relevance for label in goldkeeper.parse_judgments(data))
        expect(dialog.locator("textarea, input[type=text]").first).to_have_value("dana k")
        for n, item in enumerate(batch, start=1):
            title = (f"{n}.1 {grade_words(top, top)}" if item.get("candidates")
                     else f"{n}: no live chunk carries it")
            _switch(dialog, title).click()
            expect(_switch(dialog, title)).to_have_attribute("aria-checked", "true")
        _switch(dialog, "Stop after this batch?").click()
        _submit_and_finish(dialog, flow)
    after, _ = read_current_judgments(root, "counted")
    rejudged = {row["rejudged_from"]["item_id"]: row for row in map(json.loads, after.decode().splitlines())
                if "rejudged_from" in row}
    answered = {item["item_id"]: item["candidates"][0]["chunk_id"] for item in batch if item.get("candidates")}
    assert {i: (r["chunk_id"], r["relevance"], r["labeled_by"]) for i, r in rejudged.items()} == {
        i: (chunk, top, "human:dana k") for i, chunk in answered.items()}
    for item in batch:
        if not item.get("candidates"):  # removed
            assert not any(row["query_id"] == item["query_id"] and row["doc_uri"] == item["doc_uri"]
                           for row in map(json.loads, after.decode().splitlines()))
    left = pending_items(read_latest_queue(root, "counted")[1], goldkeeper.parse_judgments(after))
    assert len(left) == 2
    (summary,) = _artifacts(["goldkeeper-counted-rejudge"]).values()
    assert f"now {Waiting.of(left)}." in summary.data


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
