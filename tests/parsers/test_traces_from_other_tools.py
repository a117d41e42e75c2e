"""Traces written by tools other than Kineto: read by what their events hold, and what they lack said.

Samples (samples/): ``cupti_tool_no_cat.json`` (a CUPTI tool's layout: 60 kernels and 20 copies
of resnet50_train_amp written without ``cat`` or process metadata, copies named ``[MEMCPY] HtoD``),
``autograd_export_pre_kineto.json`` (torch.autograd.profiler's export before Kineto: a bare list,
no ``cat``, string pids, no GPU process), ``unknown_categories_trace.json`` (a line tracer's
trace: every category is a source line), ``h100_launches_without_gpu_records.json.gz``
(tracelens_h100_vit_falconsai with its GPU records taken out, as when CUPTI's buffers are lost).
The second witness is each file read with the standard library.
"""

from __future__ import annotations

import re

import polars as pl
import pytest
from support import loaded, raw_events, run_cli

NO_CAT = "cupti_tool_no_cat.json"
AUTOGRAD = "autograd_export_pre_kineto.json"
UNKNOWN = "unknown_categories_trace.json"
NO_GPU_RECORDS = "h100_launches_without_gpu_records.json.gz"


def test_events_without_cat_are_gpu_work_by_their_device_stream_and_copy_names() -> None:
    raw = [e for e in raw_events(NO_CAT) if e.get("ph") == "X"]
    copies = [e for e in raw if e["name"].startswith("[MEMCPY]")]
    kernels = [e for e in raw if "stream" in e["args"] and not e["name"].startswith("[MEMCPY]")]
    assert len(kernels) == 60 and len(copies) == 20 and "cat" not in raw[0]
    profile = loaded(NO_CAT)
    table = profile.kernels()
    assert int(table["calls"].sum()) == len(kernels)
    assert float(table["total_us"].sum()) == pytest.approx(sum(e["dur"] for e in kernels), abs=1e-6)
    events = profile.events
    assert events.filter(pl.col("kind") == "memcpy").height == len(copies)
    assert events.filter(pl.col("kind") == "cpu_op").height == 0  # no host event in the file: none invented
    assert profile.overview().gpu_events == len(raw)


def test_a_trace_without_a_gpu_process_still_gets_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    raw = raw_events(AUTOGRAD)
    assert isinstance(raw, list) and all("cat" not in e for e in raw)
    assert run_cli(["summary", "--no-cache", str(loaded(AUTOGRAD).path)]) == 0
    out = capsys.readouterr().out
    assert "no kernels view: no GPU event in this trace" in out
    assert "no launches view:" in out
    ops = loaded(AUTOGRAD).ops()
    counts = {}
    for event in raw:
        counts[event["name"]] = counts.get(event["name"], 0) + 1
    assert dict(ops.select("name", "calls").iter_rows()) == counts


def test_unknown_categories_are_counted_and_named() -> None:
    raw = [e for e in raw_events(UNKNOWN) if e.get("cat")]
    per_cat: dict[str, int] = {}
    for event in raw:
        per_cat[event["cat"]] = per_cat.get(event["cat"], 0) + 1
    names = ", ".join(sorted(per_cat, key=lambda c: (-per_cat[c], c)))
    expected = f"{len(raw):,} events of {len(per_cat)} unknown categories were not read: {names}"
    assert expected in loaded(UNKNOWN).overview().notes


def test_launches_without_gpu_events_say_the_gpu_records_are_missing() -> None:
    raw = raw_events(NO_GPU_RECORDS)
    calls = [e for e in raw if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"]
    launches = [e for e in calls if re.search(r"Launch|Memcpy\w*Async|Memset\w*Async", e["name"])]
    assert not [e for e in raw if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")] and launches
    hints = loaded(NO_GPU_RECORDS).overview().hints
    assert any(h.startswith(f"The GPU records are missing: {len(launches):,} CUDA launch calls") for h in hints)
    assert not any("CPU-bound" in h or "CPU-only" in h for h in hints)
