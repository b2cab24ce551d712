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


def test_span_resolution_adds_only_diff_match_patch_to_the_core():
    """Finding where an edited passage begins is diff-match-patch's Bitap (pure Python, no
    clock read): the one library core.spans adds, loaded when a quote must be matched
    fuzzily."""
    before = _modules_after("import goldkeeper.core.drift")
    loaded = _modules_after("import goldkeeper.core.drift\nfrom goldkeeper.core.spans import DocumentText, Span, locate\n"
                            "print(locate(DocumentText([('c', 0, 'the cat sat on the mat')]), Span(4, 7, 'bat')))")
    third_party = {m.split(".")[0] for m in loaded - before} - set(sys.stdlib_module_names) - {"goldkeeper"}
    assert third_party == {"diff_match_patch"}, third_party  # drift loads core.spans, not diff-match-patch


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
    from goldkeeper.cli.app import quiet_prefect

    monkeypatch.delenv("DO_NOT_TRACK", raising=False)
    monkeypatch.delenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", raising=False)
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "true")  # an explicit choice is kept
    quiet_prefect()
    import os

    assert os.environ["DO_NOT_TRACK"] == "1"
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "true"
    assert os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] == "120"
