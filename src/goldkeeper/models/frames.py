"""Results as pandas DataFrames and as HTML tables for notebooks.

``ScoreResult``, ``Report`` and ``compare``'s result each have ``to_pandas()`` and
``_repr_html_()`` (which Jupyter calls to display an object). They share these helpers, so a
metric's row has one layout everywhere: ``metric``, ``value``, ``ci_low``, ``ci_high``,
``n``, ``ci_method``. pandas is optional (the ``pandas`` extra) and imported only by
``to_pandas``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from goldkeeper.models.metrics import METRICS

__all__ = [
    "COMPARISON_COLUMNS",
    "METRIC_COLUMNS",
    "frame",
    "html_table",
    "labelled",
    "metric_rows",
    "metrics_html",
    "per_query_frame",
]

METRIC_COLUMNS = ("metric", "value", "ci_low", "ci_high", "n", "ci_method")
COMPARISON_COLUMNS = ("metric", "challenger", "baseline_mean", "challenger_mean", "difference", "differing_pairs",
                       "p", "p_holm", "min_attainable_p", "verdict")


#: The gain of each nDCG, named wherever people read a metric (text, markdown, notebooks), so
#: no one compares goldkeeper's ``ndcg`` with another tool's ``ndcg`` (the linear one) by name.
#: (The linear one with its ir_measures name: "gain g: nDCG".)
_GAIN = {metric.name: f"gain {metric.gain}" + (f": {metric.ir_measures}" if metric.ir_measures else "")
         for metric in METRICS if metric.gain}


def labelled(metric: str) -> str:
    """A metric name or id as people read it: ``ndcg@10 (gain 2^g-1)``."""
    gain = _GAIN.get(metric.partition("@")[0])
    return f"{metric} ({gain})" if gain else metric


def frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], index: str | None = None) -> Any:
    """A DataFrame of ``rows`` with ``columns`` in that order, indexed by ``index``."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_pandas needs pandas: pip install 'goldkeeper[pandas]'") from None
    table = pd.DataFrame([[row.get(column) for column in columns] for row in rows], columns=list(columns))
    return table.set_index(index) if index else table


def metric_rows(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per metric from a report's or score's measurements (JSON values or models)."""
    rows = []
    for metric, measurement in metrics.items():
        found = measurement if isinstance(measurement, Mapping) else measurement.model_dump()
        ci = found.get("ci")
        rows.append({"metric": metric, "value": found["value"], "ci_low": ci[0] if ci else None,
                     "ci_high": ci[1] if ci else None, "n": found.get("n"), "ci_method": found.get("ci_method")})
    return rows


def per_query_frame(per_query: Mapping[str, Mapping[str, float]]) -> Any:
    """Rows: queries (the index, ``query_id``); columns: metric ids."""
    columns = list(next(iter(per_query.values()), {}))
    rows = [{"query_id": query, **values} for query, values in per_query.items()]
    return frame(rows, ["query_id", *columns], index="query_id")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}"
    return escape(str(value))


def html_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], caption: str = "") -> str:
    """A plain HTML table (numbers right-aligned, to four decimals), every text escaped."""
    head = "".join(f"<th>{escape(column)}</th>" for column in columns)
    body = "".join(
        "<tr>" + "".join(
            f'<td style="text-align:right">{_cell(row.get(c))}</td>' if isinstance(row.get(c), (int, float))
            else f"<td>{_cell(row.get(c))}</td>" for c in columns) + "</tr>"
        for row in rows)
    title = f"<caption style=\"text-align:left\">{escape(caption)}</caption>" if caption else ""
    return f'<table class="goldkeeper">{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def metrics_html(metrics: Mapping[str, Any], caption: str, extra: str = "") -> str:
    """A results object's notebook display: a caption, the metrics table, then ``extra``."""
    rows = [{**row, "metric": labelled(row["metric"])} for row in metric_rows(metrics)]
    return "<div>" + html_table(rows, METRIC_COLUMNS, caption) + extra + "</div>"
