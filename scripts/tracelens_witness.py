"""Write TraceLens' perf-model figures for traces into samples/tracelens_live/ (the efficiency
tests' second witness, docs/efficiency.md): TraceLens' own perf report is run on each trace, and
of every perf-model sheet (GEMM, SDPA, CONV, Normalization, elementwise, reductions …) the columns
the tests compare are kept, one CSV per trace and sheet.

Usage (a TraceLens checkout and a Python with pandas, openpyxl and matplotlib)::

    python scripts/tracelens_witness.py --tracelens /tmp/TraceLens --python /tmp/tlvenv/bin/python \\
        NAME=TRACE [NAME=TRACE ...]
    python scripts/tracelens_witness.py --tracelens /tmp/TraceLens --python /tmp/tlvenv/bin/python \\
        --calls samples/tracelens_live/perf_model_calls.json

The second form runs TraceLens' own perf-model class of each recorded call of the file (operators
no trace here holds: FP8/FP4 GEMMs, flash-attn, AITER, MoE …) and writes its FLOPs and bytes to
samples/tracelens_live/calls.csv.

The run of this repository's CSVs: TraceLens 171dd74721ca1ec45709e5805b68ae1f65e27811, pandas 3.1.1.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "samples" / "tracelens_live"
KEPT = (
    "name",
    "Input Dims_first",
    "Input type_first",
    "Concrete Inputs_first",
    "name_count",
    "Kernel Time (µs)_sum",
    "GFLOPS_first",
    "Data Moved (MB)_first",
)
#: The report's sheets that are no perf-model sheet.
OTHER_SHEETS = {"gpu_timeline", "ops_summary", "ops_summary_by_category", "ops_unique_args", "unified_perf_summary"}


def run(tracelens: Path, python: str, name: str, trace: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=str(tracelens))
        command = [python, "-m", "TraceLens.Reporting.generate_perf_report_pytorch"]
        command += ["--profile_json_path", str(trace), "--output_csvs_dir", tmp]
        subprocess.run(command, check=True, env=env, cwd=tracelens, stdout=subprocess.DEVNULL)
        _triton_rows(Path(tmp), name)
        for sheet in sorted(Path(tmp).glob("*.csv")):
            if sheet.stem in OTHER_SHEETS or sheet.stem.startswith("coll"):
                continue
            with open(sheet, newline="") as fh:
                rows = list(csv.DictReader(fh))
            if not rows or "GFLOPS_first" not in rows[0]:
                continue
            OUT.mkdir(parents=True, exist_ok=True)
            with open(OUT / f"{name}.{sheet.stem}.csv", "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=KEPT, extrasaction="ignore")
                writer.writeheader()
                writer.writerows(rows)
            print(f"wrote {OUT / f'{name}.{sheet.stem}.csv'} ({len(rows)} rows)")


#: Run by TraceLens' Python: each call's FLOPs and bytes from TraceLens' class for its name (or the
#: class its "tracelens" key names, for TraceLens' pseudo ops).
CALLS_PROGRAM = r"""
import csv, json, sys
from TraceLens.PerfModel import perf_model, torch_op_mapping
from TraceLens.PerfModel.extensions import moe_perf_model_extensions as moe

calls = json.load(open(sys.argv[1]))
out = csv.writer(open(sys.argv[2], "w", newline=""))
out.writerow(["name", "note", "flops", "bytes", "error"])
for call in calls:
    event = {"name": call["name"], "args": {k: v for k, v in call.items() if k not in ("name", "note", "tracelens")}}
    named = call.get("tracelens")
    cls = getattr(perf_model, named, None) or getattr(moe, named, None) if named else None
    cls = cls or torch_op_mapping.resolve_perf_model_class(call["name"])
    if cls is None:
        out.writerow([call["name"], call["note"], "", "", "no TraceLens model"])
        continue
    try:
        model = cls(event)
        flops = model.flops()
        nbytes = model.bytes()
        out.writerow([call["name"], call["note"], repr(flops), repr(nbytes), ""])
    except Exception as exc:
        out.writerow([call["name"], call["note"], "", "", f"{type(exc).__name__}: {exc}"[:200]])
"""


def run_calls(tracelens: Path, python: str, calls: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(tracelens))
    command = [python, "-c", CALLS_PROGRAM, str(calls.resolve()), str(OUT / "calls.csv")]
    subprocess.run(command, check=True, env=env, cwd=tracelens)
    print(f"wrote {OUT / 'calls.csv'}")


def _triton_rows(report: Path, name: str) -> None:
    """TraceLens lists compiled Triton kernels in its unified summary only: their figures, as
    ``NAME.triton.csv``."""
    summary = report / "unified_perf_summary.csv"
    if not summary.exists():
        return
    with open(summary, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r.get("op category") == "triton"]
    if not rows:
        return
    fields = ("name", "Input Dims", "operation_count", "Kernel Time (µs)_sum", "GFLOPS", "Data Moved (MB)")
    fields += ("perf_params",)
    with open(OUT / f"{name}.triton.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {OUT / f'{name}.triton.csv'} ({len(rows)} rows)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracelens", type=Path, required=True, help="a TraceLens checkout")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs TraceLens")
    parser.add_argument("--calls", type=Path, help="a JSON list of recorded calls (perf_model_calls.json)")
    parser.add_argument("traces", nargs="*", help="NAME=TRACE")
    args = parser.parse_args()
    if args.calls:
        run_calls(args.tracelens, args.python, args.calls)
    for item in args.traces:
        name, _, trace = item.partition("=")
        run(args.tracelens, args.python, name, Path(trace).resolve())


if __name__ == "__main__":
    main()
