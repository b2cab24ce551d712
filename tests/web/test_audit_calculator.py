"""The browser calculator equals ``goldkeeper audit``: the page the CLI writes, opened in headless
Chromium through the link the CLI prints, shows the numbers of ``audit --format json`` for a
table of cases, refuses what the CLI refuses with the same words, and sends nothing anywhere."""

from __future__ import annotations

import json
import math
import re

import pytest

from tests.browser import new_page, shot
from tests.conftest import run_cli

pytest.importorskip("playwright.sync_api")

CASES = {
    "seed-10-of-10": ["-n", "10", "-m", "recall@5", "-v", "1.00", "-b", "0.70"],
    "binary-resolvable": ["-n", "100", "-m", "hit_rate@10", "-v", "0.80", "-b", "0.70"],
    "binary-undetermined-overlap": ["-n", "40", "-m", "hit_rate@5", "-v", "0.60", "-b", "0.45"],
    "graded-ndcg": ["-n", "50", "-m", "ndcg@10", "-v", "0.62", "-b", "0.55"],
    "graded-forced-recall": ["-n", "30", "-m", "recall@10", "-v", "0.55", "--graded"],
    "not-k-over-n-so-graded": ["-n", "10", "-m", "P@1", "-v", "0.33"],
    "ir-measures-name-levels": ["-n", "1000", "-m", "nDCG@10", "-v", "0.452", "-b", "0.448",
                                "--confidence", "0.9", "--alpha", "0.01", "--power", "0.9"],
    "binary-forced": ["-n", "12", "-m", "recall@5", "-v", "0.75", "-b", "0.5", "--binary"],
    "zero-successes": ["-n", "5", "-m", "hit_rate@3", "-v", "0", "-b", "0.4"],
    "trec-eval-name-no-baseline": ["-n", "2000", "-m", "ndcg_cut_10", "-v", "0.5"],
}


def _close(page_value, cli_value, where: str) -> None:
    if isinstance(cli_value, dict):
        assert sorted(page_value) == sorted(cli_value), where
        for key in cli_value:
            _close(page_value[key], cli_value[key], f"{where}.{key}")
    elif isinstance(cli_value, list):
        assert len(page_value) == len(cli_value), where
        for i, (a, b) in enumerate(zip(page_value, cli_value)):
            _close(a, b, f"{where}[{i}]")
    elif isinstance(cli_value, float) and not isinstance(page_value, bool):
        assert math.isclose(page_value, cli_value, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {page_value} != {cli_value}"
    else:
        assert page_value == cli_value, f"{where}: {page_value!r} != {cli_value!r}"


def _open(browser, tmp_path, args: list[str]):
    """The page as the CLI writes it, at the link the CLI prints for ``args``."""
    written = run_cli("audit", "--web", "-o", str(tmp_path / "audit.html"), *args)
    assert written.code == 0, written.stderr
    link = re.search(r"^open: (\S+)$", written.stdout, re.M).group(1)
    page = new_page(browser, 1000, 900)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(link)
    return page, requests


@pytest.mark.parametrize("args", list(CASES.values()), ids=list(CASES))
def test_the_page_shows_what_the_cli_computes(browser, tmp_path, args):
    cli = run_cli("audit", *args, "--format", "json")
    assert cli.code in (0, 1), cli.stderr
    expected = json.loads(cli.stdout)
    page, requests = _open(browser, tmp_path, args)
    shown = page.locator("#out").get_attribute("data-result")
    assert shown, page.locator("#error").inner_text()
    _close(json.loads(shown), expected, "audit")
    low, high = expected["interval"]
    assert page.locator("#interval td").inner_text() == f"[{low:.3f}, {high:.3f}]"
    if "lift" in expected:
        badge = page.locator("#lift .verdict").inner_text()
        assert badge == expected["lift"]["verdict"].upper().replace("-", " ")
    assert all(url.startswith("file://") for url in requests), requests  # nothing sent anywhere
    page.close()


def test_the_seeds_ten_of_ten_reads_as_the_seed_says(browser, tmp_path):
    page, _ = _open(browser, tmp_path, CASES["seed-10-of-10"])
    assert page.locator("#interval td").inner_text() == "[0.692, 1.000]"
    assert page.locator("#floor td").inner_text() == "0.2500"
    assert page.locator("#differing td").inner_text() == "exactly 3 of 10"
    assert page.locator("#lift .verdict").inner_text() == "UNRESOLVABLE"
    assert "31 points wide" in page.locator("#wide").inner_text()
    shot(page, "11-audit-calculator-seed")
    page.close()


def test_a_figure_typed_in_gives_a_link_that_opens_on_the_same_answer(browser, tmp_path):
    page, _ = _open(browser, tmp_path, [])
    page.fill("#n", "40")
    page.fill("#m", "ndcg@10")
    page.fill("#v", "0.71")
    page.fill("#b", "0.64")
    page.click("#compute")
    link = page.url
    assert "#n=40&m=ndcg@10&v=0.71&b=0.64" in link
    answer = page.locator("#out").get_attribute("data-result")
    shot(page, "12-audit-calculator-graded")
    other = new_page(browser, 1000, 900)
    other.goto(link)
    assert other.locator("#out").get_attribute("data-result") == answer
    cli = run_cli("audit", "-n", "40", "-m", "ndcg@10", "-v", "0.71", "-b", "0.64", "--format", "json")
    _close(json.loads(answer), json.loads(cli.stdout), "audit")
    page.close()
    other.close()


@pytest.mark.parametrize("args", [["-n", "10", "-v", "0.55", "--binary"], ["-n", "10", "-v", "1.5"],
                                  ["-n", "10", "-v", "0.5", "-b", "1.2"]],
                         ids=["binary-not-k-over-n", "value-over-1", "baseline-over-1"])
def test_the_page_refuses_what_the_cli_refuses_in_the_same_words(browser, tmp_path, args):
    cli = run_cli("audit", *args)
    assert cli.code == 2
    page, _ = _open(browser, tmp_path, args)
    message = page.locator("#error").inner_text()
    assert message and message in cli.stderr, (message, cli.stderr)
    assert page.locator("#out").get_attribute("data-result") == ""
    page.close()


def test_the_pages_metric_tables_are_goldkeepers(browser, tmp_path):
    from goldkeeper.core import audit, metric_ids

    page, _ = _open(browser, tmp_path, [])
    tables = page.evaluate("[METRIC_NAMES, IR_MEASURES, TREC_EVAL, WHOLE_RANKING, TREC_EVAL_DEPTH, MAX_CUTOFF, WIDE]")
    assert tables == [list(metric_ids.METRIC_NAMES), metric_ids.IR_MEASURES, metric_ids.TREC_EVAL,
                      metric_ids.WHOLE_RANKING, metric_ids.TREC_EVAL_DEPTH, metric_ids.MAX_CUTOFF, audit.WIDE]
    page.close()
