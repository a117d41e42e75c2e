"""What the efficiency figures (categories, the perf model) cost, as ratios to the trace's load.

On ``../shared/traces/gpt2_train_big`` (40 steps, 512,907 events), the load in the same process.

    python benchmarks/efficiency.py [TRACE] [--runs N]

In one process per run: the load with the linked model and the step table (the baseline), then
kernel categories
(``Profile.categories``), the perf model (``Profile.efficiency``), the per-step figures
(``Profile.step_efficiency``, GPU busy included).  (The kernel and operator views' columns need no
model since issue 32.)  Each figure is the best of ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = ROOT.parent / "shared" / "traces" / "gpt2_train_big.pt.trace.json.gz"

IN_PROCESS = """
import sys, time
start = time.perf_counter()
from profview.profiles.loading import load
profile = load(sys.argv[1], use_cache=False)
profile.model
profile.steps()
marks = [time.perf_counter()]
profile.categories(); marks.append(time.perf_counter())
rows = profile.efficiency().height; marks.append(time.perf_counter())
profile.step_efficiency(); marks.append(time.perf_counter())
print(marks[0] - start, *(b - a for a, b in zip(marks, marks[1:])), rows)
"""
PARTS = ("categories", "efficiency", "step_efficiency")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(BIG))
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    if not Path(args.trace).is_file():
        raise SystemExit(f"{args.trace}: no such trace (the benchmark reads ../shared beside the checkout)")
    results = []
    for _ in range(args.runs):
        out = subprocess.run(
            [sys.executable, "-c", IN_PROCESS, args.trace], check=True, capture_output=True, text=True, cwd=ROOT
        ).stdout.split()
        results.append([float(v) for v in out[:-1]])
        rows = int(out[-1])
    best = [min(run[i] for run in results) for i in range(len(results[0]))]
    load = best[0]
    print(f"{Path(args.trace).name}: load, linked model, steps {load:.2f} s (baseline), {rows} efficiency rows")
    for name, seconds in zip(PARTS, best[1:], strict=True):
        print(f"  {name:<18} {seconds:7.3f} s  {seconds / load:6.1%} of the load")
    total = sum(best[1:])
    print(f"  {'all of issue 24':<18} {total:7.3f} s  {total / load:6.1%} of the load")


if __name__ == "__main__":
    main()
