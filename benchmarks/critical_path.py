"""The critical path of every step of ``../shared/traces/gpt2_train_big`` (40 steps, 512,907
events) as a ratio to the cold load (issue 26; goal ≤ 1×).

    python benchmarks/critical_path.py [TRACE] [--runs N]

Cold load: ``profview export TRACE -v steps --no-cache`` in a fresh subprocess (imports, parse,
linked model, steps table: what a user waits for).  Critical path: the same with
``-v critical_path``; its extra time over the cold load is the critical path's cost.  Each is the
best of ``--runs`` runs.  A second figure times the critical path alone in one process
(:meth:`Profile.step_paths` on a model already built), against that process's own load.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = ROOT.parent / "shared" / "traces" / "gpt2_train_big.pt.trace.json.gz"

IN_PROCESS = """
import sys, time
start = time.perf_counter()
from profview.profiles.loading import load
profile = load(sys.argv[1], use_cache=False)
profile.model
loaded = time.perf_counter()
paths = profile.step_paths()
done = time.perf_counter()
print(loaded - start, done - loaded, paths.steps.height)
"""


def best(command: list[str], runs: int) -> float:
    """The shortest wall time of ``runs`` runs of ``command``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(BIG))
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    if not Path(args.trace).is_file():
        raise SystemExit(f"no trace at {args.trace} (needs ../shared beside the checkout)")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.csv"

        def export(view: str) -> list[str]:
            command = [sys.executable, "-m", "profview", "export", args.trace, "-v", view, "-o", str(out)]
            return [*command, "--force", "--no-cache"]

        cold = best(export("steps"), args.runs)
        with_path = best(export("critical_path"), args.runs)
    result = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, args.trace], check=True, capture_output=True, text=True
    ).stdout.split()
    load_s, path_s, steps = float(result[0]), float(result[1]), int(result[2])
    extra = max(with_path - cold, 0.0)
    print(f"trace: {args.trace} ({steps} steps)")
    print(f"cold load (export -v steps):           {cold:7.2f} s")
    print(f"export -v critical_path (every step):  {with_path:7.2f} s   extra {extra:.2f} s")
    print(f"critical path / cold load:             {extra / cold:7.2f}x (goal <= 1x)")
    print(f"in one process: load + model {load_s:.2f} s, critical path of every step {path_s:.2f} s "
          f"({path_s / load_s:.2f}x)")


if __name__ == "__main__":
    main()
