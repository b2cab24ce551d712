"""What every entry point's report bytes were before the evaluation core was made one
(issue 39): ``tests/data/one-road.json`` holds each case's sha256, written once by the code
that came before (``GOLDKEEPER_WRITE_ONE_ROAD=1``) and checked since. A case whose bytes
change is a report that changed: a reader's diff, not a refactoring."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "tests" / "data" / "one-road.json"
EXAMPLES = REPO / "src" / "goldkeeper" / "examples"
TREC = REPO / "tests" / "data" / "trec_eval"
NOW = "2026-12-01T00:00:00Z"


def examples(folder: Path) -> Path:
    """The shipped examples copied into ``folder``, with a second run (the first one's rankings
    reversed) for two-system cases; the inputs are named relative to it."""
    for name in ("judgments.jsonl", "run.jsonl", "corpus.json"):
        shutil.copy(EXAMPLES / name, folder / name)
    lines = [json.loads(line) for line in (EXAMPLES / "run.jsonl").read_text().splitlines()]
    (folder / "run-reversed.jsonl").write_text(
        "".join(json.dumps({**entry, "ranking": entry["ranking"][::-1]}) + "\n" for entry in lines))
    (folder / "judge.json").write_text("[0.81, 0.77, 0.9, 0.85, 0.79]")
    for name in ("qrels.test", "results.test"):
        shutil.copy(TREC / name, folder / name)
    return folder


def many(folder: Path) -> Path:
    """300 judged queries and a run that answers 7 in 10 at rank 1 (many.jsonl, many-run.jsonl):
    enough for sequential gates to stop early."""
    folder.joinpath("many.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i:03d}", "query": f"about q{i:03d}", "doc_uri": f"d-q{i:03d}", "relevance": 1}) + "\n"
        for i in range(300)))
    folder.joinpath("many-run.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i:03d}", "ranking": [f"d-q{i:03d}" if i % 10 < 7 else "nope", "x"]}) + "\n"
        for i in range(300)))
    return folder


def check(case: str, data: bytes, folder: Path | None = None) -> None:
    """``data`` (a report's bytes, with ``folder`` written as ``<tmp>``) is what it was."""
    if folder is not None:
        data = data.replace(str(folder).encode(), b"<tmp>")
    digest = hashlib.sha256(data).hexdigest()
    if os.environ.get("GOLDKEEPER_WRITE_ONE_ROAD"):
        known = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
        known[case] = digest
        MANIFEST.write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n")
        return
    known = json.loads(MANIFEST.read_text())
    assert case in known, f"{case}: no recorded bytes"
    assert digest == known[case], f"{case}: the report's bytes changed:\n{data[:2000].decode()}"
