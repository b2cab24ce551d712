"""The judgments file is split for partitioned drift by several tasks, each reading one piece
of it (``line_ranges``): the pieces together are the file, each starts at a line, and the
partitions' labels and positions are those of one reader of the whole file."""

from __future__ import annotations

import gzip
import json
import random

import pytest

from goldkeeper.errors import InputError
from goldkeeper.io.files import iter_range_blocks, line_ranges, read_bytes
from goldkeeper.io.partitioned import labels_url, partition_labels, partition_positions


@pytest.mark.parametrize("seed", range(40))
def test_the_pieces_together_are_the_file_and_each_starts_a_line(tmp_path, seed):
    rng = random.Random(seed)
    lines = [b"x" * rng.randrange(0, 300) + b"\n" for _ in range(rng.randrange(0, 60))]
    data = b"".join(lines) + (b"no final newline" if rng.random() < 0.3 else b"")
    path = tmp_path / "labels.jsonl"
    path.write_bytes(data)
    pieces = rng.randrange(1, 12)
    spans = line_ranges(str(path), pieces)
    assert len(spans) <= pieces
    assert b"".join(block for span in spans for block in iter_range_blocks(str(path), *span, size=64)) == data
    assert all(start == 0 or data[start - 1:start] == b"\n" for start, _ in spans)


def test_a_compressed_file_is_one_piece(tmp_path):
    path = tmp_path / "labels.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n' * 1000))
    assert line_ranges(str(path), 8) == [(0, -1)]


def _labels(count: int) -> list[dict]:
    return [{"query_id": f"q{n}", "doc_uri": f"doc://{n % 13}", "chunk_id": f"c1:{n:032x}", "chunk_text": f"text {n}",
             "relevance": n % 3} for n in range(count)]


def test_pieces_split_as_one_reader_of_the_whole_file(tmp_path):
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _labels(500)))
    counts = [partition_labels(str(path), str(tmp_path / "whole"), 4)]
    whole = [list(partition_positions(str(tmp_path / "whole"), p, counts)) for p in range(4)]
    spans = line_ranges(str(path), 5)
    assert len(spans) == 5
    counts = [partition_labels(str(path), str(tmp_path / "pieces"), 4, piece, span) for piece, span in enumerate(spans)]
    pieces = [list(partition_positions(str(tmp_path / "pieces"), p, counts)) for p in range(4)]
    assert pieces == whole and sorted(at for held in whole for at in held) == list(range(500))
    for partition in range(4):
        joined = b"".join(read_bytes(labels_url(str(tmp_path / "pieces"), partition, piece)) for piece in range(5))
        assert joined == read_bytes(labels_url(str(tmp_path / "whole"), partition))


def test_a_bad_line_in_a_later_piece_is_named_by_its_line_in_the_file(tmp_path):
    rows = [json.dumps(row) for row in _labels(300)]
    rows[250] = rows[250].replace('"relevance": 1', '"relevance": "high"')
    path = tmp_path / "judgments.jsonl"
    path.write_text("\n".join(rows) + "\n")
    spans = line_ranges(str(path), 4)
    last = spans[-1]
    with pytest.raises(InputError) as raised:
        partition_labels(str(path), str(tmp_path / "w"), 2, len(spans) - 1, last)
    assert raised.value.line == 251 and str(raised.value).endswith("judgments.jsonl:251: relevance: must be an integer grade, got \"high\"")
