"""A large memory snapshot: summary time and peak memory against the file's size.

    .venv/bin/python benchmarks/snapshot_read.py [--mb 1024] [--source SNAPSHOT] [--keep]

Makes a snapshot of about ``--mb`` MB under /tmp by replicating the events and blocks of a real
one (default: ../shared's nothanmin training step, else the sample in samples/): replica r's
segments, blocks and events are the original's with addresses shifted by r·2^40 and times by r
spans, on the same device, so the backward walk stays consistent (each replica's events take
its own blocks from their start to their end state).  Frames are shared between replicas, as
torch's own pickles share them through the memo.  Then runs ``profview summary --format json``
on it in a fresh process and prints the file size, the wall and CPU time, the child's peak RSS and
the ratio RSS / file, with the same for the source snapshot as the baseline of this run.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "formats" / "memory-snapshots" / "nothanmin__memory_snapshot.pickle"
SAMPLE = ROOT / "samples" / "magma27_memory_snapshot.pickle"
SHIFT = 1 << 40


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"no globals ({module}.{name})")


def replicated(source: Path, copies: int) -> dict[str, Any]:
    """The source snapshot ``copies`` times over on device 0 (frames shared, not copied)."""
    with open(source, "rb") as fh:
        snap = _PlainData(fh).load()
    trace = snap["device_traces"][0]
    span = (trace[-1]["time_us"] - trace[0]["time_us"] + 1) if trace else 1
    segments, events = [], []
    for r in range(copies):
        for seg in snap["segments"]:
            new = {k: v for k, v in seg.items() if k != "blocks"}
            new["address"] = seg["address"] + r * SHIFT
            new["blocks"] = [{**b, "address": b["address"] + r * SHIFT} for b in seg["blocks"]]
            segments.append(new)
        for e in trace:
            new = dict(e)
            new["addr"] = e["addr"] + r * SHIFT
            new["time_us"] = e["time_us"] + r * span
            events.append(new)
    out = copy.copy(snap)
    out["segments"] = segments
    out["device_traces"] = [events]
    return out


def measure(path: Path) -> tuple[float, float, int, dict[str, Any]]:
    """Wall and CPU seconds (the CPU time is the fairer figure on a machine shared with other
    work), peak RSS (bytes) and the summary document of ``profview summary --format json``."""
    code = (
        "import resource, sys, json\n"
        "from profview.cli import main\n"
        "try:\n    main(['summary', sys.argv[1], '--format', 'json'])\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "use = resource.getrusage(resource.RUSAGE_SELF)\n"
        "sys.stderr.write(f'{use.ru_maxrss * 1024} {use.ru_utime + use.ru_stime}')\n"
    )
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    rss, cpu = done.stderr.strip().splitlines()[-1].split()
    return wall, float(cpu), int(rss), json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--source", type=Path, default=SHARED if SHARED.exists() else SAMPLE)
    parser.add_argument("--keep", action="store_true", help="keep the made snapshot")
    parser.add_argument("--make", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:  # the child that writes the big snapshot (so the measuring parent stays small)
        source, copies, big = args.make
        with open(big, "wb") as fh:
            pickle.dump(replicated(Path(source), int(copies)), fh, protocol=4)
        return
    size = args.source.stat().st_size
    one, two = (len(pickle.dumps(replicated(args.source, n), protocol=4)) for n in (1, 2))
    copies = max(1, round((args.mb * 1e6 - one) / max(1, two - one)) + 1)  # frames shared: a copy costs less
    folder = Path(tempfile.mkdtemp(prefix="profview-snapshot-bench-", dir="/tmp"))
    big = folder / "big.pickle"
    made = time.perf_counter()
    # Linux keeps a process's peak RSS across fork and exec: the big snapshot is made in a child,
    # never in this process, whose children are the ones measured.
    subprocess.run([sys.executable, __file__, "--make", str(args.source), str(copies), str(big)], check=True)
    made = time.perf_counter() - made
    print(f"source {args.source.name}: {size / 1e6:.1f} MB; {copies} copies -> {big.stat().st_size / 1e6:,.0f} MB "
          f"(made in {made:.0f} s)")
    print("| file | MB | events | summary s | CPU s | peak RSS MB | RSS / file |\n|---|---|---|---|---|---|---|")
    try:
        for path in (args.source, big):
            wall, cpu, rss, document = measure(path)
            mb = path.stat().st_size / 1e6
            print(f"| {path.name} | {mb:,.1f} | {document['events']:,} | {wall:.1f} | {cpu:.1f} | {rss / 1e6:,.0f} | "
                  f"{rss / path.stat().st_size:.1f} |")
    finally:
        if not args.keep:
            big.unlink(missing_ok=True)
            os.rmdir(folder)
    print(f"(this process's own peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:,.0f} MB)")


if __name__ == "__main__":
    main()
