"""A large run read by two processes (a TREC run cut at a query boundary near the middle, a
run JSONL file where the work balances) gives what one process gives, and refers anything
unusual back to the one-piece reader."""

from __future__ import annotations

import random

import pytest

from goldkeeper.core.scoring import pack_run
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
    assert halved == whole
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


def _jsonl(path, queries=300, seed=0):
    rng = random.Random(seed)
    path.write_text("".join(
        '{"query_id": "q%d", "ranking": [%s]}\n' % (q, ", ".join(f'"d{rng.randint(0, 500)}"' for _ in range(30)))
        for q in range(queries)))
    return path


def test_a_jsonl_run_is_cut_where_both_processes_get_equal_work(tmp_path):
    url = _jsonl(tmp_path / "run.jsonl")
    size = url.stat().st_size
    alone = RunReader(str(url), None, 10)  # no judgments to read first: the middle
    assert abs(alone._cut - size / 2) < 300  # the next line boundary
    weighted = RunReader(str(url), None, 10, judgments_bytes=size // 8)  # 0.5 + 4 * (1/8) / 2
    assert abs(weighted._cut - size * 0.75) < 300
    assert RunReader(str(url), None, 10, judgments_bytes=size)._cut is None  # the judgments outweigh it
    for reader in (alone, weighted):
        halved, sha = reader.result()
        whole, whole_sha = load_run_prefixes(str(url), None, 10)
        assert sha == whole_sha and list(halved) == list(whole) and len(whole) == 300


def test_a_jsonl_query_in_both_parts_is_refused_with_its_line(tmp_path):
    url = _jsonl(tmp_path / "run.jsonl")
    lines = url.read_text().splitlines(keepends=True)
    lines[-1] = lines[2]  # q2 again, in the second part
    url.write_text("".join(lines))
    with pytest.raises(InputError) as caught:
        RunReader(str(url), None, 10).result()
    assert caught.value.line == len(lines) and "duplicate entry for query q2, already on line 3" in str(caught.value)


def test_a_bad_jsonl_line_in_either_part_is_named_by_its_line_in_the_file(tmp_path):
    for where in (5, -5):
        url = _jsonl(tmp_path / "run.jsonl")
        lines = url.read_text().splitlines(keepends=True)
        lines[where] = '{"query_id": "x", "ranking": [1]}\n'
        url.write_text("".join(lines))
        with pytest.raises(InputError) as caught:
            RunReader(str(url), None, 10).result()
        assert caught.value.line == (where + 1 if where > 0 else len(lines) + where + 1)


def test_a_missing_or_unreadable_run_is_a_storage_error(tmp_path):
    from goldkeeper.errors import StorageError

    with pytest.raises(StorageError, match="cannot be read"):
        RunReader(str(tmp_path / "missing.trec"), None, 10).result()
    with pytest.raises(StorageError, match="is a directory"):
        RunReader(str(tmp_path), None, 10).result()


@pytest.mark.parametrize("rows", [
    [],
    [("q1", [])],
    [("q1", ["d1", "d2"]), ("q2", []), ("q3", ["d\u00e9", "\U0001f600"])],
    [("q1", ["a\x00b", "c"])],  # a NUL in a key: pickled as the list itself
    [("q\ud800", ["\udfff"])],  # lone surrogates from JSON escapes survive
    [("", [""])],
])
def test_run_heads_survive_the_trip_between_processes(rows):
    import pickle

    from goldkeeper.core.scoring import RunHeads

    packed = RunHeads(10)
    for query_id, ranking in rows:
        packed.add(query_id, ranking)
    back = pickle.loads(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == packed and back.depth == 10
    assert list(back) == [(q, r) for q, r in rows]


@pytest.mark.parametrize("change", ["none", "duplicate query across blocks", "bad line in a later block",
                                    "scores in a later block"])
def test_a_whole_run_read_by_blocks_equals_the_line_reader(change, tmp_path, monkeypatch):
    """load_run_prefixes reads a local run JSONL a block at a time with msgspec; whatever a
    block holds, the prefixes or the error are the line reader's."""
    import functools
    import json

    from goldkeeper.io import files

    lines = [json.dumps({"query_id": f"q{i}", "ranking": [f"d{i}", f"d{i + 1}", f"d{i}"]}) for i in range(2000)]
    if change == "duplicate query across blocks":
        lines[1900] = json.dumps({"query_id": "q5", "ranking": ["x"]})
    elif change == "bad line in a later block":
        lines[1900] = '{"query_id": "q1900", "ranking": [1]}'
    elif change == "scores in a later block":
        lines[1900] = json.dumps({"query_id": "q1900", "ranking": ["a", "b"], "scores": [2.0, 1.0]})
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(loading, "iter_blocks", functools.partial(files.iter_blocks, size=4096))

    def outcome(read):
        try:
            packed, sha = read()
        except InputError as error:
            return str(error)
        return packed, sha

    def by_lines():
        entries, hashed = loading.load_run(str(path))
        return pack_run(entries, 2), hashed.hexdigest()

    blocks = outcome(lambda: load_run_prefixes(str(path), None, 2))
    assert blocks == outcome(by_lines)
    if change in ("duplicate query across blocks", "bad line in a later block"):
        assert isinstance(blocks, str) and "run.jsonl:1901" in blocks
