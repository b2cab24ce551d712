"""Metric ids: one parser and one printer.

A metric id is a metric's name, ``@`` and its cutoff (``ndcg@10``); that string is its
identity in reports, gates and fixtures. Everything that reads or writes one goes through
``parse_metric_id`` and ``MetricId.__str__``, as ir_measures does for its measures.
"""

from __future__ import annotations

import difflib
import re
from typing import NamedTuple

from goldkeeper.models.metrics import METRIC_NAMES, METRICS, Metric

__all__ = ["IR_MEASURES", "MAX_CUTOFF", "METRICS", "METRIC_NAMES", "MIN_FLAG_NAMES", "TREC_EVAL", "WHOLE_RANKING",
           "Metric", "MetricId", "parse_metric_id", "reading_of", "suggest"]


#: ``--min-<name><k>`` reads each name with or without its underscores (rag-eval-gate's
#: ``--min-hitrate5`` and goldkeeper's ``--min-hit_rate5``): the spelling -> the name.
MIN_FLAG_NAMES: dict[str, str] = {spelling: metric.name for metric in METRICS
                                  for spelling in dict.fromkeys((metric.name, metric.name.replace("_", "")))}

#: The deepest cutoff goldkeeper computes. Rankings are read only as deep as the deepest
#: cutoff, so a cutoff is a promise of memory; a million is deeper than any retriever answers.
MAX_CUTOFF = 1_000_000

_ID = re.compile(r"([a-z_]+)@([0-9]+)")


class MetricId(NamedTuple):
    name: str
    k: int

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"


def suggest(word: str, choices: tuple[str, ...] | list[str]) -> str:
    """``, did you mean 'x'?`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f", did you mean '{close[0]}'?" if close else ""


#: Other tools' spellings, each read as the goldkeeper metric with that tool's definition:
#: ir_measures' ``name@k`` and trec_eval's ``name_k``. Their nDCG is the linear-gain one
#: (goldkeeper's ``ndcg_linear``); goldkeeper's ``ndcg`` is the spec's exponential gain.
IR_MEASURES: dict[str, str] = {metric.ir_measures: metric.name for metric in METRICS if metric.ir_measures}
TREC_EVAL: dict[str, str] = {metric.trec_eval: metric.name for metric in METRICS if metric.trec_eval}
#: Spellings without a cutoff, over the whole ranking as trec_eval reads it (1,000 documents
#: per query by default): recip_rank, map, ndcg; ir_measures' RR, AP, nDCG.
#: (Bare ``ndcg`` is not among them: goldkeeper's ``ndcg@k`` has another gain, so it must say.)
WHOLE_RANKING = {spelling: metric.name for metric in METRICS for spelling in metric.whole_ranking}
TREC_EVAL_DEPTH = 1000

def _fold(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


#: Names as people write them (``MRR@10``, ``Recall@5``, ``HitRate@3``, ``MAP@100``), read
#: case-insensitively and without ``_`` or ``-``: goldkeeper's names, ir_measures' and a few
#: common ones. Folding makes ir_measures' ``nDCG`` and goldkeeper's ``ndcg`` one word; the
#: folded word is goldkeeper's ``ndcg`` (the spec's exponential gain, equal to linear gain on
#: 0/1 labels, as gold sets are), while ``nDCG`` spelled exactly stays ir_measures' linear gain.
_FOLDED: dict[str, str] = {
    **{_fold(metric.ir_measures): metric.name for metric in METRICS if metric.ir_measures},
    **{_fold(metric.name): metric.name for metric in METRICS},
    "hits": "hit_rate", "hit": "hit_rate", "ap": "map", "mrr": "mrr", "rr": "mrr",
}

_TREC_ID = re.compile(rf"({'|'.join(TREC_EVAL)})_([0-9]+)")
_SPELLINGS = (*METRIC_NAMES, *IR_MEASURES, *(f"{name}_" for name in TREC_EVAL), *WHOLE_RANKING)


def _other_spelling(text: str) -> MetricId | None:
    """An ir_measures or trec_eval spelling as goldkeeper's metric, or None."""
    name, at, cutoff = text.partition("@")
    if at and name in IR_MEASURES and cutoff.isascii() and cutoff.isdigit():
        return MetricId(IR_MEASURES[name], int(cutoff))
    trec = _TREC_ID.fullmatch(text)
    if trec is not None:
        return MetricId(TREC_EVAL[trec.group(1)], int(trec.group(2)))
    if text in WHOLE_RANKING:
        return MetricId(WHOLE_RANKING[text], TREC_EVAL_DEPTH)
    if at and _fold(name) in _FOLDED and cutoff.isascii() and cutoff.isdigit():
        return MetricId(_FOLDED[_fold(name)], int(cutoff))
    return None


_DEFINITIONS = {"ndcg": "exponential gain 2^grade - 1", "ndcg_linear": "linear gain, as ir_measures and trec_eval"}


def reading_of(text: str) -> str | None:
    """How a spelling that is not goldkeeper's own id was read, for a note to the user
    (``'NDCG@10' read as ndcg@10 (exponential gain 2^grade - 1)``); None for an own id."""
    parsed = parse_metric_id(text)
    if str(parsed) == text:
        return None
    definition = _DEFINITIONS.get(parsed.name)
    return f"metric '{text}' read as {parsed}" + (f" ({definition})" if definition else "")


def parse_metric_id(text: str) -> MetricId:
    """Parse ``name@k`` (or ir_measures' and trec_eval's spellings: ``nDCG@10``, ``P_5``,
    ``recip_rank``, mapped to the goldkeeper metric with the same definition); raises
    ``ValueError`` worded for the user, with a suggestion over every spelling."""
    match = _ID.fullmatch(text)
    if match is None:
        other = _other_spelling(text)
        if other is not None:
            if not 1 <= other.k <= MAX_CUTOFF:
                raise ValueError(f"metric '{text}': the cutoff must be from 1 to {MAX_CUTOFF:,}, got {other.k}")
            return other
        name = text.split("@", 1)[0]
        if name in METRIC_NAMES and "@" not in text:
            gain = (" (goldkeeper's ndcg has exponential gain; trec_eval's ndcg, linear gain, is nDCG or "
                    "ndcg_cut_10)") if name == "ndcg" else ""
            raise ValueError(f"metric '{text}': needs a cutoff, e.g. '{name}@10'{gain}")
        hint = suggest(name, _SPELLINGS) or suggest(name.lower(), METRIC_NAMES)
        raise ValueError(f"metric '{text}': expected <name>@<k> with a known name{hint}")
    name, k = match.group(1), int(match.group(2))
    if name not in METRIC_NAMES:
        raise ValueError(
            f"metric '{text}': unknown metric '{name}'{suggest(name, _SPELLINGS)}"
            f" (known: {', '.join(METRIC_NAMES)}, and ir_measures' and trec_eval's names)"
        )
    if not 1 <= k <= MAX_CUTOFF:
        raise ValueError(f"metric '{text}': the cutoff must be from 1 to {MAX_CUTOFF:,}, got {k}")
    return MetricId(name, k)
