"""Issue 26, class 9: a message names what is actually wrong, where it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

CHUNKS = Path(__file__).resolve().parents[2] / "src" / "goldkeeper" / "examples" / "lifecycle" / "chunks-v2.jsonl"
BOM = b"\xef\xbb\xbf"


@pytest.fixture
def example(tmp_path):
    assert run_cli("example", str(tmp_path)).code == 0
    return tmp_path


@pytest.mark.parametrize(("name", "body", "kind"), [
    ("run.jsonl", b'{"query_id":"q01","ranking":["a"]}\n', "JSONL"),
    ("run-no-suffix", b'{"query_id":"q01","ranking":["a"]}\n', "JSONL"),
    ("run.trec", b"q01 Q0 d1 1 1.5 tag\n", "a TREC run"),  # once read as a query "\ufeffq01", matching nothing
])
def test_a_run_with_a_byte_order_mark_is_blamed_on_the_mark(example, name, body, kind):
    (example / f"bom-{name}").write_bytes(BOM + body)
    result = run_cli("score", "-j", "judgments.jsonl", "-r", f"bom-{name}", cwd=example)
    assert (result.code, result.stderr) == (2, f"error: bom-{name}:1: encoding: starts with a byte order mark, which "
                                               f"{kind} does not allow, got U+FEFF (hint: save the file as UTF-8 "
                                               "without BOM)\n")


def test_qrels_with_a_byte_order_mark_are_blamed_on_the_mark(example):
    (example / "bom.qrels").write_bytes(BOM + b"q01 0 d1 1\n")
    result = run_cli("score", "-j", "bom.qrels", "-r", "run.jsonl", cwd=example)
    assert result.code == 2
    assert result.stderr.startswith("error: bom.qrels:1: encoding: starts with a byte order mark, which a TREC qrels "
                                    "file does not allow")


def test_a_separator_in_the_chunker_is_blamed_on_the_option_not_the_first_line(tmp_path):
    value = "recursive\x1f512"
    result = run_cli("snapshot", str(CHUNKS), "--chunker", value, "-o", str(tmp_path / "c.json"))
    assert (result.code, result.stderr) == (2, f"error: --chunker: must be a non-empty string without U+001F (the "
                                               f"field separator of chunk ids), got {value!r}\n")
    assert not (tmp_path / "c.json").exists()


def test_a_separator_in_a_row_is_blamed_on_its_field(tmp_path):
    (tmp_path / "chunks.jsonl").write_text('{"doc_uri":"a","ordinal":0,"text":"t"}\n'
                                           '{"doc_uri":"kb://a","doc_revision":"r\\u001f1","ordinal":1,"text":"t"}\n')
    result = run_cli("snapshot", str(tmp_path / "chunks.jsonl"), "--chunker", "c", "-o", str(tmp_path / "c.json"))
    assert (result.code, result.stderr) == (2, f"error: {tmp_path / 'chunks.jsonl'}:2: doc_revision: must not contain "
                                               "U+001F (the field separator), got 'r\\x1f1'\n")


@pytest.mark.parametrize("args", [["validate", "s3://bucket/judgments.jsonl"],
                                  ["suite", "show", "nightly", "--storage", "s3://bucket/root"]], ids=["read", "storage"])
def test_s3_without_its_package_names_goldkeepers_extra(args):
    """Issue 42, item 9: the way out of a missing s3fs is goldkeeper's own extra."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['s3fs'] = None\n"
                           "from goldkeeper.cli import main; main(sys.argv[1:])", *args],
                          capture_output=True, text=True, timeout=60, input="")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.endswith("(hint: pip install 'goldkeeper[s3]')\n"), done.stderr


def test_example_writes_a_local_folder_and_refuses_a_url(tmp_path):
    """It wrote s3://bucket/x into a local folder named 's3:' before."""
    result = run_cli("example", "s3://bucket/example", cwd=tmp_path)
    assert result.code == 2 and result.stderr == ("error: DIRECTORY: a local folder for the example, got the URL "
                                                  "s3://bucket/example (hint: write it here, then copy it where you like)\n")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("args", [["emit-reindex", "docs", "--chunks-url", "chunks.jsonl"],
                                  ["alert", "--webhook", "http://127.0.0.1:9/hook"],
                                  ["demo", "--storage", "{d}/store"]], ids=["emit-reindex", "alert", "demo"])
def test_an_unreachable_prefect_api_is_one_line_exit_2_and_nothing_written(tmp_path, args):
    """Issue 42, item 9: emit-reindex exited 0 with the event sent nowhere, alert was 'a goldkeeper
    bug'. (emit-reindex takes --chunks-url without --chunker: the flow uses the suite's.)"""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "goldkeeper", *[a.replace("{d}", str(tmp_path)) for a in args]],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, input="",
                          env={**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: cannot reach the Prefect API at http://127.0.0.1:9/api (ConnectError"), done.stderr
    assert done.stderr.count("\n") == 1 and not any(tmp_path.iterdir())
