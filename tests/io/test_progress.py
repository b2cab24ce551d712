"""Progress on every long command (issue 28, item 6): a bar on stderr under a terminal, for
each file read (bytes of its size) and for counted steps (chunks, queries), and nothing under
--quiet, --format json, or when stderr is not a terminal. Each command runs for real under a
pseudo-terminal (``pty``), as a person's shell runs it."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

import pytest

from tests.conftest import run_cli

_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def under_a_terminal(*args: str, cwd) -> tuple[int, str]:
    """Run ``python -m goldkeeper ARGS`` with stdout and stderr on a pseudo-terminal: the
    exit code and what the terminal showed, escape sequences removed."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its stdio is the terminal
        os.chdir(cwd)
        os.execv(sys.executable, [sys.executable, "-m", "goldkeeper", *args])
    shown = b""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except OSError:  # the terminal closed with the child
            break
        if not data:
            break
        shown += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), _ESCAPES.sub(b"", shown).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    folder = tmp_path_factory.mktemp("progress")
    assert run_cli("example", str(folder)).code == 0
    corpus = json.loads((folder / "corpus.json").read_text())
    (folder / "chunks.jsonl").write_text("".join(
        json.dumps({key: chunk[key] for key in ("doc_uri", "doc_revision", "ordinal", "text")}) + "\n"
        for chunk in corpus["chunks"]))
    (folder / "answers.jsonl").write_text("")
    assert run_cli("snapshot", str(folder / "chunks.jsonl"), "--chunker", corpus["chunker_fingerprint"],
                   "--sharded", "--shard-chunks", "2", "-o", str(folder / "sharded")).code == 0
    return folder


COMMANDS = {
    "validate": (["validate", "judgments.jsonl"], ["reading judgments.jsonl"]),
    "score": (["score", "-j", "judgments.jsonl", "-r", "run.jsonl", "-k", "1,5"],
              ["reading judgments.jsonl", "reading run.jsonl"]),
    "convert": (["convert", "judgments.jsonl", "--to", "qrels"], ["reading judgments.jsonl"]),
    "snapshot": (["snapshot", "chunks.jsonl", "--chunker", "x/1", "-o", "built.json"], ["reading chunks.jsonl"]),
    "drift": (["drift", "-j", "judgments.jsonl", "-c", "corpus.json", "--queue", "queue.jsonl", "--max-invalid", "1"],
              ["reading corpus.json", "reading judgments.jsonl", "chunks classified"]),
    "drift-sharded": (["drift", "-j", "judgments.jsonl", "-c", "sharded", "--max-invalid", "1"],
                      ["reading manifest.json", "reading chunks-00000.jsonl.gz", "chunks classified"]),
    "queue apply": (["queue", "apply", "-j", "judgments.jsonl", "--queue", "queue.jsonl", "--answers", "answers.jsonl",
                     "-c", "corpus.json", "-o", "applied.jsonl"], ["reading judgments.jsonl", "reading answers.jsonl"]),
    "eval": (["eval", "-j", "judgments.jsonl", "--backend", "run-file", "--run-file", "run.jsonl", "-o", "evaluated"],
             ["reading judgments.jsonl", "retrieving run.jsonl"]),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_long_command_shows_progress_on_a_terminal(example, name):
    if name == "queue apply" and not (example / "queue.jsonl").exists():
        assert run_cli("drift", "-j", str(example / "judgments.jsonl"), "-c", str(example / "corpus.json"),
                       "--queue", str(example / "queue.jsonl"), "--max-invalid", "1").code == 0
    args, bars = COMMANDS[name]
    code, shown = under_a_terminal(*args, cwd=example)
    assert code in (0, 1), shown
    for bar in bars:
        assert bar in shown, (bar, shown)
    if name != "eval":  # a file read to its end shows its size
        assert re.search(r"reading judgments\.jsonl .*100% .*[0-9.]+/[0-9.]+ kB", shown) or name.startswith(
            ("snapshot", "drift-sharded")), shown


def test_the_chunk_count_of_a_sharded_snapshot_is_known_before_reading(example):
    manifest = json.loads((example / "sharded" / "manifest.json").read_text())
    total = manifest["counts"]["chunks"]
    _, shown = under_a_terminal("drift", "-j", "judgments.jsonl", "-c", "sharded", "--max-invalid", "1", cwd=example)
    assert re.search(rf"chunks classified .*{total}/{total}", shown), shown


@pytest.mark.parametrize("name", ["validate", "score", "drift", "eval"])
def test_no_bar_under_format_json_or_quiet(example, name):
    args, _ = COMMANDS[name]
    for extra in (["--format", "json"], ["--quiet"]):
        code, shown = under_a_terminal(*args, *extra, cwd=example)
        assert code in (0, 1), shown
        assert not re.search("reading |chunks classified|retrieving ", shown), (extra, shown)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_bar_when_stderr_is_not_a_terminal(example, name):
    args, _ = COMMANDS[name]
    done = subprocess.run([sys.executable, "-m", "goldkeeper", *args], cwd=example, capture_output=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    assert not re.search(b"reading |chunks classified|retrieving |\x1b\\[", done.stderr), done.stderr


def test_s3_at_another_endpoint_takes_aws_endpoint_url(s3, example):
    """The README's way to reach MinIO, Ceph or moto: AWS_ENDPOINT_URL alone (no fsspec
    configuration), as boto reads it."""
    import fsspec

    endpoint = os.environ["FSSPEC_S3_ENDPOINT_URL"]
    fsspec.filesystem("s3").put(str(example / "judgments.jsonl"), f"{s3}/endpoint/judgments.jsonl")
    env = {key: value for key, value in os.environ.items() if not key.startswith("FSSPEC_")}
    env["AWS_ENDPOINT_URL"] = endpoint
    done = subprocess.run([sys.executable, "-m", "goldkeeper", "validate", f"{s3}/endpoint/judgments.jsonl",
                           "--format", "json"], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    env.pop("AWS_ENDPOINT_URL")
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:9"  # nothing listens: proves the variable is what is used
    refused = subprocess.run([sys.executable, "-m", "goldkeeper", "validate", f"{s3}/endpoint/judgments.jsonl"],
                             capture_output=True, env=env, timeout=120)
    assert refused.returncode == 2 and b"cannot be read" in refused.stderr, refused.stderr
