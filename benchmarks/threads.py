"""How a cold read and a cold export scale with threads, stage by stage (one command).

    python benchmarks/threads.py [TRACE] [--threads 1,2,4,8,16] [--runs 3]

For each thread count N (``PROFVIEW_THREADS=N`` for the scanner, ``POLARS_MAX_THREADS=N`` for
Polars; ``--vary scan`` or ``--vary polars`` varies one and holds the other at ``--fixed``; N above
the CPUs this process may use is skipped), each stage runs in a fresh process
``--runs`` times, interleaved; the table gives the median time and the median peak RSS (MB of
10^6 bytes), and each stage's time against N=1 of the same stage in the same run:

* ``inflate``: the file's chunks alone (the gzip stream inflated, nothing scanned);
* ``scan``: inflate and the compiled scanner, chunk by chunk (no Polars);
* ``read``: ``profview.load(TRACE, use_cache=False).events`` (the events frame);
* ``export``: a cold ``profview export TRACE -v kernels --no-cache`` (read, link, kernel view).

``import polars`` alone is timed too: every stage but the first two pays it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from run import measure  # benchmarks/run.py, beside this script: (seconds, peak RSS MB) of a process

ROOT = Path(__file__).resolve().parent.parent
BIG = ROOT.parent / "shared" / "traces" / "gpt2_train_big.pt.trace.json.gz"

INFLATE = (
    "import sys; from profview.parsers.source import SourceStream, STREAM_CHUNK_BYTES; "
    "sum(len(c) for c in SourceStream(sys.argv[1], STREAM_CHUNK_BYTES).chunks())"
)
SCAN = "import sys; from profview.parsers.trace_file import read_trace_file; assert read_trace_file(sys.argv[1]).scan"
READ = "import sys, profview; profview.load(sys.argv[1], use_cache=False).events"


def stages(trace: Path, out: Path) -> dict[str, list[str]]:
    python = sys.executable
    export = [python, "-m", "profview", "export", str(trace), "-v", "kernels", "--no-cache", "-o", str(out), "--force"]
    return {
        "inflate": [python, "-c", INFLATE, str(trace)],
        "scan": [python, "-c", SCAN, str(trace)],
        "read": [python, "-c", READ, str(trace)],
        "export": export,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", default=str(BIG))
    parser.add_argument("--threads", default="1,2,4,8,16", help="thread counts, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vary", choices=("both", "scan", "polars"), default="both", help="which thread count varies")
    parser.add_argument("--fixed", type=int, default=0, help="the other's count with --vary scan|polars (0: all CPUs)")
    parser.add_argument("--stages", default="inflate,scan,read,export", help="which stages, comma-separated")
    args = parser.parse_args()
    trace = Path(args.trace).resolve()
    cpus = len(os.sched_getaffinity(0))
    counts = [n for n in (int(t) for t in args.threads.split(",")) if n <= cpus]
    out = Path(tempfile.mkdtemp(prefix="profview-threads-")) / "kernels.csv"
    commands = {k: v for k, v in stages(trace, out).items() if k in args.stages.split(",")}
    fixed = str(args.fixed or cpus)
    print(
        f"{trace.name}: {cpus} CPUs, Python {sys.version.split()[0]}, thread counts {counts} "
        f"({'both' if args.vary == 'both' else args.vary + ' varies, the other ' + fixed}), {args.runs} runs"
    )
    polars = [measure([sys.executable, "-c", "import polars"], {})[0] for _ in range(args.runs)]
    print(f"  import polars: {statistics.median(polars):.3f} s")
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(args.runs):  # interleaved: a drift in the machine's load spreads over every setting
        for n in counts:
            scan = str(n) if args.vary in ("both", "scan") else fixed
            env = {"PROFVIEW_THREADS": scan, "POLARS_MAX_THREADS": str(n) if args.vary != "scan" else fixed}
            for stage, command in commands.items():
                results.setdefault((stage, n), []).append(measure(command, env))
    print(f"  {'stage':<8} {'threads':>7} {'time':>8} {'vs 1':>6} {'peak RSS':>9}")
    for stage in commands:
        base = statistics.median(t for t, _ in results[(stage, counts[0])])
        for n in counts:
            runs = results[(stage, n)]
            seconds = statistics.median(t for t, _ in runs)
            rss = statistics.median(r for _, r in runs)
            print(f"  {stage:<8} {n:>7} {seconds:7.2f}s {base / seconds:5.2f}x {rss:7.0f}MB")


if __name__ == "__main__":
    main()
