"""A real browser for tests of what people see: Debian's chromium driven by Playwright through
``executable_path`` (Playwright's own browser download cannot work without internet).
Screenshots go to test-output/screenshots/ (or GOLDKEEPER_SCREENSHOTS)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

SCREENSHOTS = Path(os.environ.get("GOLDKEEPER_SCREENSHOTS", Path(__file__).parents[1] / "test-output" / "screenshots"))


def chromium() -> str:
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
        launched = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        yield launched
        launched.close()


def new_page(browser, width: int = 1400, height: int = 1000):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(60_000)
    return page


def shot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
