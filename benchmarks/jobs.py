"""Benchmark: a job of N ranks made from one real trace, summarised serially and on the pool.

    .venv/bin/python benchmarks/jobs.py            # 16, 32, 64 ranks
    .venv/bin/python benchmarks/jobs.py --big      # ... and 128, 256
    .venv/bin/python benchmarks/jobs.py --scale    # 8, 256, 1,024 tiny ranks: cold and re-open
    .venv/bin/python benchmarks/jobs.py --goals --base /work/base-db37547/.venv/bin/python   # the scale goals
    .venv/bin/python benchmarks/jobs.py --reopen-goals --base-cold /work/base-729457a/.venv/bin/python
    .venv/bin/python benchmarks/jobs.py --memory --base /work/base-db37547/.venv/bin/python  # flat memory

``--goals``: every goal of the scale work, each with this run's figure, its baseline and PASS or
FAIL: the ``--memory`` runs of 8 and 1,024 DLRM ranks (beside ``--base``, db37547's checkout) and
of 8 and 10,000 tiny ranks, the tiny jobs re-opened ``--runs`` more times (medians), the 8 DLRM
ranks on a Dask cluster against the pool, byte for byte, and with ``--base-cold`` (729457a's
checkout) a 128-rank cold open beside it.

``--memory``: the peak memory of a job's processes as its ranks grow.  DLRM ranks (the eight of
samples/param_dlrm_8rank_v100.tar.gz fanned out to 8, 128 and 1,024 with their rank rewritten) and
10,000 tiny ranks (the gloo rank, as ``--scale``): each opened cold and re-opened in a fresh process
that builds the ranks and collectives views and writes the collectives view as CSV; the peak RSS
of that process (the job's parent) and of its largest worker, polled; wall and CPU.  With
``--base`` (another checkout's Python) the same runs on that checkout, beside each line, and the
CSVs of both are compared byte for byte.  The goals: 1,024 DLRM ranks' parent at most 2x the
8-rank one's and at most the base's; 10,000 ranks open, re-open within 2x the 8-rank re-open,
peak within 3x the 8-rank peak.

``--reopen-goals`` prints two ratios in one run: a 128-rank job's cold open (each rank
samples/gpt2_train_bf16, plain JSON) against the same with ``--base`` (another checkout's Python,
``--base-cold``, e.g. commit 729457a in its own worktree and venv), interleaved, medians of ``--runs``: wall time and
the CPU time of every process (the child's and its workers', from ``RUSAGE_CHILDREN``; goal ≤ 0.9x,
issue 42); and ``profview summary`` of a 1,024-rank job re-opened against an 8-rank one's (tiny
ranks, as ``--scale``; goal ≤ 1.6x, issue 42).  Both sides run ``profview.load(DIR, use_cache=False)`` and the
ranks and collectives views, which both versions have.

``--scale`` (issue 23): each rank is ``samples/gloo_2rank/rank0.pt.trace.json.gz`` (612 events,
16 KB gzipped) with ``distributedInfo`` rewritten, written once under /tmp and deleted at the
end.  Every measurement runs in a fresh process (``open_job`` on the default pool, then the ranks
and collectives views): ``cold`` (empty cache), ``re-open`` (the whole job read from its one saved
summary, :mod:`profview.store.job_summaries`), ``by rank`` (that summary removed: each rank's
saved summary read, the re-open of before).  Peak RSS of every process: the parent's
``ru_maxrss`` and each worker's ``VmHWM``, polled every 50 ms while it runs.

Each rank is samples/gpt2_train_bf16.pt.trace.json.gz with ``distributedInfo.rank`` rewritten
(plain JSON, written once into a temporary folder).  Every measurement runs in a fresh Python
process: wall time of :func:`profview.jobs.job.open_job` plus building the ranks and collectives
views, the parent's peak RSS, and the largest worker's peak RSS (``RUSAGE_CHILDREN``; in the
serial run the parent does the work).  ``one rank`` is the peak RSS of a process that summarises
one trace: the bound the issue sets is 2× that for every process.  The cache is off, except for
the ``cached re-open`` line (a second open of the same folder, reading saved summaries only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "samples" / "gpt2_train_bf16.pt.trace.json.gz"


def make_job(folder: Path, ranks: int) -> None:
    """``ranks`` copies of the trace with their rank and world size set."""
    import gzip

    import orjson

    doc = orjson.loads(gzip.decompress(TRACE.read_bytes()))
    for rank in range(ranks):
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": ranks}
        (folder / f"rank{rank}.json").write_bytes(orjson.dumps(doc))


def make(folder: Path, ranks: int) -> None:
    """:func:`make_job` in a child process: this process stays small, and the measured processes
    (which start as forks of it) do not inherit its peak memory."""
    subprocess.run([sys.executable, __file__, "--make", str(folder), str(ranks)], check=True)


def measure(folder: Path, workers: int, cache: bool = False, one: bool = False) -> dict:
    """Run one measurement in a fresh process; return its JSON."""
    args = [sys.executable, __file__, "--child", str(folder), str(workers), str(int(cache)), str(int(one))]
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def child(folder: str, workers: int, cache: bool, one: bool) -> None:
    import resource

    from profview.jobs.job import open_job
    from profview.jobs.rank_summary import summarise_rank

    started = time.perf_counter()
    if one:
        summarise_rank(str(Path(folder) / "rank0.json"), None, False)
    else:
        with open_job(folder, workers=workers, use_cache=cache) as job:
            job.ranks_view()
            job.collectives()
    wall = time.perf_counter() - started
    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"wall_s": round(wall, 2), "parent_mb": round(parent), "worker_mb": round(children)}))


TINY = ROOT / "samples" / "gloo_2rank" / "rank0.pt.trace.json.gz"


def make_tiny_job(folder: Path, ranks: int) -> None:
    """``ranks`` gzipped copies of the gloo trace, each with its rank and the world size set."""
    import gzip

    import orjson

    doc = orjson.loads(gzip.decompress(TINY.read_bytes()))
    for rank in range(ranks):
        doc["distributedInfo"] = {**doc["distributedInfo"], "rank": rank, "world_size": ranks}
        (folder / f"rank{rank}.json.gz").write_bytes(gzip.compress(orjson.dumps(doc), 6))


class PeakWatch:
    """Peak RSS (VmHWM) of this process's children, polled while it runs."""

    def __init__(self) -> None:
        self.peaks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.05):
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    if int(stat.rsplit(")", 1)[1].split()[1]) != me:
                        continue
                    for line in Path(f"/proc/{entry}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            kib = int(line.split()[1])
                            self.peaks[int(entry)] = max(self.peaks.get(int(entry), 0), kib)
                except (OSError, ValueError, IndexError):
                    continue

    def stop(self) -> dict[int, int]:
        self._stop.set()
        self._thread.join()
        return self.peaks


def scale_child(folder: str) -> None:
    """One scale measurement (in a fresh process): print its JSON."""
    import resource

    watch = PeakWatch()
    from profview.jobs.job import open_job

    started = time.perf_counter()
    with open_job(folder) as job:
        job.ranks_view()
        job.collectives()
        ranks = len(job.ranks)
    wall = time.perf_counter() - started
    workers = watch.stop()
    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    worker_mb = sorted((round(k / 1024) for k in workers.values()), reverse=True)
    result = {"wall_s": round(wall, 2), "ranks": ranks, "parent_mb": round(parent / 1024), "workers_mb": worker_mb}
    print(json.dumps(result))


def scale_measure(folder: Path, cache: Path) -> dict:
    env = {**os.environ, "PROFVIEW_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, __file__, "--scale-child", str(folder)], check=True, capture_output=True, text=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def scale(sizes: list[int]) -> None:
    """Tiny ranks at scale: cold, re-open (one saved job), and re-open rank by rank."""
    from profview.jobs.executors import default_workers

    print(f"rank: {TINY.relative_to(ROOT)} (rewritten); pool: {default_workers()} workers; {os.cpu_count()} cores")
    print(f"{'ranks':>5} {'run':>8} {'wall s':>7} {'ms/rank':>7} {'parent MB':>9}  workers' peak MB")
    scratch = Path(tempfile.mkdtemp(prefix="profview-bench-"))
    try:
        for n in sizes:
            folder = scratch / f"job{n}"
            folder.mkdir()
            subprocess.run([sys.executable, __file__, "--make-tiny", str(folder), str(n)], check=True)
            cache = scratch / f"cache{n}"
            for run in ("cold", "re-open", "by rank"):
                if run == "by rank":
                    shutil.rmtree(cache / "jobs", ignore_errors=True)
                got = scale_measure(folder, cache)
                assert got["ranks"] == n, got
                per_rank = 1000 * got["wall_s"] / n
                workers = ", ".join(map(str, got["workers_mb"])) or "-"
                print(f"{n:>5} {run:>8} {got['wall_s']:>7} {per_rank:>7.1f} {got['parent_mb']:>9}  {workers}")
            shutil.rmtree(folder)
            shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


DLRM = ROOT / "samples" / "param_dlrm_8rank_v100.tar.gz"


def make_dlrm_job(folder: Path, ranks: int) -> None:
    """``ranks`` plain traces: the DLRM job's eight ranks in turn, each with its rank and the world
    size rewritten."""
    import tarfile

    import orjson

    with tarfile.open(DLRM) as archive:
        members = sorted((m for m in archive.getmembers() if m.isfile()), key=lambda m: m.name)
        docs = [orjson.loads(archive.extractfile(m).read()) for m in members]  # type: ignore[union-attr]
    for rank in range(ranks):
        doc = docs[rank % len(docs)]
        doc["distributedInfo"] = {**doc["distributedInfo"], "rank": rank, "world_size": ranks}
        (folder / f"rank{rank}.json").write_bytes(orjson.dumps(doc))


def memory_child(folder: str, out: str) -> None:
    """One ``--memory`` measurement (in a fresh process): the job opened, its ranks and collectives
    views built and the collectives written to ``out``; print its JSON."""
    import resource

    watch = PeakWatch()
    started, cpu0 = time.perf_counter(), time.process_time()
    from profview.jobs.job import open_job

    with open_job(folder) as job:
        job.ranks_view()
        job.collectives().write_csv(out)
        ranks = len(job.ranks)
    wall = time.perf_counter() - started
    workers = watch.stop()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - cpu0 + usage.ru_utime + usage.ru_stime
    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "ranks": ranks,
                "parent_mb": round(parent / 1024),
                "worker_mb": max((round(k / 1024) for k in workers.values()), default=0),
            }
        )
    )


def memory(
    sizes: list[int], tiny: int, base: str | None, tiny_sizes: tuple[int, ...] = (), base_tiny: bool = True
) -> dict:
    """The ``--memory`` table (see the module's doc); what each run gave, by (job, run, side),
    ``"csv same"`` by (job, run) where ``base`` ran too.  ``tiny_sizes``: more tiny-rank jobs
    (the small job the tiny goals divide by); ``base_tiny``: the base runs the tiny jobs too (its
    10,000-rank cold open takes minutes, and no goal compares with it)."""
    sides = [("this", sys.executable)] + ([("base", base)] if base else [])
    print(
        f"{'job':>16} {'run':>7} "
        + "  ".join(f"{label + ' wall s':>11} {'CPU s':>6} {'parent MB':>9} {'worker MB':>9}" for label, _ in sides)
    )
    found: dict[tuple[str, str, str], dict] = {}
    scratch = Path(tempfile.mkdtemp(prefix="profview-bench-"))
    try:
        jobs = [(f"{n} DLRM ranks", n, "--make-dlrm") for n in sizes] + [
            (f"{n:,} tiny ranks", n, "--make-tiny") for n in (*tiny_sizes, *([tiny] if tiny else []))
        ]
        for label, n, maker in jobs:
            folder = scratch / f"job{n}{maker}"
            folder.mkdir()
            subprocess.run([sys.executable, __file__, maker, str(folder), str(n)], check=True)
            for run in ("cold", "re-open"):
                cells = []
                for side, python in sides if base_tiny or maker != "--make-tiny" else sides[:1]:
                    env = {**os.environ, "PROFVIEW_CACHE_DIR": str(scratch / f"cache-{side}-{n}{maker}")}
                    out = scratch / f"{side}-{n}{maker}-{run}.csv"
                    done = subprocess.run(
                        [python, __file__, "--memory-child", str(folder), str(out)],
                        check=True,
                        capture_output=True,
                        text=True,
                        env=env,
                    )
                    got = json.loads(done.stdout.strip().splitlines()[-1])
                    assert got["ranks"] == n, got
                    found[(label, run, side)] = got
                    cells.append(f"{got['wall_s']:>11} {got['cpu_s']:>6} {got['parent_mb']:>9} {got['worker_mb']:>9}")
                same = ""
                if base and len(cells) == len(sides):
                    ours, theirs = (
                        (scratch / f"{side}-{n}{maker}-{run}.csv").read_bytes() for side in ("this", "base")
                    )
                    comparable = ours.split(b"\n", 1)[0] == theirs.split(b"\n", 1)[0]  # the same columns
                    found[(label, run, "csv same")] = {"same": ours == theirs, "comparable": comparable}
                    same = "  CSV same" if ours == theirs else "  CSV DIFFERS" if comparable else "  CSV columns differ"
                print(f"{label:>16} {run:>7} " + "  ".join(cells) + same, flush=True)
            if reopens := REOPENS.get(n if maker == "--make-tiny" else -1):
                found[(label, "re-opens", "this")] = _reopens(folder, scratch / f"cache-this-{n}{maker}", reopens)
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return found


#: Tiny-rank jobs re-opened this many more times (``--goals``: medians), by rank count.
REOPENS: dict[int, int] = {}


def _reopens(folder: Path, cache: Path, runs: int) -> dict:
    """More re-opens of ``folder`` from ``cache``: each run's wall and CPU, and their medians."""
    env = {"PROFVIEW_CACHE_DIR": str(cache)}
    command = [sys.executable, __file__, "--memory-child", str(folder), os.devnull]
    got = [timed(command, env) for _ in range(runs)]
    return {
        "walls": [w for w, _c, _l in got],
        "wall_s": median([w for w, _c, _l in got]),
        "cpu_s": median([c for _w, c, _l in got]),
    }


def print_memory_goals(found: dict, sizes: list[int], tiny: int, base: bool) -> None:
    """``--memory``'s goal lines (this run's ratios)."""
    peak = {key: max(got["parent_mb"], got["worker_mb"]) for key, got in found.items() if "parent_mb" in got}
    small, large = f"{sizes[0]} DLRM ranks", f"{sizes[-1]} DLRM ranks"
    print("\nGoals (this run):")
    ratio = found[(large, "cold", "this")]["parent_mb"] / found[(small, "cold", "this")]["parent_mb"]
    print(f"  {large}: parent peak / {small}'s, cold (goal ≤ 2x)          {ratio:6.2f}x")
    if base:
        ratio = found[(large, "cold", "this")]["parent_mb"] / found[(large, "cold", "base")]["parent_mb"]
        print(f"  {large}: parent peak / the base's, cold (goal ≤ 1x)      {ratio:6.2f}x")
    if tiny:
        many = f"{tiny:,} tiny ranks"
        ratio = found[(many, "re-open", "this")]["wall_s"] / found[(small, "re-open", "this")]["wall_s"]
        print(f"  {many}: re-open wall / {small}'s (goal ≤ 2x)           {ratio:6.2f}x")
        ratio = max(peak[(many, run, "this")] for run in ("cold", "re-open")) / max(
            peak[(small, run, "this")] for run in ("cold", "re-open")
        )
        print(f"  {many}: largest process's peak / {small}'s (goal ≤ 3x) {ratio:6.2f}x")


#: The tiny-rank job of the scale goals, and the job its goals divide by.
TINY_GOAL, TINY_SMALL = 10_000, 8


def dask_child(folder: str, out: str) -> None:
    """The job opened on a Dask cluster in this process (no cache: every rank summarised there),
    its collectives view written to ``out``."""
    import distributed

    from profview.jobs.job import open_job

    with (
        distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster,
        open_job(folder, dask=cluster.scheduler_address, use_cache=False) as job,
    ):
        job.collectives().write_csv(out)


def dask_same_bytes(ranks: int = 8) -> bool:
    """Whether a DLRM job of ``ranks`` opened on Dask writes the collectives CSV the pool writes."""
    with tempfile.TemporaryDirectory(prefix="profview-bench-") as scratch:
        folder, pool, dask = Path(scratch) / "job", Path(scratch) / "pool.csv", Path(scratch) / "dask.csv"
        folder.mkdir()
        subprocess.run([sys.executable, __file__, "--make-dlrm", str(folder), str(ranks)], check=True)
        env = {**os.environ, "PROFVIEW_CACHE_DIR": str(Path(scratch) / "cache")}
        subprocess.run(
            [sys.executable, __file__, "--memory-child", str(folder), str(pool)],
            check=True,
            capture_output=True,
            env=env,
        )
        subprocess.run(
            [sys.executable, __file__, "--dask-child", str(folder), str(dask)], check=True, capture_output=True, env=env
        )
        return pool.read_bytes() == dask.read_bytes()


def cold_open_medians(base: str, ranks: int, runs: int) -> dict[str, tuple[float, float]]:
    """(median wall, median CPU of every process) of a ``ranks``-rank job's cold open (each rank
    the gpt2 sample), this checkout and ``base`` interleaved, ``runs`` each."""
    with tempfile.TemporaryDirectory(prefix="profview-bench-") as scratch:
        folder = Path(scratch) / f"job{ranks}"
        folder.mkdir()
        make(folder, ranks)
        found: dict[str, list[tuple[float, float, int]]] = {"this": [], "base": []}
        for _ in range(runs):
            for side, python in (("this", sys.executable), ("base", base)):
                found[side].append(timed([python, "-c", COLD_OPEN, str(folder)]))
    return {side: (median([w for w, _c, _l in got]), median([c for _w, c, _l in got])) for side, got in found.items()}


def scale_goals(
    base: str | None, base_cold: str | None, runs: int, dlrm: tuple[int, int] = (8, 1024), tiny: int = TINY_GOAL
) -> None:
    """Every goal of the scale work with this run's figure, its baseline and PASS or FAIL: the
    ``--memory`` jobs (8 and 1,024 DLRM ranks, ``base``: db37547's checkout beside; 8 and 10,000
    tiny ranks, this checkout only), the tiny jobs re-opened ``runs`` more times (medians), a Dask run's bytes,
    and with ``base_cold`` (729457a's checkout) a 128-rank cold open beside it."""
    REOPENS.update({TINY_SMALL: runs, tiny: runs})
    sizes = list(dlrm)
    found = memory(sizes, tiny, base, tiny_sizes=(TINY_SMALL,), base_tiny=False)
    print_memory_goals(found, sizes, 0, bool(base))
    rows: list[tuple[str, str, str, str]] = []

    def goal(what: str, figure: str, baseline: str, met: bool | None) -> None:
        rows.append((what, figure, baseline, "not measured" if met is None else "PASS" if met else "FAIL"))

    few_dlrm, many_dlrm = (f"{n} DLRM ranks" for n in sizes)
    small, large = found[(few_dlrm, "cold", "this")], found[(many_dlrm, "cold", "this")]
    goal(
        f"{many_dlrm}: parent peak ≤ 2x the {few_dlrm}' (cold)",
        f"{large['parent_mb']} MB",
        f"{few_dlrm} {small['parent_mb']} MB ({large['parent_mb'] / small['parent_mb']:.2f}x)",
        large["parent_mb"] <= 2 * small["parent_mb"],
    )
    if base:
        theirs = found[(many_dlrm, "cold", "base")]
        goal(
            f"{many_dlrm}: parent peak ≤ db37547's (cold)",
            f"{large['parent_mb']} MB",
            f"db37547 {theirs['parent_mb']} MB",
            large["parent_mb"] <= theirs["parent_mb"],
        )
        checks = [got for key, got in found.items() if key[2] == "csv same"]
        if all(got["comparable"] for got in checks):
            same = all(got["same"] for got in checks)
            goal("the DLRM jobs' collectives CSV: db37547's bytes", "same" if same else "DIFFERS", "db37547", same)
        else:  # the view itself changed between the two versions: bytes say nothing of this work
            goal("the DLRM jobs' collectives CSV: db37547's bytes", "its columns differ", "db37547", None)
    else:
        goal(f"{many_dlrm}: parent peak ≤ db37547's (cold)", "-", "no --base", None)
    many, few = f"{tiny:,} tiny ranks", f"{TINY_SMALL} tiny ranks"
    goal(
        f"{many}: the job opens (cold, and re-opened)", f"{found[(many, 'cold', 'this')]['wall_s']} s cold", "-", True
    )  # memory() stops with an error on a job that does not open
    ours, theirs = found[(many, "re-opens", "this")], found[(few, "re-opens", "this")]
    goal(
        f"{many}: re-open wall ≤ 2x the {TINY_SMALL}-rank re-open (medians of {runs})",
        f"{ours['wall_s']:.2f} s (CPU {ours['cpu_s']:.2f} s)",
        f"{theirs['wall_s']:.2f} s (CPU {theirs['cpu_s']:.2f} s): {ours['wall_s'] / theirs['wall_s']:.2f}x "
        f"(CPU {ours['cpu_s'] / theirs['cpu_s']:.2f}x)",
        ours["wall_s"] <= 2 * theirs["wall_s"],
    )
    ours_peak = max(
        max(found[(many, run, "this")]["parent_mb"], found[(many, run, "this")]["worker_mb"])
        for run in ("cold", "re-open")
    )
    their_peak = max(
        max(found[(few, run, "this")]["parent_mb"], found[(few, run, "this")]["worker_mb"])
        for run in ("cold", "re-open")
    )
    goal(
        f"{many}: the largest process's peak ≤ 3x the {TINY_SMALL}-rank job's",
        f"{ours_peak} MB",
        f"{their_peak} MB ({ours_peak / their_peak:.2f}x)",
        ours_peak <= 3 * their_peak,
    )
    if base_cold:
        cold = cold_open_medians(base_cold, 128, runs)
        (wall, cpu), (base_wall, base_cpu) = cold["this"], cold["base"]
        goal(
            f"128-rank cold open: wall ≤ 0.9x 729457a's (medians of {runs})",
            f"{wall:.2f} s",
            f"{base_wall:.2f} s ({wall / base_wall:.2f}x)",
            wall <= 0.9 * base_wall,
        )
        goal(
            "128-rank cold open: CPU of every process ≤ 0.9x 729457a's",
            f"{cpu:.2f} s",
            f"{base_cpu:.2f} s ({cpu / base_cpu:.2f}x)",
            cpu <= 0.9 * base_cpu,
        )
    else:
        goal("128-rank cold open ≤ 0.9x 729457a, wall and CPU", "-", "no --base-cold", None)
    same = dask_same_bytes()
    goal(
        "8 DLRM ranks on Dask: the pool's collectives CSV, byte for byte",
        "same" if same else "DIFFERS",
        "the pool",
        same,
    )
    print("\nScale goals (this run):")
    for what, figure, baseline, verdict in rows:
        print(f"  {verdict:<12} {what}\n               this run: {figure}; baseline: {baseline}")


COLD_OPEN = (
    "import sys, profview; job = profview.load(sys.argv[1], use_cache=False); job.ranks_view(); job.collectives()"
)


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process and of every process it started, processes left
    running after it exited) of one run.  This process is made their subreaper, so a worker the
    command left behind is re-parented here and reaped (its CPU counted once it ends; one still
    running 10 s later is killed and counted as left)."""
    import resource

    _become_subreaper()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    left = _reap_orphans(10.0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, left


def _become_subreaper() -> None:
    """Orphans of the processes this one starts come here instead of to init (Linux)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # not Linux: orphans go uncounted
        return


def _reap_orphans(wait_s: float) -> int:
    """Reap the processes re-parented here; kill those still running after ``wait_s``: how many
    (one that exits within ``wait_s``, as multiprocessing's resource tracker does, is not left)."""
    deadline = time.monotonic() + wait_s
    killed = 0
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # none left
            return killed
        if pid:
            continue
        if time.monotonic() > deadline:
            for pid in _children():
                os.kill(pid, 9)
                killed += 1
            os.waitpid(-1, 0)
            continue
        time.sleep(0.05)


def _children() -> list[int]:
    """This process's children (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.append(int(entry))
    return found


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def goals(base: str | None, ranks: int, runs: int, sizes: tuple[int, int] = (8, 1024)) -> None:
    """The ``--goals`` ratios: a 128-rank cold open against ``--base``, a 1,024-rank re-open against 8 ranks."""
    ratios: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="profview-bench-") as scratch:
        folder = Path(scratch) / f"job{ranks}"
        folder.mkdir()
        make(folder, ranks)
        sides = [("this checkout", sys.executable)] + ([(f"base ({base})", base)] if base else [])
        found: dict[str, list[tuple[float, float, int]]] = {label: [] for label, _ in sides}
        for _ in range(runs):  # interleaved: the machine's load falls on both alike
            for label, python in sides:
                found[label].append(timed([python, "-c", COLD_OPEN, str(folder)]))
        print(f"{ranks}-rank job, cold open (load + ranks + collectives views), medians of {runs}, interleaved:")
        for label, got in found.items():
            walls = ", ".join(f"{w:.1f}" for w, _c, _l in got)
            cpus = ", ".join(f"{c:.1f}" for _w, c, _l in got)
            left = max(n for _w, _c, n in got)
            print(
                f"  {label:<44} wall {median([w for w, _c, _l in got]):6.2f} s ({walls})  "
                f"CPU {median([c for _w, c, _l in got]):6.2f} s ({cpus})  left running: {left}"
            )
        if base:
            ours, theirs = found["this checkout"], found[sides[1][0]]
            for i, what in ((0, "wall"), (1, "CPU of every process")):
                ratio = median([r[i] for r in ours]) / median([r[i] for r in theirs])
                ratios[f"{ranks}-rank cold open, {what}: this / base (goal ≤ 0.9x)"] = ratio
        # Both jobs made and opened cold first; then their re-opens interleaved, so that the load
        # of a shared machine falls on both sizes alike (they ran one size after the other before).
        commands: dict[int, tuple[list[str], dict[str, str]]] = {}
        for n in sizes:
            tiny = Path(scratch) / f"tiny{n}"
            tiny.mkdir()
            subprocess.run([sys.executable, __file__, "--make-tiny", str(tiny), str(n)], check=True)
            env = {"PROFVIEW_CACHE_DIR": str(Path(scratch) / f"cache{n}")}
            commands[n] = ([sys.executable, "-m", "profview", "summary", str(tiny)], env)
            cold = timed(*commands[n])  # fills the cache
            print(f"{n:>5} tiny ranks: profview summary cold {cold[0]:.1f} s")
        reopened: dict[int, list[tuple[float, float, int]]] = {n: [] for n in sizes}
        for _ in range(runs):
            for n in sizes:
                reopened[n].append(timed(*commands[n]))
        for n, got in reopened.items():
            print(
                f"{n:>5} tiny ranks re-opened: wall {median([w for w, _c, _l in got]):.2f} s "
                f"({', '.join(f'{w:.2f}' for w, _c, _l in got)}), CPU {median([c for _w, c, _l in got]):.2f} s "
                f"(medians of {runs}, interleaved)"
            )
        small, large = sizes
        for i, what in ((0, "wall"), (1, "CPU")):
            ratio = median([r[i] for r in reopened[large]]) / median([r[i] for r in reopened[small]])
            ratios[f"{large:,}-rank re-open / {small}-rank re-open, {what} (goal ≤ 1.6x)"] = ratio
    print("\nRatios (this run):")
    for label, ratio in ratios.items():
        print(f"  {label:<72} {ratio:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="also 128 and 256 ranks")
    parser.add_argument("--workers", type=int, default=None, help="pool size (default: all cores)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--make", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--scale", action="store_true", help="8, 256 and 1,024 tiny ranks, cold and re-open")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[8, 256, 1024], help="--scale: these sizes; --goals: the first and last"
    )
    parser.add_argument("--scale-child", help=argparse.SUPPRESS)
    parser.add_argument("--make-tiny", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--goals", action="store_true", help="the scale goals, PASS/FAIL (see --base, --base-cold)")
    parser.add_argument("--reopen-goals", action="store_true", help="the earlier cold-open and re-open ratios")
    parser.add_argument("--base", help="--memory, --goals: the memory baseline's Python (db37547's checkout)")
    parser.add_argument("--base-cold", help="--goals, --reopen-goals: the cold-open baseline's Python (729457a's)")
    parser.add_argument("--dask-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--ranks", type=int, default=128, help="--goals: ranks of the cold-open job")
    parser.add_argument("--runs", type=int, default=3, help="--goals: runs of each measurement")
    parser.add_argument("--memory", action="store_true", help="peak memory as the ranks grow (see --dlrm, --tiny)")
    parser.add_argument(
        "--dlrm", type=int, nargs="+", default=[8, 128, 1024], help="--memory: DLRM job sizes (--goals: first, last)"
    )
    parser.add_argument("--tiny", type=int, default=10_000, help="--memory, --goals: ranks of the tiny job (0: none)")
    parser.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--make-dlrm", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory:
        print_memory_goals(memory(args.dlrm, args.tiny, args.base), args.dlrm, args.tiny, bool(args.base))
        return
    if args.goals:
        scale_goals(args.base, args.base_cold, args.runs, (args.dlrm[0], args.dlrm[-1]), args.tiny)
        return
    if args.dask_child:
        dask_child(*args.dask_child)
        return
    if args.memory_child:
        memory_child(*args.memory_child)
        return
    if args.make_dlrm:
        make_dlrm_job(Path(args.make_dlrm[0]), int(args.make_dlrm[1]))
        return
    if args.reopen_goals:
        goals(args.base_cold, args.ranks, args.runs, (args.sizes[0], args.sizes[-1]))
        return
    if args.scale_child:
        scale_child(args.scale_child)
        return
    if args.make_tiny:
        make_tiny_job(Path(args.make_tiny[0]), int(args.make_tiny[1]))
        return
    if args.scale:
        scale(args.sizes)
        return
    if args.make:
        make_job(Path(args.make[0]), int(args.make[1]))
        return
    if args.child:
        folder, workers, cache, one = args.child
        child(folder, int(workers), cache == "1", one == "1")
        return
    from profview.jobs.executors import default_workers

    workers = args.workers or default_workers()
    sizes = [16, 32, 64] + ([128, 256] if args.big else [])
    print(f"trace: {TRACE.name}; pool: {workers} workers (spawn); {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as scratch:
        one_dir = Path(scratch) / "one"
        one_dir.mkdir()
        make(one_dir, 1)
        one = measure(one_dir, 1, one=True)
        print(f"one rank: {one['wall_s']} s, peak RSS {one['parent_mb']} MB")
        print(f"{'ranks':>5} {'serial s':>9} {'pool s':>7} {'speed-up':>8} {'pool/serial':>11} "
              f"{'parent MB':>9} {'worker MB':>9} {'serial MB':>9} {'time ×':>7}")  # fmt: skip
        previous = None
        for n in sizes:
            folder = Path(scratch) / f"job{n}"
            folder.mkdir()
            make(folder, n)
            serial = measure(folder, 1)
            pool = measure(folder, workers)
            growth = f"{pool['wall_s'] / previous:.2f}" if previous else "-"
            previous = pool["wall_s"]
            print(
                f"{n:>5} {serial['wall_s']:>9} {pool['wall_s']:>7} {serial['wall_s'] / pool['wall_s']:>8.2f} "
                f"{pool['wall_s'] / serial['wall_s']:>11.2f} {pool['parent_mb']:>9} {pool['worker_mb']:>9} "
                f"{serial['parent_mb']:>9} {growth:>7}"
            )
            if n == 64:
                cache_dir = Path(scratch) / "cache"
                os.environ["PROFVIEW_CACHE_DIR"] = str(cache_dir)
                measure(folder, workers, cache=True)
                again = measure(folder, workers, cache=True)
                print(f"   64 cached re-open: {again['wall_s']} s (summaries read from the cache)")
                del os.environ["PROFVIEW_CACHE_DIR"]
            for path in folder.iterdir():
                path.unlink()


if __name__ == "__main__":
    main()
