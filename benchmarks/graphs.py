"""Attributing graph replays against the cold load of the same trace (one command).

    python benchmarks/graphs.py [--replays 100000] [--runs 3] [--source TRACE] [--keep]

Makes a trace of ``--replays`` replays from a real capture + replay pair (default: the H100
torch.compile reduce-overhead sample: its capture of 38 launches, then its first replay's
``cudaGraphLaunch`` with the operators around it and its 38 GPU events, repeated with shifted times
and fresh correlation and External ids), then, in a fresh process per run, times

* the cold load: ``profview.load(T, use_cache=False)`` and its linked model (what any view of
  operators pays);
* the attribution after it: ``profile.graphs()`` (replays found, the capture read, nodes aligned,
  every replayed event attributed) and the summary's figures;

and prints the median of each and their ratio (goal: attribution within 1x the cold load).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "samples" / "h100_compile_reduce_overhead.json.gz"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
KEPT_GPU_ARGS = ("External id", "device", "stream", "correlation", "grid", "block")

TIMED = """
import sys, time, json
import profview
start = time.perf_counter()
profile = profview.load(sys.argv[1], use_cache=False)
profile.model
loaded = time.perf_counter()
graphs = profile.graphs()
profile.graph_summary()
done = time.perf_counter()
print(json.dumps({"load": loaded - start, "attribute": done - loaded, "events": profile.event_count,
                  "replays": int(graphs["replays"].sum()), "attributed_pct": float(graphs["attributed_pct"][0])}))
"""


def make_trace(source: Path, replays: int, out: Path) -> int:
    """Write the synthetic trace; return its size in bytes."""
    with gzip.open(source, "rb") as fh:
        doc = orjson.loads(fh.read())
    events = doc["traceEvents"]
    launches = sorted((e for e in events if e.get("name") == "cudaGraphLaunch"), key=lambda e: e["ts"])
    first, second = launches[0], launches[1]
    corr = first["args"]["correlation"]
    gpu = [e for e in events if e.get("cat") in GPU_CATS and e.get("args", {}).get("correlation") == corr]
    end = max(e["ts"] + e["dur"] for e in gpu)
    # the host events around the launch on its thread (the operators it runs under)
    around = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") in ("cpu_op", "user_annotation", "python_function")
        and e.get("tid") == first["tid"]
        and e["ts"] <= first["ts"] <= e["ts"] + e["dur"] <= end + 1000
        and e["ts"] >= first["ts"] - 1000
    ]
    block = [first, *around, *gpu]
    period = second["ts"] - first["ts"]
    prefix = [e for e in events if e.get("ph") == "M" or ("ts" in e and e["ts"] < first["ts"] - 1000)]
    top_corr = max(e.get("args", {}).get("correlation") or 0 for e in events) + 1
    top_ext = max(e.get("args", {}).get("External id") or 0 for e in events) + 1
    size = 0
    with out.open("wb") as fh:
        fh.write(b'{"traceEvents": [\n')
        for e in prefix:
            line = orjson.dumps(e) + b",\n"
            fh.write(line)
            size += len(line)
        for k in range(replays):
            shift = k * period
            corr_k = top_corr + k
            for e in block:
                copy = dict(e, ts=e["ts"] + shift)
                args = dict(e.get("args", {}))
                if e.get("cat") in GPU_CATS:
                    args = {key: args[key] for key in KEPT_GPU_ARGS if key in args}
                if "correlation" in args:
                    args["correlation"] = corr_k
                if "External id" in args:
                    args["External id"] = top_ext + k * 10 + (args["External id"] % 10)
                copy["args"] = args
                line = orjson.dumps(copy) + (b",\n" if k < replays - 1 or e is not block[-1] else b"\n")
                fh.write(line)
                size += len(line)
        fh.write(b"]}\n")
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replays", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--source", default=str(SOURCE))
    parser.add_argument("--keep", action="store_true", help="keep the synthetic trace (its path is printed)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="profview-graphs-"))
    trace = folder / f"replays_{args.replays}.json"
    size = make_trace(Path(args.source), args.replays, trace)
    print(f"{trace}: {args.replays:,} replays, {size / 1e6:.0f} MB of JSON")
    results = []
    for _run in range(args.runs):
        done = subprocess.run([sys.executable, "-c", TIMED, str(trace)], capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    load = statistics.median(r["load"] for r in results)
    attribute = statistics.median(r["attribute"] for r in results)
    last = results[-1]
    print(f"events {last['events']:,}, replays found {last['replays']:,}, attributed {last['attributed_pct']:.1f}%")
    print(f"cold load (parse + link) {load:.2f} s, attribution {attribute:.2f} s (median of {args.runs})")
    print(f"attribution / cold load = {attribute / load:.2f}x (goal: within 1x)")
    if not args.keep:
        trace.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
