"""TREC qrels, BEIR TSV and TREC run files: the formats thirty years of IR tooling reads.

Judgments are a strict superset of qrels, so every label converts to ``query 0 target grade``
and back. Reading is strict where a silent guess would change a number: a fractional grade is
refused (never truncated), a short line is refused, and an identifier containing whitespace
is refused on the way out instead of being written as broken columns.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from goldkeeper.core.jsonl import byte_order_mark
from goldkeeper.core.judgments import check_nfc
from goldkeeper.errors import InputError, describe_value
from goldkeeper.models.records import MAX_RELEVANCE

if TYPE_CHECKING:
    from goldkeeper.models.judgment import Judgment
    from goldkeeper.models.run import RunEntry

# numpy and the models load on first use: detecting a file's format, in the CLI's reader
# process, needs neither.

__all__ = [
    "bounded_grade",
    "detect_labels_format",
    "looks_nested",
    "parse_beir_tsv",
    "parse_plain_trec_run",
    "parse_trec_qrels",
    "parse_trec_run",
    "qrel_label",
    "to_qrels",
    "to_trec_run",
]

_INT = re.compile(r"[+-]?[0-9]+")
_BEIR_HEADER = re.compile(r"query[-_ ]?id", re.IGNORECASE)


def _lines(text: str, source: str, kind: str) -> Iterable[tuple[int, str]]:
    if text.startswith("\ufeff"):
        raise byte_order_mark(source, kind)
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r").strip(" \t")
        if line and not line.startswith("#"):
            yield number, line


def _check_columns(parts: list[str], ok: bool, layout: str, source: str, number: int, line: str) -> None:
    if not ok:
        raise InputError(
            source,
            f"a {layout}",
            line=number,
            field="columns",
            found=f"{len(parts)} in {describe_value(line)}",
        )


def _grade(raw: str, source: str, number: int, field: str) -> int:
    if not _INT.fullmatch(raw):
        try:
            float(raw)
        except ValueError:
            problem = "must be an integer grade"
        else:
            problem = "must be an integer grade; a fractional grade is refused, not truncated"
        raise InputError(source, problem, line=number, field=field, found=describe_value(raw))
    return bounded_grade(int(raw), source, number, field, raw)


def bounded_grade(grade: int, source: str, number: int | None, field: str, raw: object) -> int:
    """A qrels grade as a judgment's relevance: at most ``MAX_RELEVANCE``, and 0 when negative."""
    if grade > MAX_RELEVANCE:
        raise InputError(source, f"a grade is at most {MAX_RELEVANCE} (1024 and above is a unit mistake, not a grade)",
                         line=number, field=field, found=describe_value(raw))
    # TREC collections use -1 (and lower) for "judged, not relevant" or "in the pool,
    # unjudged"; the judgments schema has no negative grades, so both become 0.
    return max(0, grade)


def qrel_label(query_id: str, doc_id: str, grade: int, as_chunk_ids: bool, source: str, number: int | None) -> Judgment:
    """One qrels line as a judgment: the doc column is its ``doc_uri`` (and, ``as_chunk_ids``,
    its ``chunk_id``)."""
    from goldkeeper.models.judgment import Judgment

    check_nfc({"query_id": query_id, "doc_uri": doc_id}, source, number)
    return Judgment.model_construct(
        query_id=query_id,
        doc_uri=doc_id,
        relevance=grade,
        chunk_id=doc_id if as_chunk_ids else None,
    )


def parse_trec_qrels(
    text: str, source: str = "qrels", *, as_chunk_ids: bool = False
) -> list[Judgment]:
    """``query iteration doc grade``, separated by spaces or tabs; ``#`` starts a comment.

    The iteration column is ignored whatever it holds (``0``, ``Q0``, ``U0``). Negative grades
    become 0. ``as_chunk_ids`` treats the doc column as a chunk id.
    """
    out: list[Judgment] = []
    for number, line in _lines(text, source, "a TREC qrels file"):
        parts = line.split()
        _check_columns(parts, len(parts) == 4,
                       "TREC qrels line has 4 columns: query iteration doc grade", source, number, line)
        query_id, _iteration, doc_id, grade = parts
        out.append(qrel_label(query_id, doc_id, _grade(grade, source, number, "grade"), as_chunk_ids, source, number))
    if not out:
        raise InputError(source, "holds no qrels line", line=1, field="file", found="nothing")
    return out


def parse_beir_tsv(text: str, source: str = "qrels", *, as_chunk_ids: bool = False) -> list[Judgment]:
    """BEIR's ``query-id<TAB>corpus-id<TAB>score`` with its header row."""
    out: list[Judgment] = []
    header_seen = False
    for number, line in _lines(text, source, "a BEIR qrels file"):
        parts = line.split("\t")
        if not header_seen:
            header_seen = True
            if parts and _BEIR_HEADER.fullmatch(parts[0].strip()):
                continue
            raise InputError(
                source,
                "a BEIR qrels file starts with the header query-id, corpus-id, score",
                line=number,
                field="header",
                found=describe_value(line),
            )
        _check_columns(parts, len(parts) == 3,
                       "BEIR qrels line has 3 tab-separated columns: query-id corpus-id score",
                       source, number, line)
        query_id, doc_id, grade = (p.strip() for p in parts)
        if not query_id or not doc_id:
            raise InputError(
                source, "query-id and corpus-id must not be empty", line=number, field="columns",
                found=describe_value(line),
            )
        out.append(qrel_label(query_id, doc_id, _grade(grade, source, number, "score"), as_chunk_ids, source, number))
    if not out:
        raise InputError(source, "holds no qrels line", line=1, field="file", found="nothing")
    return out


# The start of a nested object when its first line is not a whole JSON value: a lone brace
# (indented output), or a first key whose value opens an object (one long line, cut short).
_OPENS_NESTED = re.compile(r'\{\s*("(?:[^"\\]|\\.)*"\s*:\s*\{.*)?')


def looks_nested(first_line: str) -> bool:
    """Whether a file whose first non-blank line is ``first_line`` (which starts with ``{``)
    is one nested object rather than JSONL: the line is not a whole object, or it is one
    whose values are all objects and which has no ``query_id``."""
    try:
        value = json.loads(first_line)
    except RecursionError:
        return False  # the JSONL reader refuses a line nested that deep, with its line number
    except ValueError:
        return _OPENS_NESTED.fullmatch(first_line.strip()) is not None
    return (isinstance(value, dict) and bool(value) and "query_id" not in value
            and all(isinstance(inner, dict) for inner in value.values()))


def detect_labels_format(text: str, name: str = "") -> str:
    """Guess ``jsonl``, ``json`` (nested), ``gold`` (rag-eval-gate's), ``beir`` or ``trec``
    from the name, then from the first content line."""
    from goldkeeper.core.gold import looks_like_gold
    lowered = name.lower()
    if lowered.endswith(".qrels"):
        return "trec"
    lines = (line for _, line in _lines(text.removeprefix("\ufeff"), name, ""))  # (a BOM is refused by the reader chosen)
    if lowered.endswith(".jsonl"):
        return "gold" if looks_like_gold(next(lines, "")) else "jsonl"
    if lowered.endswith(".tsv"):
        # BEIR's qrels/test.tsv, or TREC qrels saved under that name: four columns say TREC.
        first = next(lines, "")
        return "trec" if len(first.split()) == 4 and not _BEIR_HEADER.fullmatch(first.split("\t")[0].strip()) else "beir"
    for line in lines:
        if line.startswith("{"):
            return "json" if looks_nested(line) else "gold" if looks_like_gold(line) else "jsonl"
        if _BEIR_HEADER.fullmatch(line.split("\t")[0].strip()) or len(line.split("\t")) == 3:
            return "beir"
        return "trec"
    return "jsonl"


def _column(value: str, what: str, where: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise InputError(
            where,
            "cannot be written as a whitespace-separated column",
            field=what,
            found=describe_value(value),
        )
    return value


def to_qrels(judgments: Iterable[Judgment], source: str = "judgments") -> str:
    """TREC qrels lines ``query 0 target grade``. Ids containing whitespace are refused."""
    lines = []
    for index, j in enumerate(judgments, start=1):
        where = f"{source} label {index}"
        lines.append(
            f"{_column(j.query_id, 'query_id', where)} 0 {_column(j.key, 'chunk_id' if j.chunk_id else 'doc_uri', where)} {j.relevance}"
        )
    return "".join(line + "\n" for line in lines)


def parse_trec_run(text: str, source: str = "run") -> list[RunEntry]:
    """``query Q0 doc rank score tag`` lines (extra columns after the sixth are ignored).

    Ordered as trec_eval orders them: by score descending, ties by doc id descending. The rank
    column is read only to check it is an integer; it never decides the order.
    """
    from goldkeeper.models.run import RunEntry

    fast = parse_plain_trec_run(text)
    if fast is not None:
        return fast
    by_query: dict[str, list[tuple[float, str]]] = {}
    for number, line in _lines(text, source, "a TREC run"):
        parts = line.split()
        _check_columns(parts, len(parts) >= 6,
                       "TREC run line has 6 columns: query Q0 doc rank score tag", source, number, line)
        query_id, _q0, doc_id, rank, score = parts[:5]
        if not _INT.fullmatch(rank):
            raise InputError(source, "must be an integer", line=number, field="rank",
                             found=describe_value(rank))
        try:
            value = float(score)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(source, "must be a finite number", line=number, field="score",
                             found=describe_value(score))
        by_query.setdefault(query_id, []).append((value, doc_id))
    out = []
    for query_id, rows in by_query.items():
        rows.sort(reverse=True)
        out.append(
            RunEntry.model_construct(
                query_id=query_id, ranking=[d for _, d in rows], scores=[s for s, _ in rows]
            )
        )
    return out


#: ASCII bytes that ``str.split()`` separates tokens at.
_SPLIT_BYTES = [9, 10, 11, 12, 13, 28, 29, 30, 31, 32]
_BLOCK_CHARS = 1 << 20


def parse_plain_trec_run(text: str) -> list[RunEntry] | None:
    """``parse_trec_run`` for the common file, column-wise: ASCII, exactly six columns on every
    line, no comment, unsigned integer ranks, finite scores. None for anything else, which the
    line-by-line reader then handles (and names the line of any error).

    Splitting a megabyte at a time makes no list per line and holds one block's tokens at
    once; numpy checks from the bytes that every
    non-blank line of the block holds exactly six tokens.
    """
    if not text.isascii():
        return None
    import numpy as np

    from goldkeeper.models.run import RunEntry

    splits = np.zeros(256, dtype=bool)
    splits[_SPLIT_BYTES] = True
    queries: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    at = 0
    while at < len(text):
        cut = text.find("\n", at + _BLOCK_CHARS)
        end = len(text) if cut < 0 else cut + 1
        block = text[at:end]
        at = end
        tokens = block.split()
        if len(tokens) % 6:
            return None
        codes = np.frombuffer(block.encode("ascii"), dtype=np.uint8)
        inside = ~splits[codes]
        starts = np.flatnonzero(inside & ~np.concatenate(([False], inside[:-1])))
        if (codes[starts] == ord("#")).any():
            return None  # a comment line, or an id starting with '#': the line reader decides
        ends = np.append(np.flatnonzero(codes == ord("\n")), codes.size)
        if not np.isin(np.diff(np.searchsorted(starts, ends), prepend=0), (0, 6)).all():
            return None
        if not "".join(tokens[3::6]).isdigit():
            return None
        try:
            scores.extend(map(float, tokens[4::6]))
        except ValueError:
            return None
        queries.extend(tokens[0::6])
        docs.extend(tokens[2::6])
    rows = len(queries)
    values = np.array(scores)
    if not rows or not np.isfinite(values).all():
        return None
    # Rows of one query are usually contiguous and already in trec_eval's order.
    groups = [(query, len(list(rows_of))) for query, rows_of in itertools.groupby(queries)]
    if len({query for query, _ in groups}) != len(groups):
        return None  # a query's rows are not contiguous
    cuts = [0, *itertools.accumulate(size for _, size in groups)]
    falling = np.append(values[1:] < values[:-1], True)
    out = []
    for first, last in itertools.pairwise(cuts):
        if falling[first:last - 1].all():
            ranking, kept = docs[first:last], scores[first:last]
        else:
            ordered = sorted(zip(scores[first:last], docs[first:last]), reverse=True)
            ranking, kept = [d for _, d in ordered], [v for v, _ in ordered]
        out.append(RunEntry.model_construct(query_id=queries[first], ranking=ranking, scores=kept))
    return out


def to_trec_run(run: Sequence[RunEntry], tag: str = "goldkeeper", source: str = "run") -> str:
    """TREC run lines; scores are the entry's own, or ``len - index`` when it has none."""
    _column(tag, "tag", source)
    lines = []
    for entry in run:
        where = f"{source} query {entry.query_id}"
        query_id = _column(entry.query_id, "query_id", where)
        total = len(entry.ranking)
        scores = entry.scores
        for index, key in enumerate(entry.ranking):
            # A score the entry carries is written exactly; made-up ones as the reference does.
            score = repr(float(scores[index])) if scores else f"{total - index:.4f}"
            lines.append(f"{query_id} Q0 {_column(key, 'ranking', where)} {index + 1} {score} {tag}")
    return "".join(line + "\n" for line in lines)
