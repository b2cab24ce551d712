"""Issue 26, class 5: bad input is exit 2 with one line saying what is wrong, never an
internal error (exit 3). Each case runs the real command on real files; the expected line is
exact (``{d}`` is the case's folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from goldkeeper.io.snapshots import FORMAT

DEEP = 1_000_000

CASES = [
    ("judgments-nested-1e6", ["validate", "deep.jsonl"], {},
     "error: deep.jsonl:1: json: arrays or objects nested more than 200 levels deep, which goldkeeper does not read"),
    # 300 levels: msgspec would take it; the fast path leaves the block to the line reader
    ("judgments-nested-300", ["score", "-j", "deep300.jsonl", "-r", "run.jsonl"], {},
     "error: deep300.jsonl:1: json: arrays or objects nested more than 200 levels deep, which goldkeeper does not read"),
    ("run-nested-1e6", ["score", "-j", "judgments.jsonl", "-r", "deeprun.jsonl"], {},
     "error: deeprun.jsonl:1: json: arrays or objects nested more than 200 levels deep, which goldkeeper does not read"),
    ("run-nested-300", ["score", "-j", "judgments.jsonl", "-r", "deeprun300.jsonl"], {},
     "error: deeprun300.jsonl:1: json: arrays or objects nested more than 200 levels deep, which goldkeeper does not read"),
    ("run-is-a-folder", ["score", "-j", "judgments.jsonl", "-r", "afolder"], {},
     "error: afolder: is a directory, not a file"),
    ("run-under-a-file", ["score", "-j", "judgments.jsonl", "-r", "afile/run.jsonl"], {},
     "error: afile/run.jsonl: cannot be read: not a directory"),
    ("seed-negative", ["compare", "-j", "judgments.jsonl", "-r", "run.jsonl", "-r", "run2.jsonl", "--seed", "-1"], {},
     "error: Invalid value for '--seed': -1 is not in the range 0<=x<=4294967295."),
    ("k-superscript-two", ["score", "-j", "judgments.jsonl", "-r", "run.jsonl", "-k", "\u00b2"], {},
     "error: -k: every cutoff must be a whole number from 1 to 1,000,000, got '\u00b2'"),
    ("source-date-epoch-past-9999", ["score", "-j", "judgments.jsonl", "-r", "run.jsonl"],
     {"SOURCE_DATE_EPOCH": "99999999999999"},
     "error: SOURCE_DATE_EPOCH: must be whole seconds since 1970, up to the year 9999, got '99999999999999'"),
    ("url-bad-port", ["eval", "-j", "judgments.jsonl", "--url-template", "http://localhost:99999/q?{query}"], {},
     "error: --url-template: port out of range 0-65535, got http://localhost:99999/q?{query}"),
    ("command-unclosed-quote", ["eval", "-j", "judgments.jsonl", "--backend", "command", "--command", 'echo "{query}'],
     {}, 'error: --command: no closing quotation, in echo "{query}'),
    ("python-syntax-error", ["eval", "-j", "judgments.jsonl", "--backend", "python", "--python", "badmod:retrieve"],
     {"PYTHONPATH": "{d}"},
     "error: --python badmod:retrieve: importing badmod raised SyntaxError: '(' was never closed (badmod.py, line 1)"),
    ("python-raises-at-import", ["eval", "-j", "judgments.jsonl", "--backend", "python", "--python", "boommod:retrieve"],
     {"PYTHONPATH": "{d}"}, "error: --python boommod:retrieve: importing boommod raised RuntimeError: boom"),
    ("out-is-a-file", ["eval", "-j", "judgments.jsonl", "--backend", "command", "--command", "echo -- {query}", "--out", "afile"],
     {}, "error: --out: names a folder for the runs, errors and reports, and afile is a file"),
    ("cache-is-a-folder", ["eval", "-j", "judgments.jsonl", "--backend", "command", "--command", "echo -- {query}",
                           "--cache", "afolder"], {}, "error: --cache: names a file (JSONL), and afolder is a folder"),
    ("nul-in-a-shard-path", ["drift", "-j", "judgments.jsonl", "-c", "sharded/manifest.json"], {},
     'error: sharded/manifest.json: shards[0].path: a file name beside the manifest (no /, \\ or NUL), got "a\\x00b"'),
    ("id-text-not-utf8", ["id", "--text", "\udcff\udcfe"], {},
     "error: --text: its value is not valid UTF-8 (byte 0xFF at character 1); goldkeeper reads UTF-8 arguments"),
    ("option-value-attached-not-utf8", ["eval", "judgments.jsonl", "--url-template=http://x/\udcff"], {},
     "error: --url-template: its value is not valid UTF-8 (byte 0xFF at character 10); goldkeeper reads UTF-8 "
     "arguments"),
    ("positional-not-utf8", ["validate", "j\udcff.jsonl"], {},
     "error: argument 2 is not valid UTF-8 (byte 0xFF at character 2); goldkeeper reads UTF-8 arguments"),
    ("audit-one-query", ["audit", "-n", "1", "-v", "1.0"], {},
     "error: Invalid value for '-n': must be at least 2 queries (an interval from one query says nothing), got 1"),
    ("eval-threshold-zero", ["eval", "judgments.jsonl", "--threshold", "0"], {},
     "error: Invalid value for '--threshold': must be a grade from 1 to 1023, got 0"),
    ("agreement-threshold-zero", ["agreement", "judgments.jsonl", "--threshold", "0"], {},
     "error: Invalid value for '--threshold': must be a grade from 1 to 1023, got 0"),
    ("threshold-overflows", ["score", "-j", "judgments.jsonl", "-r", "judgments.jsonl", "--threshold", "9" * 30], {},
     f"error: Invalid value for '--threshold': must be a grade from 1 to 1023, got {'9' * 30}"),
    ("example-into-a-file", ["example", "afile"], {}, "error: afile: exists and is not a directory"),
    ("demo-unknown-scheme", ["demo", "--storage", "zzz://x"], {},
     "error: zzz://x/judgments/help-center/generations: no storage is known for the scheme 'zzz' (Protocol not known: "
     "zzz); file paths, memory://, s3://, gs:// and az:// are"),
    ("power-sd-inf", ["power", "-j", "judgments.jsonl", "--sd", "inf"], {},
     "error: Invalid value for '--sd': must be a finite number above 0, got inf"),
    ("power-target-nan", ["power", "-j", "judgments.jsonl", "--target", "nan"], {},
     "error: Invalid value for '--target': must be a finite number above 0, got nan"),
    ("audit-n-1e12", ["audit", "-n", "1e12", "-v", "0.5"], {},
     "error: Invalid value for '-n': '1e12' is not a valid int."),
    ("qrels-grade-over-1023", ["score", "-j", "big.qrels", "-r", "run.jsonl"], {},
     'error: big.qrels:1: grade: a grade is at most 1023 (1024 and above is a unit mistake, not a grade), got "2000"'),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad-input")
    subprocess.run([sys.executable, "-m", "goldkeeper", "example", str(d)], check=True, capture_output=True)
    rows = [json.loads(line) for line in (d / "run.jsonl").read_text().splitlines()]
    (d / "run2.jsonl").write_text("".join(json.dumps({**r, "ranking": r["ranking"][::-1]}) + "\n" for r in rows))
    (d / "deep.jsonl").write_text('{"query_id":"q","doc_uri":"d","relevance":1,"x":' + "[" * DEEP + "]" * DEEP + "}\n")
    (d / "deep300.jsonl").write_text('{"query_id":"q01","doc_uri":"d","relevance":1,"x":' + "[" * 300 + "]" * 300 + "}\n")
    (d / "deeprun.jsonl").write_text('{"query_id":"q01","ranking":["a"],"x":' + "[" * DEEP + "]" * DEEP + "}\n")
    (d / "deeprun300.jsonl").write_text('{"query_id":"q01","ranking":["a"],"x":' + "[" * 300 + "]" * 300 + "}\n")
    (d / "big.qrels").write_text("q01 0 doc1 2000\n")
    (d / "badmod.py").write_text("def retrieve(q:\n")
    (d / "boommod.py").write_text("raise RuntimeError('boom')\n")
    (d / "afolder").mkdir()
    (d / "afile").write_text("x")
    (d / "sharded").mkdir()
    (d / "sharded" / "manifest.json").write_text(json.dumps(
        {"format": FORMAT, "shards": [{"path": "a\u0000b", "sha256": "0" * 64, "chunks": 1}]}))
    return d


@pytest.mark.parametrize(("argv", "env", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(folder, argv, env, expected):
    environ = {**os.environ, **{k: v.replace("{d}", str(folder)) for k, v in env.items()}}
    environ.pop("GOLDKEEPER_DEBUG", None)
    args = [a.encode("utf-8", "surrogateescape") for a in argv]  # undecodable bytes as the shell passes them
    done = subprocess.run([sys.executable.encode(), b"-m", b"goldkeeper", *args], capture_output=True, env=environ,
                          cwd=folder, timeout=120)
    stderr = done.stderr.decode("utf-8").replace(str(folder), "{d}")
    assert (done.returncode, stderr) == (2, expected + "\n")


def test_an_absurd_cutoff_is_refused_and_a_deep_one_allocates_by_the_input(folder):
    from goldkeeper.core.scoring import score

    refused = subprocess.run([sys.executable, "-m", "goldkeeper", "score", "-j", "judgments.jsonl", "-r", "run.jsonl",
                              "-k", "1000000000"], capture_output=True, cwd=folder, timeout=60)
    assert refused.returncode == 2
    assert refused.stderr.decode() == "error: -k: every cutoff must be a whole number from 1 to 1,000,000, got '1000000000'\n"
    gate = subprocess.run([sys.executable, "-m", "goldkeeper", "score", "-j", "judgments.jsonl", "-r", "run.jsonl",
                           "--gate", "recall@1000000000:0.5"], capture_output=True, cwd=folder, timeout=60)
    assert gate.returncode == 2 and "the cutoff must be from 1 to 1,000,000, got 1000000000" in gate.stderr.decode()
    # the deepest cutoff allowed costs what the inputs hold, not a million-long table:
    import tracemalloc

    labels = [{"query_id": "q", "doc_uri": "d1", "relevance": 1}]
    score(labels, [{"query_id": "q", "ranking": ["d0", "d1"]}], k=[2])  # imports and caches, outside the trace
    tracemalloc.start()
    deep = score(labels, [{"query_id": "q", "ranking": ["d0", "d1"]}], k=[1_000_000, 2])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1_000_000  # a table of a million discounts alone is 8 MB
    value = {name: deep.metrics[name]["value"] for name in ("precision@1000000", "precision@2", "ndcg@1000000", "ndcg@2")}
    assert value["precision@1000000"] == 1 / 1_000_000 and value["precision@2"] == 0.5
    assert value["ndcg@1000000"] == value["ndcg@2"]
