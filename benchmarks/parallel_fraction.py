"""The parallel fraction of a cold read, from each thread's CPU time, and Amdahl's projection.

    python benchmarks/parallel_fraction.py [TRACE] [--threads 2] [--runs 3] [--cores 16]

Wall times on a loaded 2-core machine say little about 16 cores, but CPU seconds per thread do not
depend on the load: each run (a fresh process, ``PROFVIEW_THREADS`` and ``POLARS_MAX_THREADS`` set
to ``--threads``) reads TRACE to its events frame (``profview.load(TRACE, use_cache=False).events``,
imports included) and reports the CPU seconds of every thread: the main thread (imports, the
window cutting of the chunked read, the frame's Python parts), the inflating thread (a chunked
read's; a large plain trace is mapped and scanned in place, without one), the scanning
threads (``profview-scan``), the column builders (``profview-columns``) and Polars' own pool
(its threads' CPU read from ``/proc/self/task`` at the end).  The work that runs on one thread
whatever the core count (the main and inflating threads) is the serial part ``s``; the rest
(scanning, columns, Polars) is the parallel part ``p = 1 - s``.  Amdahl: a run on N cores takes
``s + p / N`` of the one-core time, so N cores against 2 give ``(s + p/2) / (s + p/N)``.  That is
an upper bound: the serial stages also overlap one another (the inflating thread runs beside the
main one), which helps, and memory bandwidth, which is not modelled, hurts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = ROOT.parent / "shared" / "traces" / "gpt2_train_big.pt.trace.json.gz"

PROBE = r"""
import json, os, sys, threading, time
cpu = {}
run = threading.Thread.run

def timed_run(self):
    try:
        run(self)
    finally:
        name = self.name.split("_")[0]
        cpu[name] = cpu.get(name, 0.0) + time.thread_time()

threading.Thread.run = timed_run
import profview
profview.load(sys.argv[1], use_cache=False).events
cpu["main"] = time.thread_time()
tick = os.sysconf("SC_CLK_TCK")
others = 0.0
for tid in os.listdir("/proc/self/task"):
    if int(tid) in (threading.get_native_id(),) or int(tid) in {t.native_id for t in threading.enumerate()}:
        continue
    fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
    others += (int(fields[11]) + int(fields[12])) / tick
cpu["polars pool"] = others
times = os.times()
cpu["process"] = times.user + times.system
print(json.dumps(cpu))
"""

#: Threads whose work does not spread over more cores.
SERIAL = ("main", "profview-inflate")


def probe(trace: Path, threads: int) -> dict[str, float]:
    env = {**os.environ, "PROFVIEW_THREADS": str(threads), "POLARS_MAX_THREADS": str(threads)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(trace)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"probe failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", default=str(BIG))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cores", type=int, default=16, help="the core count projected to")
    args = parser.parse_args()
    trace = Path(args.trace).resolve()
    runs = [probe(trace, args.threads) for _ in range(args.runs)]
    names = sorted({name for run in runs for name in run if name != "process"}, key=lambda n: (n not in SERIAL, n))
    cpu = {name: statistics.median(run.get(name, 0.0) for run in runs) for name in names}
    process = statistics.median(run["process"] for run in runs)
    counted = sum(cpu.values())
    print(f"{trace.name}: {args.threads} threads, medians of {args.runs} fresh processes (CPU seconds)")
    for name in names:
        print(f"  {name:<20} {cpu[name]:6.3f} s  {'serial' if name in SERIAL else 'parallel'}")
    print(f"  {'threads counted':<20} {counted:6.3f} s; the process's own CPU {process:.3f} s")
    serial = sum(cpu[name] for name in SERIAL if name in cpu) / counted
    parallel = 1 - serial
    n = args.cores
    projected = (serial + parallel / 2) / (serial + parallel / n)
    print(
        f"  serial s = {serial:.3f}, parallel p = {parallel:.3f}; Amdahl, {n} cores against 2: "
        f"(s + p/2) / (s + p/{n}) = {serial + parallel / 2:.3f} / {serial + parallel / n:.3f} = {projected:.2f}x; "
        f"the bound as N grows: (s + p/2) / s = {(serial + parallel / 2) / serial:.2f}x"
    )


if __name__ == "__main__":
    main()
