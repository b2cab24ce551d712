"""Drift at scale, one process against Dask: 1,000,000 labels x 10,000,000 chunks.

The workload is bench/drift_bench.py's big one (a sharded gzip snapshot of about 4 GB of
text, 10 chunks per document, labels VALID, RE_ANCHORABLE, MERGED, SPLIT and ORPHANED in
fixed shares). Both sides classify every label and build the re-judgment queue:

- one process: ``classify_and_queue`` over the streamed snapshot (the queue's candidates
  come from the documents classify rebuilt: two reads of the snapshot);
- Dask: the ``drift_partitioned`` flow on a LocalCluster of --workers worker processes
  (prefect-dask), against a real ``prefect server`` started here on loopback.

Each side runs in its own process, timed as a whole (wall). Peak memory: the kernel's peak
RSS of the one process; for Dask, the flow's own process and each worker's peak RSS (sampled
every 0.2 s). The bench checks the two results are identical and prints the speedup, the
time of each task kind (from the Prefect API), and the shuffle volume (bytes the map step
wrote), which spec/scaling.md uses for its estimate.

    python bench/scale_bench.py [--labels 1000000] [--chunks 10000000] [--partitions 8] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from drift_bench import generate

ONE_PROCESS = """
import json, sys, time, hashlib
from goldkeeper.core.drift import classify_and_queue
from goldkeeper.core.judgments import parse_judgments
from goldkeeper.io.snapshots import open_corpus
start = time.perf_counter()
labels = parse_judgments(open(sys.argv[1], "rb").read(), sys.argv[1])
corpus = open_corpus(sys.argv[2])
result, queue = classify_and_queue(labels, corpus)
seconds = time.perf_counter() - start
digest = hashlib.sha256()
for row in [*result.findings, *queue]:
    digest.update(json.dumps(row, sort_keys=True).encode())
print(json.dumps({"seconds": seconds, "digest": digest.hexdigest(), "summary": result.summary,
                  "peak_mib": int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]) / 1024}))
"""

PARTITIONED = """
import json, sys, threading, time, hashlib
import psutil
from goldkeeper.flows.scale import drift_partitioned, task_runner
peaks = {}
done = threading.Event()
def sample():
    me = psutil.Process()
    while not done.is_set():
        for child in me.children(recursive=True):
            try:
                if any("spawn_main" in part for part in child.cmdline()):
                    peaks[child.pid] = max(peaks.get(child.pid, 0), child.memory_info().rss)
            except psutil.Error:
                pass
        time.sleep(0.2)
threading.Thread(target=sample, daemon=True).start()
start = time.perf_counter()
flow = drift_partitioned.with_options(task_runner=task_runner("local", int(sys.argv[5])))
result = flow(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), return_state=False)
seconds = time.perf_counter() - start
driver_peak = int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]) / 1024  # VmHWM: its own (ru_maxrss carries the parent's through exec); before the digest
done.set()
digest = hashlib.sha256()
for kind in ("findings", "queue"):  # streamed from the merged files, as the one process's are hashed
    for row in result.rows(kind):
        digest.update(json.dumps(row, sort_keys=True).encode())
print(json.dumps({"seconds": seconds, "digest": digest.hexdigest(), "summary": result.summary,
                  "driver_peak_mib": driver_peak,
                  "worker_peaks_mib": sorted(v / 2**20 for v in peaks.values())}))
"""

TASK_TIMES = """
import json, collections
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
with get_client(sync_client=True) as client:
    runs = client.read_task_runs(limit=200)
times = collections.defaultdict(list)
for run in runs:
    times[run.name.rsplit("-", 1)[0]].append(run.total_run_time.total_seconds())
print(json.dumps(times))
"""


def _server() -> tuple[subprocess.Popen, dict[str, str]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PREFECT_HOME": tempfile.mkdtemp(prefix="goldkeeper-bench-prefect-"),
           "PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "DO_NOT_TRACK": "1", "PREFECT_LOGGING_LEVEL": "WARNING"}
    server = subprocess.Popen([str(Path(sys.executable).parent / "prefect"), "server", "start", "--host",
                               "127.0.0.1", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while True:
        try:
            if urllib.request.urlopen(f"{env['PREFECT_API_URL']}/health", timeout=2).status == 200:
                return server, env
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise SystemExit("prefect server did not start") from None
            time.sleep(0.5)


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          env=env, check=False)
    if done.returncode:
        raise SystemExit(f"failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _size(path: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in path.rglob(pattern))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--chunks", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-single", action="store_true", help="skip the one-process run")
    args = parser.parse_args()
    cache = Path(os.environ.get("GOLDKEEPER_BENCH_CACHE", Path(tempfile.gettempdir()) / "goldkeeper-bench"))
    cache.mkdir(parents=True, exist_ok=True)
    paths = generate(cache, args.labels, args.chunks, 10, sharded=True)
    text = _size(paths["corpus"], "*.gz")
    print(f"{args.labels:,} labels x {args.chunks:,} chunks; snapshot {text / 2**30:.2f} GiB gzip", flush=True)

    single = None
    if not args.skip_single:
        single = _python(ONE_PROCESS, str(paths["judgments"]), str(paths["corpus"]))
        print(f"  one process                {single['seconds']:8.1f} s  peak {single['peak_mib']:7.0f} MiB", flush=True)

    server, env = _server()
    work = Path(tempfile.mkdtemp(prefix="goldkeeper-scale-", dir=cache))
    try:
        dask = _python(PARTITIONED, str(paths["judgments"]), str(paths["corpus"]), str(work), str(args.partitions),
                       str(args.workers), env=env)
        workers = ", ".join(f"{peak:.0f}" for peak in dask["worker_peaks_mib"])
        print(f"  Dask, {args.workers} workers, {args.partitions} partitions {dask['seconds']:8.1f} s  "
              f"flow process peak {dask['driver_peak_mib']:.0f} MiB; worker peaks (MiB): {workers}", flush=True)
        if single is not None:
            same = single["digest"] == dask["digest"]
            print(f"  speedup {single['seconds'] / dask['seconds']:.2f}x; identical findings and queue: {same}")
            if not same:
                raise SystemExit("the partitioned result differs from the one-process result")
        pieces = _size(work / "corpus", "*.jsonl")
        keys = _size(work / "corpus", "*.keys.npz")
        labels = _size(work / "labels", "*.jsonl")
        print(f"  shuffle: {pieces / 2**30:.2f} GiB of chunk pieces, {keys / 2**20:.0f} MiB of key files, "
              f"{labels / 2**20:.0f} MiB of labels")
        times = _python(TASK_TIMES, env=env)
        for name, values in sorted(times.items()):
            print(f"  task {name:<18} x{len(values):<3} total {sum(values):7.1f} s  longest {max(values):6.1f} s")
        print(f"  summary {dask['summary']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
