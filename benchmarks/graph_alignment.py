"""Issue 45: graph alignment is linear in the graph where the capture misses a launch or two.

    python benchmarks/graph_alignment.py [--nodes 20000] [--factor 2]

Makes a ROCm-shaped replay of ``--nodes`` named kernels (one ``hipGraphLaunch``) and its capture
with the launch of the middle node missing, at ``--nodes`` and ``--factor`` times as many, and runs
``profview export REPLAY --view graph_nodes --capture CAPTURE`` on each in a fresh process
(``/usr/bin/time -v``: wall time and peak resident memory).  Prints both and their ratios: linear
work grows about ``factor`` times (the goal: at most 2.5x the factor); the whole-table alignment
before issue 45 peaked at 5.6 GB for 20,000 nodes.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_pair(nodes: int, folder: Path) -> tuple[Path, Path]:
    """The replay and its capture (missing the middle launch), as JSON files in ``folder``."""
    host = {"ph": "X", "pid": 1, "tid": 1}
    names = [f"kernel_{i % 50}" for i in range(nodes)]
    replay = [{**host, "name": "hipGraphLaunch", "cat": "cuda_runtime", "ts": 1, "dur": 5, "args": {"correlation": 1}}]
    for i, name in enumerate(names):
        gpu = {"ph": "X", "cat": "kernel", "ts": 100 + 3 * i, "dur": 2, "pid": 0, "tid": 7}
        replay.append({**gpu, "name": name, "args": {"stream": 7, "correlation": 1}})
    captured = names[: nodes // 2] + names[nodes // 2 + 1 :]
    capture = [
        {**host, "name": "model::forward", "cat": "cpu_op", "ts": 0, "dur": 10 * nodes + 100},
        {**host, "name": "hipStreamBeginCapture", "cat": "cuda_runtime", "ts": 1, "dur": 1, "args": {"correlation": 1}},
    ]
    for i, name in enumerate(captured):
        call = {"name": "hipLaunchKernel", "cat": "cuda_runtime", "ts": 10 + 10 * i, "dur": 2}
        capture.append({**host, **call, "args": {"correlation": i + 2, "kernel": name}})
    end = {"name": "hipStreamEndCapture", "cat": "cuda_runtime", "ts": 10 * nodes + 50, "dur": 1}
    capture.append({**host, **end, "args": {"correlation": nodes + 5}})
    (folder / "replay.json").write_text(json.dumps({"traceEvents": replay}))
    (folder / "capture.json").write_text(json.dumps({"traceEvents": capture}))
    return folder / "replay.json", folder / "capture.json"


def measure(nodes: int) -> tuple[float, float]:
    """(wall seconds, peak resident MiB) of the graph_nodes export at ``nodes`` nodes."""
    with tempfile.TemporaryDirectory() as tmp:
        replay, capture = make_pair(nodes, Path(tmp))
        out = Path(tmp) / "nodes.csv"
        command = [sys.executable, "-m", "profview", "export", str(replay), "--view", "graph_nodes"]
        command += ["-o", str(out), "--no-cache", "--capture", str(capture)]
        done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True, cwd=ROOT.parent)
        if done.returncode:
            raise SystemExit(done.stderr)
        wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\d+):([\d.]+)", done.stderr)
        peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
        assert wall and peak
        return int(wall.group(1)) * 60 + float(wall.group(2)), int(peak.group(1)) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--factor", type=int, default=2)
    options = parser.parse_args()
    small = measure(options.nodes)
    big = measure(options.nodes * options.factor)
    print("| nodes | wall s | peak MiB |\n|---|---|---|")
    print(f"| {options.nodes:,} | {small[0]:.2f} | {small[1]:.0f} |")
    print(f"| {options.nodes * options.factor:,} | {big[0]:.2f} | {big[1]:.0f} |")
    print(f"ratios: time {big[0] / small[0]:.2f}x, memory {big[1] / small[1]:.2f}x for {options.factor}x the nodes")


if __name__ == "__main__":
    main()
