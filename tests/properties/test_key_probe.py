"""The key probe that guards the block decoder against repeated keys counts the same on large
blocks (one numpy pass) as the byte searches do on small ones."""

from __future__ import annotations

import random

import pytest

from goldkeeper.core import judgments


def _searched(data: bytes) -> int:
    """The probe as the small-block path computes it."""
    if b'" ' in data or b'"\t' in data or b'"\r' in data:
        return len(judgments._KEY_PROBE_BYTES.findall(data))
    return data.count(b'":')


@pytest.mark.parametrize("seed", range(5))
def test_large_blocks_count_like_small_ones(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [b'"', b":", b" ", b"\t", b"\r", b"\n", b"a", b"{", b"}", b"\\", b","]
    for _ in range(300):
        unit = b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200)))
        block = unit * (judgments._PROBE_ARRAY_BYTES // len(unit) + 1)
        assert len(block) >= judgments._PROBE_ARRAY_BYTES
        assert judgments._probe_keys(block) == _searched(block)


def test_real_lines_take_the_count() -> None:
    line = b'{"query_id": "q1", "doc_uri": "d", "chunk_id": "c1:x", "relevance": 1}'
    block = b"\n".join([line] * 2000)
    assert judgments._probe_keys(block) == 4 * 2000 == _searched(block)
    spaced = block.replace(b'"d",', b'"d" ,')  # a quote followed by a space: the regex decides
    assert judgments._probe_keys(spaced) == _searched(spaced)
