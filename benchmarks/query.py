"""Issue 41: a query on a cached trace against a cached ``summary`` of the same trace (goal: ≤ 1.5×).

    python benchmarks/query.py [--runs 5] [TRACE ...]   # default: the samples' gpt2 and resnet50,
                                                        # and ../shared/traces/gpt2_train_big if there

Each trace is opened once by ``summary`` and once by each query (so the cache holds its events and
the views they read), then each command runs ``--runs`` times in a fresh process, in a private cache
folder; prints the median wall time of each and its ratio to the summary's.  A query reads only the
tables it names: the one over ``events`` reads the events frame, which no summary reads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [
    ROOT / "samples" / "gpt2_train_bf16.pt.trace.json.gz",
    ROOT / "samples" / "resnet50_train_amp.pt.trace.json.gz",
    ROOT.parent / "shared" / "traces" / "gpt2_train_big.pt.trace.json.gz",
]
QUERIES = {
    "top kernels": "SELECT name, calls, total_us FROM kernels ORDER BY total_us DESC LIMIT 10",
    "ops by kind": "SELECT kind, COUNT(*) AS names, SUM(device_self_us) AS device_us FROM ops GROUP BY kind",
    "slowest step": "SELECT step, duration_us FROM steps ORDER BY duration_us DESC LIMIT 1",
    "events by kind": "SELECT kind, COUNT(*) AS n, SUM(dur) AS us FROM events GROUP BY kind",
}


def _time(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("traces", nargs="*")
    options = parser.parse_args()
    traces = [Path(t) for t in options.traces] or [p for p in DEFAULT if p.is_file()]
    profview = [sys.executable, "-m", "profview"]
    print("| trace | command | median s | × cached summary |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PROFVIEW_CACHE_DIR": cache}
        for trace in traces:
            commands = {"summary": [*profview, "summary", str(trace)]}
            commands |= {name: [*profview, "query", str(trace), "-q", sql] for name, sql in QUERIES.items()}
            for args in commands.values():  # fill the cache: events, and the views each one reads
                _time(args, env)
            medians = {name: statistics.median(_time(a, env) for _ in range(options.runs)) for name, a in
                       commands.items()}
            base = medians["summary"]
            for name, seconds in medians.items():
                print(f"| {trace.name} | {name} | {seconds:.3f} | {seconds / base:.2f}× |")


if __name__ == "__main__":
    main()
