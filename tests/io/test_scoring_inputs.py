"""score's inputs read on two cores: the judgments cut between this process and the run's
reader give exactly what one process reading them gives, errors in the same order."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from goldkeeper.errors import InputError
from goldkeeper.io import loading


def _labels(n: int, extra: list[dict] | None = None) -> list[dict]:
    rows = [{"query_id": f"q{i // 5}", "query": f"query {i // 5}", "doc_uri": f"d{i}", "relevance": i % 4,
             "stratum": "billing" if (i // 5) % 3 else "sso", "labeled_by": "human:t"} for i in range(n)]
    return rows + (extra or [])


def _write(tmp_path: Path, rows: list[dict], name: str = "j.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(tmp_path: Path, queries: int, bad: bool = False) -> Path:
    path = tmp_path / "run.jsonl"
    lines = [json.dumps({"query_id": f"q{q}", "ranking": [f"d{q * 5 + j}" for j in range(8)]}) for q in range(queries)]
    if bad:
        lines[3] = '{"query_id": "q3", "ranking": "d1"}'
    path.write_text("\n".join(lines) + "\n")
    return path


def _read(judgments: Path, run: Path, split: bool, monkeypatch) -> object:
    monkeypatch.setattr(loading, "LABELS_SPLIT_MIN_BYTES", 1 if split else 1 << 40)
    assert (loading._labels_cut(str(judgments), None, str(run), None) is not None) == split
    calls: list[int] = []
    try:
        got = loading.read_scoring_inputs(str(judgments), None, str(run), None, 10,
                                          meanwhile=lambda: calls.append(len(calls)))
    except InputError as error:
        return ("error", str(error))
    q = got.qrels
    assert calls == [0]  # once, whichever process read what
    return (got.validation.to_dict(), [(k, list(v.items())) for k, v in q.grades.items()],
            list(q.stratum.items()), sorted(q.stratum_conflicts.items()), q.stratified,
            got.judgments_sha, got.run, got.run_sha)


CASES = {
    "plain": _labels(4000),
    # q1's target labeled again at the end: the halves interact, the tail is re-fed.
    "repeated target": _labels(4000, [{"query_id": "q1", "doc_uri": "d5", "relevance": 3}]),
    # q2 gets a second stratum after the cut, and new keys.
    "stratum conflict": _labels(4000, [{"query_id": "q2", "doc_uri": "x", "relevance": 1, "stratum": "x"}]),
    "query text differs": _labels(4000, [{"query_id": "q0", "query": "other", "doc_uri": "y", "relevance": 1}]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_split_reading_equals_one_process(case, tmp_path, monkeypatch):
    judgments, run = _write(tmp_path, CASES[case]), _run(tmp_path, 800)
    split, whole = _read(judgments, run, True, monkeypatch), _read(judgments, run, False, monkeypatch)
    assert split == whole
    assert split[5] == hashlib.sha256(judgments.read_bytes()).hexdigest()


@pytest.mark.parametrize(("where", "bad_run"), [("head", False), ("tail", False), ("tail", True), (None, True)])
def test_errors_keep_their_order_and_line(where, bad_run, tmp_path, monkeypatch):
    rows = [json.dumps(r) for r in _labels(4000)]
    line = {"head": 10, "tail": 3900, None: None}[where]
    if line is not None:
        rows[line - 1] = '{"query_id": "q", "doc_uri": "d", "relevance": "high"}'
    judgments = tmp_path / "j.jsonl"
    judgments.write_text("\n".join(rows) + "\n")
    run = _run(tmp_path, 800, bad=bad_run)
    split, whole = _read(judgments, run, True, monkeypatch), _read(judgments, run, False, monkeypatch)
    assert split == whole
    assert split[0] == "error"
    assert (f"j.jsonl:{line}" if line else "run.jsonl:4") in split[1]


def test_only_blank_lines_is_worded_as_in_one_process(tmp_path, monkeypatch):
    judgments = tmp_path / "j.jsonl"
    judgments.write_text("\n" * 5000)
    run = _run(tmp_path, 10)
    split, whole = _read(judgments, run, True, monkeypatch), _read(judgments, run, False, monkeypatch)
    assert split == whole and split[0] == "error"


def test_work_done_meanwhile_moves_the_cut_to_the_child(tmp_path, monkeypatch):
    """What this process does meanwhile (score: numpy's import) is weighed in label bytes: the
    child then reads more of the judgments."""
    judgments, run = _write(tmp_path, _labels(40_000)), _run(tmp_path, 8000)
    monkeypatch.setattr(loading, "LABELS_SPLIT_MIN_BYTES", 1)
    plain = loading._labels_cut(str(judgments), None, str(run), None)
    weighed = loading._labels_cut(str(judgments), None, str(run), None, 1 << 20)
    assert plain is not None and weighed is not None and 0 < weighed[1] < plain[1]


@pytest.mark.parametrize("where", ["run", "judgments"])
def test_an_input_read_from_stdin_scores_as_the_same_file(where, tmp_path):
    """The run is read in a forked child, which keeps this process's stdin: with
    multiprocessing's child, which closes it, ``--run -`` read an empty run and every query
    scored 0."""
    import goldkeeper.examples
    from tests.conftest import run_cli

    examples = Path(goldkeeper.examples.__path__[0])
    files = {"judgments": examples / "judgments.jsonl", "run": examples / "run.jsonl"}
    common = ["score", "-k", "1,3", "--format", "json", "--no-intervals", "--now", "2026-01-01T00:00:00Z"]
    from_files = run_cli(*common, "-j", str(files["judgments"]), "-r", str(files["run"]))
    piped = {name: ("-" if name == where else str(path)) for name, path in files.items()}
    from_stdin = run_cli(*common, "-j", piped["judgments"], "-r", piped["run"], stdin=files[where].read_bytes())
    assert from_files.code == from_stdin.code == 0, from_stdin.stderr
    expected, got = json.loads(from_files.stdout), json.loads(from_stdin.stdout)
    assert got["metrics"] == expected["metrics"] and got["metrics"]["recall@3"]["value"] > 0
    assert got["per_query"] == expected["per_query"]


def _deep_run(tmp_path: Path, queries: int, depth: int, kind: str, extra: list[str] | None = None) -> Path:
    """A run whose rankings reach every judged key of a query (``_labels``: q's are
    d{5q}..d{5q+4}) and many unjudged ones, as JSONL or TREC."""
    import random

    rng = random.Random(7)
    lines = []
    for q in range(queries):
        ranking = [f"d{q * 5 + j}" for j in range(5)] + [f"u{q}-{j}" for j in range(depth - 5)]
        rng.shuffle(ranking)
        if kind == "jsonl":
            lines.append(json.dumps({"query_id": f"q{q}", "ranking": ranking}))
        else:
            lines += [f"q{q} Q0 {key} {rank + 1} {depth - rank} t" for rank, key in enumerate(ranking)]
    path = tmp_path / f"deep.{kind}"
    path.write_text("\n".join(lines + (extra or [])) + "\n")
    return path


def _scored(judgments: Path, run: Path, depth: int, graded: bool, monkeypatch) -> object:
    from goldkeeper.core.scoring import add_query_values
    from goldkeeper.score_command import _query_values  # what score gives the reader

    monkeypatch.setattr(loading, "HALVING_MIN_BYTES", 1)
    monkeypatch.setattr(loading, "GRADED_KEYS_PER_LABEL", 0 if graded else 1 << 40)
    assert loading._graded(str(judgments), str(run), None, depth) == graded
    try:
        got = loading.read_scoring_inputs(str(judgments), None, str(run), None, depth,
                                          score_heads=lambda qrels, blocks: _query_values(qrels, blocks, [3, depth], 2))
    except InputError as error:
        return ("error", str(error)), None
    parts = len(got.run)  # the parts' values: one per process that read a part (one: the file whole)
    found = add_query_values(got.run)
    values = {str(metric): [v.hex() for v in column] for metric, column in found.values.items()}
    return (got.validation.to_dict(), got.judgments_sha, got.run_sha, found.scored_ids, values,
            sorted(found.seen_in_run), sorted(found.duplicates), sorted(found.run_only), found.run_queries), parts


@pytest.mark.parametrize("block", [4 << 20, 3000])
@pytest.mark.parametrize("kind", ["jsonl", "trec"])
@pytest.mark.parametrize("case", ["plain", "unjudged queries", "repeated keys", "query twice", "bad line"])
def test_a_run_scored_where_it_is_read_equals_one_heads_scored_here(kind, case, block, tmp_path, monkeypatch):
    """With deep cutoffs the judgments are read first and each process scores the part of the
    run it read, a block of lines at a time (here also blocks of a few queries); the values,
    the bookkeeping and every error are those of scoring the heads in this process."""
    monkeypatch.setattr(loading, "SCORE_BLOCK_BYTES", block)
    judgments = _write(tmp_path, _labels(1000))
    extra = {
        "plain": [],
        "unjudged queries": [json.dumps({"query_id": "zz", "ranking": ["a", "b"]}) if kind == "jsonl"
                             else "zz Q0 a 1 2 t"],
        "repeated keys": [json.dumps({"query_id": "q150", "ranking": ["d750", "d750", "x"]}) if kind == "jsonl"
                          else "q150 Q0 d750 1 2 t\nq150 Q0 d750 2 1 t"],
        "query twice": [json.dumps({"query_id": "q3", "ranking": ["d1"]}) if kind == "jsonl" else "q3 Q0 zzz 1 0 t"],
        "bad line": ['{"query_id": "q9", "ranking": "d1"}' if kind == "jsonl" else "q9 Q0 d1"],
    }[case]
    run = _deep_run(tmp_path, 150, 60, kind, extra)  # q150-q199 are judged and missing from it
    (graded, parts), (here, one) = _scored(judgments, run, 50, True, monkeypatch), _scored(judgments, run, 50, False, monkeypatch)
    assert graded == here
    # A TREC run may name a query again anywhere: then both parts hold it and the file is
    # scored whole; a bad line is worded by the one-piece reader.
    if graded[0] != "error":
        assert one == 1 and parts == (1 if case == "query twice" else 2)
    if case in ("plain", "unjudged queries", "repeated keys"):
        assert graded[0] != "error" and graded[2] == hashlib.sha256(run.read_bytes()).hexdigest()
        assert any(v != (0.0).hex() for v in graded[4]["ndcg@50"])
    if case == "repeated keys" and kind == "jsonl":
        assert "q150" in graded[6]
    if case == "bad line" or (case == "query twice" and kind == "jsonl"):
        assert graded[0] == "error"


def test_deep_heads_are_scored_where_they_are_read_and_shallow_ones_here(tmp_path, monkeypatch):
    """``_graded`` weighs the keys the heads would hold against the labels: 200 queries of 5
    labels, rankings of 60 keys, against GRADED_KEYS_PER_LABEL (8)."""
    monkeypatch.setattr(loading, "HALVING_MIN_BYTES", 1)
    judgments = _write(tmp_path, _labels(1000))
    for kind in ("jsonl", "trec"):
        run = _deep_run(tmp_path, 200, 60, kind)
        assert loading._graded(str(judgments), str(run), None, 50)  # 50 keys a query, 5 labels
        assert not loading._graded(str(judgments), str(run), None, 10)  # 10 against 5
        assert not loading._graded("-", str(run), None, 50)
    monkeypatch.setattr(loading, "HALVING_MIN_BYTES", 1 << 40)
    assert not loading._graded(str(judgments), str(run), None, 50)  # too small to cut
