"""The report: what any CI step or dashboard reads.

Shaped to validate against the reference report schema (retrieval-eval 0.1.1,
``spec/report.schema.json``, spec_version "1"), so a dashboard built for those reports reads
goldkeeper's. goldkeeper's own additions live in extra fields, which that schema allows.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CorpusInfo",
    "DriftCounts",
    "GateResult",
    "JudgmentsInfo",
    "Measurement",
    "Report",
    "Status",
    "StratumScore",
    "Tool",
    "Verdict",
]

Status = Literal["PASS", "FAIL", "INDETERMINATE"]


class Measurement(BaseModel):
    """A metric value and the fields that make it honest."""

    model_config = ConfigDict(extra="allow")

    value: float
    n: int | None = Field(None, description="Samples (queries, or repeated runs).")
    stdev: float | None = None
    ci: tuple[float, float] | None = Field(None, description="Interval [lower, upper].")
    deterministic: bool | None = None


class StratumScore(BaseModel):
    model_config = ConfigDict(extra="allow")

    n: int = Field(ge=0)
    metrics: dict[str, Measurement] = Field(default_factory=dict)


class GateResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    expression: str
    status: Status
    observed: float | None = None
    baseline: float | None = None


class Verdict(BaseModel):
    model_config = ConfigDict(extra="allow")

    status: Status
    reasons: list[str] = Field(default_factory=list)
    gates: list[GateResult] | None = None


class Tool(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    version: str


class CorpusInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    fingerprint: str | None = None
    documents: int | None = None
    chunks: int | None = None


class DriftCounts(BaseModel):
    model_config = ConfigDict(extra="allow")

    valid: int = Field(ge=0)
    re_anchorable: int = Field(ge=0)
    merged: int = Field(ge=0)
    split: int = Field(ge=0)
    orphaned: int = Field(ge=0)
    invalid_ratio: float = Field(ge=0, le=1)


class JudgmentsInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    queries: int = Field(ge=0)
    labels: int = Field(ge=0)
    queries_scored: int | None = Field(None, ge=0)
    fingerprint: str | None = None
    human_labels: int | None = None
    synthetic_labels: int | None = None
    drift: DriftCounts | None = None


class Report(BaseModel):
    """A complete evaluation report (spec_version "1")."""

    model_config = ConfigDict(extra="allow", title="goldkeeper report")

    spec_version: Literal["1"] = "1"
    tool: Tool
    generated_at: str = Field(description="RFC 3339 date-time, UTC.")
    corpus: CorpusInfo
    judgments: JudgmentsInfo
    metrics: dict[str, Measurement]
    per_stratum: dict[str, StratumScore] | None = None
    verdict: Verdict

    def to_pandas(self, per_query: bool = False) -> Any:
        """The metrics as a DataFrame (``metric``, ``value``, ``ci_low``, ``ci_high``, ``n``,
        ``ci_method``), or with ``per_query`` one row per scored query and a column per metric."""
        from goldkeeper.models.frames import METRIC_COLUMNS, frame, metric_rows, per_query_frame

        if per_query:
            return per_query_frame((self.model_extra or {}).get("per_query") or {})
        return frame(metric_rows(self.metrics), METRIC_COLUMNS, index="metric")

    def _repr_html_(self) -> str:
        from html import escape

        from goldkeeper.models.frames import metrics_html

        verdict = self.verdict
        gates = "".join(f"<li><b>{escape(g.status)}</b> <code>{escape(g.expression)}</code></li>"
                        for g in verdict.gates or [])
        reasons = "".join(f"<li>{escape(reason)}</li>" for reason in verdict.reasons)
        listed = f"<ul>{gates}{reasons}</ul>" if gates or reasons else ""
        return metrics_html(self.metrics, f"goldkeeper {verdict.status}: {self.judgments.queries_scored} of "
                                          f"{self.judgments.queries} judged queries scored", listed)

    def to_json_dict(self) -> dict:
        """The wire form: unset optional fields omitted, as the reference writes them.

        ``per_query`` (one entry per query, the bulk of a large report) is already plain JSON
        values and is passed through rather than copied.
        """
        extra = self.model_extra or {}
        if "per_query" not in extra:
            return self.model_dump(mode="json", exclude_none=True)
        out = self.model_dump(mode="json", exclude_none=True, exclude={"per_query"})
        # Keep the field where it was, for stable bytes.
        ordered = {}
        for name in [*type(self).model_fields, *extra]:
            if name == "per_query":
                ordered[name] = extra["per_query"]
            elif name in out:
                ordered[name] = out[name]
        return ordered
