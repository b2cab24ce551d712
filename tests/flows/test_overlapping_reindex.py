"""Duplicate and overlapping re-index events for one suite (issue 43, item 2; spec/prefect.md,
"Events that overlap").

goldkeeper takes no lock: the judgments version is a compare-and-swap on storage, and each
re-index keeps a record on storage (reindex/<suite>/<corpus sha16>.json). The same event twice,
at once or one after the other, is one re-index: the second run takes up the first's record,
repeats its writes byte for byte, and makes no second version. Two different re-indexes at
once are applied one after the other: the one whose version is made current first goes
first, and the other, whose compare-and-swap then fails, starts over on that version. The end
equals running them one after the other, with one version per corpus and every evaluation's
history object.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.flows.killing import FIRST, Case, differences

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def case(prefect_server, tmp_path_factory):
    case = Case(tmp_path_factory.mktemp("overlapping"), prefect_server)
    # A second re-index of the same documents: one chunk's text revised (r4).
    chunks = tmp_path_factory.mktemp("revised") / "chunks.jsonl"
    merged = json.loads((FIXTURES / "merge" / "corpus.json").read_text())["chunks"]
    rows = [{"doc_uri": c["doc_uri"], "doc_revision": "r4", "ordinal": c["ordinal"],
             "text": c["text"] + (" Ask your account manager." if c["ordinal"] == 1 else "")} for c in merged]
    chunks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    case.revised = str(chunks.parent / "corpus.json")
    made = subprocess.run([str(BIN / "goldkeeper"), "snapshot", str(chunks), "--chunker", "recursive/r4", "-o",
                           case.revised, "--quiet"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    return case


def _ended(done: subprocess.CompletedProcess | subprocess.Popen) -> str:
    """What a lifecycle process said, once it ended with a verdict: PASS, or the FAIL of the
    revised corpus (its run ranks the chunks of the first), which is an answer, not a crash."""
    out, err = done.communicate(timeout=300) if isinstance(done, subprocess.Popen) else (done.stdout, done.stderr)
    assert done.returncode == 0 or (done.returncode == 1 and err.rstrip().splitlines()[-1].startswith(
        "goldkeeper.flows.evaluate.EvaluationFailed: ")), err[-3000:]
    return out + err


def _versions(stored: dict[str, bytes]) -> list[str]:
    return sorted(p for p in stored if "/versions/" in p)


def _history(stored: dict[str, bytes]) -> list[dict]:
    return [json.loads(stored[p]) for p in sorted(stored) if p.startswith("history/")]


def test_the_same_event_twice_at_once_and_again_later_is_one_reindex(case):
    case.fresh()
    assert case.run(FIRST).returncode == 0
    once = case.stored()
    case.fresh()
    both = [case.start(case.corpus), case.start(case.corpus)]
    for process in both:
        _ended(process)
    assert differences(once, case.stored()) == []
    assert len(_versions(once)) == 2 and len(_history(once)) == 1  # the first version and the re-index's
    # delivered a third time, once all is done
    assert case.run(FIRST).returncode == 0
    assert differences(once, case.stored()) == []


def test_two_different_reindexes_at_once_are_applied_one_after_the_other(case, tmp_path):
    """The first re-index reads the suite's version and holds before making its own until the
    second is done: its compare-and-swap fails, it starts over on the second's version, and
    the end is what running the second and then the first leaves. (The second is let finish
    first because two evaluations of one suite that run at once race to write its page and
    chart: whichever writes last is shown, not the newest; see spec/prefect.md.)"""
    case.fresh()
    _ended(case.run(FIRST, corpus=case.revised))
    _ended(case.run(FIRST))
    in_order = case.stored()

    case.fresh()
    went = tmp_path / "second-made-its-version"
    first = case.start(case.corpus, {"hold": "task write_version start", "until": str(went)}, tmp_path / "first.json")
    deadline = time.monotonic() + 120  # the first has read the suite's first version, and holds
    while not Path(f"{went}.holding").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert Path(f"{went}.holding").exists(), first.communicate()[1][-3000:]
    second = case.start(case.revised, {"touch": "task announce end", "path": str(went)},
                        tmp_path / "second.json")
    said_second = _ended(second)
    _ended(first)
    assert went.exists(), said_second
    found = case.stored()
    assert differences(in_order, found) == []
    assert len(_versions(found)) == 3  # the suite's first version, one per corpus
    history = _history(found)
    assert len(history) == 2 and len({h["judgments_sha256"] for h in history}) == 2  # each re-index's evaluation
    config = json.loads(found["suites/wiki-qa.json"])
    assert config["corpus_url"] == case.corpus  # the live corpus is the one applied last
    # The first, held after reading the suite's first version, started over: its record (made
    # anew) says it read the version the second made.
    revised = json.loads(Path(case.revised).read_text())["corpus_fingerprint"]
    made_by_second = next(h["judgments_sha256"] for h in history if h["corpus_fingerprint"] == revised)
    records = {json.loads(v)["corpus_url"]: json.loads(v) for p, v in found.items() if p.startswith("reindex/")}
    assert records[case.corpus]["judgments_sha256"] == made_by_second


EVALUATE = ("import sys; from goldkeeper.flows.evaluate import evaluate; "
            "evaluate(suite='wiki-qa', system=sys.argv[1], judgments_url=sys.argv[2], run_url=sys.argv[3], "
            "storage_url=sys.argv[4], k=[1, 2], generated_at=sys.argv[5], return_state=True)")


def test_two_evaluations_publishing_the_suite_page_at_once_leave_both_on_it(case, tmp_path):
    """Evaluation A reads the suite's history, then is held before it shows it; evaluation B
    (another system) runs whole meanwhile. A's page, written last, was drawn from a history
    without B's line: A reads the history again after it writes, and draws the page again
    while it has changed, so the page left on storage has both systems' evaluations."""
    from goldkeeper.io.storage import current_judgments_url, read_history

    case.fresh()
    judgments = current_judgments_url(case.root, "wiki-qa")
    go = tmp_path / "go"
    held = subprocess.Popen([sys.executable, "-c", EVALUATE, "alpha-system", judgments, str(case.run_file), case.root,
                             "2026-12-07T10:00:00Z"], env=case.environment(FIRST, {"hold": "task show start",
                                                                                    "until": str(go)}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not Path(f"{go}.holding").exists() and held.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert Path(f"{go}.holding").exists(), held.communicate()[1][-3000:]
    other = subprocess.run([sys.executable, "-c", EVALUATE, "beta-system", judgments, str(case.run_file), case.root,
                            "2026-12-07T10:00:01Z"], env=case.environment(FIRST, None), capture_output=True, text=True,
                           timeout=300)
    assert other.returncode == 0, other.stderr[-3000:]
    go.touch()
    _, err = held.communicate(timeout=300)
    assert held.returncode == 0, err[-3000:]
    assert {entry.get("system") for entry in read_history(case.root, "wiki-qa")} >= {"alpha-system", "beta-system"}
    page = (case.store / "pages" / "wiki-qa" / "index.html").read_text()
    assert "alpha-system" in page and "beta-system" in page
