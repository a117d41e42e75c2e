"""An Nsight Systems export's cold open to the kernel table, against a bare ``sqlite3`` read of the
same columns (the read's floor), and its re-open from the cache.

    .venv/bin/python benchmarks/nsys_read.py [--size-mb 1024] [--source EXPORT] [--also EXPORT ...]
        [--work /tmp/nsys_bench] [--runs 3] [--big-runs 1]

A copy of a real export (default: ``../shared/formats/nsys/nsysai__mfu_2gpu_before.sqlite``, else the
sample) is grown under ``--work`` (never in ``../shared``) by doubling the rows of its activity tables
(kernels, memcpy, memset, runtime calls, NVTX events) with SQL ``INSERT … SELECT``, each copy shifted
past the last in time and in correlation id, until the file reaches ``--size-mb``.  Each figure is
one fresh interpreter (median of ``--runs``; ``--big-runs`` on the grown file): ``bare`` runs, through
``sqlite3``, the very queries the reader runs (built from ``profview.parsers.nsys``'s column lists and
handed to it as text, so it imports nothing but sqlite3), fetching in batches and dropping the rows;
``profview`` is ``load(..., use_cache=False).kernels()``; ``cached`` is the second of
two ``profview export --view kernels`` commands on one cache folder (as ``benchmarks/run.py``
measures a Kineto trace's re-open: the first keeps the kernel view, the second reads it).  Wall
and CPU seconds are both given (on a shared machine the wall ratio moves with the load).  Peak
memory is the process's maximum resident size.  Prints one markdown table.
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


def queries_of_reader() -> dict[str, tuple[tuple[str, ...], str]]:
    """Per table, the columns the reader selects and its filter (from ``profview.parsers.nsys``),
    handed to the bare read as text: the timed interpreter imports nothing but sqlite3."""
    from profview.parsers.nsys.gpu import (
        KERNEL_COLUMNS,
        KERNEL_TABLE,
        MEMCPY_COLUMNS,
        MEMCPY_TABLE,
        MEMSET_COLUMNS,
        MEMSET_TABLE,
    )
    from profview.parsers.nsys.host import (
        NVTX_MARK,
        NVTX_NUMBER_COLUMNS,
        NVTX_PUSH_POP,
        NVTX_START_END,
        NVTX_TABLE,
        RUNTIME_COLUMNS,
        RUNTIME_TABLE,
    )

    wanted = ", ".join(str(kind) for kind in (NVTX_MARK, NVTX_PUSH_POP, NVTX_START_END))
    columns = {
        KERNEL_TABLE: KERNEL_COLUMNS,
        MEMCPY_TABLE: MEMCPY_COLUMNS,
        MEMSET_TABLE: MEMSET_COLUMNS,
        RUNTIME_TABLE: RUNTIME_COLUMNS,
        NVTX_TABLE: (*NVTX_NUMBER_COLUMNS, "text"),
        "StringIds": ("id", "value"),
    }
    where = {NVTX_TABLE: f' WHERE "eventType" IN ({wanted})'}
    return {table: (names, where.get(table, "")) for table, names in columns.items()}


BARE = """
import resource, sqlite3, sys, time
t, c = time.perf_counter(), time.process_time()
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro&immutable=1", uri=True)
tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
rows = 0
for table, (columns, where) in QUERIES.items():
    if table in tables:
        held = {r[1] for r in db.execute(f'PRAGMA table_info("{table}")')}
        selected = ", ".join(f'"{c}"' if c in held else "NULL" for c in columns)
        cursor = db.execute(f'SELECT {selected} FROM "{table}"{where}')
        while batch := cursor.fetchmany(500_000):
            rows += len(batch)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, time.process_time() - c, usage.ru_maxrss * 1024, rows)
"""

#: The cached re-open as a Kineto trace's is measured (``benchmarks/run.py``): the command a user
#: runs, ``profview export --view kernels``, whose first run keeps the kernel view beside the cached
#: events; ``load(...).kernels()`` alone keeps no view, so its re-open recomputes the table from
#: every cached event (27 s for the grown export).
CACHED = """
import resource, subprocess, sys, time
t = time.perf_counter()
command = [sys.executable, "-m", "profview", "export", sys.argv[1], "--view", "kernels", "-o", sys.argv[2]]
subprocess.run([*command, "--force"], check=True, capture_output=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - t, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, 0)
"""

PROFVIEW = """
import resource, sys, time
t, c = time.perf_counter(), time.process_time()
import profview
table = profview.load(sys.argv[1], use_cache=sys.argv[2] == "1").kernels()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, time.process_time() - c, usage.ru_maxrss * 1024, table.height)
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


def timed(script: str, *args: str) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, peak bytes, rows) printed by ``script`` run in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", script, *args], check=True, capture_output=True, text=True).stdout
    seconds, cpu, peak, rows = out.split()
    return float(seconds), float(cpu), int(peak), int(rows)


def measure(path: Path, runs: int, work: Path, queries: dict[str, tuple[tuple[str, ...], str]]) -> str:
    """One markdown row: ``path``'s bare read, cold open and cached re-open (medians of ``runs``)."""
    bare_script = f"QUERIES = {queries!r}\n" + BARE
    bare = [timed(bare_script, str(path)) for _ in range(runs)]
    cold = [timed(PROFVIEW, str(path), "0") for _ in range(runs)]
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    env_script = f"import os; os.environ['PROFVIEW_CACHE_DIR'] = {str(cache)!r}\n" + CACHED
    out = str(work / "kernels.csv")
    timed(env_script, str(path), out)  # stores the entry and the kernel view
    cached = [timed(env_script, str(path), out) for _ in range(runs)]
    shutil.rmtree(cache, ignore_errors=True)
    b, bc = statistics.median(t[0] for t in bare), statistics.median(t[1] for t in bare)
    c, cc = statistics.median(t[0] for t in cold), statistics.median(t[1] for t in cold)
    r = statistics.median(t[0] for t in cached)
    peaks = f"{max(t[2] for t in bare) / 2**20:.0f} / {max(t[2] for t in cold) / 2**20:.0f}"
    size = path.stat().st_size / 2**20
    return (
        f"| {path.name} | {size:.1f} | {b:.2f} | {c:.2f} | {c / b:.2f}x | {bc:.2f} / {cc:.2f} ({cc / bc:.2f}x) "
        f"| {peaks} | {r:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE if DEFAULT_SOURCE.is_file() else SAMPLE)
    parser.add_argument("--also", type=Path, nargs="*", default=[], help="more exports to measure as they are")
    parser.add_argument("--work", type=Path, default=Path("/tmp/nsys_bench"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big-runs", type=int, default=1, help="runs on the grown export")
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
    queries = queries_of_reader()
    print(
        "| export | MB | bare sqlite3 s | profview cold s | ratio | CPU s bare / profview (ratio) "
        "| peak MB (bare / profview) | cached re-open s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in (options.source, *options.also):
        print(measure(path, options.runs, options.work, queries), flush=True)
    print(measure(big, options.big_runs, options.work, queries), flush=True)


if __name__ == "__main__":
    main()
