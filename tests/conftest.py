"""Shared helpers: run the real `goldkeeper` command in a subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.browser import browser  # noqa: F401  (a fixture: headless Chromium for the browser tests)

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "spec" / "fixtures"

#: The house's contracts (import layers, public names), run before everything else: a broken
#: layer is said in the first seconds, not after the whole suite.
CONTRACTS = ("tests/unit/test_layers.py", "tests/unit/test_imports.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in CONTRACTS)  # stable: the rest keep their order


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> Result:
    """Run ``python -m goldkeeper ARGS`` exactly as a user's shell would, no stdin by default;
    ``env``: variables set beside this process's."""
    proc = subprocess.run(
        [sys.executable, "-m", "goldkeeper", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **env} if env else None,
        timeout=120,
    )
    return Result(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def trec_eval_dir() -> Path:
    """trec_eval's own test collection (tests/data/trec_eval, NIST's files unmodified; its README
    says where they come from), so a fresh clone needs nothing beside it."""
    return REPO / "tests" / "data" / "trec_eval"


# Real TREC data, fetched from PyPI at test time and never committed ------------------------

CAPREOLUS = ("capreolus", "0.2.6", "6a8746aa0dd114e9fadd3c32762a7d014efb53df34feee29d1e439598041e50d")


def _cache_dir() -> Path:
    import os

    root = os.environ.get("GOLDKEEPER_TEST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "goldkeeper-test-data"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def fetch_wheel(name: str, version: str, sha256: str, *, sdist: bool = False) -> Path:
    """``pip download --no-deps name==version`` (the wheel, or with ``sdist`` the source
    archive) into the cache, checked against a pinned sha256."""
    import hashlib

    cache = _cache_dir()
    pattern = f"{name}-{version}.tar.gz" if sdist else f"{name}-{version}-*.whl"
    found = next(cache.glob(pattern), None)
    if found is None:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", f"{name}=={version}",
             *(["--no-binary", ":all:"] if sdist else []), "-d", str(cache)],
            check=True, timeout=600,
        )
        found = next(cache.glob(pattern))
    digest = hashlib.sha256(found.read_bytes()).hexdigest()
    if digest != sha256:
        found.unlink()
        pytest.fail(f"{found.name}: sha256 {digest} is not the pinned {sha256}")
    return found


@pytest.fixture(scope="session")
def capreolus_data():
    """Members of the capreolus 0.2.6 wheel: Robust04 qrels and run, ANTIQUE qrels."""
    import zipfile

    wheel = fetch_wheel(*CAPREOLUS)
    with zipfile.ZipFile(wheel) as archive:
        def member(name: str) -> bytes:
            return archive.read(f"capreolus/data/{name}")

        return {name: member(name) for name in (
            "qrels.robust2004.txt", "rob04_yang19_rm3.run", "qrels.antique.txt")}


@pytest.fixture(scope="session")
def s3():
    """A moto S3 server on a free loopback port, with fsspec pointed at it (in this process,
    and through FSSPEC_S3_* variables in every process started after, Dask workers included)."""
    import fsspec.config

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("moto server did not start")
            time.sleep(0.1)
    mp = pytest.MonkeyPatch()
    for name, value in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        mp.setenv(name, value)
    mp.setenv("FSSPEC_S3_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    mp.setenv("FSSPEC_S3_SKIP_INSTANCE_CACHE", "true")
    mp.setitem(fsspec.config.conf, "s3", {"endpoint_url": f"http://127.0.0.1:{port}", "skip_instance_cache": True})
    import fsspec

    fsspec.filesystem("s3").mkdir("goldkeeper-test")
    yield "s3://goldkeeper-test"
    mp.undo()
    server.terminate()
    server.wait(timeout=10)
