"""The lifecycle on S3 that fails as S3 is documented to fail (issue 43, item 3), as a whole
flow: a re-index run by ``on_reindex`` in its own process through tests/faulty_s3's seeded
proxy in front of moto's server (503 SlowDown on a share of calls, 500 after a PUT was stored
on a share of PUTs, connections reset after forwarding) completes and leaves what a fault-free
run leaves. Before the storage fix a lost PUT of a generation claim was taken for another
writer's, the run failed, and every rerun failed the same way."""

from __future__ import annotations

import os

import pytest

from tests.faulty_s3 import FaultyS3
from tests.flows.killing import FIRST, Case
from tests.io.test_s3_faults import _comparable

pytestmark = pytest.mark.slow


def test_the_lifecycle_through_s3_faults_completes_and_ends_where_a_fault_free_run_ends(s3, prefect_server, tmp_path):
    moto = os.environ["FSSPEC_S3_ENDPOINT_URL"]
    aws = {name: os.environ[name] for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}

    def lifecycle(name: str, endpoint: str):
        case = Case(tmp_path, {**prefect_server, **aws, "FSSPEC_S3_ENDPOINT_URL": moto})  # the same run file
        case.root = f"{s3}/{name}"
        case.fresh()  # the suite set up fault-free; the re-index through ``endpoint``
        case.env = {**case.env, "FSSPEC_S3_ENDPOINT_URL": endpoint}
        return case.run(FIRST)

    clean = lifecycle("lifecycle-clean", moto)
    assert clean.returncode == 0, clean.stderr[-3000:]
    with FaultyS3(moto, seed=43, slowdown=0.10, lost_put=0.25, reset=0.05) as proxy:
        faulty = lifecycle("lifecycle-faulty", proxy.url)
    assert faulty.returncode == 0, (dict(proxy.injected), faulty.stderr[-3000:])
    assert min(proxy.injected[kind] for kind in ("slowdown", "lost_put", "reset")) >= 1, proxy.injected
    found, expected = _named_alike(f"{s3}/lifecycle-faulty"), _named_alike(f"{s3}/lifecycle-clean")
    assert found == expected, _differing(found, expected)
    print(f"faults injected: {dict(proxy.injected)} in {proxy.calls} calls; the run completed, end state equal "
          "to the fault-free run's")


def _named_alike(root: str) -> dict[str, list[bytes]]:
    """``_comparable``, with a report's name in a history line as <sha12>: a report is named by
    its bytes' sha256, and its bytes name its storage root, which the two runs do not share."""
    import re

    return {folder: [re.sub(rb"(<root>/reports/[^\"]+-)[0-9a-f]{12}\.json", rb"\1<sha12>.json", data) for data in found]
            for folder, found in _comparable(root).items()}


def _differing(found: dict[str, list[bytes]], expected: dict[str, list[bytes]]) -> list[str]:
    """The folders that differ, and in a JSON object the fields."""
    import json

    said = []
    for folder in sorted(found.keys() | expected.keys()):
        if found.get(folder) == expected.get(folder):
            continue
        try:
            one, other = json.loads(found[folder][0]), json.loads(expected[folder][0])
            said.append(f"{folder}: " + ", ".join(f"{k}: {one.get(k)!r} != {other.get(k)!r}"
                                                  for k in sorted(one.keys() | other.keys()) if one.get(k) != other.get(k)))
        except (KeyError, IndexError, ValueError, AttributeError):
            said.append(f"{folder}: {len(found.get(folder) or [])} object(s) != {len(expected.get(folder) or [])}")
    return said
