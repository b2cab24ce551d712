"""`goldkeeper validate` against the reference `retrieval-eval validate`, side by side.

Generates a 1,000,000-label judgments file (bench/make_judgments.py, seeded) outside the
repository, then runs both commands on it alternately, several times, and prints the median
wall time and the peak resident memory of each, and their ratios. The foundation issue asks
for at most 1/3 of the reference's time and 1/2 of its peak memory.

    python bench/validate_bench.py [--labels 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_judgments import make_lines


def compile_goldkeeper() -> None:
    """Compile goldkeeper's modules to bytecode, as pip does for a wheel at install.

    The peers were installed from wheels, so their modules start from bytecode. An editable
    install compiles each module on first import and keeps the result, unless
    PYTHONDONTWRITEBYTECODE is set, as it is on these machines: there every command would
    recompile goldkeeper's modules at each start (30-85 ms of a 0.5 s score), a cost no
    installed user pays. compileall writes the caches whatever that variable says."""
    import compileall

    import goldkeeper

    compileall.compile_dir(str(Path(goldkeeper.__file__).parent), quiet=1)


def _tree_rss(pid: int, root: bool = True) -> int:
    """Proportional resident bytes (PSS) of a process and all its descendants, from /proc
    (``root`` False: of its descendants only).

    PSS splits pages shared after a fork between the processes sharing them, so the sum is
    the memory the tree really holds; summing RSS would count those pages twice.
    """
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            if root or current != pid:
                with open(f"/proc/{current}/smaps_rollup") as fh:
                    for line in fh:
                        if line.startswith("Pss:"):
                            total += int(line.split()[1]) * 1024
                            break
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as fh:
                    stack.extend(int(c) for c in fh.read().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def own_peak_mib() -> float:
    """This process's own peak resident memory (VmHWM). Not getrusage's ru_maxrss: Linux
    carries a process's peak through exec, and a child's resident memory just after the fork
    is its parent's, so a command started by a bench holding 1.5 GiB reports at least 1.5 GiB
    there."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


#: Starts a command, waits for it and writes its wall seconds, its own peak resident memory
#: (the kernel's, from wait4) and its exit code to the file named first. A command started
#: from this small process carries only this process's few MiB into its peak, not the
#: bench's (``own_peak_mib``).
_LAUNCHER = """
import json, os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
seconds = time.perf_counter() - start
with open(sys.argv[1], "w") as out:
    json.dump({"seconds": seconds, "maxrss_kib": usage.ru_maxrss, "code": os.waitstatus_to_exitcode(status),
               "stderr": err.decode("utf-8", "replace")[-4000:]}, out)
"""


def measure(argv: list[str], sample: bool = True, ok: tuple[int, ...] = (0, 1)) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB and exit code of one run of argv.

    The peak is the larger of the kernel's own peak for the command's main process (ru_maxrss,
    the command started from a small launcher so that it is the command's own) and the PSS
    summed over its whole process tree, sampled every 20 ms, so a tool that forks is charged
    for all of its processes at once. Sampling reads every process's page tables and takes
    CPU from the command (on two cores, 14% of a two-process goldkeeper score, 7% of a
    one-process peer): ``sample=False`` waits without it, for timing (``timed``); the peak is
    then the main process's alone. The seconds are the launcher's, from the command's start to
    its end. An exit code outside ``ok`` stops the bench: a peer that failed to run must not
    be reported as fast (peers exit 0; goldkeeper 1 on a FAIL).
    """
    with tempfile.NamedTemporaryFile("r", suffix=".json") as result:
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, result.name, *argv], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        sampled = 0
        while sample and proc.poll() is None:
            sampled = max(sampled, _tree_rss(proc.pid, root=False))
            time.sleep(0.02)
        launcher_err = proc.communicate()[1].decode("utf-8", "replace")
        try:
            done = json.loads(Path(result.name).read_text() or "null")
        except ValueError:
            done = None
    if not done:
        raise SystemExit(f"{' '.join(argv[:3])[:120]} could not be started: {launcher_err.strip()[-2000:]}")
    if done["code"] not in ok:
        raise SystemExit(f"{' '.join(argv[:3])[:120]} failed with exit {done['code']}: {done['stderr'].strip()[-2000:]}")
    return done["seconds"], max(done["maxrss_kib"] * 1024, sampled) / 2**20, done["code"]


def timed(argv: list[str], repeats: int) -> tuple[list[float], float, int]:
    """The wall times of ``repeats`` runs of argv measured without sampling, the peak memory
    of one more run that samples it, and the exit code."""
    times = [measure(argv, sample=False)[0] for _ in range(repeats)]
    _, peak, code = measure(argv)
    return times, peak, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    compile_goldkeeper()

    cache = Path(os.environ.get("GOLDKEEPER_BENCH_CACHE", Path(tempfile.gettempdir()) / "goldkeeper-bench"))
    cache.mkdir(parents=True, exist_ok=True)
    data = cache / f"judgments-{args.labels}.jsonl"
    if not data.exists():
        tmp = data.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for line in make_lines(args.labels):
                fh.write(line + "\n")
        tmp.rename(data)
    size = data.stat().st_size / 2**20
    print(f"input: {data} ({args.labels:,} labels, {size:.0f} MiB)")

    bindir = Path(sys.executable).parent
    commands = {
        "retrieval-eval 0.1.1": [str(bindir / "retrieval-eval"), "validate", "--judgments", str(data)],
        "goldkeeper": [str(bindir / "goldkeeper"), "validate", str(data)],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[float]] = {name: [] for name in commands}
    codes: dict[str, set[int]] = {name: set() for name in commands}
    for repeat in range(args.repeats):
        for name, argv in commands.items():
            elapsed, _, code = measure(argv, sample=False)
            times[name].append(elapsed)
            codes[name].add(code)
            print(f"  run {repeat + 1}: {name:22s} {elapsed:7.2f} s  exit {code}", flush=True)
    for name, argv in commands.items():  # memory from one more run each, sampled (measure)
        _, peak, code = measure(argv)
        peaks[name].append(peak)
        codes[name].add(code)
    if codes["goldkeeper"] != codes["retrieval-eval 0.1.1"]:
        raise SystemExit(f"the two disagree on the verdict: {codes}")

    ref, ours = "retrieval-eval 0.1.1", "goldkeeper"
    t_ref, t_ours = statistics.median(times[ref]), statistics.median(times[ours])
    m_ref, m_ours = max(peaks[ref]), max(peaks[ours])
    print(f"median time   reference {t_ref:.2f} s   goldkeeper {t_ours:.2f} s   ratio {t_ours / t_ref:.3f} (target <= 0.333)")
    print(f"peak memory   reference {m_ref:.0f} MiB goldkeeper {m_ours:.0f} MiB ratio {m_ours / m_ref:.3f} (target <= 0.5)")


if __name__ == "__main__":
    main()
