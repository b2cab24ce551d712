"""Metric ids: one parser and one printer.

A metric id is a metric's name, ``@`` and its cutoff (``ndcg@10``); that string is its
identity in reports, gates and fixtures. Everything that reads or writes one goes through
``parse_metric_id`` and ``MetricId.__str__``, as ir_measures does for its measures.
"""

from __future__ import annotations

import difflib
import re
from typing import NamedTuple

__all__ = ["MAX_CUTOFF", "METRIC_NAMES", "MetricId", "parse_metric_id", "suggest"]

#: Every metric goldkeeper computes, in report order. Definitions: spec/metrics.md.
METRIC_NAMES: tuple[str, ...] = (
    "precision",
    "recall",
    "ndcg",
    "ndcg_linear",
    "mrr",
    "map",
    "hit_rate",
)

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


def parse_metric_id(text: str) -> MetricId:
    """Parse ``name@k``; raises ``ValueError`` worded for the user, with a suggestion."""
    match = _ID.fullmatch(text)
    if match is None:
        name = text.split("@", 1)[0]
        if name in METRIC_NAMES and "@" not in text:
            raise ValueError(f"metric '{text}': needs a cutoff, e.g. '{name}@10'")
        hint = suggest(name.lower(), METRIC_NAMES)
        raise ValueError(f"metric '{text}': expected <name>@<k> with a known name{hint}")
    name, k = match.group(1), int(match.group(2))
    if name not in METRIC_NAMES:
        raise ValueError(
            f"metric '{text}': unknown metric '{name}'{suggest(name, METRIC_NAMES)}"
            f" (known: {', '.join(METRIC_NAMES)})"
        )
    if not 1 <= k <= MAX_CUTOFF:
        raise ValueError(f"metric '{text}': the cutoff must be from 1 to {MAX_CUTOFF:,}, got {k}")
    return MetricId(name, k)
