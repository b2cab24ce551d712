"""A Parquet run scored in query partitions (issue 45): each partition reads its rows straight
from the file's row groups, nothing is copied through the flow process, and the report is the
one `goldkeeper score` makes of the same file; a refusal still names the row in the file."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

pytest.importorskip("prefect")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

NOW = "2026-12-07T00:00:00Z"


def _run(tmp_path, queries: int = 3000, repeat_at: int | None = None):
    """Judgments and a Parquet run in row groups of 500 (several per partition); with
    ``repeat_at``, that row names the first row's query again."""
    labels, ids, rankings, scores = [], [], [], []
    for q in range(queries):
        ranking = [f"c{(q * 31 + i * 7) % 5000}" for i in range(20)]
        labels.append({"query_id": f"q{q}", "doc_uri": "d", "chunk_id": ranking[q % 15], "relevance": 1 + q % 2})
        ids.append("q0" if repeat_at is not None and q == repeat_at else f"q{q}")
        rankings.append(ranking)
        scores.append([1.0 - i / 20 for i in range(20)])
    (tmp_path / "judgments.jsonl").write_text("".join(json.dumps(row) + "\n" for row in labels))
    table = pa.table({"query_id": ids, "ranking": rankings, "scores": scores})
    pq.write_table(table, tmp_path / "run.parquet", row_group_size=500)
    return tmp_path / "judgments.jsonl", tmp_path / "run.parquet"


def test_a_parquet_run_in_partitions_scores_as_score_does(prefect_server, tmp_path):
    from goldkeeper.flows.scale import score_partitioned

    judgments, run = _run(tmp_path)
    report = score_partitioned(str(judgments), str(run), str(tmp_path / "work"), 4, k=[5, 10], generated_at=NOW)
    scored = json.loads(run_cli("score", "-j", str(judgments), "-r", str(run), "-k", "5,10", "--now", NOW,
                                "--format", "json").stdout)
    for part in ("metrics", "per_query", "inputs", "validation", "verdict"):
        assert report[part] == scored[part], part
    assert not list((tmp_path / "work").rglob("run-p*"))  # no partition of the run was copied


def test_a_repeated_query_in_a_partition_is_refused_naming_its_row_in_the_file(prefect_server, tmp_path):
    from goldkeeper.flows.scale import score_partitioned

    judgments, run = _run(tmp_path, repeat_at=2345)
    with pytest.raises(Exception, match=r"row 2346: column query_id: duplicate entry for query q0, already in row 1"):
        score_partitioned(str(judgments), str(run), str(tmp_path / "work"), 4, k=[10], generated_at=NOW)
