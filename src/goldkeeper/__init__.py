"""goldkeeper: keep a RAG retrieval test suite true across re-chunks, and gate on it honestly.

The public API, stable by name::

    normalize, text_sha, chunk_id              content-addressed identity (spec/chunk-id.md)
    parse_judgments, dump_judgments            judgments JSONL text in and canonical text out
    read_judgments, write_judgments            the same by path or fsspec URL, writes atomic
                                               (also qrels with a queries file, gold sets)
    read_run                                   a run by path or URL: run JSONL, TREC, nested JSON
    judgments_from, run_from                   from ranx, pytrec_eval/BEIR dicts, pandas,
                                               ir_datasets records (goldkeeper.core.adapters)
    validate -> ValidationResult of Issue      is a judgment set sound enough to score?
    score -> ScoreResult, build_report          metrics per query, per stratum, averaged
    parse_gate, evaluate_gates, summarize       verdicts and intervals of repeated samples
    compare_scores -> Comparison                paired tests of runs against a baseline, Holm
    classify_drift -> DriftResult, fix_drift    which labels still hold after a re-chunk, and
    rejudgment_queue                            the sound repairs; what a person must look at
    parse_corpus, read_corpus                   snapshots: corpus.json text, or any by URL
    Judgment, Chunk, CorpusSnapshot, RunEntry, Report     the wire formats (pydantic v2)

Importing goldkeeper loads nothing but its version and errors; each name loads its module on
first use (so neither prefect nor fsspec until ``read_judgments`` or ``write_judgments``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from goldkeeper._version import __version__
from goldkeeper.errors import GoldkeeperError, InputError, StorageError, UsageError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from goldkeeper.core.adapters import judgments_from, run_from
    from goldkeeper.core.comparison import Comparison, compare_scores
    from goldkeeper.core.drift import Corpus, DriftResult, LiveChunk, parse_corpus, rejudgment_queue
    from goldkeeper.core.drift import classify as classify_drift
    from goldkeeper.core.gates import Gate, GateEvaluation, evaluate_gates, parse_gate
    from goldkeeper.core.identity import chunk_id, normalize, text_sha
    from goldkeeper.core.judgments import dump_judgments, parse_judgments
    from goldkeeper.core.metric_ids import MetricId, parse_metric_id
    from goldkeeper.core.qrels import parse_beir_tsv, parse_trec_qrels, parse_trec_run, to_qrels, to_trec_run
    from goldkeeper.core.reporting import build_report
    from goldkeeper.core.runs import parse_run
    from goldkeeper.core.scoring import ScoreResult, score
    from goldkeeper.core.summary import summarize
    from goldkeeper.core.validation import Issue, ValidationResult, validate
    from goldkeeper.models import Chunk, CorpusSnapshot, Judgment, Measurement, Report, RunEntry

# Every name loads its module on first use: a command imports only what it runs (`--version`
# loads neither numpy nor pydantic, drift neither at start). Name -> (module, name there).
_LAZY = {
    **{name: ("goldkeeper.core.identity", name) for name in ("chunk_id", "normalize", "text_sha")},
    **{name: ("goldkeeper.core.judgments", name) for name in ("dump_judgments", "parse_judgments")},
    **{name: ("goldkeeper.core.qrels", name)
       for name in ("parse_beir_tsv", "parse_trec_qrels", "parse_trec_run", "to_qrels", "to_trec_run")},
    "parse_run": ("goldkeeper.core.runs", "parse_run"),
    **{name: ("goldkeeper.core.comparison", name) for name in ("Comparison", "compare_scores")},
    **{name: ("goldkeeper.core.adapters", name) for name in ("judgments_from", "run_from")},
    **{name: ("goldkeeper.core.drift", name)
       for name in ("Corpus", "DriftResult", "LiveChunk", "parse_corpus", "rejudgment_queue")},
    "classify_drift": ("goldkeeper.core.drift", "classify"),
    **{name: ("goldkeeper.core.metric_ids", name) for name in ("MetricId", "parse_metric_id")},
    **{name: ("goldkeeper.core.validation", name) for name in ("Issue", "ValidationResult", "validate")},
    **{name: ("goldkeeper.models", name)
       for name in ("Chunk", "CorpusSnapshot", "Judgment", "Measurement", "Report", "RunEntry")},
    **{name: ("goldkeeper.core.gates", name) for name in ("Gate", "GateEvaluation", "evaluate_gates", "parse_gate")},
    "build_report": ("goldkeeper.core.reporting", "build_report"),
    **{name: ("goldkeeper.core.scoring", name) for name in ("ScoreResult", "score")},
    "summarize": ("goldkeeper.core.summary", "summarize"),
}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'goldkeeper' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "Chunk",
    "Comparison",
    "Corpus",
    "CorpusSnapshot",
    "DriftResult",
    "Gate",
    "GateEvaluation",
    "GoldkeeperError",
    "InputError",
    "Issue",
    "Judgment",
    "LiveChunk",
    "Measurement",
    "MetricId",
    "Report",
    "RunEntry",
    "ScoreResult",
    "StorageError",
    "UsageError",
    "ValidationResult",
    "__version__",
    "build_report",
    "chunk_id",
    "classify_drift",
    "compare_scores",
    "dump_judgments",
    "evaluate_gates",
    "fix_drift",
    "judgments_from",
    "normalize",
    "parse_beir_tsv",
    "parse_corpus",
    "parse_gate",
    "parse_judgments",
    "parse_metric_id",
    "parse_run",
    "parse_trec_qrels",
    "parse_trec_run",
    "read_corpus",
    "read_judgments",
    "read_run",
    "rejudgment_queue",
    "run_from",
    "score",
    "summarize",
    "text_sha",
    "to_qrels",
    "to_trec_run",
    "validate",
    "write_judgments",
]


def read_judgments(url: str, format: str | None = None, *, queries: str | None = None) -> list[Judgment]:
    """Read judgments by path or fsspec URL (``-`` is stdin): judgments JSONL, TREC qrels,
    BEIR TSV, nested JSON or a rag-eval-gate gold set (``jsonl``, ``trec``, ``beir``,
    ``json``, ``gold``; guessed from the name and first line when ``format`` is None),
    compressed or not. ``queries`` (BEIR's queries.jsonl, or query_id/query lines) gives
    qrels their query texts."""
    from goldkeeper.io.loading import load_label_rows
    from goldkeeper.models.judgment import Judgment

    rows, _ = load_label_rows(url, format, queries=queries)
    return [Judgment.model_construct(**row) for row in rows]


def read_run(url: str, format: str | None = None) -> list[RunEntry]:
    """Read a run by path or fsspec URL: run JSONL, a TREC run or nested JSON (``jsonl``,
    ``trec``, ``json``; guessed from the first line when ``format`` is None)."""
    from goldkeeper.io.loading import load_run

    entries, _ = load_run(url, format)
    return list(entries)


def write_judgments(url: str, judgments: Iterable[Judgment]) -> None:
    """Write judgments canonically and atomically to a path or fsspec URL."""
    from goldkeeper.io.files import write_judgments as _write

    _write(url, judgments)


def read_corpus(url: str):
    """A snapshot by path or fsspec URL: ``corpus.json`` read whole, or a sharded snapshot
    (its directory or ``manifest.json``) streamed on each pass."""
    from goldkeeper.io.snapshots import open_corpus

    return open_corpus(url)


def fix_drift(judgments, result: DriftResult) -> tuple[list[Judgment], int]:
    """Re-anchor the RE_ANCHORABLE and MERGED labels of ``classify_drift``'s result; the
    labels (``Judgment`` objects or mappings, in the order classified) and how many moved."""
    from goldkeeper.core.drift import fix
    from goldkeeper.models.judgment import Judgment

    labels = [j if isinstance(j, Judgment) else Judgment.model_validate(j) for j in judgments]
    return fix(labels, result)
