"""One-command benchmark: profview against baselines, in the same session, on the same files.

    python benchmarks/run.py --hta-python /path/to/hta-venv/bin/python
    python benchmarks/run.py --quick         # gpt2_train_big only
    python benchmarks/run.py --goals --hta-python H --base-python ../base/.venv/bin/python   # issues 32, 42
    python benchmarks/run.py --quick --parts floor --runs 7   # issue 42: the read against its floor
    python benchmarks/run.py --quick --parts cached,reopen --runs 7 --base-python B   # issue 42: cached re-opens
    python benchmarks/run.py --quick --parts cores --pin 0,1 --runs 3   # all cores vs 2 (a 16-core node)

Each measurement runs in a fresh subprocess (imports included, as a user sees it) and reports
wall time and peak RSS (from wait4).  Baselines: ``json.load`` always; Holistic Trace Analysis
when ``--hta-python`` can import it.  Scaled traces (250/500/1000 MB in the three layouts) are
made once by ``../shared/tools/scale_trace.py`` and kept in ``--dir``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
BIG = SHARED / "traces" / "gpt2_train_big.pt.trace.json.gz"
SCALE = SHARED / "tools" / "scale_trace.py"
ONE_CORE = {"POLARS_MAX_THREADS": "1"}
#: The ratios with goals, gathered as the benchmarks run and printed together at the end.
RATIOS: dict[str, float] = {}
#: Goals in milliseconds (the viewer's drill-down, issue 25), printed with the ratios.
VIEWER_DRILL_MS: dict[str, float] = {}
#: The benchmarks ``--parts`` chooses from, in the order they run.
PARTS = ("big", "memory", "drill", "first", "scaled", "viewer", "interactive")
#: Issue 32: a 649 MB trace against json.load, and the viewer's cached re-open against ``summary``.
PARTS += ("json649", "reopen")
#: Issue 32: a cold kernel export on every core against the same pinned to ``--pin`` (16 cores vs 2).
PARTS += ("cores",)
#: Issue 42: the read alone against its floor, max(inflating, ``import polars``) + building the frame.
PARTS += ("floor",)
#: Issue 42: the cached CLI re-open alone (``big`` measures it too, after HTA and the cold exports).
PARTS += ("cached",)
#: ``--goals``: issue 32's and issue 42's goals in one run (with ``--runs 3``).
GOAL_PARTS = "big,json649,first,reopen,floor,fraction"
#: Another checkout's Python (``--base-python``): the figures it gives, printed beside ours.
BASE: dict[str, str] = {}
#: Goals that are a yes or no (a trace opens under a limit), printed with the ratios.
OUTCOMES: dict[str, str] = {}
#: ``--goals``: the scale goals, each (goal, this run's figure, its baseline's figure, ratio, limit,
#: whether the ratio must be at most the limit), printed with PASS or FAIL at the end.
GOALS: list[tuple[str, str, str, float, float, bool]] = []
#: Issue 54: the parallel fraction of the read from each thread's CPU seconds (benchmarks/parallel_fraction.py).
PARTS += ("fraction",)


def compile_bytecode(python: str = sys.executable) -> None:
    """Write the bytecode of ``python``'s profview (as an installed package has it) before anything is
    timed: where ``PYTHONDONTWRITEBYTECODE`` is set (this project's machine sets it), every fresh
    process compiled profview's modules from source, about 0.1 s of each cached re-open (issue 42)."""
    code = (
        "import compileall, os, re, profview; "
        "compileall.compile_dir(os.path.dirname(profview.__file__), quiet=2, "
        "rx=re.compile(r'[/\\\\](\\.venv|tests|samples|build)[/\\\\]'))"
    )
    subprocess.run([python, "-c", code], check=False)


def measure(command: list[str], env: dict[str, str] | None = None, cores: str | None = None) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one subprocess; ``cores`` pins it with taskset (e.g. "0").

    MB here is 10^6 bytes, as for the JSON sizes the ratios divide by (``ru_maxrss`` is in KiB:
    the benchmark divided it by 1024 before, a MiB against a JSON MB, which read 4.9% low)."""
    if cores is not None:
        command = ["taskset", "-c", cores, *command]
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        error = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        raise SystemExit(f"benchmark command failed: {' '.join(command)}\n{error}")
    return elapsed, usage.ru_maxrss * 1024 / 1e6


def profview_export(
    trace: Path, out: Path, view: str = "kernels", *extra: str, python: str = sys.executable
) -> list[str]:
    command = [python, "-m", "profview", "export", str(trace), "-v", view, "-o", str(out)]
    return [*command, "--force", *extra]


def load_events(trace: Path) -> list[str]:
    """The read alone: ``profview.load`` to the events frame (the reading path, no tables)."""
    code = "import sys, profview; profview.load(sys.argv[1], use_cache=False).events"
    return [sys.executable, "-c", code, str(trace)]


def json_load(trace: Path) -> list[str]:
    code = (
        "import gzip, json, sys; p = sys.argv[1]; "
        "f = gzip.open(p, 'rt') if p.endswith('.gz') else open(p); json.load(f)"
    )
    return [sys.executable, "-c", code, str(trace)]


def hta_load(trace: Path, python: str) -> list[str] | None:
    """HTA's TraceAnalysis on a folder holding only this trace, if ``python`` has HTA."""
    probe = subprocess.run([python, "-c", "import hta.trace_analysis"], capture_output=True)
    if probe.returncode != 0:
        return None
    folder = Path(tempfile.mkdtemp(prefix="hta-"))
    (folder / trace.name).symlink_to(trace.resolve())
    code = "import sys; from hta.trace_analysis import TraceAnalysis; TraceAnalysis(trace_dir=sys.argv[1])"
    return [python, "-c", code, str(folder)]


def json_size(trace: Path) -> int:
    """Bytes of JSON in ``trace``, counted 1 MiB at a time.  Never read whole here: a child's peak
    RSS (``ru_maxrss``) starts from this process's own peak (Linux carries the parent's high-water
    mark across fork and exec), so a 172 MB read in this process made every child's peak read at
    least 344 MB."""
    import gzip

    total = 0
    with gzip.open(trace, "rb") if trace.suffix == ".gz" else trace.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            total += len(chunk)
    return total


def row(label: str, seconds: float, rss: float, size_mb: float, base: float | None = None) -> str:
    ratio = f"{base / seconds:7.1f}x" if base else " " * 8
    return f"  {label:<46} {seconds:7.2f} s {rss:7.0f} MB {rss / size_mb:5.2f}x JSON {ratio}"


def middle(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """(median seconds, median peak RSS) of ``runs`` of (seconds, peak RSS)."""
    half = len(runs) // 2
    return sorted(s for s, _r in runs)[half], sorted(r for _s, r in runs)[half]


def bench_big(out: Path, hta_python: str, runs: int = 1) -> None:
    size_mb = json_size(BIG) / 1e6
    print(f"\n{BIG.name}: {size_mb:.1f} MB of JSON, {BIG.stat().st_size / 1e6:.1f} MB gzipped")
    print(f"  {'':<46} {'time':>9} {'peak RSS':>10} {'RSS/JSON':>10} {'HTA/this':>8}")
    hta = hta_load(BIG, hta_python)
    cache = tempfile.mkdtemp(prefix="profview-cache-")
    env = {"PROFVIEW_CACHE_DIR": cache}
    sides = {"ours": profview_export(BIG, out, "kernels", "--no-cache")}
    if hta:
        sides["hta"] = hta
    if "python" in BASE:
        sides["base"] = profview_export(BIG, out, "kernels", "--no-cache", python=BASE["python"])
    found: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for _ in range(runs):  # interleaved: the machine's load falls on every side alike
        for side, command in sides.items():
            found[side].append(measure(command, env))
    of = f", median of {runs}" if runs > 1 else ""
    hta_time = None
    if hta:
        hta_time, hta_rss = middle(found["hta"])
        print(row(f"HTA TraceAnalysis (load only){of}", hta_time, hta_rss, size_mb, hta_time))
    else:
        print("  HTA not importable by --hta-python: its anchor here is 22.1 s, 1.27 GB (issue #3)")
    anchor = hta_time or 22.1
    base, base_rss = measure(json_load(BIG))
    print(row("json.load", base, base_rss, size_mb, anchor))
    cold, cold_rss = middle(found["ours"])
    print(row(f"profview → kernels.csv (cold){of}", cold, cold_rss, size_mb, anchor))
    if "base" in found:
        base_cold, base_rss = middle(found["base"])
        print(row(f"  the base checkout → kernels.csv (cold){of}", base_cold, base_rss, size_mb, anchor))
        RATIOS["  cold kernel export, this / the base checkout (time)"] = middle(found["ours"])[0] / base_cold
    read, read_rss = measure(load_events(BIG))
    print(row("  the read alone (events frame, no tables)", read, read_rss, size_mb, anchor))
    pure, pure_rss = measure(profview_export(BIG, out, "kernels", "--no-cache"), {**env, "PROFVIEW_PURE_PYTHON": "1"})
    print(row("  the cold export, without the compiled scanner", pure, pure_rss, size_mb, anchor))
    one, one_rss = measure(profview_export(BIG, out, "kernels", "--no-cache"), {**env, **ONE_CORE}, cores="0")
    print(row("  the cold export, on 1 core", one, one_rss, size_mb, anchor))
    ops, ops_rss = measure(profview_export(BIG, out, "ops", "--no-cache"), env)
    print(row("profview → ops.csv (cold, whole model)", ops, ops_rss, size_mb, anchor))
    measure(profview_export(BIG, out, "kernels"), env)  # fills the cache (events and the kernel view)
    warm, warm_rss = measure(profview_export(BIG, out, "kernels"), env)
    print(row("profview → kernels.csv (re-open, cached)", warm, warm_rss, size_mb, anchor))
    reopen_ratio(BIG, out, env)
    print(
        f"  profview vs HTA ({'measured now' if hta_time else 'anchor'}): {anchor / cold:.1f}x faster cold, "
        f"{anchor / warm:.1f}x re-opening; compiled scanner {pure / cold:.1f}x; 2 cores vs 1: {one / cold:.2f}x"
    )
    RATIOS["cold load: HTA / profview (goal ≥ 30x)"] = anchor / cold
    RATIOS["  cold load: HTA / the read alone (a floor of the ratio above)"] = anchor / read
    RATIOS[f"peak RSS of a cold open / JSON, {BIG.name.split('.')[0]} (issue 32: goal ≤ 1.2x)"] = cold_rss / size_mb
    RATIOS[f"  the read alone (events frame), {BIG.name.split('.')[0]}"] = read_rss / size_mb


def memory_ratios(out: Path, folder: Path, mb: int, styles: list[str]) -> None:
    """Peak RSS of a cold kernel export against the JSON size of an ``mb`` MB scaled trace in each
    layout, and whether it opens under ``ulimit -v 3145728`` (3 GiB of address space), cold."""
    print(f"\nMemory of a cold open ({mb} MB scaled traces, profview export --view kernels --no-cache):")
    for style in styles:
        trace = scaled_trace(folder, mb, style)
        size_mb = trace.stat().st_size / 1e6
        seconds, rss = measure(profview_export(trace, out, "kernels", "--no-cache"))
        print(row(f"{style:<7} {size_mb:5.0f} MB → kernels", seconds, rss, size_mb))
        RATIOS[f"peak RSS of a cold open / JSON, {size_mb:.0f} MB {style} (goal ≤ 1.0x)"] = rss / size_mb
        seconds, rss = measure(load_events(trace))
        print(row(f"{style:<7} {size_mb:5.0f} MB → events frame only", seconds, rss, size_mb))
        RATIOS[f"  the read alone (events frame), {size_mb:.0f} MB {style}"] = rss / size_mb
    trace = scaled_trace(folder, mb, styles[0])
    limited = ["bash", "-c", 'ulimit -v 3145728 && exec "$@"', "limited", *profview_export(trace, out, "kernels")]
    start = time.perf_counter()
    done = subprocess.run([*limited, "--no-cache"], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    verdict = "opened" if done.returncode == 0 else f"refused ({done.stderr.strip()[-160:]})"
    print(f"  under ulimit -v 3145728 (3 GiB): {trace.name} {verdict} in {elapsed:.1f} s")
    OUTCOMES[f"{trace.stat().st_size / 1e6:.0f} MB trace within ulimit -v 3145728, cold"] = verdict


def reopen_ratio(trace: Path, out: Path, env: dict[str, str], runs: int = 5) -> None:
    """A cached re-open against ``python -c "import polars"`` (its floor), interleaved, medians of
    ``runs``: wall time (the goal's) and user+system CPU (what a busy machine does not disturb
    much); the base checkout's beside it (``--base-python``, its own cache folder)."""
    polars = [sys.executable, "-c", "import polars"]
    sides = {"polars": (polars, {}), "ours": (profview_export(trace, out, "kernels"), env)}
    if "python" in BASE:
        base_env = {"PROFVIEW_CACHE_DIR": tempfile.mkdtemp(prefix="profview-base-cache-")}
        base_export = profview_export(trace, out, "kernels", python=BASE["python"])
        for _ in range(2):  # its cache filled: the events, the kernel view (and what it keeps beside)
            measure(base_export, base_env)
        sides["base"] = (base_export, base_env)
    found: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for _ in range(runs):
        for side, (command, side_env) in sides.items():
            wall, cpu, _printed = cpu_seconds(command, side_env)
            found[side].append((wall, cpu))
    wall = {side: sorted(w for w, _ in runs_of)[runs // 2] for side, runs_of in found.items()}
    cpu = {side: sorted(c for _, c in runs_of)[runs // 2] for side, runs_of in found.items()}
    print(
        f"  re-open ratio: {wall['ours']:.3f} s / import polars {wall['polars']:.3f} s = "
        f"{wall['ours'] / wall['polars']:.2f}x (goal ≤ 1.3x); CPU {cpu['ours']:.3f} / {cpu['polars']:.3f} s = "
        f"{cpu['ours'] / cpu['polars']:.2f}x"
    )
    if "base" in wall:
        print(
            f"    the base checkout: {wall['base']:.3f} s = {wall['base'] / wall['polars']:.2f}x, "
            f"CPU {cpu['base']:.3f} s = {cpu['base'] / cpu['polars']:.2f}x"
        )
    RATIOS["re-open: cached export / import polars (goal ≤ 1.3x)"] = wall["ours"] / wall["polars"]
    RATIOS["  the same in CPU seconds (user+system)"] = cpu["ours"] / cpu["polars"]


def json649_ratio(out: Path, folder: Path, runs: int = 3, mb: int = 649, style: str = "kineto") -> None:
    """A cold kernel export of a 649 MB trace (``scale_trace.py --mb 649`` from
    gpt2_train_big) against ``json.load`` of it (goal ≥ 15x faster), and its peak RSS against the
    JSON (goal ≤ 1.0x); medians of ``runs`` exports (interleaved with the base checkout's, if
    any), ``json.load`` once (it takes a minute and 5 GB)."""
    trace = scaled_trace(folder, mb, style)
    size_mb = trace.stat().st_size / 1e6
    base, base_rss = measure(json_load(trace))
    sides = {"ours": profview_export(trace, out, "kernels", "--no-cache")}
    if "python" in BASE:
        sides["base"] = profview_export(trace, out, "kernels", "--no-cache", python=BASE["python"])
    found: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for _ in range(runs):  # interleaved
        for side, command in sides.items():
            found[side].append(measure(command))
    seconds, rss = middle(found["ours"])
    print(f"\n{trace.name} ({size_mb:.0f} MB of JSON): cold kernel export against json.load")
    print(row("json.load", base, base_rss, size_mb))
    print(row(f"profview → kernels.csv (cold), median of {runs}", seconds, rss, size_mb, base))
    if "base" in found:
        print(row(f"  the base checkout, median of {runs}", *middle(found["base"]), size_mb, base))
        RATIOS[f"  {size_mb:.0f} MB cold export, this / the base checkout (time)"] = seconds / middle(found["base"])[0]
    read, read_rss = measure(load_events(trace))
    print(row("  the read alone (events frame, no tables)", read, read_rss, size_mb, base))
    RATIOS[f"{size_mb:.0f} MB trace: json.load / cold kernel export (goal ≥ 15x)"] = base / seconds
    RATIOS[f"  {size_mb:.0f} MB trace: json.load / the read alone (a floor of the ratio above)"] = base / read
    RATIOS[f"{size_mb:.0f} MB trace: peak RSS of the cold export / JSON (goal ≤ 1.0x)"] = rss / size_mb


REOPEN_PROBE = """
import asyncio, sys, time
start = time.perf_counter()
from profview.collector import hold, until_first_screen
hold()  # as the profview command does first, and for the viewer (profview.collector)
until_first_screen()
from profview.profiles.background import BackgroundLoad
from profview.tui.lifecycle import prepare_early
pending = BackgroundLoad(sys.argv[1], then=prepare_early)  # as `profview TRACE` does
from rich.text import Text
from profview.tui.app import ProfviewApp
from profview.tui.main.screen import MainScreen

def path_line(app):
    # The Overview body's critical-path line once it is there (a look at its renderables).
    if not (isinstance(app.screen, MainScreen) and app.linked):
        return None
    found = app.screen.query("#overview-body")
    if not found:
        return None
    visual = found.first().render()
    for part in getattr(getattr(visual, "_renderable", visual), "renderables", []):
        if isinstance(part, Text) and part.plain.startswith("critical path"):
            return part.plain
    return None

async def main():
    app = ProfviewApp(sys.argv[1], pending=pending)
    async with app.run_test(size=(120, 40)) as pilot:
        while (line := path_line(app)) is None or "computing" in line:
            if time.perf_counter() - start > 120:
                raise SystemExit("no critical path line in 120 s")
            await pilot.pause(0.005)
        shown = time.perf_counter() - start
        while sys.argv[2] == "settle" and app.threads.busy():  # the first open: its cache written
            await pilot.pause(0.05)
    print(f"{shown:.3f}", int("model" in vars(app.profile)), int("events" in vars(app.profile)))

asyncio.run(main())
"""

CACHED_READS = """
import sys, time
start = time.perf_counter()
import polars as pl
from pathlib import Path
for name in sys.argv[1:]:
    pl.read_ipc(name)
"""


FLOOR_PROBE = """
import asyncio, gc, sys, time
start = time.perf_counter()
gc.disable()  # as a viewer built like profview's does while it starts (profview.collector)
import polars as pl
for name in sys.argv[1:]:
    pl.read_ipc(name)
from textual.app import App
from textual.widgets import Static

class Floor(App):
    def compose(self):
        yield Static("critical path")

async def main():
    async with Floor().run_test(size=(120, 40)) as pilot:
        await pilot.pause(0)
        print(f"{time.perf_counter() - start:.3f}")

asyncio.run(main())
"""


def reopen_overview_ratio(trace: Path, runs: int = 5) -> None:
    """A cached re-open in the viewer, from the command to the whole Overview on screen
    (its critical-path line included; headless at 120x40), against a cached ``profview summary``
    (goal ≤ 1.5x) and against ``import polars`` plus reading every view the cache keeps for the
    trace (goal ≤ 1.3x), interleaved, medians of ``runs``."""
    cache = tempfile.mkdtemp(prefix="profview-cache-")
    base_cache = tempfile.mkdtemp(prefix="profview-base-cache-")  # the base checkout's own entries

    def run_probe(mode: str, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
        command = [python, "-c", REOPEN_PROBE, str(trace), mode]
        env = {**os.environ, "PROFVIEW_CACHE_DIR": cache if python == sys.executable else base_cache}
        return subprocess.run(command, env=env, capture_output=True, text=True)

    def probe(mode: str, python: str = sys.executable) -> tuple[float, str]:
        done = run_probe(mode, python)
        if done.returncode != 0:
            raise SystemExit(f"viewer re-open probe failed:\n{done.stderr.strip()[-2000:]}")
        seconds, model, events = done.stdout.split()
        said = {"1": "yes", "0": "no"}
        return float(seconds), f"model linked: {said[model]}, events read: {said[events]}"

    first, _ = probe("settle")  # the first (cold) open writes the cache
    base_python = BASE.get("python")
    if base_python is not None:  # and the base checkout's, in its own folder
        done = run_probe("settle", base_python)
        if done.returncode != 0:  # a base checkout without this viewer: left out here only
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"  the base checkout's viewer cannot be probed, left out: {last}")
            base_python = None
    views = sorted(str(p) for p in Path(cache).glob("*/views-*/*.arrow"))
    reads = [sys.executable, "-c", CACHED_READS, *views]
    summary = [sys.executable, "-m", "profview", "summary", str(trace)]
    textual = [sys.executable, "-c", FLOOR_PROBE, *views]
    viewer_imports = [sys.executable, "-c", "import profview.profiles.background, profview.tui.app"]
    viewer, summaries, floors, apps, theirs, imports, what = [], [], [], [], [], [], ""
    for _ in range(runs):  # interleaved
        seconds, what = probe("once")
        viewer.append(seconds)
        if base_python is not None:
            theirs.append(probe("once", base_python)[0])
        summaries.append(measure(summary, {"PROFVIEW_CACHE_DIR": cache})[0])
        floors.append(measure(reads)[0])
        apps.append(float(subprocess.run(textual, capture_output=True, text=True, check=True).stdout))
        imports.append(measure(viewer_imports)[0])
    ours, base, floor, app, imported = (sorted(v)[runs // 2] for v in (viewer, summaries, floors, apps, imports))
    print(
        f"\n{trace.name}: the viewer re-opened, to the whole Overview with its path line: {ours:.2f} s ({what}; "
        f"the first open {first:.2f} s)\n  cached summary {base:.2f} s; import polars + the {len(views)} cached views "
        f"read {floor:.2f} s;\n  the floor of any viewer: the same reads, then an empty Textual app's first screen "
        f"(headless, 120x40, timed as the viewer is) {app:.2f} s"
    )
    print(  # the table widget and pyarrow come with the first table (tui/widgets/table_view.py)
        f"  the viewer's imports alone (Textual, NumPy, Polars; not the table widget nor pyarrow): {imported:.2f} s"
    )
    if theirs:
        print(f"  the base checkout's viewer re-opened: {sorted(theirs)[runs // 2]:.2f} s")
    RATIOS["re-open: viewer's whole Overview / cached summary (goal ≤ 1.5x)"] = ours / base
    RATIOS["re-open: viewer's whole Overview / (import polars + cached reads) (goal ≤ 1.3x)"] = ours / floor
    GOALS.append(
        (
            f"the viewer's cached re-open ≤ 1.3x import polars + the cached reads (medians of {runs})",
            f"{ours:.2f} s",
            f"import polars + {len(views)} reads {floor:.2f} s",
            ours / floor,
            1.3,
            True,
        )
    )
    RATIOS["  the floor: (cached reads + an empty Textual app) / cached summary"] = app / base
    RATIOS["  the viewer's whole Overview / that floor"] = ours / app
    RATIOS["  the viewer's imports alone / cached summary"] = imported / base


def cores_ratio(trace: Path, out: Path, pin: str, runs: int = 3) -> None:
    """A cold kernel export with every core this process may use against the same under
    ``taskset -c PIN`` (goal on a 16-core node: ≥ 2x faster than on ``0,1``), interleaved, medians."""
    every: list[tuple[float, float]] = []
    pinned: list[tuple[float, float]] = []
    command = profview_export(trace, out, "kernels", "--no-cache")
    for _ in range(runs):
        every.append(measure(command))
        pinned.append(measure(command, cores=pin))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    (many, many_rss), (few, few_rss) = middle(every), middle(pinned)
    print(
        f"\n{trace.name}: cold kernel export, medians of {runs} interleaved: {cores} cores {many:.2f} s "
        f"({', '.join(f'{s:.2f}' for s, _r in every)}; {many_rss:.0f} MB), taskset -c {pin} {few:.2f} s "
        f"({', '.join(f'{s:.2f}' for s, _r in pinned)}; {few_rss:.0f} MB)"
    )
    RATIOS[f"cold export: taskset -c {pin} / all {cores} cores (goal on 16 cores: ≥ 2x)"] = few / many


#: One process: inflate the trace in the read's chunks (no scan), the way the read gets its bytes.
INFLATE_ONLY = (
    "import sys; from profview.parsers.source import SourceStream; [None for _ in SourceStream(sys.argv[1]).chunks()]"
)
#: One process: the read (inflate and scan), then the frame's build alone, timed in-process.
FRAME_BUILD = """
import sys, time
from profview.parsers.trace_file import read_trace_file
scan = read_trace_file(sys.argv[1]).scan
import polars
start = time.perf_counter()
scan.frame()
print(time.perf_counter() - start)
"""


def cpu_seconds(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of user and system, stdout) of one subprocess."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    printed = proc.stdout.read().decode() if proc.stdout else ""
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(command)}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, printed


def read_floor(trace: Path, runs: int = 5) -> None:
    """Issue 42: the read alone (``profview.load(...).events``, a fresh process) against its floor,
    max(inflating the trace, ``import polars``) + building the events frame (goal ≤ 1.3x).

    Each side is a fresh process, interleaved, medians of ``runs``; the frame's build is timed
    inside a process that has read the trace (its own wall time).  CPU seconds (user + system, every
    thread) are printed beside, being what the 2-core machine's load disturbs least."""
    sides = {
        "read": [sys.executable, "-c", "import sys, profview; profview.load(sys.argv[1], use_cache=False).events"],
        "inflate": [sys.executable, "-c", INFLATE_ONLY],
        "polars": [sys.executable, "-c", "import polars"],
        "frame": [sys.executable, "-c", FRAME_BUILD],
    }
    found: dict[str, list[tuple[float, float, float]]] = {side: [] for side in sides}
    for _ in range(runs):
        for side, command in sides.items():
            wall, cpu, printed = cpu_seconds([*command, str(trace)] if side != "polars" else command)
            found[side].append((wall, cpu, float(printed.strip() or 0)))

    def median(side: str, at: int) -> float:
        return sorted(v[at] for v in found[side])[runs // 2]

    read, inflate, polars, build = median("read", 0), median("inflate", 0), median("polars", 0), median("frame", 2)
    floor = max(inflate, polars) + build
    print(f"\n{trace.name}: the read against its floor, fresh processes, medians of {runs} interleaved")
    for label, side in (
        ("the read (inflate, scan, events frame)", "read"),
        ("inflate alone", "inflate"),
        ("import polars", "polars"),
    ):
        print(f"  {label:<46} {median(side, 0):7.3f} s   CPU {median(side, 1):.3f} s")
    print(f"  {'the frame built from the scan (in-process)':<46} {build:7.3f} s")
    print(f"  floor = max(inflate, import polars) + frame = {floor:.3f} s; read / floor = {read / floor:.2f}x")
    name = trace.name.split(".")[0]
    RATIOS[f"the read alone / max(inflate, import polars) + the frame, {name} (goal ≤ 1.3x)"] = read / floor
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores < 16:
        OUTCOMES["16 threads ≥ 3x 2 threads on a 1 GB trace (issue 42)"] = (
            f"not measurable here ({cores} cores): benchmarks/device.sh on a lent 16-core node"
        )


DECODE_SOURCE = SHARED / "traces" / "public" / "tracelens_h100_qwen1.5-0.5b.json.gz"


def drilldown_ratio(folder: Path, out: Path, copies: int = 14, runs: int = 3, cache: Path | None = None) -> None:
    """A kernel's launchers (``--view launches --kernel``) against the cached kernel listing.

    The trace: a with_stack LLM trace repeated ``copies`` times, so that its most launched GEMM
    has thousands of launches from Python stacks, as in a decode loop.  ``cache``: the cache
    folder (default: ``cache`` in ``folder``).  Then the same drill-down in the viewer.
    """
    trace = folder / f"decode_x{copies}.json.gz"
    if not trace.exists():
        command = [sys.executable, str(SCALE), str(DECODE_SOURCE), str(trace), "--copies", str(copies)]
        subprocess.run(command, check=True, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    code = (
        "import sys, profview; k = profview.load(sys.argv[1]).kernels().sort('calls', descending=True); "
        "print(k['calls'][0]); print(k['name'][0])"
    )
    calls, kernel = subprocess.run(
        [sys.executable, "-c", code, str(trace)], check=True, capture_output=True, text=True
    ).stdout.splitlines()[:2]
    env = {"PROFVIEW_CACHE_DIR": str(cache or folder / "cache")}
    measure(profview_export(trace, out, "kernels"), env)  # fills the cache
    # The first drill-down of a trace links it (or reads its stored model) and computes every
    # launching row's path once (the launch index), stored for the next ones (issue 25).
    first = measure(profview_export(trace, out, "launches", "--kernel", kernel), env)[0]
    listing, drill = [], []
    for _ in range(runs):
        listing.append(measure(profview_export(trace, out, "kernels"), env)[0])
        drill.append(measure(profview_export(trace, out, "launches", "--kernel", kernel), env)[0])
    base, ours = sorted(listing)[runs // 2], sorted(drill)[runs // 2]
    print(
        f"\n{trace.name}: launchers of a kernel launched {int(calls):,} times: {ours:.2f} s / cached kernel "
        f"listing {base:.2f} s = {ours / base:.2f}x (goal ≤ 2x); the first drill-down of the trace {first:.2f} s"
    )
    RATIOS["drill-down: kernel's launchers / cached listing (goal ≤ 2x)"] = ours / base
    viewer_drilldown(trace, kernel, env["PROFVIEW_CACHE_DIR"])


VIEWER_DRILL_PROBE = """
import asyncio, sys, time
from profview.tui.app import ProfviewApp
from profview.tui.drill.screen import DrillScreen
from profview.tui.main.screen import MainScreen
from profview.tui.widgets.table_view import FrameView

async def main():
    trace, kernel, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    app = ProfviewApp(trace)
    shown = []
    display = app._display

    def painted(screen, renderable):  # what the headless driver is given to paint
        display(screen, renderable)
        if renderable is not None and isinstance(screen, DrillScreen):
            table = screen.frame_view().table
            if table is not None and table.is_attached and table.row_count and table.size.height:
                shown.append(time.perf_counter())

    app._display = painted
    times = []
    async with app.run_test(size=(200, 50)) as pilot:
        while not (isinstance(app.screen, MainScreen) and app.linked):
            await pilot.pause(0.05)
        while app.threads.busy():  # the load's last part (the cache written) done, as after a glance
            await pilot.pause(0.05)
        await pilot.press("2")
        await pilot.pause(0.2)
        for _ in range(runs):
            view = next(v for v in app.screen.query(FrameView) if v.view == "kernels")
            view.table.move_cursor(row=view.displayed["name"].to_list().index(kernel), column=0)
            await pilot.pause(0.2)
            shown.clear()
            start = time.perf_counter()
            await pilot.press("enter")
            while not shown:  # no pilot.pause here: it would repaint the screen while it waits
                await asyncio.sleep(0.002)
            times.append(shown[0] - start)
            rows = app.screen.frame.height
            await pilot.press("escape")
            while isinstance(app.screen, DrillScreen):
                await pilot.pause(0.01)
    print(rows, *times)

asyncio.run(main())
"""


def viewer_drilldown(trace: Path, kernel: str, cache: str, runs: int = 5) -> None:
    """Enter on ``kernel`` in the viewer's Kernels tab (re-opened from ``cache``, headless at
    200x50) until the drill-down screen is painted with its rows; median of ``runs``, one process."""
    command = [sys.executable, "-c", VIEWER_DRILL_PROBE, str(trace), kernel, str(runs)]
    done = subprocess.run(command, env={**os.environ, "PROFVIEW_CACHE_DIR": cache}, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"viewer drill-down probe failed:\n{done.stderr.strip()[-2000:]}")
    rows, *times = done.stdout.split()
    ms = sorted(float(t) * 1000 for t in times)
    print(
        f"  the same in the viewer (Enter on it in Kernels, re-opened, headless 200x50): {ms[len(ms) // 2]:.0f} ms, "
        f"median of {len(ms)} ({', '.join(f'{t:.0f}' for t in ms)}; {rows} launching paths; goal ≤ 150 ms)"
    )
    VIEWER_DRILL_MS["drill-down in the viewer: ms (goal ≤ 150 ms)"] = ms[len(ms) // 2]


def scaled_trace(folder: Path, mb: int, style: str) -> Path:
    trace = folder / f"scaled_{mb}mb_{style}.json"
    if not trace.exists():
        print(f"  (making {trace.name})", flush=True)
        command = [sys.executable, str(SCALE), str(BIG), str(trace), "--mb", str(mb), "--style", style]
        subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    return trace


def bench_scaled(out: Path, sizes: list[int], styles: list[str], folder: Path) -> None:
    print("\nScaled traces (scale_trace.py from gpt2_train_big), cold, profview export:")
    print(f"  {'':<46} {'time':>9} {'peak RSS':>10} {'RSS/JSON':>10} {'json/this':>8}")
    for style in styles:
        per_mb = []
        for mb in sizes:
            trace = scaled_trace(folder, mb, style)
            size_mb = trace.stat().st_size / 1e6
            base, base_rss = measure(json_load(trace))
            seconds, rss = measure(profview_export(trace, out, "kernels", "--no-cache"))
            per_mb.append(seconds / size_mb * 1000)
            label = f"{style:<7} {size_mb:5.0f} MB → kernels"
            print(row(label, seconds, rss, size_mb, base) + f"   (json.load {base:5.2f} s {base_rss:5.0f} MB)")
        print(f"  {style}: seconds per GB at each size: " + ", ".join(f"{s:.2f}" for s in per_mb))
    largest = scaled_trace(folder, max(sizes), styles[0])
    size_mb = largest.stat().st_size / 1e6
    for view in ("ops", "steps"):
        seconds, rss = measure(profview_export(largest, out, view, "--no-cache"))
        print(row(f"{styles[0]:<7} {size_mb:5.0f} MB → {view} (whole model)", seconds, rss, size_mb))
    cut = folder / f"cut_70pct_{largest.name}"  # a killed job: the file ends mid-event
    if not cut.exists():
        with largest.open("rb") as source, cut.open("wb") as target:
            target.write(source.read(int(largest.stat().st_size * 0.7)))
    seconds, rss = measure(profview_export(cut, out, "kernels", "--no-cache"))
    print(row(f"cut at 70% {cut.stat().st_size / 1e6:5.0f} MB → kernels", seconds, rss, cut.stat().st_size / 1e6))
    two, _ = measure(profview_export(largest, out, "kernels", "--no-cache"))
    one, _ = measure(profview_export(largest, out, "kernels", "--no-cache"), ONE_CORE, cores="0")
    print(f"  {largest.name}: 1 core {one:.2f} s, 2 cores {two:.2f} s: {one / two:.2f}x")


VIEWER_PROBE = """
import asyncio, sys, time
start = time.perf_counter()
from profview.collector import hold, until_first_screen
hold()  # as the profview command does first, and for the viewer (profview.collector)
until_first_screen()
from profview.profiles.background import BackgroundLoad
from profview.tui.lifecycle import prepare_early
pending = BackgroundLoad(sys.argv[1], then=prepare_early)  # as `profview TRACE` does: the parse overlaps the imports
from profview.tui.app import ProfviewApp
from profview.tui.main.screen import MainScreen

async def main():
    app = ProfviewApp(sys.argv[1], pending=pending)
    async with app.run_test(size=(int(sys.argv[2]), int(sys.argv[3]))) as pilot:
        while not isinstance(app.screen, MainScreen):
            await pilot.pause(0.01)
        first = time.perf_counter() - start
        while not app.linked:
            await pilot.pause(0.02)
        ready = time.perf_counter() - start
        for key in "2345678":  # every pane once, as a user looking around would
            await pilot.press(key)
            await pilot.pause(0.3)
        await pilot.pause(1.0)
        held = next((int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")), 0)
        print(f"{first:.2f} {ready:.2f} {held * 1024 / 1e6:.0f}")

asyncio.run(main())
"""


def viewer_times(trace: Path, cache: str, size: tuple[int, int] = (120, 40)) -> tuple[float, float, float, float]:
    """(seconds to the first screen of tables, seconds until every view is ready, peak RSS MB, RSS
    MB held after visiting every pane) of the viewer driven headless by Textual's test pilot."""
    env = {**os.environ, "PROFVIEW_CACHE_DIR": cache}
    command = [sys.executable, "-c", VIEWER_PROBE, str(trace), str(size[0]), str(size[1])]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE)
    _pid, _status, usage = os.wait4(proc.pid, 0)
    first, ready, held = (float(x) for x in proc.stdout.read().split()) if proc.stdout else (0.0, 0.0, 0.0)
    return first, ready, usage.ru_maxrss * 1024 / 1e6, held


def first_screen_ratio(trace: Path, out: Path, runs: int = 3) -> None:
    """The viewer's first screen (cold, headless at 100x30) against a cold kernel export, interleaved."""
    export, first = [], []
    for _ in range(runs):
        export.append(measure(profview_export(trace, out, "kernels", "--no-cache"))[0])
        first.append(viewer_times(trace, tempfile.mkdtemp(prefix="profview-cache-"), size=(100, 30))[0])
    base, ours = sorted(export)[runs // 2], sorted(first)[runs // 2]
    print(
        f"\n{trace.name}: first screen of the viewer (cold) {ours:.2f} s / cold kernel export {base:.2f} s "
        f"= {ours / base:.2f}x (issue 42: goal ≤ 1.2x)"
    )
    RATIOS["first screen: viewer cold / cold kernel export (issue 42: goal ≤ 1.2x)"] = ours / base
    GOALS.append(
        (
            f"first screen of the viewer (cold, 100x30) ≤ 1.2x the cold kernel export (medians of {runs})",
            f"{ours:.2f} s",
            f"export {base:.2f} s",
            ours / base,
            1.2,
            True,
        )
    )


def bench_viewer(traces: list[Path]) -> None:
    print("\nViewer (headless, Textual pilot): first screen / every view ready / peak RSS / held after every pane")
    for trace in traces:
        cache = tempfile.mkdtemp(prefix="profview-cache-")
        for label in ("cold", "cached"):
            first, ready, rss, held = viewer_times(trace, cache)
            print(f"  {trace.name:<46} {label:<6} {first:6.2f} s {ready:6.2f} s {rss:7.0f} MB {held:7.0f} MB")


def bench_interactive(folder: Path, mb: int) -> None:
    """Sort and filter a 1M-row GPU event table the way the viewer does (views.refine)."""
    import polars as pl

    import profview
    from profview.profiles.views import refine

    gpu = profview.load(scaled_trace(folder, mb, "compact"), use_cache=False).gpu
    copies = -(-1_000_000 // gpu.height)
    table = pl.concat([gpu] * copies).head(1_000_000)  # real events, repeated to a million rows
    timings = {}
    for label, kwargs in {
        "sort by duration": {"sort": "dur"},
        "sort by name": {"sort": "name", "ascending": True},
        "regex filter /gemm/": {"pattern": "gemm"},
        "filter + sort": {"pattern": "(?i)elementwise", "sort": "dur"},
    }.items():
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            shown = refine(table, **kwargs)
            runs.append(time.perf_counter() - start)
        timings[label] = (sorted(runs)[2] * 1000, shown.height)
    print(f"\nInteractive, {table.height:,}-row GPU event table (median of 5):")
    for label, (ms, rows) in timings.items():
        print(f"  {label:<24} {ms:6.1f} ms   ({rows:,} rows)")


def main() -> None:
    global BIG
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only gpt2_train_big")
    parser.add_argument("--sizes", default="250,500,1000", help="scaled trace sizes in MB")
    parser.add_argument("--styles", default="kineto,compact,oneline")
    parser.add_argument(
        "--hta-python", default=sys.executable, help="a Python with HolisticTraceAnalysis installed (a separate venv)"
    )
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "profview-bench"))
    parser.add_argument(
        "--memory-mb", type=int, default=1000, help="size of the scaled traces for the memory ratios (0: skip)"
    )
    parser.add_argument(
        "--decode-copies", type=int, default=80, help="copies of the Qwen decode trace (80: 1.45 M events, issue 25)"
    )
    parser.add_argument("--trace", default=str(BIG), help="the big trace (default: ../shared's gpt2_train_big)")
    parser.add_argument("--goals", action="store_true", help=f"issues 32, 42: --quick --parts {GOAL_PARTS}")
    parser.add_argument("--runs", type=int, default=1, help="runs of the cold export and HTA, interleaved (medians)")
    parser.add_argument("--pin", default="0,1", help="--parts cores: the cores the pinned export runs on")
    parser.add_argument("--fraction-trace", help="--parts fraction: the trace (default: the big one; a 1 GB one)")
    parser.add_argument(
        "--base-python", help="another checkout's Python: its figures beside ours (big, json649, reopen)"
    )
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help="which benchmarks, comma-separated: " + ", ".join(PARTS) + " (big,first: a machine without ../shared)",
    )
    args = parser.parse_args()
    if args.goals:
        args.quick, args.parts, args.runs = True, GOAL_PARTS, max(args.runs, 3)
    BIG = Path(args.trace).resolve()
    parts = set(args.parts.split(","))
    if unknown := parts - set(PARTS):
        raise SystemExit(f"unknown --parts: {', '.join(sorted(unknown))} (known: {', '.join(PARTS)})")
    if not BIG.exists():
        raise SystemExit(f"{BIG} is absent: benchmarks need ../shared beside the checkout (or --trace)")
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "out.csv"
    print(f"profview benchmark: {os.cpu_count()} cores, Python {sys.version.split()[0]}; traces in {folder}")
    if args.base_python:
        BASE["python"] = args.base_python
    for python in {sys.executable, BASE.get("python", sys.executable)}:
        compile_bytecode(python)
    if "big" in parts:
        bench_big(out, args.hta_python, args.runs)
    if args.memory_mb and "memory" in parts:
        memory_ratios(out, folder, args.memory_mb, args.styles.split(","))
    if "drill" in parts:
        drilldown_ratio(folder, out, args.decode_copies)
    if "json649" in parts:
        json649_ratio(out, folder)
    if "cached" in parts and "big" not in parts:
        cache = tempfile.mkdtemp(prefix="profview-cache-")
        for _ in range(2):  # the cache filled: the events, the kernel view and what it keeps beside
            measure(profview_export(BIG, out, "kernels"), {"PROFVIEW_CACHE_DIR": cache})
        reopen_ratio(BIG, out, {"PROFVIEW_CACHE_DIR": cache}, max(args.runs, 5))
    if "first" in parts:
        first_screen_ratio(BIG, out)
    if "reopen" in parts:
        reopen_overview_ratio(BIG)
    if "cores" in parts:
        cores_ratio(BIG, out, args.pin, max(args.runs, 3))
    if "floor" in parts:
        read_floor(BIG, max(args.runs, 5))
    if "fraction" in parts:
        fraction_goal(Path(args.fraction_trace) if args.fraction_trace else BIG, max(args.runs, 3))
    if args.quick:
        if "viewer" in parts:
            bench_viewer([BIG])
        print_ratios()
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if "scaled" in parts:
        bench_scaled(out, sizes, args.styles.split(","), folder)
    if "viewer" in parts:
        bench_viewer([BIG, scaled_trace(folder, max(sizes), "kineto")])
    if "interactive" in parts:
        bench_interactive(folder, max(sizes))
    print_ratios()


def fraction_goal(trace: Path, runs: int) -> None:
    """16 cores against 2 on ``trace``, projected by Amdahl's law from the read's parallel fraction
    (each thread's CPU seconds at 2 threads: benchmarks/parallel_fraction.py); goal ≥ 3x."""
    from parallel_fraction import SERIAL, probe

    found = [probe(trace, 2) for _ in range(runs)]
    cpu = {name: sorted(run.get(name, 0.0) for run in found)[runs // 2] for name in found[0] if name != "process"}
    serial = sum(cpu.get(name, 0.0) for name in SERIAL) / sum(cpu.values())
    two, sixteen = serial + (1 - serial) / 2, serial + (1 - serial) / 16
    print(
        f"\n{trace.name}: the read's CPU by thread at 2 threads (medians of {runs}): "
        + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in cpu.items())
        + f"\n  serial s = {serial:.3f}; Amdahl, 16 cores / 2: (s + (1-s)/2) / (s + (1-s)/16) = {two / sixteen:.2f}x"
    )
    GOALS.append(
        (
            f"{trace.name}: 16 cores ≥ 3x faster than 2 (Amdahl from the parallel fraction at 2 threads)",
            f"serial fraction {serial:.3f}",
            "2 cores",
            two / sixteen,
            3.0,
            False,
        )
    )


def print_goals() -> None:
    """The scale goals measured in this run, each with its figure, its baseline and PASS or FAIL."""
    if not GOALS:
        return
    print("\nScale goals (this run):")
    for what, figure, baseline, ratio, limit, at_most in GOALS:
        met = ratio <= limit if at_most else ratio >= limit
        print(f"  {'PASS' if met else 'FAIL'}  {what}\n        this run: {figure}; baseline: {baseline}; {ratio:.2f}x")


def print_ratios() -> None:
    """The ratios the issues set goals for, together (issue 13: in one run)."""
    print_goals()
    print("\nRatios (this run):")
    for label, ratio in RATIOS.items():
        print(f"  {label:<66} {ratio:6.2f}x")
    for label, ms in VIEWER_DRILL_MS.items():
        print(f"  {label:<66} {ms:6.0f} ms")
    for label, outcome in OUTCOMES.items():
        print(f"  {label:<66} {outcome}")


if __name__ == "__main__":
    main()
