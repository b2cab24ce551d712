"""Two-process validation gives exactly the one-process answer, errors included."""

from __future__ import annotations

import json

import pytest

from goldkeeper.core.judgments import iter_judgment_blocks
from goldkeeper.core.validation import Validator
from goldkeeper.errors import InputError
from goldkeeper.io import scan
from goldkeeper.io.files import iter_blocks


def _one_pass(url: str):
    validator = Validator()
    for rows in iter_judgment_blocks(iter_blocks(url), url):
        validator.add_many(rows)
    return validator.result()


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _rows(n: int, *, dup_every: int = 0):
    rows = []
    for i in range(n):
        rows.append({"query_id": f"q{i // 10}", "query": f"query {i // 10}", "doc_uri": f"d{i}",
                     "relevance": i % 3, "labeled_by": "human:a" if i % 4 else "synthetic:j",
                     "stratum": "s" if i % 2 else "t"})
        if dup_every and i % dup_every == 0:
            rows.append(dict(rows[-1]))
    return rows


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch):
    monkeypatch.setattr(scan, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(scan, "_BLOCK", 4096)


def test_parallel_equals_one_pass_on_clean_data(tmp_path):
    path = tmp_path / "j.jsonl"
    _write(path, _rows(5000))
    assert scan.validate_url(str(path)) == _one_pass(str(path))


def test_parallel_equals_one_pass_with_findings_in_both_halves(tmp_path):
    path = tmp_path / "j.jsonl"
    _write(path, _rows(5000, dup_every=700))
    result = scan.validate_url(str(path))
    assert result == _one_pass(str(path))
    assert sum(i.code == "duplicate-label" for i in result.issues) == 8


def test_halves_that_interact_fall_back_to_one_pass_order(tmp_path):
    rows = _rows(4000)
    rows.append(dict(rows[0]))  # a duplicate of the first label, at the very end
    rows.append({**rows[1], "doc_uri": "dx", "query": "another text"})  # inconsistent text across halves
    path = tmp_path / "j.jsonl"
    _write(path, rows)
    result = scan.validate_url(str(path))
    assert result == _one_pass(str(path))
    assert [i.code for i in result.issues if i.severity == "error"] == ["duplicate-label", "inconsistent-query-text"]


@pytest.mark.parametrize("where", [0.1, 0.9])
def test_the_first_error_in_the_file_is_reported_with_its_line(tmp_path, where):
    rows = [json.dumps(r) for r in _rows(4000)]
    bad = int(len(rows) * where)
    rows[bad] = '{"query_id":"q","doc_uri":"d","relevance":true}'
    rows[-1] = '{"query_id":"q","doc_uri":"d","relevance":2.5}'  # a later error must not win
    path = tmp_path / "j.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        scan.validate_url(str(path))
    assert (caught.value.line, caught.value.field) == (bad + 1, "relevance")
    assert "boolean" in str(caught.value)


def test_blank_lines_only_is_still_the_empty_file_error(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b"\n" * 20000)
    with pytest.raises(InputError, match="holds no JSON line"):
        scan.validate_url(str(path))
