"""The committed JSON Schemas are the models' own, and reports fit the reference schema."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

import goldkeeper
from goldkeeper.models import export_schemas
from goldkeeper.models.report import DriftCounts, GateResult, JudgmentsInfo, StratumScore, Verdict

SCHEMAS = Path(__file__).resolve().parents[2] / "spec" / "schemas"
REFERENCE = Path(str(resources.files("retrieval_eval") / "spec"))


@pytest.mark.parametrize("name", sorted(export_schemas()))
def test_committed_schema_matches_the_model(name):
    committed = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    assert committed == export_schemas()[name], (
        f"spec/schemas/{name} is stale: run python spec/schemas/regenerate.py"
    )


def test_no_stray_schema_files():
    assert {p.name for p in SCHEMAS.glob("*.json")} == set(export_schemas())


def _report(**extra) -> goldkeeper.Report:
    return goldkeeper.Report(
        tool={"name": "goldkeeper", "version": goldkeeper.__version__},
        generated_at="2026-11-29T12:00:00Z",
        corpus={"fingerprint": None},
        judgments=JudgmentsInfo(
            queries=2, labels=3, queries_scored=1, fingerprint="recursive/512",
            drift=DriftCounts(valid=1, re_anchorable=1, merged=0, split=0, orphaned=1, invalid_ratio=2 / 3),
        ),
        metrics={"recall@5": goldkeeper.Measurement(value=0.5, n=2, ci=(0.01, 0.99))},
        per_stratum={"billing": StratumScore(n=1, metrics={"recall@5": goldkeeper.Measurement(value=1.0)})},
        verdict=Verdict(status="FAIL", reasons=["recall@5 is 0.5000, below 0.8"],
                        gates=[GateResult(expression="recall@5:0.8", status="FAIL", observed=0.5)]),
        **extra,
    )


def test_a_report_validates_against_the_reference_report_schema():
    schema = json.loads((REFERENCE / "report.schema.json").read_text(encoding="utf-8"))
    report = _report(per_query={"q1": {"recall@5": 1.0}}, missing_queries=["q2"])
    jsonschema.validate(report.to_json_dict(), schema, format_checker=jsonschema.FormatChecker())


def test_the_reference_schema_rejects_what_ours_would_never_write():
    """The check above can fail: a report without a verdict is refused by the same schema."""
    schema = json.loads((REFERENCE / "report.schema.json").read_text(encoding="utf-8"))
    wire = _report().to_json_dict()
    del wire["verdict"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wire, schema)


def test_judgment_schema_accepts_what_the_reference_schema_accepts():
    ours = export_schemas()["judgment.schema.json"]
    theirs = json.loads((REFERENCE / "judgments.schema.json").read_text(encoding="utf-8"))
    assert ours["required"] == theirs["required"]
    # Ours adds the span anchor (spec/spans.md); a line with one is still a line of theirs.
    assert set(ours["properties"]) - set(theirs["properties"]) == {"doc_revision", "span"}
    assert set(theirs["properties"]) <= set(ours["properties"])
    sample = {"query_id": "q", "doc_uri": "d", "relevance": 2, "chunk_id": "c1:" + "0" * 32, "x": [1],
              "doc_revision": "7", "span": {"start": 3, "end": 6, "exact": "abc", "prefix": "xyz"}}
    jsonschema.validate(sample, ours)
    jsonschema.validate(sample, theirs)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**sample, "span": {"start": 3, "exact": "abc"}}, ours)
