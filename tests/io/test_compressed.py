"""Compressed inputs everywhere goldkeeper reads (issue 28, item 1): gzip, bzip2, xz and zstd,
told by their first bytes, streamed, and giving what the plain file gives (hashes included:
they are of the content); a name that lies about the compression, or a damaged stream, is
refused with words."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import pytest
import zstandard

from tests.conftest import run_cli

CODECS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
          ".zst": lambda data: zstandard.ZstdCompressor().compress(data)}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compressed")
    assert run_cli("example", str(folder)).code == 0
    rows = [json.loads(line) for line in (folder / "run.jsonl").read_text().splitlines()]
    (folder / "run.trec").write_text("".join(f"{r['query_id']} Q0 {d} {i + 1} {10 - i} t\n"
                                             for r in rows for i, d in enumerate(r["ranking"])))
    assert run_cli("convert", "judgments.jsonl", "--to", "qrels", "-o", "judgments.qrels", cwd=folder).code == 0
    assert run_cli("convert", "judgments.jsonl", "--to", "qrels-json", "-o", "qrels.json", cwd=folder).code == 0
    assert run_cli("convert", "run.jsonl", "--to", "run-json", "-o", "results.json", cwd=folder).code == 0
    corpus = json.loads((folder / "corpus.json").read_text())
    (folder / "chunks.jsonl").write_text("".join(
        json.dumps({key: chunk[key] for key in ("doc_uri", "doc_revision", "ordinal", "text")}) + "\n"
        for chunk in corpus["chunks"]))
    assert run_cli("score", "-j", "judgments.jsonl", "-r", "run.jsonl", "--report", "report.json", cwd=folder).code in (0, 1)
    return folder


COMMANDS = {
    "validate": (["validate", "{judgments.jsonl}", "--format", "json"], ["judgments.jsonl"]),
    "convert": (["convert", "{judgments.jsonl}", "--to", "qrels"], ["judgments.jsonl"]),
    "score": (["score", "-j", "{judgments.jsonl}", "-r", "{run.jsonl}", "--format", "json", "--now",
               "2026-12-01T00:00:00Z"], ["judgments.jsonl", "run.jsonl"]),
    "score-trec": (["score", "-j", "{judgments.qrels}", "-r", "{run.trec}", "--format", "json", "--now",
                    "2026-12-01T00:00:00Z"], ["judgments.qrels", "run.trec"]),
    "drift": (["drift", "-j", "{judgments.jsonl}", "-c", "{corpus.json}", "--format", "json"],
              ["judgments.jsonl", "corpus.json"]),
    "score-nested": (["score", "-j", "{qrels.json}", "-r", "{results.json}", "--format", "json", "--now",
                      "2026-12-01T00:00:00Z"], ["qrels.json", "results.json"]),
    "score-baseline": (["score", "-j", "judgments.jsonl", "-r", "run.jsonl", "--baseline", "{report.json}",
                        "--gate", "recall@10:-0.01", "--format", "json", "--now", "2026-12-01T00:00:00Z"],
                       ["report.json"]),
    "snapshot": (["snapshot", "{chunks.jsonl}", "--chunker", "x/1", "-o", "built.json"], ["chunks.jsonl"]),
}


def _run(folder, command, names):
    args, _ = COMMANDS[command]
    for plain_name, name in names.items():
        args = [a.replace("{" + plain_name + "}", name) for a in args]
    return run_cli(*args, cwd=folder)


@pytest.mark.parametrize("suffix", list(CODECS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_compressed_input_gives_what_the_plain_one_gives(plain, command, suffix):
    _, inputs = COMMANDS[command]
    expected = _run(plain, command, {name: name for name in inputs})
    for named in (True, False):  # told by the name, or by the first bytes alone
        packed = {}
        for name in inputs:
            target = f"{name}{suffix}" if named else f"packed-{suffix[1:]}-{name}"
            (plain / target).write_bytes(CODECS[suffix]((plain / name).read_bytes()))
            packed[name] = target
        got = _run(plain, command, packed)
        assert got.code == expected.code, got.stderr
        shown = got.stdout
        for name, target in packed.items():
            shown = shown.replace(target, name)
        assert shown == expected.stdout


def test_a_name_that_lies_about_the_compression_is_refused(plain):
    (plain / "lying.jsonl.gz").write_bytes((plain / "judgments.jsonl").read_bytes())
    result = run_cli("validate", "lying.jsonl.gz", cwd=plain)
    assert (result.code, result.stderr) == (2, "error: lying.jsonl.gz:1: encoding: is named *.gz but is not "
                                               "gzip-compressed, got first bytes 7b 22 71 75 65 72\n")


@pytest.mark.parametrize("suffix", list(CODECS))
def test_a_truncated_stream_is_refused_as_such(plain, suffix):
    whole = CODECS[suffix]((plain / "judgments.jsonl").read_bytes() * 20)
    (plain / f"cut.jsonl{suffix}").write_bytes(whole[: len(whole) // 2])
    result = run_cli("validate", f"cut.jsonl{suffix}", cwd=plain)
    assert result.code == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"error: cut.jsonl{suffix}: encoding: cannot be decompressed as "), result.stderr


def test_a_compressed_input_on_stdin(plain):
    data = gzip.compress((plain / "judgments.jsonl").read_bytes())
    result = run_cli("validate", "-", "--format", "json", stdin=data)
    assert result.code == 0 and json.loads(result.stdout)["ok"] is True


def test_a_compressed_input_is_streamed_not_held(tmp_path):
    import tracemalloc

    from goldkeeper.io.files import iter_blocks

    line = b'{"query_id":"q","doc_uri":"d","relevance":1,"notes":"' + b"n" * 150 + b'"}\n'

    def peak(path):
        tracemalloc.start()
        total = sum(len(block) for block in iter_blocks(str(path)))
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return total, top

    for suffix, compress in CODECS.items():
        (tmp_path / f"small{suffix}").write_bytes(compress(line))
        peak(tmp_path / f"small{suffix}")  # the codec's modules imported before measuring
        found = []
        for copies in (60_000, 240_000):  # 12 and 48 MB of text
            path = tmp_path / f"big-{copies}.jsonl{suffix}"
            path.write_bytes(compress(line * copies))
            total, top = peak(path)
            assert total == len(line) * copies
            found.append(top)
        # memory does not grow with the file: blocks and the codec's buffers, never the whole
        assert found[1] < found[0] + (1 << 20) and found[0] < 16 << 20, (suffix, found)


def test_a_compressed_file_rewritten_in_place_stays_compressed_and_readable(tmp_path):
    from pathlib import Path

    lifecycle = Path(__file__).resolve().parents[2] / "src" / "goldkeeper" / "examples" / "lifecycle"
    (tmp_path / "judgments.jsonl.gz").write_bytes(gzip.compress((lifecycle / "judgments.jsonl").read_bytes()))
    assert run_cli("snapshot", str(lifecycle / "chunks-v2.jsonl"), "--chunker", "sentences/v2", "-o", "v2.json",
                   cwd=tmp_path).code == 0
    fixed = run_cli("drift", "-j", "judgments.jsonl.gz", "-c", "v2.json", "--fix", "--in-place", cwd=tmp_path)
    assert fixed.code == 1 and "re-anchored 5 label(s) in judgments.jsonl.gz" in fixed.stdout
    data = (tmp_path / "judgments.jsonl.gz").read_bytes()
    assert data[:2] == b"\x1f\x8b"  # still gzip, as its name says
    assert "reanchored_from" in gzip.decompress(data).decode()
    assert run_cli("validate", "judgments.jsonl.gz", cwd=tmp_path).code == 0
