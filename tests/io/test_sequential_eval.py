"""Sequential gates that save queries: eval asks the judged queries in the gates' seeded order,
a batch of --concurrency at a time, and stops once every sequential gate has settled; the
report says what was spent and saved, a rerun spends the same, and the verdict equals a full
evaluation's."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest

from tests.conftest import run_cli

RETRIEVER = '''
import hashlib
def search(query, k=10, mode=""):
    with open("calls.log", "a") as log:
        log.write(query + "\\n")
    qid = query.split()[-1]
    good = int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 100 < SHARE
    return [f"d-{qid}" if good else "nope"]
'''


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "judgments.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i:03d}", "query": f"about q{i:03d}", "doc_uri": f"d-q{i:03d}", "relevance": 1}) + "\n"
        for i in range(300)))
    return tmp_path


def _eval(folder, share: int, out: str, *gates: str) -> tuple[int, dict, list[str]]:
    (folder / "retriever.py").write_text(RETRIEVER.replace("SHARE", str(share)))
    log = folder / "calls.log"
    log.unlink(missing_ok=True)
    result = run_cli("eval", "-j", "judgments.jsonl", "--backend", "python", "--python", "retriever:search", "-k", "1",
                     "--out", out, "--no-intervals", "--format", "json", *(a for g in gates for a in ("--gate", g)),
                     cwd=folder)
    assert result.code in (0, 1), result.stderr
    report = next(iter(json.loads(result.stdout)["systems"].values()))
    return result.code, report, log.read_text().splitlines()


@pytest.mark.parametrize(("share", "floor", "status"), [(95, 0.7, "PASS"), (40, 0.7, "FAIL")], ids=["good", "broken"])
def test_it_stops_once_the_sequential_gates_settle_and_says_what_it_saved(folder, share, floor, status):
    gate = f"recall@1:sequential:{floor}"
    code, report, calls = _eval(folder, share, "early", gate)
    spent = report["retrieval"]["sequential"]
    assert spent["of"] == 300 and spent["asked"] == len(calls) < 300
    assert spent["saved"] == 300 - spent["asked"] and spent["batch"] == 16 and spent["asked"] % 16 == 0
    assert report["judgments"]["queries"] == spent["asked"]  # queries never asked are not scored as misses
    assert report["verdict"]["gates"][0]["status"] == status and code == (0 if status == "PASS" else 1)
    looked = report["verdict"]["gates"][0]["looked"]
    assert spent["asked"] - 16 < looked <= spent["asked"]  # it stopped after the batch that settled it
    # a full evaluation (a non-sequential gate needs every query) watches the same looks
    _, full, all_calls = _eval(folder, share, "full", gate, "coverage:0.5")
    assert len(all_calls) == 300 and "sequential" not in full["retrieval"]
    assert full["verdict"]["gates"][0]["looked"] == looked
    assert full["verdict"]["gates"][0]["status"] == status
    # a rerun (no cache) asks the same queries (in the same batches; threads answer a batch in any order)
    _, again, calls_again = _eval(folder, share, "again", gate)
    assert sorted(calls_again) == sorted(calls) and again["retrieval"]["sequential"] == spent


def test_undecided_at_the_budget_fails_and_spends_only_the_budget(folder):
    code, report, calls = _eval(folder, 72, "budget", "recall@1:sequential:0.7:48")  # true rate near the floor
    assert code == 1
    assert len(calls) == 48 and report["retrieval"]["sequential"]["asked"] == 48
    assert "undecided" in report["verdict"]["reasons"][0] and report["verdict"]["gates"][0]["looked"] == 48


def test_the_text_output_says_how_many_queries_were_saved(folder):
    (folder / "retriever.py").write_text(RETRIEVER.replace("SHARE", "95"))
    result = run_cli("eval", "-j", "judgments.jsonl", "--backend", "python", "--python", "retriever:search", "-k", "1",
                     "--out", "text", "--no-intervals", "--gate-policy", "sequential", "--min-recall1", "0.7", cwd=folder)
    assert result.code == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("sequential gates settled after "))
    asked = int(line.split()[4])
    assert line == (f"sequential gates settled after {asked} of 300 queries (order seed 0): {300 - asked} "
                    f"({(300 - asked) / 300:.0%}) never asked")


def test_the_order_seed_is_settable_recorded_and_a_rerun_with_it_reproduces_the_looks(folder):
    """Issue 42, item 4 (rag-eval-gate's --sequential-seed, test_pipeline.py's
    test_the_shuffle_is_seeded_so_two_runs_agree): --seed sets the order the gates watch
    queries in; the gate result and the report record it; the same seed asks the same queries
    and looks the same, another seed another order."""
    def run(seed: int, out: str) -> tuple[dict, list[str]]:
        (folder / "calls.log").unlink(missing_ok=True)
        result = run_cli("eval", "-j", "judgments.jsonl", "--backend", "python", "--python", "retriever:search",
                         "-k", "1", "--out", out, "--no-intervals", "--format", "json", "--gate",
                         "recall@1:sequential:0.7", "--seed", str(seed), cwd=folder)
        assert result.code == 0, result.stderr
        return next(iter(json.loads(result.stdout)["systems"].values())), (folder / "calls.log").read_text().split("\n")

    (folder / "retriever.py").write_text(RETRIEVER.replace("SHARE", "95"))
    first, calls = run(7, "a")
    again, calls_again = run(7, "b")
    other, _ = run(8, "c")
    gate = first["verdict"]["gates"][0]
    assert gate["seed"] == 7 and first["retrieval"]["sequential"]["seed"] == 7
    assert again["verdict"]["gates"] == first["verdict"]["gates"] and sorted(calls_again) == sorted(calls)
    assert again["retrieval"]["sequential"] == first["retrieval"]["sequential"]
    assert other["verdict"]["gates"][0]["seed"] == 8
    assert other["retrieval"]["sequential"]["query_ids"] != first["retrieval"]["sequential"]["query_ids"]


def test_past_256_queries_the_gates_are_looked_at_as_the_queries_grow_by_a_quarter(monkeypatch):
    """A look recomputes the confidence sequence over every query asked: an undecided gate on a
    large set is looked at a few dozen times, not once per batch."""
    from goldkeeper.core import gates
    from goldkeeper.io.retrieval import sequential_stop

    looks: list[int] = []
    monkeypatch.setattr(gates, "sequential_settled", lambda parsed, per_query: looks.append(len(per_query)) or False)
    rows = [{"query_id": f"q{i}", "doc_uri": "d", "relevance": 1} for i in range(4000)]
    settled = sequential_stop(rows, [gates.parse_gate("recall@1:sequential:0.5")], [1], 1)
    for asked in range(16, 4001, 16):
        assert settled([], [f"q{i}" for i in range(asked)]) is False
    assert looks[:16] == list(range(16, 257, 16))  # every batch up to 256
    assert all(b >= 1.25 * a for a, b in pairwise(looks[15:]))
    assert len(looks) < 30  # 250 batches


PAIRED = '''
import hashlib
def search(query, k=10, mode=""):
    with open("calls.log", "a") as log:
        log.write(mode + " " + query + "\\n")
    qid = query.split()[-1]
    share = 95 if mode == "good" else 40
    good = int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 100 < share
    return [f"d-{qid}" if good else "nope"]
'''


def _paired(folder, modes: str, out: str, *extra: str) -> tuple[int, dict, list[str]]:
    (folder / "retriever.py").write_text(PAIRED)
    log = folder / "calls.log"
    log.unlink(missing_ok=True)
    result = run_cli("eval", "-j", "judgments.jsonl", "--backend", "python", "--python", "retriever:search",
                     "--modes", modes, "--paired-sequential", "recall@1", "--out", out, "--no-intervals",
                     "--format", "json", *extra, cwd=folder)
    assert result.code in (0, 1), result.stderr
    return result.code, json.loads(result.stdout), log.read_text().splitlines()


def test_a_paired_sequential_comparison_stops_asking_both_once_the_difference_is_settled(folder):
    """Issue 42, item 5 (rag-eval-gate's paired_gate, on eval --modes): both modes are asked the
    same queries in the seeded order, a batch at a time, until the confidence sequence of the
    difference excludes 0; a rerun asks the same; a gate that needs every query asks them all and
    the verdict is the same look."""
    code, found, calls = _paired(folder, "bad,good", "paired")
    (verdict,) = found["paired"]
    assert code == 0 and verdict["decision"] == "better" and verdict["challenger"] == "good"
    asked = found["systems"]["bad"]["retrieval"]["sequential"]
    assert asked["by"] == "the paired comparison" and asked["asked"] < 300 and asked["asked"] % 16 == 0
    assert asked == found["systems"]["good"]["retrieval"]["sequential"]
    assert sorted(c.split(" ", 1)[1] for c in calls if c.startswith("bad ")) == \
        sorted(c.split(" ", 1)[1] for c in calls if c.startswith("good ")) and len(calls) == 2 * asked["asked"]
    assert asked["asked"] - 16 < verdict["looked"] <= asked["asked"] and verdict["cs"][0] > 0
    _, again, calls_again = _paired(folder, "bad,good", "again")
    assert again["paired"] == found["paired"] and sorted(calls_again) == sorted(calls)
    _, full, all_calls = _paired(folder, "bad,good", "full", "--gate", "coverage:0.5")
    assert len(all_calls) == 600 and full["paired"][0]["looked"] == verdict["looked"]
    worse_code, worse, _ = _paired(folder, "good,bad", "worse")
    assert worse_code == 1 and worse["paired"][0]["decision"] == "worse"


def test_a_paired_comparison_needs_two_systems(folder):
    (folder / "retriever.py").write_text(PAIRED)
    result = run_cli("eval", "-j", "judgments.jsonl", "--backend", "python", "--python", "retriever:search",
                     "--paired-sequential", "recall@1", cwd=folder)
    assert result.code == 2 and "--paired-sequential: compares systems, and there is one" in result.stderr
