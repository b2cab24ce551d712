"""The benches tell the truth: a peer that is missing or fails stops the bench, it is never
timed as fast."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import score_bench  # noqa: E402
from validate_bench import measure  # noqa: E402


def test_a_peer_that_fails_to_run_stops_the_bench():
    failing = [sys.executable, "-c", "import no_such_peer_module"]
    with pytest.raises(SystemExit, match="failed with exit 1"):
        measure(failing, sample=False, ok=score_bench.ok_codes("ranx"))
    # goldkeeper's exit 1 is a FAIL verdict, an answer, so it counts as a run.
    assert measure([sys.executable, "-c", "raise SystemExit(1)"], sample=False,
                   ok=score_bench.ok_codes("goldkeeper"))[2] == 1


def test_a_missing_peer_stops_the_bench_before_timing(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ranx" else real(name, *a))
    with pytest.raises(SystemExit, match=r"peers not installed:.*ranx.*\[bench\]"):
        score_bench.require_peers({"ranx", "pytrec_eval"})
    with pytest.raises(SystemExit, match="unknown peers"):
        score_bench.require_peers({"trec_eval_9000"})
