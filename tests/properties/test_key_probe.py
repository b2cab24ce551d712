"""The key probe that guards the block decoder against repeated or dropped keys counts what
its definition does (a quote followed by whitespace: the regex decides) on blocks of any
size, though it looks for a raw tab or CR before any quote."""

from __future__ import annotations

import random

import pytest

from goldkeeper.core import judgments


def _searched(data: bytes) -> int:
    """The probe's definition."""
    if b'" ' in data or b'"\t' in data or b'"\r' in data:
        return len(judgments._KEY_PROBE_BYTES.findall(data))
    return data.count(b'":')


@pytest.mark.parametrize("seed", range(5))
def test_blocks_count_as_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [b'"', b":", b" ", b"\t", b"\r", b"\n", b"a", b"{", b"}", b"\\", b","]
    for _ in range(300):
        unit = b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200)))
        for block in (unit, unit * (70_000 // len(unit) + 1)):
            assert judgments._probe_keys(block) == _searched(block)
            assert judgments._probe_keys(block.decode("latin-1")) == _searched(block)


def test_real_lines_take_the_count() -> None:
    line = b'{"query_id": "q1", "doc_uri": "d", "chunk_id": "c1:x", "relevance": 1}'
    block = b"\n".join([line] * 2000)
    assert judgments._probe_keys(block) == 4 * 2000 == _searched(block)
    spaced = block.replace(b'"d",', b'"d" ,')  # a quote followed by a space: the regex decides
    assert judgments._probe_keys(spaced) == _searched(spaced)
