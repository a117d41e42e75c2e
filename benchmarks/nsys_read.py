"""An Nsight Systems export's cold open to the kernel table, against a bare ``sqlite3`` read of the
same columns (the read's floor), and its re-open from the cache.

    .venv/bin/python benchmarks/nsys_read.py [--size-mb 1024] [--source EXPORT] [--work /tmp/nsys_bench]

A copy of a real export (default: ``../shared/formats/nsys/nsysai__mfu_2gpu_before.sqlite``, else the
sample) is grown under ``--work`` (never in ``../shared``) by doubling the rows of its activity tables
(kernels, memcpy, memset, runtime calls, NVTX events) with SQL ``INSERT … SELECT``, each copy shifted
past the last in time and in correlation id, until the file reaches ``--size-mb``.  Each figure is
one fresh interpreter (median of ``--runs``): ``bare`` fetches the columns profview reads, in batches,
and drops them; ``profview`` is ``load(..., use_cache=False).kernels()``; ``cached`` is the second of
two cached opens.  Peak memory is the process's maximum resident size.  Prints one markdown table.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "formats" / "nsys" / "nsysai__mfu_2gpu_before.sqlite"
SAMPLE = ROOT / "samples" / "nsys_saxpy_mpi_a100_2022.sqlite"
#: The activity tables grown, and whether each has a correlation id to shift.
GROWN = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
)

#: The columns the reader selects from each table (``profview.parsers.nsys``), written out here so
#: that the bare read imports nothing but sqlite3.
COLUMNS = {
    "CUPTI_ACTIVITY_KIND_KERNEL": (
        "start",
        "end",
        "deviceId",
        "streamId",
        "correlationId",
        "globalPid",
        "graphNodeId",
        "demangledName",
        "shortName",
        "registersPerThread",
        "gridX",
        "gridY",
        "gridZ",
        "blockX",
        "blockY",
        "blockZ",
        "staticSharedMemory",
        "dynamicSharedMemory",
        "graphId",
    ),
    "CUPTI_ACTIVITY_KIND_MEMCPY": (
        "start",
        "end",
        "deviceId",
        "streamId",
        "correlationId",
        "globalPid",
        "graphNodeId",
        "bytes",
        "copyKind",
    ),
    "CUPTI_ACTIVITY_KIND_MEMSET": (
        "start",
        "end",
        "deviceId",
        "streamId",
        "correlationId",
        "globalPid",
        "graphNodeId",
        "bytes",
    ),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end", "globalTid", "correlationId", "nameId", "eventClass"),
    "NVTX_EVENTS": ("start", "end", "eventType", "globalTid", "textId", "domainId", "text"),
    "StringIds": ("id", "value"),
}

BARE = (
    f"COLUMNS = {COLUMNS!r}\n"
    + """
import resource, sqlite3, sys, time
t = time.perf_counter()
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro&immutable=1", uri=True)
rows = 0
for table, columns in COLUMNS.items():
    held = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    if not held:
        continue
    cursor = db.execute("SELECT " + ", ".join(c if c in held else "NULL" for c in columns) + f" FROM {table}")
    while batch := cursor.fetchmany(500_000):
        rows += len(batch)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, rows)
"""
)

PROFVIEW = """
import resource, sys, time
t = time.perf_counter()
import profview
table = profview.load(sys.argv[1], use_cache=sys.argv[2] == "1").kernels()
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, table.height)
"""


def grow(source: Path, target: Path, size_mb: int) -> None:
    """Copy ``source`` to ``target`` and double its activity rows until the file holds ``size_mb``."""
    shutil.copyfile(source, target)
    db = sqlite3.connect(target)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    while target.stat().st_size < size_mb * 2**20:
        span = 0
        for table in [t for t in GROWN if t in tables]:
            low, high = db.execute(f"SELECT min(start), max(coalesce(end, start)) FROM {table}").fetchone()
            if low is not None:
                span = max(span, high - low + 1)
        ids = 0
        for table in [t for t in GROWN if t in tables and t != "NVTX_EVENTS"]:
            ids = max(ids, db.execute(f"SELECT coalesce(max(correlationId), 0) FROM {table}").fetchone()[0] + 1)
        for table in [t for t in GROWN if t in tables]:
            columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            shifted = []
            for column in columns:
                if column in ("start", "end"):
                    shifted.append(f"{column} + {span}")
                elif column == "correlationId":
                    shifted.append(f"correlationId + {ids}")
                else:
                    shifted.append(column)
            listed = ", ".join(columns)
            db.execute(f"INSERT INTO {table} ({listed}) SELECT {', '.join(shifted)} FROM {table}")
        db.commit()
    db.close()


def timed(script: str, *args: str) -> tuple[float, int, int]:
    """(seconds, peak bytes, rows) printed by ``script`` run in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", script, *args], check=True, capture_output=True, text=True).stdout
    seconds, peak, rows = out.split()
    return float(seconds), int(peak), int(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE if DEFAULT_SOURCE.is_file() else SAMPLE)
    parser.add_argument("--work", type=Path, default=Path("/tmp/nsys_bench"))
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    options.work.mkdir(parents=True, exist_ok=True)
    big = options.work / f"grown_{options.size_mb}mb.sqlite"
    if not big.is_file():
        started = time.perf_counter()
        grow(options.source, big, options.size_mb)
        print(
            f"grew {options.source.name} to {big.stat().st_size / 2**20:.0f} MB "
            f"in {time.perf_counter() - started:.0f} s"
        )
    print("| export | MB | bare sqlite3 s | profview cold s | ratio | peak MB (bare / profview) | cached re-open s |")
    print("|---|---|---|---|---|---|---|")
    for path in (options.source, big):
        bare = [timed(BARE, str(path)) for _ in range(options.runs)]
        cold = [timed(PROFVIEW, str(path), "0") for _ in range(options.runs)]
        cache = options.work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        env_script = f"import os; os.environ['PROFVIEW_CACHE_DIR'] = {str(cache)!r}\n" + PROFVIEW
        timed(env_script, str(path), "1")  # stores the entry
        cached = [timed(env_script, str(path), "1") for _ in range(options.runs)]
        b = statistics.median(s for s, _, _ in bare)
        c = statistics.median(s for s, _, _ in cold)
        r = statistics.median(s for s, _, _ in cached)
        peaks = f"{max(p for _, p, _ in bare) / 2**20:.0f} / {max(p for _, p, _ in cold) / 2**20:.0f}"
        size = path.stat().st_size / 2**20
        print(f"| {path.name} | {size:.1f} | {b:.3f} | {c:.3f} | {c / b:.2f}x | {peaks} | {r:.3f} |")


if __name__ == "__main__":
    main()
