"""Drift at scale: `goldkeeper drift` side by side with `retrieval-eval drift` (0.1.1).

Workloads from a fixed seed: labels with chunk_text against a live corpus, spread over
documents of 10, 1,000 or all chunks; each label is VALID, RE_ANCHORABLE, MERGED (part of a
live chunk), SPLIT (across two neighbours) or ORPHANED (edited) in fixed shares. Whole
processes are timed (wall, median of --repeats) with the peak PSS of the process tree; the
ratio to the reference is printed, and for goldkeeper the growth exponent of time against
input size over three sizes (about 1 is linear). `--big` adds 1,000,000 labels x 10,000,000
chunks from a sharded gzip snapshot (about 4 GB of text; goldkeeper only: the reference needs
the whole corpus in one JSON document and quadratic scans). `--fix-memory` runs `drift --fix
--out` on 1,000,000 labels x 1,000,000 chunks from corpus.json and from a sharded snapshot, and
prints each peak against the labels file (issue 26's goal: at most 3x).

    python bench/drift_bench.py [--repeats 3] [--reference-timeout 600] [--big] [--fix-memory]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from validate_bench import compile_goldkeeper, measure, timed

import goldkeeper
from goldkeeper.io.snapshots import write_sharded_snapshot

SHARES = (("VALID", 0.4), ("RE_ANCHORABLE", 0.2), ("MERGED", 0.15), ("SPLIT", 0.15), ("ORPHANED", 0.1))


def _sentences(rng: random.Random, count: int, start: int) -> list[str]:
    """``count`` distinct sentences of about 400 characters, made fast from a fixed pool."""
    pool = _sentences.pool  # type: ignore[attr-defined]
    return [f"{rng.choice(pool)} {rng.choice(pool)} {rng.choice(pool)} item {start + i}." for i in range(count)]


def _make_pool() -> list[str]:
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10))) for _ in range(20000)]
    return [" ".join(rng.choice(words) for _ in range(20)).capitalize() for _ in range(20000)]


_sentences.pool = _make_pool()  # type: ignore[attr-defined]


def generate(root: Path, labels: int, chunks: int, per_doc: int, sharded: bool = False, seed: int = 0,
             moved: int = 0) -> dict[str, Path]:
    """Judgments and a live corpus (corpus.json, or a sharded snapshot) for one workload; with
    ``moved`` (a percentage), that share of the documents is renamed in the live corpus (a
    page moved between spaces: same text, new doc_uri, so new chunk ids)."""
    name = f"drift-{labels}x{chunks}-{per_doc}{'-sharded' if sharded else ''}{f'-moved{moved}' if moved else ''}"
    directory = root / name
    paths = {"judgments": directory / "judgments.jsonl",
             "corpus": directory / ("snapshot" if sharded else "corpus.json")}
    if (directory / "done").exists():
        return paths
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    documents = max(1, chunks // per_doc)
    per_doc = chunks // documents

    def rows():
        for d in range(documents):
            for ordinal, text in enumerate(_sentences(rng, per_doc, d * per_doc)):
                yield {"doc_uri": f"doc://{d}", "doc_revision": "r2", "ordinal": ordinal, "text": text}

    live = []  # (doc, ordinal, text, id) of the chunks labels will point at, chosen as they stream by
    pick = set(rng.sample(range(documents * per_doc), min(labels, documents * per_doc - documents)))

    def stream():
        position = 0
        previous = None
        for row in rows():
            if previous is not None and previous["doc_uri"] == row["doc_uri"] and position - 1 in pick:
                live.append((previous, row))
            previous = row
            position += 1
            d = int(row["doc_uri"].rsplit("/", 1)[1])
            yield {**row, "doc_uri": f"doc://moved/{d}"} if moved and d * moved % 100 < moved else row

    if sharded:
        write_sharded_snapshot(str(paths["corpus"]), stream(), "bench/new", shard_chunks=250_000)
    else:
        from goldkeeper.core.drift import build_snapshot

        built = build_snapshot(stream(), "bench/new")
        paths["corpus"].write_text(json.dumps(built, ensure_ascii=False))
    rng.shuffle(live)
    kinds = [k for k, share in SHARES for _ in range(round(share * 1000))]
    with open(paths["judgments"], "w") as out:
        for i, (row, following) in enumerate(live[:labels]):
            kind = kinds[i % len(kinds)]
            text = row["text"]
            chunk_id = goldkeeper.chunk_id(row["doc_uri"], "r1", row["ordinal"], text, "bench/old")
            if kind == "VALID":
                chunk_id = goldkeeper.chunk_id(row["doc_uri"], "r2", row["ordinal"], text, "bench/new")
            elif kind == "MERGED":
                text = text[: len(text) // 2].rstrip()
            elif kind == "SPLIT":
                text = text[len(text) // 2:].lstrip() + " " + following["text"][: len(following["text"]) // 2].rstrip()
            elif kind == "ORPHANED":
                text = text.replace(" ", " edited ", 1)
            label = {"query_id": f"q{i}", "doc_uri": row["doc_uri"], "chunk_id": chunk_id, "chunk_text": text,
                     "relevance": 1 + i % 3}
            out.write(json.dumps(label, ensure_ascii=False) + "\n")
    (directory / "done").write_text("")
    return paths


def run_timed(argv: list[str], timeout: float, sample: bool = True) -> tuple[float, float] | None:
    """measure() with a wall-clock limit; None when the limit passed (the process is killed)."""
    done: list[tuple[float, float, int]] = []
    import threading

    worker = threading.Thread(target=lambda: done.append(measure(argv, sample)), daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        subprocess.run(["pkill", "-f", "--", " ".join(argv[1:4])], check=False)
        worker.join(30)
        return None
    return done[0][0], done[0][1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reference-timeout", type=float, default=600)
    parser.add_argument("--big", action="store_true", help="also 1M labels x 10M chunks, sharded (goldkeeper only)")
    parser.add_argument("--fix-memory", action="store_true", help="only drift --fix's peak memory at 1M x 1M")
    parser.add_argument("--moves", action="store_true",
                        help="only 20k labels x 200k chunks, 2,000 per document: none moved, and 10%% of documents moved")
    parser.add_argument("--workloads", default="100000x200000/10,100000x200000/1000,100000x200000/200000,"
                                                 "1000x200000/200000")
    args = parser.parse_args()
    compile_goldkeeper()
    cache = Path(os.environ.get("GOLDKEEPER_BENCH_CACHE", Path(tempfile.gettempdir()) / "goldkeeper-bench"))
    cache.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    if args.fix_memory:
        fix_memory(cache, bindir)
        return
    if args.moves:
        moves(cache, bindir, args.repeats, args.reference_timeout)
        return
    for workload in args.workloads.split(","):
        size, per_doc = workload.split("/")
        labels, chunks = (int(x) for x in size.split("x"))
        paths = generate(cache, labels, chunks, int(per_doc))
        print(f"\n{labels:,} labels x {chunks:,} chunks, {int(per_doc):,} chunks per document", flush=True)
        ours = [str(bindir / "goldkeeper"), "drift", "-j", str(paths["judgments"]), "-c", str(paths["corpus"]),
                "--format", "json"]
        theirs = [str(bindir / "retrieval-eval"), "drift", "--judgments", str(paths["judgments"]), "--corpus",
                  str(paths["corpus"]), "--json"]
        times, peak, _code = timed(ours, args.repeats)
        mine = statistics.median(times)
        print(f"  goldkeeper            {mine:8.2f} s  {peak:7.0f} MiB", flush=True)
        reference = run_timed(theirs, args.reference_timeout, sample=False)
        if reference is not None:  # its memory from a second, sampled run, when that is quick
            reference = (reference[0], measure(theirs)[1] if reference[0] < 60 else float("nan"))
        if reference is None:
            print(f"  retrieval-eval 0.1.1  not finished in {args.reference_timeout:.0f} s "
                  f"(> {args.reference_timeout / mine:.0f}x)", flush=True)
        else:
            print(f"  retrieval-eval 0.1.1  {reference[0]:8.2f} s  {reference[1]:7.0f} MiB  "
                  f"goldkeeper is {reference[0] / mine:.1f}x faster, {peak / reference[1]:.2f} of its memory", flush=True)

    print("\ngrowth of goldkeeper's time with input size (10 chunks per document, labels = chunks / 2)")
    points = []
    for labels in (50_000, 100_000, 200_000):
        paths = generate(cache, labels, 2 * labels, 10)
        argv = [str(bindir / "goldkeeper"), "drift", "-j", str(paths["judgments"]), "-c", str(paths["corpus"]),
                "--format", "json"]
        elapsed = statistics.median(measure(argv, sample=False)[0] for _ in range(args.repeats))
        points.append((labels * 3, elapsed))
        print(f"  {labels:,} labels x {2 * labels:,} chunks  {elapsed:6.2f} s", flush=True)
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print(f"  growth exponent {slope:.2f} (1 = linear, 2 = quadratic)")

    if args.big:
        started = time.perf_counter()
        paths = generate(cache, 1_000_000, 10_000_000, 10, sharded=True)
        size = sum(p.stat().st_size for p in paths["corpus"].iterdir())
        print(f"\n1,000,000 labels x 10,000,000 chunks, sharded gzip snapshot of {size / 2**30:.2f} GiB "
              f"(generated in {time.perf_counter() - started:.0f} s)", flush=True)
        elapsed, memory, _code = measure([str(bindir / "goldkeeper"), "drift", "-j", str(paths["judgments"]), "-c",
                                          str(paths["corpus"]), "--format", "json"])
        print(f"  goldkeeper            {elapsed:8.2f} s  {memory:7.0f} MiB  (targets: 900 s, 6144 MiB)")


def moves(cache: Path, bindir: Path, repeats: int, reference_timeout: float) -> None:
    """Issue 29's figures: at 2,000 chunks per document goldkeeper at least 10x faster than the
    reference, and a corpus where 10% of the documents moved at most 1.5x the time of one
    where none did. Both tools run on both corpora; a reference that does not finish fails."""
    mine = {}
    for moved in (0, 10):
        paths = generate(cache, 20_000, 200_000, 2000, moved=moved)
        ours = [str(bindir / "goldkeeper"), "drift", "-j", str(paths["judgments"]), "-c", str(paths["corpus"]),
                "--format", "json"]
        theirs = [str(bindir / "retrieval-eval"), "drift", "--judgments", str(paths["judgments"]), "--corpus",
                  str(paths["corpus"]), "--json"]
        report = json.loads(subprocess.run(ours, capture_output=True, check=False).stdout)
        across = sum(1 for f in report["findings"] if f.get("cross_document"))
        said = sum(1 for entry in report["documents"] if "moved_to" in entry)
        times, peak, _code = timed(ours, repeats)
        mine[moved] = statistics.median(times)
        print(f"\n20,000 labels x 200,000 chunks, 2,000 per document, {moved}% of documents moved: "
              f"{across:,} findings across documents, {said} moves reported", flush=True)
        print(f"  goldkeeper            {mine[moved]:8.2f} s  {peak:7.0f} MiB", flush=True)
        reference = run_timed(theirs, reference_timeout, sample=False)
        if reference is None:
            raise SystemExit(f"retrieval-eval did not finish in {reference_timeout:.0f} s: no ratio to report")
        print(f"  retrieval-eval 0.1.1  {reference[0]:8.2f} s  goldkeeper is {reference[0] / mine[moved]:.1f}x faster",
              flush=True)
    print(f"\n10% of documents moved costs {mine[10] / mine[0]:.2f}x none moved (goal: at most 1.5x)")


def fix_memory(cache: Path, bindir: Path) -> None:
    """drift --fix's peak memory at 1M labels x 1M chunks, against the labels file's size."""
    print("drift --fix --out, 1,000,000 labels x 1,000,000 chunks, 10 chunks per document", flush=True)
    for sharded in (False, True):
        paths = generate(cache, 1_000_000, 1_000_000, 10, sharded=sharded)
        labels = paths["judgments"].stat().st_size / 2**20
        out = paths["judgments"].with_name("fixed.jsonl")
        elapsed, peak, _code = measure([str(bindir / "goldkeeper"), "drift", "-j", str(paths["judgments"]), "-c",
                                        str(paths["corpus"]), "--fix", "--out", str(out), "--max-invalid", "1",
                                        "--quiet"])
        print(f"  {'sharded snapshot' if sharded else 'corpus.json     '}  {elapsed:6.1f} s  {peak:6.0f} MiB  "
              f"{peak / labels:.2f}x the {labels:.0f} MiB labels file (goal: at most 3x)", flush=True)


if __name__ == "__main__":
    main()
