"""One-command benchmark: profview against baselines, in the same session, on the same files.

    python benchmarks/run.py                 # gpt2_train_big + scaled 250/500/1000 MB traces
    python benchmarks/run.py --quick         # gpt2_train_big only

Each measurement runs in a fresh subprocess (imports included, as a user would see it) and
reports wall time and peak RSS (from wait4).  Baselines: ``json.load`` always; Holistic Trace
Analysis when it is importable.  Scaled traces come from ``../shared/tools/scale_trace.py``.
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


def measure(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one subprocess."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(command)}")
    return elapsed, usage.ru_maxrss / 1024


def profview_export(trace: Path, out: Path, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "profview", "export", str(trace), "-v", "kernels", "-o", str(out)]
    return [*command, "--force", *extra]


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
    (folder / trace.name).symlink_to(trace)
    code = "import sys; from hta.trace_analysis import TraceAnalysis; TraceAnalysis(trace_dir=sys.argv[1])"
    return [python, "-c", code, str(folder)]


def row(label: str, seconds: float, rss: float, base: float | None, size_mb: float) -> str:
    ratio = f"{base / seconds:6.1f}x" if base else "      "
    return f"  {label:<42} {seconds:7.2f} s {rss:8.0f} MB  {rss / size_mb:5.2f}x size  {ratio}"


def bench_big(out: Path, hta_python: str) -> None:
    import gzip

    with gzip.open(BIG, "rb") as fh:
        size_mb = len(fh.read()) / 1e6
    print(f"\n{BIG.name}: {size_mb:.1f} MB of JSON  (ratio column: baseline time / this time)")
    baseline, base_rss = measure(json_load(BIG))
    print(row("json.load (baseline)", baseline, base_rss, baseline, size_mb))
    hta = hta_load(BIG, hta_python)
    hta_time = None
    if hta:
        hta_time, hta_rss = measure(hta)
        print(row("HTA TraceAnalysis", hta_time, hta_rss, baseline, size_mb))
    else:
        print("  HTA not installed (see --hta-python): its anchor here is 22.1 s, 1.27 GB (shared/README.md)")
    cache = tempfile.mkdtemp(prefix="profview-cache-")
    env = {"PROFVIEW_CACHE_DIR": cache}
    cold, cold_rss = measure(profview_export(BIG, out, "--no-cache"), env)
    print(row("profview export kernels (cold)", cold, cold_rss, baseline, size_mb))
    single = {**env, "POLARS_MAX_THREADS": "1"}
    one, one_rss = measure(["taskset", "-c", "0", *profview_export(BIG, out, "--no-cache")], single)
    print(row("profview, 1 core (cold)", one, one_rss, baseline, size_mb))
    measure(profview_export(BIG, out), env)  # fills the cache
    warm, warm_rss = measure(profview_export(BIG, out), env)
    print(row("profview export kernels (cached re-open)", warm, warm_rss, baseline, size_mb))
    anchor = hta_time or 22.1
    print(f"  profview vs HTA ({'measured' if hta_time else 'anchor 22.1 s'}): {anchor / cold:.1f}x faster cold, "
          f"{anchor / warm:.1f}x cached; 2 cores vs 1: {one / cold:.2f}x")


def bench_scaled(out: Path, sizes: list[int], styles: list[str], folder: Path) -> None:
    print("\nScaled traces (scale_trace.py from gpt2_train_big), cold, profview export kernels:")
    for style in styles:
        for mb in sizes:
            trace = folder / f"scaled_{mb}mb_{style}.json"
            if not trace.exists():
                subprocess.run([sys.executable, str(SCALE), str(BIG), str(trace), "--mb", str(mb), "--style", style],
                               check=True, stderr=subprocess.DEVNULL)
            size_mb = trace.stat().st_size / 1e6
            base, base_rss = measure(json_load(trace))
            seconds, rss = measure(profview_export(trace, out, "--no-cache"))
            print(row(f"{style:<8} {size_mb:7.0f} MB  profview", seconds, rss, base, size_mb)
                  + f"   json.load {base:6.2f} s {base_rss:6.0f} MB")


def bench_interactive(folder: Path, mb: int) -> None:
    """Sorting and filtering the GPU event table of the largest scaled trace."""
    import polars as pl
    import profview

    trace = folder / f"scaled_{mb}mb_compact.json"
    if not trace.exists():
        return
    gpu = profview.load(trace, use_cache=False).gpu.select("name", "ts", "dur", "stream")
    start = time.perf_counter()
    gpu.sort("dur", descending=True)
    sort_s = time.perf_counter() - start
    start = time.perf_counter()
    matched = gpu.filter(pl.col("name").str.contains("(?i)gemm"))
    filter_s = time.perf_counter() - start
    print(f"\nInteractive, {gpu.height:,} GPU events: sort by duration {sort_s * 1000:.0f} ms, "
          f"regex filter {filter_s * 1000:.0f} ms ({matched.height:,} rows)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only gpt2_train_big")
    parser.add_argument("--sizes", default="250,500,1000", help="scaled trace sizes in MB")
    parser.add_argument("--styles", default="kineto,compact,oneline")
    parser.add_argument(
        "--hta-python", default=sys.executable, help="a Python with HolisticTraceAnalysis installed (a separate venv)"
    )
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "profview-bench"))
    args = parser.parse_args()
    if not BIG.exists():
        raise SystemExit(f"{BIG} is absent: benchmarks need ../shared beside the checkout")
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "kernels.csv"
    print(f"profview benchmark on {os.cpu_count()} cores; traces in {folder}")
    bench_big(out, args.hta_python)
    if not args.quick:
        sizes = [int(s) for s in args.sizes.split(",")]
        bench_scaled(out, sizes, args.styles.split(","), folder)
        bench_interactive(folder, max(sizes))


if __name__ == "__main__":
    main()
