"""Storage on S3, through s3fs against moto's server mode on loopback (a real HTTP server)."""

from __future__ import annotations

import json

import pytest

import goldkeeper
from goldkeeper.errors import StorageError
from goldkeeper.io import storage
from tests.conftest import FIXTURES


def test_judgments_round_trip_on_s3(s3):
    labels = goldkeeper.parse_judgments((FIXTURES / "drift" / "judgments.jsonl").read_bytes())
    goldkeeper.write_judgments(f"{s3}/labels.jsonl", labels)
    again = goldkeeper.read_judgments(f"{s3}/labels.jsonl")
    assert goldkeeper.dump_judgments(again) == goldkeeper.dump_judgments(labels)


def test_versions_and_compare_and_swap_on_s3(s3):
    root = f"{s3}/cas"
    _, first = storage.write_judgments_version(root, "suite", b"one\n", None)
    storage.write_judgments_version(root, "suite", b"two\n", first)
    with pytest.raises(StorageError, match="changed since it was read"):
        storage.write_judgments_version(root, "suite", b"three\n", first)
    assert storage.read_current_judgments(root, "suite")[0] == b"two\n"


def test_reports_and_history_on_s3(s3):
    root = f"{s3}/reports-test"
    report = {"generated_at": "2026-11-29T12:00:00Z", "metrics": {"recall@5": {"value": 0.5, "ci": [0.1, 0.9]}},
              "verdict": {"status": "PASS"}, "inputs": {}}
    first = storage.publish_report(root, "Suite A", report)
    second = storage.publish_report(root, "Suite A", {**report, "generated_at": "2026-11-30T12:00:00Z"})
    assert first != second and first.startswith(f"{root}/reports/suite-a-10a8fe/")  # "Suite A" is not its own slug
    history = storage.read_history(root, "Suite A")
    assert [h["time"] for h in history] == ["2026-11-29T12:00:00Z", "2026-11-30T12:00:00Z"]
    assert json.loads(goldkeeper.io.read_bytes(first))["verdict"]["status"] == "PASS"


def test_a_missing_object_is_a_storage_error(s3):
    with pytest.raises(StorageError, match="no such file or object"):
        goldkeeper.read_judgments(f"{s3}/nothing-here.jsonl")


def test_two_writers_that_read_the_same_version_on_s3_one_wins_by_conditional_put(s3, monkeypatch):
    """The race between reading the head and claiming the next generation, forced: the second
    writer's claim meets the first one's object (If-None-Match: *) and fails cleanly; its
    version is stored all the same, and the current version is the winner's."""
    import hashlib

    import fsspec

    root = f"{s3}/race"
    storage.write_judgments_version(root, "suite", b"v0\n", None)
    first_sha = hashlib.sha256(b"v0\n").hexdigest()
    stale = storage._head(root, "suite")
    storage.write_judgments_version(root, "suite", b"winner\n", first_sha)
    monkeypatch.setattr(storage, "_head", lambda root, slug: stale)  # read before the winner claimed
    with pytest.raises(StorageError, match="a newer one made current meanwhile"):
        storage.write_judgments_version(root, "suite", b"loser\n", first_sha)
    monkeypatch.undo()
    data, _ = storage.read_current_judgments(root, "suite")
    assert data == b"winner\n"
    fs, _ = fsspec.core.url_to_fs(root)
    versions = {p.rsplit("/", 1)[-1] for p in fs.ls(f"{root}/judgments/suite/versions", detail=False)}
    assert f"{hashlib.sha256(b'loser' + bytes([10])).hexdigest()}.jsonl" in versions  # no data is lost
    generations = fs.ls(f"{root}/judgments/suite/generations", detail=False)
    assert len(generations) == 2


def test_a_page_on_s3_gets_a_presigned_link_a_browser_opens_as_html(s3):
    """The link an artifact shows for a page on S3: presigned (no secret in it), valid for the
    stated lifetime, served as text/html so a browser shows it rather than downloading it."""
    import httpx

    url = storage.publish_page(f"{s3}/pages-test", "Suite A", "index.html", b"<!doctype html><p>trend</p>")
    link = storage.browser_link(url)
    import re
    import time

    assert link.startswith("http://127.0.0.1:") and "Signature" in link
    assert "AWS_SECRET" not in link and "=test&Signature" in link  # the key's id signs; its secret never travels
    expires = int(re.search(r"Expires=(\d+)", link).group(1))
    assert abs(expires - time.time() - storage.LINK_LIFETIME_SECONDS) < 600  # a week from now
    answer = httpx.get(link, timeout=10)
    assert answer.status_code == 200 and answer.content == b"<!doctype html><p>trend</p>"
    assert answer.headers["content-type"].startswith("text/html")
    assert storage.browser_link("file:///tmp/x.html") is None
