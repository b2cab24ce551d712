"""Parquet forms of judgments, runs, snapshots and reports (spec/formats.md, "Parquet"): every format
round-trips to byte-identical canonical JSON, scoring and drift read them as they read JSON,
DuckDB queries them, and hostile files are refused in one line naming file, row and column."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, run_cli

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CASE = FIXTURES / "goldkeeper-one-gold-set"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The one-gold-set fixture as JSON and as Parquet: judgments with spans and provenance,
    a run with scores, a snapshot with offsets."""
    d = tmp_path_factory.mktemp("parquet")
    rows = [json.loads(line) for line in (CASE / "judgments.jsonl").read_text().splitlines()]
    for n, row in enumerate(rows):  # the fields a label gathers over its life: typed, and JSON-valued
        row.update(labeled_by="human:ana", labeled_at="2026-12-01T00:00:00Z", stratum="odd" if n % 2 else "even")
        if n % 3 == 0:
            row["rejudged_from"] = {"item_id": "rq1:" + "0" * 24, "status": "SPLIT", "relevance": 2}
        if n == 1:
            row["span"]["proposed_by"] = "synthetic:m"
    (d / "judgments.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    entries = [json.loads(line) for line in (CASE / "run-tokens.jsonl").read_text().splitlines()]
    for entry in entries:
        entry["scores"] = [1.0 / (i + 1) for i in range(len(entry["ranking"]))]
    (d / "run.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    for args in (("convert", str(d / "judgments.jsonl"), "--to", "judgments", "-o", str(d / "judgments.parquet")),
                 ("convert", str(d / "run.jsonl"), "--to", "run", "-o", str(d / "run.parquet")),
                 ("snapshot", str(CASE / "chunks-tokens.jsonl"), "--chunker", "tokens", "-o", str(d / "snap.json")),
                 ("snapshot", str(CASE / "chunks-tokens.jsonl"), "--chunker", "tokens", "-o", str(d / "snap.parquet"))):
        done = run_cli(*args, "--quiet") if args[0] == "snapshot" else run_cli(*args)
        assert done.code == 0, (args, done.stderr)
    return d


def _canonical(path, to):
    done = run_cli("convert", str(path), "--to", to)
    assert done.code == 0, done.stderr
    return done.stdout


def test_judgments_and_runs_round_trip_to_byte_identical_canonical_json(made):
    assert _canonical(made / "judgments.parquet", "judgments") == _canonical(made / "judgments.jsonl", "judgments")
    assert _canonical(made / "run.parquet", "run") == _canonical(made / "run.jsonl", "run")
    table = pq.read_table(made / "judgments.parquet")
    assert table.schema.field("relevance").type == pa.int64()
    assert pa.types.is_struct(table.schema.field("span").type)
    assert table.schema.field("rejudged_from").type == pa.string()  # any other field: its JSON text
    run = pq.read_table(made / "run.parquet")
    assert run.schema.field("ranking").type == pa.list_(pa.string())
    assert run.schema.field("scores").type == pa.list_(pa.float64())


def test_a_parquet_snapshot_holds_what_corpus_json_holds(made):
    from goldkeeper.io.snapshots import open_corpus

    parquet, json_snapshot = open_corpus(str(made / "snap.parquet")), open_corpus(str(made / "snap.json"))
    assert parquet.chunks == json_snapshot.chunks
    assert (parquet.corpus_fingerprint, parquet.chunker_fingerprint) == ("tokens", "tokens")
    # chunker output given as Parquet makes the same snapshot
    chunks = [json.loads(line) for line in (CASE / "chunks-tokens.jsonl").read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(chunks), made / "chunks.parquet")
    done = run_cli("snapshot", str(made / "chunks.parquet"), "--chunker", "tokens", "-o", str(made / "again.json"),
                   "--quiet")
    assert done.code == 0, done.stderr
    assert (made / "again.json").read_bytes() == (made / "snap.json").read_bytes()


def test_score_drift_and_compare_read_parquet_as_they_read_json(made):
    args = ("-k", "1,5", "--now", "2026-12-07T00:00:00Z", "--format", "json")
    from_json = json.loads(run_cli("score", "-j", str(made / "judgments.jsonl"), "-r", str(made / "run.jsonl"),
                                   "--corpus", str(made / "snap.json"), *args).stdout)
    from_parquet = json.loads(run_cli("score", "-j", str(made / "judgments.parquet"), "-r", str(made / "run.parquet"),
                                      "--corpus", str(made / "snap.parquet"), *args).stdout)
    for part in ("metrics", "per_query", "verdict", "validation", "corpus"):
        assert from_parquet[part] == from_json[part], part
    assert from_parquet["inputs"]["spans"] == from_json["inputs"]["spans"]
    assert from_parquet["inputs"]["run"]["sha256"] != from_json["inputs"]["run"]["sha256"]  # each file's own
    drift_json = json.loads(run_cli("drift", "-j", str(made / "judgments.jsonl"), "-c", str(made / "snap.json"),
                                    "--format", "json").stdout)
    drift_parquet = json.loads(run_cli("drift", "-j", str(made / "judgments.parquet"), "-c", str(made / "snap.parquet"),
                                       "--format", "json").stdout)
    assert drift_parquet["summary"] == drift_json["summary"] and drift_parquet["findings"] == drift_json["findings"]


def test_duckdb_queries_a_snapshot_and_a_run(made):
    duckdb = pytest.importorskip("duckdb")
    per_document = duckdb.sql(f"select doc_uri, count(*) from '{made / 'snap.parquet'}' group by 1 order by 1").fetchall()
    chunks = [json.loads(line) for line in (CASE / "chunks-tokens.jsonl").read_text().splitlines()]
    expected = sorted({c["doc_uri"]: sum(1 for o in chunks if o["doc_uri"] == c["doc_uri"]) for c in chunks}.items())
    assert per_document == expected
    (deepest,), = duckdb.sql(f"select max(len(ranking)) from '{made / 'run.parquet'}'").fetchall()
    assert deepest == max(len(json.loads(line)["ranking"]) for line in (made / "run.jsonl").read_text().splitlines())


def _table(path, columns: dict, schema=None):
    pq.write_table(pa.table(columns, schema=schema), path)
    return path


LABEL = {"query_id": ["q1", "q2"], "doc_uri": ["d", "d"], "chunk_id": ["c1", "c2"], "relevance": [1, 2]}


@pytest.mark.parametrize(("columns", "said"), [
    ({**LABEL, "relevance": ["1", "2"]}, "row 1: column relevance: "),
    ({**LABEL, "query_id": ["q1", None]}, "row 2: column query_id: "),
    ({**LABEL, "relevance": [1.0, 1.5]}, "row 1: column relevance: "),
])
def test_hostile_judgments_are_refused_naming_file_row_and_column(tmp_path, columns, said):
    path = _table(tmp_path / "bad.parquet", columns)
    for args in (("validate", str(path)), ("score", "-j", str(path), "-r", str(path))):
        done = run_cli(*args)
        assert done.code == 2, (args, done)
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith(f"error: {path}: {said}"), line


@pytest.mark.parametrize(("columns", "said"), [
    ({"query_id": ["q1", "q2"], "ranking": [["a"], ["b", "c"]], "scores": [[1.0], [float("nan"), 0.5]]},
     "row 2: column scores"),
    ({"query_id": ["q1", "q1"], "ranking": [["a"], ["b"]]}, "row 2: column query_id: duplicate entry for query q1, "
                                                           "already in row 1"),
    ({"query_id": ["q1", "q2"], "ranking": [["a"], None]}, "row 2: column ranking"),
    ({"query_id": ["q1", "q2"], "ranking": [["a"], ["b"]], "colour": ["red", "blue"]}, "column colour"),
])
def test_hostile_runs_are_refused_naming_file_row_and_column(tmp_path, columns, said):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"query_id": "q1", "doc_uri": "d", "chunk_id": "a", "relevance": 1}) + "\n")
    path = _table(tmp_path / "run.parquet", columns)
    done = run_cli("score", "-j", str(labels), "-r", str(path))
    assert done.code == 2, done
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}: ") and said in line, line
    assert "Traceback" not in done.stderr


def test_a_truncated_file_and_duplicate_columns_are_refused_whole(tmp_path, made):
    data = (made / "judgments.parquet").read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    done = run_cli("validate", str(cut))
    assert done.code == 2 and "is not a readable Parquet file" in done.stderr, done
    twice = tmp_path / "twice.parquet"
    table = pa.Table.from_arrays([pa.array(["q1"]), pa.array(["d"]), pa.array([1]), pa.array([2])],
                                 names=["query_id", "doc_uri", "relevance", "relevance"])
    pq.write_table(table, twice)
    done = run_cli("validate", str(twice))
    assert done.code == 2 and "column relevance: has two columns of one name" in done.stderr, done


def test_parquet_holds_judgments_or_runs_only(made, tmp_path):
    done = run_cli("convert", str(made / "judgments.jsonl"), "--to", "qrels", "-o", str(tmp_path / "q.parquet"))
    assert done.code == 2 and "Parquet holds judgments, a run, a snapshot or a report" in done.stderr


def test_a_hostile_snapshot_is_refused_by_drift_and_score_naming_row_and_column(tmp_path, made):
    rows = pq.read_table(made / "snap.parquet").to_pylist()
    rows[3]["ordinal"] = -1
    bad = tmp_path / "bad-snapshot.parquet"
    table = pa.Table.from_pylist(rows, schema=pq.read_schema(made / "snap.parquet"))
    pq.write_table(table, bad)
    for args in (("drift", "-j", str(made / "judgments.parquet"), "-c", str(bad)),
                 ("score", "-j", str(made / "judgments.parquet"), "-r", str(made / "run.parquet"), "--corpus", str(bad))):
        done = run_cli(*args)
        assert done.code == 2, (args, done)
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith(f"error: {bad}: row 4: column ordinal: "), line


def test_a_streamed_parquet_snapshot_gives_the_chunks_of_the_held_one(made):
    from goldkeeper.io.parquet import ParquetCorpus, corpus_of

    streamed, held = ParquetCorpus(str(made / "snap.parquet")), corpus_of(str(made / "snap.parquet"))
    assert list(streamed) == held.chunks and list(streamed) == held.chunks  # and again: each pass streams
    assert (streamed.count, streamed.corpus_fingerprint) == (len(held.chunks), held.corpus_fingerprint)


def test_a_snapshot_converts_between_its_forms_byte_for_byte(made, tmp_path):
    sharded = tmp_path / "sharded"
    assert run_cli("snapshot", str(CASE / "chunks-tokens.jsonl"), "--chunker", "tokens", "-o", str(sharded),
                   "--sharded", "--quiet").code == 0
    for source in (made / "snap.json", made / "snap.parquet", sharded):
        out = tmp_path / f"from-{source.name}.json"
        done = run_cli("convert", str(source), "--to", "snapshot", "-o", str(out))
        assert done.code == 0, done.stderr
        assert out.read_bytes() == (made / "snap.json").read_bytes(), source
    again = tmp_path / "again.parquet"
    assert run_cli("convert", str(made / "snap.json"), "--to", "snapshot", "-o", str(again)).code == 0
    assert pq.read_table(again).equals(pq.read_table(made / "snap.parquet"))
    assert run_cli("convert", str(made / "snap.json"), "--to", "snapshot").code == 2  # no --out: refused


REPORT_ARGS = ("-k", "1,5", "--now", "2026-12-07T00:00:00Z", "--intervals", "--seed", "3", "--format", "json")


@pytest.fixture(scope="module")
def reports(made):
    """One evaluation's report written as JSON and as Parquet by score --report."""
    for name in ("report.json", "report.parquet"):
        done = run_cli("score", "-j", str(made / "judgments.jsonl"), "-r", str(made / "run.jsonl"), "--corpus",
                       str(made / "snap.json"), *REPORT_ARGS, "--report", str(made / name))
        assert done.code in (0, 1), done.stderr
    return made / "report.json", made / "report.parquet"


def test_a_report_round_trips_through_its_parquet_form_byte_for_byte(reports, tmp_path):
    as_json, as_parquet = reports
    document = json.loads(as_json.read_bytes())
    table = pq.read_table(as_parquet)
    assert table.column("query_id").to_pylist() == list(document["per_query"])  # a row per query, in order
    first = next(iter(document["per_query"].values()))
    assert table.schema.names == ["query_id", *first]
    assert all(table.schema.field(metric).type == pa.float64() for metric in first)
    assert table.to_pylist()[0] == {"query_id": next(iter(document["per_query"])), **first}
    assert _canonical(as_parquet, "report").encode() == as_json.read_bytes()
    again = tmp_path / "again.parquet"
    assert run_cli("convert", str(as_json), "--to", "report", "-o", str(again)).code == 0
    assert _canonical(again, "report").encode() == as_json.read_bytes()


def test_a_parquet_report_is_a_baseline_as_its_json_is(reports, made):
    as_json, as_parquet = reports
    gated = [json.loads(run_cli("score", "-j", str(made / "judgments.jsonl"), "-r", str(made / "run.jsonl"),
                                "--corpus", str(made / "snap.json"), *REPORT_ARGS, "--gate", "recall@5:-0.01",
                                "--gate", "ndcg@5:regression", "--baseline", str(baseline)).stdout)["verdict"]
             for baseline in (as_json, as_parquet)]
    assert gated[0] == gated[1] and len(gated[0]["gates"]) == 2 and gated[0]["gates"][0]["baseline"] is not None


def test_duckdb_slices_a_reports_per_query_table(reports):
    duckdb = pytest.importorskip("duckdb")
    as_json, as_parquet = reports
    per_query = json.loads(as_json.read_bytes())["per_query"]
    (missed,), = duckdb.sql(f"select count(*) from '{as_parquet}' where \"recall@5\" = 0").fetchall()
    assert missed == sum(1 for values in per_query.values() if values["recall@5"] == 0)


@pytest.mark.parametrize(("change", "said"), [
    (lambda t: t.set_column(0, "query_id", pa.array([None, *t.column("query_id").to_pylist()[1:]], pa.string())),
     "row 1: column query_id: a query's row must name it once, got null"),
    (lambda t: t.set_column(0, "query_id", pa.array(["q"] * t.num_rows)),
     "row 2: column query_id: a query's row must name it once, got 'q' again"),
    (lambda t: t.set_column(1, t.schema.names[1], pa.array([float("nan")] * t.num_rows)),
     "row 1: column precision@1: a metric's value must be a finite number, got nan"),
    (lambda t: t.set_column(1, t.schema.names[1], pa.array(["x"] * t.num_rows)),
     "column precision@1: a per-query metric column holds numbers, got string"),
    (lambda t: t.replace_schema_metadata({}), "file: is not a goldkeeper report"),
])
def test_a_hostile_parquet_report_is_refused_naming_row_and_column(reports, tmp_path, made, change, said):
    table = pq.read_table(reports[1])
    meta = table.schema.metadata
    bad = tmp_path / "bad.parquet"
    changed = change(table)
    pq.write_table(changed.replace_schema_metadata(meta) if changed.schema.metadata else changed, bad)
    for args in (("convert", str(bad), "--to", "report"),
                 ("score", "-j", str(made / "judgments.jsonl"), "-r", str(made / "run.jsonl"), "--gate",
                  "recall@5:-0.01", "--baseline", str(bad))):
        done = run_cli(*args)
        assert done.code == 2, (args, done)
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith(f"error: {bad}: ") and said in line, line


def test_a_truncated_parquet_report_is_refused(reports, tmp_path):
    data = reports[1].read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    done = run_cli("convert", str(cut), "--to", "report")
    assert done.code == 2 and "is not a readable Parquet file" in done.stderr and "Traceback" not in done.stderr


def test_the_readmes_duckdb_queries_run_as_documented(made, reports, tmp_path, monkeypatch):
    """The README's SQL, run as written in the folder holding the files it names."""
    import re

    from tests.conftest import REPO

    duckdb = pytest.importorskip("duckdb")
    readme = (REPO / "README.md").read_text()
    block = re.search(r"With DuckDB .*?```sql\n(.*?)```", readme, re.S).group(1)
    queries = [line for line in block.splitlines() if line and not line.startswith("--")]
    assert len(queries) == 2
    (tmp_path / "snapshot.parquet").write_bytes((made / "snap.parquet").read_bytes())
    (tmp_path / "report.parquet").write_bytes(reports[1].read_bytes())
    monkeypatch.chdir(tmp_path)
    chunks = [json.loads(line) for line in (CASE / "chunks-tokens.jsonl").read_text().splitlines()]
    per_document = {}
    for chunk in chunks:
        count, characters = per_document.get(chunk["doc_uri"], (0, 0))
        per_document[chunk["doc_uri"]] = (count + 1, characters + len(chunk["text"]))
    assert duckdb.sql(queries[0]).fetchall() == [(doc, *pair) for doc, pair in sorted(per_document.items())]
    per_query = json.loads(reports[0].read_bytes())["per_query"]
    missed = sorted((q, v["ndcg@5"]) for q, v in per_query.items() if v["recall@5"] < 1)
    assert missed and duckdb.sql(queries[1]).fetchall() == missed
