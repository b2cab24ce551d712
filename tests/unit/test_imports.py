"""Fast start: the package and the checking commands never load prefect (nor fsspec)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()[-1]
    return set(json.loads(out))


@pytest.mark.parametrize("module", ["goldkeeper", "goldkeeper.core.identity", "goldkeeper.core.validation",
                                    "goldkeeper.core.judgments", "goldkeeper.core.qrels", "goldkeeper.models"])
def test_importing_the_package_loads_neither_prefect_nor_fsspec(module):
    loaded = _modules_after(f"import {module}")
    assert module in loaded
    assert not any(m == "prefect" or m.startswith("prefect.") for m in loaded)
    assert not any(m == "fsspec" or m.startswith("fsspec.") for m in loaded)


def test_the_core_imports_only_the_standard_library_pydantic_numpy_and_scipy():
    before = _modules_after("pass")
    loaded = _modules_after("import goldkeeper.core.identity, goldkeeper.core.judgments, "
                            "goldkeeper.core.validation, goldkeeper.core.qrels, goldkeeper.core.runs, goldkeeper.core.drift")
    third_party = {m.split(".")[0] for m in loaded - before if not m.startswith("_sysconfigdata")}
    third_party -= set(sys.stdlib_module_names)
    assert third_party <= {"goldkeeper", "pydantic", "pydantic_core", "typing_extensions",
                           "typing_inspection", "annotated_types", "numpy", "scipy"}, third_party


@pytest.mark.parametrize("argv", [
    ["validate", str(FIXTURES / "basic" / "judgments.jsonl")],
    ["score", "--judgments", str(FIXTURES / "basic" / "judgments.jsonl"), "--run",
     str(FIXTURES / "basic" / "run.jsonl"), "--format", "json"],
    ["drift", "--judgments", str(FIXTURES / "drift" / "judgments.jsonl"), "--corpus",
     str(FIXTURES / "drift" / "corpus.json")],
    ["convert", str(FIXTURES / "qrels" / "trec.qrels"), "--to", "judgments"],
    ["--version"],
])
def test_checking_commands_do_not_load_prefect(argv):
    """Scoring, drift and validation never load prefect (fsspec only for non-local URLs)."""
    code = (
        "import sys\nfrom goldkeeper.cli import main\n"
        f"sys.argv = ['goldkeeper', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert done.code in (0, 1), done.code\n"
    )
    loaded = _modules_after(code)
    assert "goldkeeper.cli" in loaded
    assert not any(m == "prefect" or m.startswith("prefect.") for m in loaded)
    assert not any(m == "fsspec" or m.startswith("fsspec.") for m in loaded)


def test_drift_runs_without_numpy_or_pydantic():
    """Drift's path (CLI, msgspec readers, classify) loads neither at start. numpy comes in
    later only for anchors in very long documents; pydantic only for the fallback readers
    and a fix.
    (Loaded at start, they cost 50 to 75 ms of every drift.)"""
    code = (
        "import sys\nfrom goldkeeper.cli import main\n"
        f"sys.argv = ['goldkeeper', 'drift', '-j', {str(FIXTURES / 'drift' / 'judgments.jsonl')!r}, "
        f"'-c', {str(FIXTURES / 'drift' / 'corpus.json')!r}, '--format', 'json']\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert done.code in (0, 1), done.code\n"
    )
    loaded = _modules_after(code)
    assert "goldkeeper.core.drift" in loaded
    assert not {m.split(".")[0] for m in loaded} & {"numpy", "pydantic", "pydantic_core"}


def test_score_reads_labels_and_writes_its_json_report_without_pydantic(tmp_path):
    """Labels decoded by msgspec, the validation result and the report as JSON values: no
    pydantic, whose import and model builds took 0.08 s of a 10k-query score's 0.42 s.
    (numpy comes in here for the sequential gate.)"""
    import goldkeeper.examples

    examples = goldkeeper.examples.__path__[0]
    argv = ["score", "-j", f"{examples}/judgments.jsonl", "-r", f"{examples}/run.jsonl", "-k", "1,3",
            "--format", "json", "--gate", "recall@3:0.5", "--gate", "worst-stratum:recall@3:0.1",
            "--gate", "recall@3:sequential:0.2", "--report", f"{tmp_path}/report.json"]
    code = (
        "import sys\nfrom goldkeeper.cli import main\n"
        f"sys.argv = ['goldkeeper', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert done.code in (0, 1), done.code\n"
    )
    loaded = _modules_after(code)
    assert "goldkeeper.core.validation" in loaded
    assert "goldkeeper.core.reporting" in loaded and "goldkeeper.core.gates" in loaded
    assert not {m.split(".")[0] for m in loaded} & {"pydantic", "pydantic_core"}
    assert len(json.loads((tmp_path / "report.json").read_text())["verdict"]["gates"]) == 3


@pytest.mark.parametrize("output", ["text", "markdown"])
def test_score_renders_its_report_for_people_without_pydantic(output):
    """The text and markdown renderers read the report's JSON document: building a pydantic
    model first took 0.08 s of a small score's 0.38 s. Markdown needs no rich either."""
    import goldkeeper.examples

    examples = goldkeeper.examples.__path__[0]
    argv = ["score", "-j", f"{examples}/judgments.jsonl", "-r", f"{examples}/run.jsonl", "-k", "3",
            "--format", output, "--gate", "recall@3:0.5"]
    code = (
        "import sys\nfrom goldkeeper.cli import main\n"
        f"sys.argv = ['goldkeeper', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert done.code == 0, done.code\n"
    )
    loaded = _modules_after(code)
    assert "goldkeeper.render" in loaded
    assert not {m.split(".")[0] for m in loaded} & {"pydantic", "pydantic_core"}
    assert ("rich.console" in loaded) == (output == "text")


@pytest.mark.parametrize("flags", [["--no-intervals"], []])
def test_a_score_without_intervals_loads_no_numpy(flags):
    """A score without intervals computes with core.scoring's Python kernel, at any size:
    numpy's import was 0.05 s and 13 MB of a 10k-query score's 0.33 s. Intervals need numpy."""
    import goldkeeper.examples

    examples = goldkeeper.examples.__path__[0]
    argv = ["score", "-j", f"{examples}/judgments.jsonl", "-r", f"{examples}/run.jsonl", "-k", "1,3",
            "--format", "json", "--gate", "recall@3:0.5", "--gate", "worst-stratum:recall@3:0.1", *flags]
    code = (
        "import sys\nfrom goldkeeper.cli import main\n"
        f"sys.argv = ['goldkeeper', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert done.code in (0, 1), done.code\n"
    )
    loaded = _modules_after(code)
    assert "goldkeeper.core.scoring" in loaded
    assert ("numpy" in loaded) == (not flags)


def test_validate_reads_labels_without_pydantic_or_numpy():
    """validate's labels are decoded by msgspec and its result is a dataclass: 50,000 labels
    in 0.243 s against 0.363 s with pydantic-core's decoder and pydantic's import."""
    import goldkeeper.examples

    path = f"{goldkeeper.examples.__path__[0]}/judgments.jsonl"
    code = (
        "import sys\nfrom goldkeeper.cli import main\n"
        f"sys.argv = ['goldkeeper', 'validate', {path!r}, '--format', 'json']\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert done.code in (0, 1), done.code\n"
    )
    loaded = _modules_after(code)
    assert "goldkeeper.io.fastjson" in loaded
    assert not {m.split(".")[0] for m in loaded} & {"numpy", "pydantic", "pydantic_core"}


@pytest.mark.parametrize("module", ["goldkeeper.io.loading", "goldkeeper.io.scan", "goldkeeper.core.grouped",
                                    "goldkeeper.core.validation", "goldkeeper.core.gates", "goldkeeper.core.runs",
                                    "goldkeeper.core.qrels", "goldkeeper.core.scoring", "goldkeeper.core.reporting"])
def test_the_readers_and_gate_parsing_import_neither_numpy_nor_pydantic(module):
    """Reading labels and runs, parsing gates, scoring and building the report document load
    numpy and pydantic only where they use them (the report model, TREC runs, the numpy
    kernel, intervals)."""
    loaded = _modules_after(f"import {module}")
    assert module in loaded
    assert not {m.split(".")[0] for m in loaded} & {"numpy", "pydantic", "pydantic_core"}
    # Nor hashlib (OpenSSL: 3.8 MB, 3 ms), which score's process needs only when it hashes.
    assert "hashlib" not in loaded


def test_version_prints_the_package_version():
    import goldkeeper

    out = subprocess.run([sys.executable, "-m", "goldkeeper", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout == f"goldkeeper {goldkeeper.__version__}\n"


def test_public_api_is_sorted_and_complete():
    import goldkeeper

    assert goldkeeper.__all__ == sorted(goldkeeper.__all__)
    for name in ("normalize", "text_sha", "chunk_id", "parse_judgments", "dump_judgments",
                 "read_judgments", "write_judgments", "validate", "Judgment", "Chunk",
                 "CorpusSnapshot", "Report"):
        assert name in goldkeeper.__all__
        assert getattr(goldkeeper, name) is not None


def test_flow_commands_turn_prefect_telemetry_off_unless_the_user_chose(monkeypatch):
    from goldkeeper.cli import _quiet_prefect

    monkeypatch.delenv("DO_NOT_TRACK", raising=False)
    monkeypatch.delenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", raising=False)
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "true")  # an explicit choice is kept
    _quiet_prefect()
    import os

    assert os.environ["DO_NOT_TRACK"] == "1"
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "true"
    assert os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] == "120"
