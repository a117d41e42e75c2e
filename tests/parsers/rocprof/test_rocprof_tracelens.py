"""profview's kernel table of the shared rocprofv3 run against TraceLens' own report of it, run
live (``samples/tracelens_live/rocprofv3_908.kernel_summary.csv``: TraceLens 171dd747,
``python -m TraceLens.Reporting.generate_perf_report_rocprof --profile_json_path FILE
--output_csvs_dir OUT``, pandas 3).  TraceLens names a kernel by ``truncated_kernel_name``, so
profview's rows (``formatted_kernel_name``) are summed per truncated name first; TraceLens'
summary reads the nanosecond durations as if they were microseconds, so its ``Total Kernel
Time (ms)`` holds microseconds and its ``Min``/``Max Kernel Time (µs)`` nanoseconds
(docs/formats.md says so)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from rocprof_witness import SHARED_FILE, document
from support import sample

import profview

REPORT = sample("tracelens_live/rocprofv3_908.kernel_summary.csv")


def test_kernels_per_truncated_name_equal_tracelens(shared_dir: Path) -> None:
    process = document(SHARED_FILE)["rocprofiler-sdk-tool"][0]
    truncated = {s["formatted_kernel_name"]: s["truncated_kernel_name"] for s in process["kernel_symbols"]}
    summed: dict[str, list[float]] = {}
    for row in profview.load(SHARED_FILE, use_cache=False).kernels().iter_rows(named=True):
        entry = summed.setdefault(truncated[row["name"]], [0, 0.0, float("inf"), 0.0])
        entry[0] += row["calls"]
        entry[1] += row["total_us"]
        entry[2] = min(entry[2], row["min_us"])
        entry[3] = max(entry[3], row["max_us"])
    with REPORT.open(encoding="utf-8") as fh:
        theirs = {row["name"]: row for row in csv.DictReader(fh)}
    assert set(summed) == set(theirs) and len(theirs) == 44
    for name, (calls, total_us, min_us, max_us) in summed.items():
        row = theirs[name]
        assert calls == int(row["Count"]), name
        assert total_us == pytest.approx(float(row["Total Kernel Time (ms)"]), abs=1e-6), name  # µs, labelled ms
        assert min_us * 1000 == pytest.approx(float(row["Min Kernel Time (µs)"]), abs=1e-6), name  # ns, labelled µs
        assert max_us * 1000 == pytest.approx(float(row["Max Kernel Time (µs)"]), abs=1e-6), name
