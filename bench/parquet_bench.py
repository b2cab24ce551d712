"""`goldkeeper score` of a Parquet run, against the floor of reading that file with
`pyarrow.parquet.read_table`, and against scoring the same run as JSONL, side by side.

A run of Q queries x 100 chunk ids (``c1:`` and 32 hex digits, as goldkeeper's ids are), with
scores, written by pyarrow (zstd, row groups of 65,536) and as run JSONL; judgments shaped as
MS MARCO's (about 1.1 labels per query). Each is a whole process, so imports count as a user pays them: the floor is
``python -c "pyarrow.parquet.read_table(FILE)"``. goldkeeper scores at k = 10 with its default
intervals. Prints the median of --repeats runs of each, peak memory, and the ratios the issue
asks for (score of Parquet within 3x read_table; faster than score of JSONL).

    python bench/parquet_bench.py [--queries 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from validate_bench import compile_goldkeeper, measure

DEPTH = 100


def generate(root: Path, queries: int, seed: int = 0) -> dict[str, Path]:
    """Judgments JSONL, and one run as Parquet and as JSONL; cached by size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = {name: root / f"{queries}x{DEPTH}.{name}" for name in ("judgments.jsonl", "run.parquet", "run.jsonl")}
    if all(p.exists() for p in paths.values()):
        return paths
    rng = random.Random(seed)
    chunks = max(100_000, queries * 10)
    ids = [f"c1:{rng.getrandbits(128):032x}" for _ in range(chunks)]
    scores = [round(1.0 - i / DEPTH, 4) for i in range(DEPTH)]
    schema = pa.schema([("query_id", pa.string()), ("ranking", pa.list_(pa.string())),
                        ("scores", pa.list_(pa.float64()))])
    with paths["judgments.jsonl"].open("w") as labels, paths["run.jsonl"].open("w") as lines, \
            pq.ParquetWriter(paths["run.parquet"], schema, compression="zstd") as writer:
        block: dict[str, list] = {"query_id": [], "ranking": [], "scores": []}
        for q in range(queries):
            query_id = f"q{q}"
            ranking = [ids[i] for i in rng.sample(range(chunks), DEPTH)]
            # MS MARCO's shape: about 1.1 labels a query, the answer ranked in the top 30 most often
            labelled = [ranking[rng.randrange(30)] if rng.random() < 0.7 else ids[rng.randrange(chunks)]]
            if q % 10 == 0:
                labelled += [chunk for chunk in [ids[rng.randrange(chunks)]] if chunk not in labelled]
            for chunk in labelled:
                labels.write(json.dumps({"query_id": query_id, "query": f"query {q}", "doc_uri": "kb://d", "chunk_id": chunk,
                                         "relevance": rng.choice([1, 2])}, separators=(",", ":")) + "\n")
            lines.write(json.dumps({"query_id": query_id, "ranking": ranking, "scores": scores},
                                   separators=(",", ":")) + "\n")
            block["query_id"].append(query_id)
            block["ranking"].append(ranking)
            block["scores"].append(scores)
            if len(block["query_id"]) == 65_536 or q == queries - 1:
                writer.write_table(pa.table(block, schema=schema))
                block = {name: [] for name in block}
    return paths


def setup(doc: str, sizes: dict[str, int], prefix: str) -> tuple[argparse.Namespace, Path]:
    """The bench's arguments (``sizes``: name -> default, plus --repeats and --dir) and its
    folder, goldkeeper compiled as an installed user's is."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for name, default in sizes.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", help="Where the generated files are kept (default: a temporary directory).")
    args = parser.parse_args()
    compile_goldkeeper()
    root = Path(args.dir or tempfile.mkdtemp(prefix=prefix))
    root.mkdir(parents=True, exist_ok=True)
    return args, root


def alternate(commands: dict[str, list[str]], repeats: int, after=None) -> dict[str, float]:
    """Each command run ``repeats`` times, alternately (a noisy moment hits each), ``after``
    called with its name after each run; prints and returns the median seconds of each."""
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, argv in commands.items():
            found[name].append(measure(argv)[:2])
            if after is not None:
                after(name)
    medians = {}
    for name, runs in found.items():
        times = [t for t, _ in runs]
        medians[name] = statistics.median(times)
        print(f"  {name:<38} {medians[name]:8.2f} s  (range {min(times):.2f}-{max(times):.2f})  "
              f"peak {max(p for _, p in runs):,.0f} MiB")
    return medians


def main() -> None:
    args, root = setup(__doc__, {"queries": 1_000_000}, "goldkeeper-parquet-bench-")
    paths = generate(root, args.queries)
    score = [sys.executable, "-m", "goldkeeper", "score", "-j", str(paths["judgments.jsonl"]), "-k", "10", "--quiet",
             "--report", str(root / "report.json")]
    commands = {
        "pyarrow.parquet.read_table (floor)": [sys.executable, "-c", "import sys, pyarrow.parquet as pq; "
                                               "pq.read_table(sys.argv[1])", str(paths["run.parquet"])],
        "goldkeeper score, Parquet run": [*score, "-r", str(paths["run.parquet"])],
        "goldkeeper score, JSONL run": [*score, "-r", str(paths["run.jsonl"])],
    }
    reports = {}

    def keep(name: str) -> None:
        if name.startswith("goldkeeper"):
            reports[name] = json.loads((root / "report.json").read_text())["metrics"]

    sizes = {name: paths[name].stat().st_size / 2**20 for name in ("run.parquet", "run.jsonl")}
    print(f"{args.queries:,} queries x {DEPTH}, k = 10; run.parquet {sizes['run.parquet']:,.0f} MiB, "
          f"run.jsonl {sizes['run.jsonl']:,.0f} MiB; median of {args.repeats}", flush=True)
    medians = alternate(commands, args.repeats, keep)
    keys = list(reports)
    if reports[keys[0]] != reports[keys[1]]:
        raise SystemExit("the Parquet and JSONL runs scored differently: a bug, not a figure")
    floor = medians["pyarrow.parquet.read_table (floor)"]
    parquet, jsonl = medians["goldkeeper score, Parquet run"], medians["goldkeeper score, JSONL run"]
    print(f"  score of Parquet / read_table: {parquet / floor:.2f}x (target: within 3x)")
    print(f"  score of Parquet / score of JSONL: {parquet / jsonl:.2f}x (target: under 1)")
    print("  the Parquet and JSONL runs score identically")


if __name__ == "__main__":
    main()
