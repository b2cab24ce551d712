"""Storage that fails as S3 is documented to fail (issue 43, item 3): through a seeded proxy in
front of moto's server that answers a share of calls ``503 SlowDown``, a share of PUTs ``500
InternalError`` after storing them, and resets a share of connections after forwarding them.
Transient faults are retried by the client; a write whose outcome was unknown and is retried
is verified, so goldkeeper's own write is never taken
for another writer's (it was: "found a newer one made current meanwhile", and every rerun
failed the same way); a fault that outlasts the retries fails with its reason and changes
nothing; the end state equals a fault-free run's."""

from __future__ import annotations

import json

import fsspec
import fsspec.config
import pytest

from goldkeeper.errors import StorageError
from goldkeeper.io import storage
from tests.faulty_s3 import FaultyS3


def _through(monkeypatch, endpoint: str, **options) -> None:
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": endpoint, "skip_instance_cache": True, **options})


def _lifecycle_writes(root: str) -> None:
    """What a re-index writes to storage, in its order: judgments versions by compare-and-swap,
    reports with their history lines."""
    sha = None
    for i in range(4):
        _, sha = storage.write_judgments_version(root, "suite", f"labels, version {i}\n".encode(), sha)
        report = {"generated_at": f"2026-12-0{i + 1}T00:00:00Z", "metrics": {"recall@5": {"value": i / 10}},
                  "verdict": {"status": "PASS"}, "inputs": {"judgments": {"sha256": sha}}}
        storage.publish_report(root, "suite", report)


def _state(root: str) -> dict[str, bytes]:
    fs, path = fsspec.core.url_to_fs(root)
    return {name[len(path):]: fs.cat_file(name) for name in fs.find(path)}


def _comparable(root: str) -> dict[str, list[bytes]]:
    """Each folder's objects, the root named as <root> in their bytes (a history line names its
    report by URL, and so its object's name differs between two roots): what two runs on two
    roots must share."""
    folders: dict[str, list[bytes]] = {}
    for name, data in _state(root).items():
        folder = name.rsplit("/", 1)[0]
        keep = name if "/judgments/" in name else folder  # versions and generations are named alike
        folders.setdefault(keep, []).append(data.replace(root.encode(), b"<root>"))
    return {folder: sorted(found) for folder, found in folders.items()}


def test_transient_faults_and_lost_puts_end_where_a_fault_free_run_ends(s3, monkeypatch):
    moto = fsspec.config.conf["s3"]["endpoint_url"]
    _lifecycle_writes(f"{s3}/clean")
    with FaultyS3(moto, seed=43, slowdown=0.10, lost_put=0.25, reset=0.08) as proxy:
        _through(monkeypatch, proxy.url)
        _lifecycle_writes(f"{s3}/faulty")
    _through(monkeypatch, moto)
    assert min(proxy.injected[kind] for kind in ("slowdown", "lost_put", "reset")) >= 3, proxy.injected
    clean, faulty = _comparable(f"{s3}/clean"), _comparable(f"{s3}/faulty")
    assert faulty == clean  # the same versions, one generation claim each, the same reports and history
    assert sum(1 for name in faulty if "/generations/" in name) == 4
    print(f"faults injected: {dict(proxy.injected)} in {proxy.calls} calls; end state equal to the fault-free run")


def test_a_fault_that_outlasts_the_retries_fails_with_its_reason_and_changes_nothing(s3, monkeypatch):
    moto = fsspec.config.conf["s3"]["endpoint_url"]
    root = f"{s3}/outlasted"
    _, sha = storage.write_judgments_version(root, "suite", b"v0\n", None)
    before = _state(root)
    with FaultyS3(moto, seed=1, slowdown=1.0) as proxy:
        # fewer attempts than botocore's default 5, only to give up sooner
        _through(monkeypatch, proxy.url, config_kwargs={"retries": {"max_attempts": 2}})
        with pytest.raises(StorageError) as failed:
            storage.write_judgments_version(root, "suite", b"v1\n", sha)
    _through(monkeypatch, moto)
    assert "SlowDown" in str(failed.value) or "reduce your request rate" in str(failed.value), str(failed.value)
    assert _state(root) == before and proxy.injected["slowdown"] >= 2  # retried, then given up


def test_another_writer_is_still_another_writer_under_faults(s3, monkeypatch):
    """The verification tells a lost PUT from a race: a claim that meets another writer's
    object still fails cleanly, faults or not."""
    moto = fsspec.config.conf["s3"]["endpoint_url"]
    root = f"{s3}/race-under-faults"
    _, first = storage.write_judgments_version(root, "suite", b"v0\n", None)
    stale = storage._head(root, "suite")
    storage.write_judgments_version(root, "suite", b"winner\n", first)
    with FaultyS3(moto, seed=7, lost_put=0.5) as proxy:
        _through(monkeypatch, proxy.url)
        monkeypatch.setattr(storage, "_head", lambda root, slug: stale)
        with pytest.raises(StorageError, match="a newer one made current meanwhile"):
            storage.write_judgments_version(root, "suite", b"loser\n", first)
    monkeypatch.undo()
    assert storage.read_current_judgments(root, "suite")[0] == b"winner\n"
    assert json.loads(_state(root)["/judgments/suite/generations/000000000002.json"])["parent"] == first
