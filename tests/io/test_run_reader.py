"""A large TREC run read by two processes (a half each, cut at a query boundary) gives what
one process gives, and refers anything unusual back to the line reader."""

from __future__ import annotations

import random

import pytest

from goldkeeper.errors import InputError
from goldkeeper.io import loading
from goldkeeper.io.loading import RunReader, load_run_prefixes


@pytest.fixture(autouse=True)
def small_halving(monkeypatch):
    monkeypatch.setattr(loading, "HALVING_MIN_BYTES", 1)


def _run(path, queries=200, depth=40, seed=0, shuffle=False):
    rng = random.Random(seed)
    lines = [f"q{q} Q0 d{rng.randint(0, 500)} {r + 1} {rng.choice([round(rng.random(), 2), 1.0])} tag"
             for q in range(queries) for r in range(depth)]
    if shuffle:
        rng.shuffle(lines)
    path.write_text("\n".join(lines) + "\n")
    return path


def _same(url, depth=10):
    halved, sha = RunReader(str(url), None, depth).result()
    whole, whole_sha = load_run_prefixes(str(url), None, depth)
    assert sha == whole_sha
    assert list(halved) == list(whole)
    return halved


def test_halves_give_the_one_process_entries(tmp_path):
    url = _run(tmp_path / "run.trec")
    reader = RunReader(str(url), None, 10)
    assert reader._cut is not None  # the file was cut
    data = url.read_bytes()
    before = data[:reader._cut].splitlines()[-1].split()[0]
    after = data[reader._cut:].splitlines()[0].split()[0]
    assert before != after  # at a query boundary
    assert len(_same(url)) == 200


def test_interleaved_queries_fall_back_to_the_line_reader(tmp_path):
    url = _run(tmp_path / "run.trec", shuffle=True)
    assert len(_same(url)) == 200


def test_a_bad_line_in_the_second_half_is_named_by_its_line_in_the_file(tmp_path):
    url = _run(tmp_path / "run.trec")
    lines = url.read_text().splitlines()
    lines[-3] = "q199 Q0 d1 x 0.5 tag"
    url.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        RunReader(str(url), None, 10).result()
    assert caught.value.line == len(lines) - 2 and caught.value.field == "rank"


def test_jsonl_runs_are_not_cut(tmp_path):
    url = tmp_path / "run.jsonl"
    url.write_text("".join(f'{{"query_id": "q{i}", "ranking": ["a", "b"]}}\n' for i in range(50)))
    reader = RunReader(str(url), None, 10)
    assert reader._cut is None
    assert len(reader.result()[0]) == 50


def test_a_missing_or_unreadable_run_is_a_storage_error(tmp_path):
    from goldkeeper.errors import StorageError

    with pytest.raises(StorageError, match="cannot be read"):
        RunReader(str(tmp_path / "missing.trec"), None, 10).result()
    with pytest.raises(StorageError, match="is a directory"):
        RunReader(str(tmp_path), None, 10).result()
