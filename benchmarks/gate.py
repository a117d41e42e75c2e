"""The gate's speed against a cached ``diff --summary`` (issue 41: at most 1.2x), as ratios.

    .venv/bin/python benchmarks/gate.py [BEFORE AFTER] [--runs N]
    # default: ../shared/traces/gpt2_train_big against a copy with one kernel 5% slower

Both commands run as a user types them, in fresh processes, over a private cache warmed by one run
of each first (the gate's per-step samples are cached beside the views).  Prints the median wall
time of each and the ratio gate / summary.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces"
PROFVIEW = str(Path(sys.executable).parent / "profview")
RULES = ["kernels.total_us > +2%", "ops.total_us > +5%", "steps.duration_us > +3%", "efficiency.mfu < -2pt",
         "new_kernels.share > 1%"]


def _timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([PROFVIEW, *args], env=env, capture_output=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return time.perf_counter() - start


def main() -> None:
    args = sys.argv[1:]
    runs = 5
    if "--runs" in args:
        at = args.index("--runs")
        runs = int(args[at + 1])
        del args[at : at + 2]
    with tempfile.TemporaryDirectory() as scratch:
        if args:
            before, after = args[:2]
        else:
            sys.path.insert(0, str(ROOT / "tests"))
            from gate_witness import raw_kernel_share, slowed_copy

            before = str(SHARED / "gpt2_train_big.pt.trace.json.gz")
            shares = raw_kernel_share(Path(before))
            kernel = next(n for n in sorted(shares, key=lambda n: -shares[n]) if shares[n] < 5.0)
            after = str(Path(scratch) / "after.pt.trace.json.gz")
            slowed_copy(Path(before), Path(after), kernel, 1.05)
        env = dict(os.environ, PROFVIEW_CACHE_DIR=str(Path(scratch) / "cache"))
        summary = ["diff", before, after, "--summary"]
        gate = ["diff", before, after, *(a for r in RULES for a in ("--fail-if", r))]
        _timed(summary, env)  # warm the cache: events, views, the model
        _timed(gate, env)  # and the gate's samples
        times: dict[str, list[float]] = {"summary": [], "gate": []}
        for _ in range(runs):  # interleaved: a busy machine slows both alike
            times["summary"].append(_timed(summary, env))
            times["gate"].append(_timed(gate, env))
    medians = {k: statistics.median(v) for k, v in times.items()}
    print(f"cached diff --summary: {medians['summary']:.2f} s (median of {runs})")
    print(f"cached gate ({len(RULES)} rules): {medians['gate']:.2f} s")
    print(f"gate / summary: {medians['gate'] / medians['summary']:.2f}x (goal <= 1.2x)")


if __name__ == "__main__":
    main()
