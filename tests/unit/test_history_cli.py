"""`goldkeeper history`: a suite's trend from storage, and its page, without Prefect."""

from __future__ import annotations

import json

from goldkeeper.io import storage
from tests.browser import new_page, shot
from tests.conftest import run_cli


def _report(day: int, value: float, judgments: str, k=(5,)):
    return {"generated_at": f"2026-11-0{day}T03:00:00Z", "tool": {"name": "goldkeeper", "version": "0"},
            "corpus": {"fingerprint": "para/v1"}, "judgments": {"queries": 4, "labels": 4, "queries_scored": 4}, "coverage": 1.0,
            "metrics": {"recall@5": {"value": value, "ci": [value - 0.1, value + 0.1], "n": 4}},
            "verdict": {"status": "PASS" if value >= 0.5 else "FAIL", "reasons": [] if value >= 0.5 else
                        ["recall@5 is below 0.5"], "gates": [{"expression": "recall@5:0.5",
                                                              "status": "PASS" if value >= 0.5 else "FAIL"}]},
            "k": list(k), "threshold": 1, "inputs": {"judgments": {"sha256": judgments}}}


def test_history_shows_the_trend_marks_a_judgments_change_and_writes_the_page(tmp_path):
    root = f"file://{tmp_path}/store"
    for day, value, judgments in ((1, 0.75, "a" * 64), (2, 0.5, "a" * 64), (3, 0.25, "b" * 64)):
        storage.publish_report(root, "Nightly", _report(day, value, judgments))
    page = tmp_path / "page.html"
    shown = run_cli("history", "Nightly", "--storage", root, "--html", str(page))
    assert shown.code == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if line.startswith("| 2026")]
    assert rows[0] == "| 2026-11-03T03:00:00Z | `bbbbbbbb (changed)` | para/v1 | 0.2500 [0.1500, 0.3500] (-0.2500) | **FAIL** |"
    assert rows[2] == "| 2026-11-01T03:00:00Z | `aaaaaaaa` | para/v1 | 0.7500 [0.6500, 0.8500] | **PASS** |"
    assert f"file://{page}" in shown.stderr
    html = page.read_text()
    assert 'class="verdict FAIL"' in html and "new judgments" in html and html.count("<svg") == 1
    as_json = json.loads(run_cli("history", "Nightly", "--storage", root, "--format", "json").stdout)
    assert [p["previous"] for p in as_json["points"]] == [None, 0, 1]
    assert [p["judgments_changed"] for p in as_json["points"]] == [False, False, True]


def test_history_of_an_unknown_suite_is_one_line_and_exit_2(tmp_path):
    result = run_cli("history", "nobody", "--storage", f"file://{tmp_path}")
    assert result.code == 2 and result.stderr.count("\n") == 1 and "suite 'nobody': no evaluation" in result.stderr


def test_the_chart_tells_evaluations_minutes_apart_and_marks_failed_ones(tmp_path, browser):
    """Issue 42, item 9: evaluations seconds apart get distinct time labels (minutes would
    give them one), each FAIL evaluation's values a red cross; the page says PASS once."""
    import re

    root = f"file://{tmp_path}/store"
    for second, value in ((5, 0.75), (35, 0.25), (50, 0.75)):
        report = _report(1, value, "a" * 64)
        report["generated_at"] = f"2026-11-01T03:00:{second:02d}Z"
        storage.publish_report(root, "Minutes", report)
    page = tmp_path / "page.html"
    assert run_cli("history", "Minutes", "--storage", root, "--html", str(page)).code == 0
    html = page.read_text()
    # seconds shown: to the minute, all three would read 03:00
    assert re.findall(r"<!-- (03:00(?::\d\d)?) -->", html) == ["03:00:05", "03:00:35", "03:00:50"]
    shown = new_page(browser, 1280, 720)
    shown.goto(f"file://{page}")
    crosses = shown.locator('[id="fail-recall@5-0"] use')  # one placed marker per FAIL value
    assert crosses.count() == 1 and crosses.first.is_visible()  # the one FAIL evaluation, marked
    assert shown.locator("#verdict").inner_text() == "PASS"
    line = shown.locator("p", has=shown.locator("#verdict")).inner_text()
    assert line.startswith("PASS 1 gate(s) passed"), line  # the status once, not "PASS PASS: 1 gate(s) passed"
    shot(shown, "14-trend-seconds-apart-fail-marked-1280x720")
    shown.close()
