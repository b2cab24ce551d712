"""Run JSONL: one ``{"query_id", "ranking"}`` object per line.

Two entries for one query are refused (the file no longer says what that query's ranking
is); a key repeated inside one ranking is accepted here and counted once by scoring, which
names the queries it happened to. The two refusal messages are pinned by the
``duplicate-ranking`` fixture and keep the reference implementation's exact words.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from goldkeeper.core.jsonl import decode_jsonl, keys_in_text, split_lines
from goldkeeper.errors import InputError, describe_value

if TYPE_CHECKING:
    from goldkeeper.models.run import RunEntry

# pydantic-core and the RunEntry model load on first use: the CLI's run reader (msgspec, in a
# worker process) needs neither.

__all__ = ["check_run_row", "dump_run", "iter_run", "parse_run"]


def _fail(source: str, number: int, message: str) -> InputError:
    return InputError(source, message, line=number)


def _fast_rows(lines: Iterable[bytes | str], source: str, first_line: int = 1) -> Iterator[tuple[int, Any, bool]]:
    """``(line, row, checked)``: ``checked`` when the row was proved sound on the fast path.

    The common line, ``{"query_id", "ranking"}`` with non-empty string keys, is decoded by
    pydantic-core and checked with C-level set and membership tests; anything else goes
    through the line decoder, which words its errors.
    """
    from pydantic_core import from_json

    for number, raw in enumerate(lines, start=first_line):
        is_bytes = isinstance(raw, bytes)
        try:
            row = from_json(raw, allow_inf_nan=False, cache_strings=False)
        except ValueError:
            row = None
        if type(row) is dict and len(row) == 2:
            query_id = row.get("query_id")
            ranking = row.get("ranking")
            if (
                type(query_id) is str
                and query_id
                and type(ranking) is list
                and _all_keys(ranking, raw, is_bytes)
                # Duplicate keys are what the decoder cannot see: a sound row's text has two.
                and keys_in_text(raw) == 2
            ):
                yield number, row, True
                continue
        for found in decode_jsonl((raw,), source, allow_empty=True, first_line=number):
            yield (*found, False)


def _all_keys(ranking: list, raw: bytes | str, is_bytes: bool) -> bool:
    """Every element a non-empty string, tested at C speed."""
    try:
        "".join(ranking)  # a TypeError names a non-string; the join itself is discarded
    except TypeError:
        return False
    # An empty string is spelled "" in the text; only then look for it in the list.
    return not ((b'""' in raw if is_bytes else '""' in raw) and "" in ranking)


def iter_run(lines: Iterable[bytes | str], source: str = "run", *, first_line: int = 1,
             seen: dict[str, int] | None = None) -> Iterator[RunEntry]:
    """Stream run entries, refusing malformed ones with their line. A part of a file is read
    with ``first_line``, the number of its first line, and ``seen``, the line of each query
    the parts before it named (updated here)."""
    first_seen: dict[str, int] = {} if seen is None else seen
    for number, row, checked in _fast_rows(lines, source, first_line):
        entry = check_run_row(row, source, number, checked=checked)
        previous = first_seen.get(entry.query_id)
        if previous is not None:
            raise _fail(
                source, number, f"duplicate entry for query {entry.query_id}, already on line {previous}"
            )
        first_seen[entry.query_id] = number
        yield entry


def check_run_row(row: Any, source: str, number: int, *, checked: bool = False) -> RunEntry:
    """A decoded run line (or an API caller's mapping) as a ``RunEntry``, refused with its
    line and field as the run reader refuses it; ``checked`` when the fast path already
    proved the ranking's keys sound."""
    from goldkeeper.models.run import RunEntry

    if not isinstance(row, dict):
        raise InputError(source, "must be a JSON object", line=number, field="line",
                         found=describe_value(row))
    query_id = row.get("query_id")
    if not isinstance(query_id, str) or not query_id:
        raise _fail(source, number, "missing query_id")
    ranking: Any = row.get("ranking")
    if not isinstance(ranking, list):
        error = _fail(source, number, "ranking must be an array")
        if ranking is None and ("doc_uri" in row or "relevance" in row):
            error.hint = ("the line looks like a judgment (doc_uri, relevance), not a run entry: "
                          "were the judgments and the run swapped?")
        raise error
    if not checked:
        for index, key in enumerate(ranking):
            if not isinstance(key, str) or not key:
                raise _fail(source, number, f"ranking[{index}] must be a non-empty string")
    scores = row.get("scores")
    if scores is not None and (
        not isinstance(scores, list)
        or len(scores) != len(ranking)
        or not all(isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) for s in scores)
    ):
        raise InputError(source, "must be an array of finite numbers as long as ranking",
                         line=number, field="scores", found=describe_value(scores))
    return RunEntry.model_construct(
        query_id=query_id,
        ranking=ranking,
        scores=[float(s) for s in scores] if scores is not None else None,
    )


def parse_run(text: str | bytes, source: str = "run") -> list[RunEntry]:
    """Parse a whole run JSONL text."""
    return list(iter_run(split_lines(text), source))


def dump_run(entries: Iterable[RunEntry]) -> str:
    """Run JSONL, one compact object per query, scores kept when the entries have them."""
    lines = []
    for entry in entries:
        row: dict[str, Any] = {"query_id": entry.query_id, "ranking": entry.ranking}
        if entry.scores is not None:
            row["scores"] = entry.scores
        lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)
