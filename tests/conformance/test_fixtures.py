"""Every conformance case, black-box, through the public API and through the CLI.

Cases come from spec/fixtures (the seed's cases byte for byte, plus goldkeeper's own, whose
names start with ``goldkeeper-``) and from the installed reference package retrieval-eval
0.1.1, which ships five cases the seed lacks. Every case passes; none is marked.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

import goldkeeper
from tests.conftest import FIXTURES, run_cli

REFERENCE_FIXTURES = Path(str(resources.files("retrieval_eval") / "spec" / "fixtures"))


def _cases() -> list[tuple[str, Path]]:
    found = []
    for origin, root in (("spec", FIXTURES), ("retrieval-eval", REFERENCE_FIXTURES)):
        for case in sorted(p for p in root.iterdir() if (p / "expected.json").is_file()):
            found.append((origin, case))
    return found


CASES = _cases()
NAMES = sorted({case.name for _, case in CASES})


def _expected(case: Path) -> dict:
    return json.loads((case / "expected.json").read_text(encoding="utf-8"))


def _cases_named(*names: str) -> list:
    return [
        pytest.param(case, id=f"{origin}:{case.name}") for origin, case in CASES if case.name in names
    ]


def test_every_seed_and_reference_case_is_covered():
    covered = {
        "basic", "chunk-id", "drift", "duplicate-ranking", "merge", "no-positives",
        "nothing-scored", "qrels", "strata", "stratum-order", "summarize",
        "unsorted-queries", "unsound-judgments", "goldkeeper-chunk-id", "goldkeeper-drift-rules",
        "goldkeeper-one-gold-set",
    }
    assert set(NAMES) == covered
    assert {c.name for o, c in CASES if o == "retrieval-eval"} >= {n for n in covered if not n.startswith("goldkeeper-")}


def test_seed_fixtures_are_byte_identical_to_the_reference_package_where_both_have_them():
    """The seed's `café` vector lost its NFD form in transit; every other file is identical."""
    differing = []
    for _, case in ((o, c) for o, c in CASES if o == "spec" and not c.name.startswith("goldkeeper-")):
        for path in case.iterdir():
            if path.read_bytes() != (REFERENCE_FIXTURES / case.name / path.name).read_bytes():
                differing.append(f"{case.name}/{path.name}")
    assert differing == ["chunk-id/expected.json"]


# identity ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases_named("chunk-id", "goldkeeper-chunk-id"))
def test_identity_vectors_api(case):
    expected = _expected(case)
    for vector in expected["normalize"]:
        assert goldkeeper.normalize(vector["in"]) == vector["out"], vector
    for vector in expected["text_sha"]:
        assert goldkeeper.text_sha(vector["text"]) == vector["out"], vector
    for vector in expected["chunk_id"]:
        got = goldkeeper.chunk_id(
            vector["doc_uri"], vector["doc_revision"], vector["ordinal"], vector["text"],
            vector["chunker_fingerprint"],
        )
        assert got == vector["out"], vector


@pytest.mark.parametrize("case", _cases_named("chunk-id", "goldkeeper-chunk-id"))
def test_identity_vectors_cli(case):
    expected = _expected(case)
    for vector in expected["normalize"]:
        result = run_cli("id", "--text", "-", "--format", "json", stdin=vector["in"].encode())
        assert result.code == 0, result.stderr
        assert json.loads(result.stdout)["normalized"] == vector["out"]
    for vector in expected["text_sha"]:
        result = run_cli("id", "--text", "-", "--format", "json", stdin=vector["text"].encode())
        assert json.loads(result.stdout)["text_sha"] == vector["out"]
    for vector in expected["chunk_id"]:
        result = run_cli(
            "id", "--text", "-", "--doc-uri", vector["doc_uri"], "--doc-revision",
            vector["doc_revision"], "--ordinal", str(vector["ordinal"]), "--chunker",
            vector["chunker_fingerprint"], "--format", "json", stdin=vector["text"].encode(),
        )
        assert result.code == 0, result.stderr
        assert json.loads(result.stdout)["chunk_id"] == vector["out"]


# qrels and judgments interop -----------------------------------------------------------------


def _label_dicts(labels) -> list[dict]:
    return [{"query_id": j.query_id, "doc_uri": j.doc_uri, "relevance": j.relevance} for j in labels]


@pytest.mark.parametrize("case", _cases_named("qrels"))
def test_qrels_api(case):
    expected = _expected(case)
    beir = goldkeeper.parse_beir_tsv((case / "beir.tsv").read_text(encoding="utf-8"))
    trec = goldkeeper.parse_trec_qrels((case / "trec.qrels").read_text(encoding="utf-8"))
    assert _label_dicts(beir) == expected["beir"]
    assert _label_dicts(trec) == expected["trec"]
    assert goldkeeper.to_qrels(beir).splitlines() == expected["qrels_lines"]


@pytest.mark.parametrize("case", _cases_named("qrels"))
def test_qrels_cli(case):
    expected = _expected(case)
    for name, key in (("beir.tsv", "beir"), ("trec.qrels", "trec")):
        result = run_cli("convert", str(case / name), "--to", "judgments")
        assert result.code == 0, result.stderr
        assert [json.loads(line) for line in result.stdout.splitlines()] == expected[key]
    result = run_cli("convert", str(case / "beir.tsv"), "--to", "qrels")
    assert result.stdout.splitlines() == expected["qrels_lines"]


@pytest.mark.parametrize("case", _cases_named("basic"))
def test_basic_qrels_lines_api_and_cli(case):
    expected = _expected(case)
    labels = goldkeeper.parse_judgments((case / "judgments.jsonl").read_bytes())
    assert goldkeeper.to_qrels(labels).splitlines() == expected["qrels_lines"]
    result = run_cli("convert", str(case / "judgments.jsonl"), "--to", "qrels")
    assert result.code == 0, result.stderr
    assert result.stdout.splitlines() == expected["qrels_lines"]


# validation -------------------------------------------------------------------------------------


def _issue_keys(issues) -> list[str]:
    keys = []
    for issue in issues:
        code, message = issue["code"], issue["message"]
        subject = None
        if code == "missing-query-text":
            subject = re.search(r"query (\S+)", message).group(1)
        elif code == "thin-stratum":
            subject = re.search(r"stratum '([^']+)'", message).group(1)
        keys.append(f"{code}:{subject}" if subject else code)
    return keys


@pytest.mark.parametrize("case", _cases_named("unsorted-queries"))
def test_validation_order_api_and_cli(case):
    expected = _expected(case)
    result = goldkeeper.validate(goldkeeper.parse_judgments((case / "judgments.jsonl").read_bytes()))
    assert _issue_keys([i.to_dict() for i in result.issues]) == expected["issue_order"]
    assert (result.ok, result.queries, result.labels) == (expected["ok"], expected["queries"], expected["labels"])

    cli = run_cli("validate", str(case / "judgments.jsonl"), "--format", "json")
    assert cli.code == 0, cli.stderr
    payload = json.loads(cli.stdout)
    assert _issue_keys(payload["issues"]) == expected["issue_order"]
    assert (payload["ok"], payload["queries"], payload["labels"]) == (
        expected["ok"], expected["queries"], expected["labels"],
    )


@pytest.mark.parametrize("case", _cases_named("unsound-judgments"))
def test_unsound_judgments_fail_validation_api_and_cli(case):
    expected = _expected(case)["validate"]
    result = goldkeeper.validate(goldkeeper.parse_judgments((case / "judgments.jsonl").read_bytes()))
    assert result.ok is expected["ok"]
    assert result.error_codes == expected["error_codes"]
    cli = run_cli("validate", str(case / "judgments.jsonl"), "--format", "json")
    assert cli.code == 1
    payload = json.loads(cli.stdout)
    assert payload["ok"] is expected["ok"]
    assert sorted({i["code"] for i in payload["issues"] if i["severity"] == "error"}) == expected["error_codes"]


# runs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases_named("duplicate-ranking"))
def test_malformed_runs_are_refused_with_the_fixture_message(case):
    for rejected in _expected(case)["rejected"]["cases"]:
        path = case / rejected["file"]
        with pytest.raises(goldkeeper.InputError) as caught:
            goldkeeper.parse_run(path.read_bytes())
        assert str(caught.value) == rejected["message"]
        cli = run_cli("convert", str(path), "--to", "trec-run")
        assert cli.code == 2
        # Through the CLI the source is the file's path rather than the word "run".
        assert cli.stderr == f"error: {path}{rejected['message'][len('run'):]}\n"


# scoring and drift ----------------------------------------------------------------------------


def _report(case: Path, *extra: str, k: int | None = None) -> tuple[int, dict]:
    expected = _expected(case)
    args = ["score", "--judgments", str(case / "judgments.jsonl"), "--run", str(case / "run.jsonl"),
            "-k", str(k or expected.get("k", 10)), "--format", "json", *extra]
    if "threshold" in expected:
        args += ["--threshold", str(expected["threshold"])]
    result = run_cli(*args)
    assert result.code in (0, 1), result.stderr
    return result.code, json.loads(result.stdout)


def _assert_metrics(got: dict, want: dict) -> None:
    # goldkeeper adds ndcg_linear@k and judged@k beside the reference's six metrics.
    extra = {name.replace("ndcg@", other) for name in want if name.startswith("ndcg@")
             for other in ("ndcg_linear@", "judged@")}
    assert sorted(got) == sorted(set(want) | extra)
    for name, value in want.items():
        assert round(got[name]["value"], 12) == pytest.approx(value, abs=1e-12), name


_PER_QUERY_NAME = {"precision": "precision", "recall": "recall", "ndcg": "ndcg", "mrr": "mrr",
                   "ap": "map", "hit_rate": "hit_rate"}


@pytest.mark.parametrize("case", _cases_named("basic", "no-positives", "strata", "duplicate-ranking", "stratum-order"))
def test_scored_metrics_cli(case):
    expected = _expected(case)
    _, report = _report(case)
    _assert_metrics(report["metrics"], expected["metrics"])
    k = expected["k"]
    for query_id, values in expected.get("per_query", {}).items():
        for name, value in values.items():
            if name != "note":
                assert report["per_query"][query_id][f"{_PER_QUERY_NAME[name]}@{k}"] == pytest.approx(value, abs=1e-12)
    if "per_stratum" in expected:
        for name, stratum in expected["per_stratum"].items():
            assert report["per_stratum"][name]["n"] == stratum["n"]
            _assert_metrics(report["per_stratum"][name]["metrics"], stratum["metrics"])
        assert report["worst_stratum"] == expected["worst_stratum"]
    if "queries_without_positives" in expected:
        assert report["queries_without_positives"] == expected["queries_without_positives"]
        assert report["judgments"]["queries_scored"] == expected["queries_scored"]
    if "verdict" in expected:
        assert report["verdict"]["status"] == expected["verdict"]
        assert expected["reason"] in report["verdict"]["reasons"]


@pytest.mark.parametrize("case", _cases_named("basic"))
def test_basic_metrics_at_k1_cli(case):
    _, report = _report(case, k=1)
    _assert_metrics(report["metrics"], _expected(case)["metrics_k1"])


@pytest.mark.parametrize("case", _cases_named("nothing-scored"))
def test_nothing_scored_is_indeterminate_cli(case):
    expected = _expected(case)
    code, report = _report(case, "--gate", "recall@3:0.5")
    assert code == 1
    assert report["metrics"] == {}
    assert report["verdict"]["status"] == expected["status"]
    assert expected["reason"] in report["verdict"]["reasons"]
    assert expected["gate_reason"] in report["verdict"]["reasons"]


@pytest.mark.parametrize("case", _cases_named("unsound-judgments"))
def test_unsound_judgments_cannot_pass_cli(case):
    expected = _expected(case)
    code, report = _report(case, "--gate", expected["gate"]["expression"])
    assert code == expected["gate"]["exit_code"]
    assert report["verdict"]["status"] == expected["verdict"]
    assert report["verdict"]["gates"][0]["status"] == expected["gate"]["gate_status"]


@pytest.mark.parametrize("case", _cases_named("summarize"))
def test_summarize_api(case):
    for name, spec in _expected(case)["cases"].items():
        got = goldkeeper.summarize(spec["samples"]).model_dump(exclude_none=True)
        want = spec["expected"]
        assert got.keys() == want.keys(), name
        for key, value in want.items():
            assert got[key] == pytest.approx(value, abs=1e-12), (name, key)


DRIFT_CASES = ("drift", "merge", "goldkeeper-drift-rules")


def _flags(findings: list[dict], expected: dict) -> dict:
    wanted = expected.get("flags", {})
    return {q: {k: f.get(k) for k in flags} for q, flags in wanted.items() for f in findings if f["query_id"] == q}


@pytest.mark.parametrize("case", _cases_named(*DRIFT_CASES))
def test_drift_api(case):
    from goldkeeper.core.drift import classify, parse_corpus

    expected = _expected(case)
    result = classify(goldkeeper.parse_judgments((case / "judgments.jsonl").read_bytes()),
                      parse_corpus((case / "corpus.json").read_bytes()))
    assert {f["query_id"]: f["status"] for f in result.findings} == expected["statuses"]
    assert result.summary == expected["summary"]
    assert {f["query_id"]: f["reanchor_to"] for f in result.findings if "reanchor_to" in f} == expected["reanchor"]
    assert {f["query_id"]: f["split_into"] for f in result.findings if "split_into" in f} == expected.get("split_into", {})
    assert _flags(result.findings, expected) == expected.get("flags", {})
    assert result.documents == expected.get("documents", result.documents)


@pytest.mark.parametrize("case", _cases_named(*DRIFT_CASES))
def test_drift_cli(case):
    expected = _expected(case)
    result = run_cli("drift", "--judgments", str(case / "judgments.jsonl"), "--corpus",
                     str(case / "corpus.json"), "--format", "json")
    assert result.code == 1, result.stderr  # labels drifted: the check fails
    report = json.loads(result.stdout)
    statuses = {f["query_id"]: f["status"] for f in report["findings"]}
    assert statuses == expected["statuses"]
    assert report["summary"] == pytest.approx(expected["summary"])
    assert {f["query_id"]: f["reanchor_to"] for f in report["findings"] if "reanchor_to" in f} == expected["reanchor"]
    assert {f["query_id"]: f["split_into"] for f in report["findings"] if "split_into" in f} == expected.get("split_into", {})
    assert _flags(report["findings"], expected) == expected.get("flags", {})
    assert report["documents"] == expected.get("documents", report["documents"])


@pytest.mark.parametrize("case", _cases_named("stratum-order"))
def test_stratum_order_in_json_and_text(case):
    expected = _expected(case)
    _, report = _report(case)
    assert {name: s["n"] for name, s in report["per_stratum"].items()} == expected["per_stratum_n"]
    assert list(report["per_stratum"]) == sorted(expected["per_stratum_n"])  # code point order
    args = ["score", "--judgments", str(case / "judgments.jsonl"), "--run", str(case / "run.jsonl"),
            "-k", str(expected["k"]), "--threshold", str(expected["threshold"])]
    for output in ("text", "markdown"):
        text = run_cli(*args, "--format", output).stdout
        names = expected["scored_order"] + expected["unscored_order"]
        lines = text.splitlines()
        prefix = "{} " if output == "text" else "| {} |"
        positions = [next(i for i, line in enumerate(lines) if line.startswith(prefix.format(name)))
                     for name in names]
        assert positions == sorted(positions), (output, text)
