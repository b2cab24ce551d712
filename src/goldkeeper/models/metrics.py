"""The metrics goldkeeper computes, each declared once (``METRICS``): ids and their parser
(``core.metric_ids``), other tools' spellings, the ``--min-<metric><k>`` flags, report order,
the kernel's columns (``core.scoring``) and the labels people read (``models.frames``) all
derive from it. A new metric is one entry here, its column in the kernel, and its tests.
Definitions: spec/metrics.md."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["METRICS", "METRIC_NAMES", "Metric"]


@dataclass(frozen=True)
class Metric:
    """One metric: its id's name, and what other tools and people call it."""

    name: str
    #: ir_measures' name (``P`` for ``P@k``), trec_eval's (``P`` for ``P_k``), and the
    #: spellings without a cutoff that mean the whole ranking (trec_eval's ``recip_rank``).
    ir_measures: str | None = None
    trec_eval: str | None = None
    whole_ranking: tuple[str, ...] = ()
    #: How a relevant key's grade counts, where grades are summed: "2^g-1" or "g".
    gain: str | None = None
    #: When the per-query values are 0 or 1 whatever the labels ("always"), or at k = 1
    #: ("at 1"); audit's exact bound applies then.
    zero_one: str | None = None


#: Every metric goldkeeper computes, in report order.
METRICS: tuple[Metric, ...] = (
    Metric("precision", ir_measures="P", trec_eval="P", zero_one="at 1"),
    Metric("recall", ir_measures="R", trec_eval="recall", zero_one="always"),
    Metric("ndcg", gain="2^g-1"),
    Metric("ndcg_linear", ir_measures="nDCG", trec_eval="ndcg_cut", whole_ranking=("nDCG",), gain="g"),
    Metric("mrr", ir_measures="RR", whole_ranking=("recip_rank", "RR"), zero_one="at 1"),
    Metric("map", ir_measures="AP", trec_eval="map_cut", whole_ranking=("map", "AP"), zero_one="at 1"),
    Metric("hit_rate", ir_measures="Success", trec_eval="success", zero_one="always"),
    Metric("judged", ir_measures="Judged"),
)
METRIC_NAMES: tuple[str, ...] = tuple(metric.name for metric in METRICS)
