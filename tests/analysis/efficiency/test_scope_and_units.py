"""Every Overview line under a chosen step is that step's own figure, an unknown figure says
unknown, the critical-path line gives the path's length against the steps', and the roofline's
roof is the precision of the drawn rows.

Real files: ``samples/gpt2_train_bf16.pt.trace.json.gz`` (3 steps; step 2's GPU time recounted
from the raw JSON: the GPU events launched inside its ProfilerStep range),
``samples/h100_compile_partial_window.json.gz`` (operators with shapes, none sized by the perf
model), ``samples/tracelens_mi300_vllm_piecewise_replay.json.gz`` (MI300X: its one drawn row is
bf16; an undrawn row of unknown precision carries most GPU time and the fp32 peak).
"""

from __future__ import annotations

import re

import polars as pl
import pytest
from support import loaded, raw_events

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"


def _raw_gpu_us_in_step(name: str, step: int) -> float:
    """GPU time of the work launched inside ``ProfilerStep#step``'s host range, plus the work with
    no launch call in the trace that starts in the step's window (host start to the end of its
    launched work, never into the next step)."""
    events = [e for e in raw_events(name) if e.get("ph") == "X"]

    def host_range(n: int) -> tuple[float, float] | None:
        ranges = [e for e in events if e.get("name") == f"ProfilerStep#{n}" and e.get("cat") != "gpu_user_annotation"]
        return (min(e["ts"] for e in ranges), max(e["ts"] + e["dur"] for e in ranges)) if ranges else None

    lo, hi = host_range(step)  # type: ignore[misc]
    following = host_range(step + 1)
    calls = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    launched = [e for e in gpu if e["args"].get("correlation") in calls]
    mine = [e for e in launched if lo <= calls[e["args"]["correlation"]]["ts"] <= hi]
    end = max([hi, *(e["ts"] + e["dur"] for e in mine)])
    if following is not None:
        end = min(end, following[0])
    unlaunched = [e for e in gpu if e["args"].get("correlation") not in calls and lo <= e["ts"] < end]
    return sum(e["dur"] for e in mine + unlaunched)


def test_the_efficiency_share_under_a_step_is_the_steps_own() -> None:
    profile = loaded(GPT2)
    assert float(profile.categories(2)["total_us"].sum()) == pytest.approx(_raw_gpu_us_in_step(GPT2, 2), abs=0.01)
    whole = next(line for line in profile.efficiency_lines() if line.startswith("efficiency "))
    step = next(line for line in profile.efficiency_lines(2) if line.startswith("efficiency "))
    frame = profile.efficiency(step=2)
    sized = float(frame.filter(pl.col("gflops").is_not_null())["kernel_us"].sum())
    expected = sized / _raw_gpu_us_in_step(GPT2, 2) * 100
    assert step.startswith(f"efficiency in step 2: rows size {expected:.1f}% of GPU time")
    assert f"{expected:.1f}" == "79.4" and "88.9%" in whole  # the whole trace's share differs


def test_model_flops_of_nothing_sized_are_unknown_not_zero() -> None:
    profile = loaded("h100_compile_partial_window.json.gz")
    assert profile.efficiency().filter(pl.col("gflops").is_not_null()).height == 0
    line = next(line for line in profile.efficiency_lines() if line.startswith("model FLOPs"))
    assert "unknown" in line and "0.000 TFLOP" not in line and "TFLOP/s" not in line


def test_the_critical_path_line_gives_its_length_against_the_step() -> None:
    from profview.tui.main.overview import path_line

    profile = loaded(GPT2)
    frame = profile.critical_path()
    path = float(frame.filter(pl.col("step") == 3).unique("step")["path_us"].sum())
    events = [e for e in raw_events(GPT2) if e.get("name") == "ProfilerStep#3" and e.get("ph") == "X"]
    assert events  # the step is in the raw trace; its duration (to the end of its GPU work) is the steps view's
    step_us = float(profile.steps().filter(pl.col("step") == 3)["duration_us"][0])
    line = path_line(profile, 3).plain
    found = re.search(r"critical path \(step 3\): ([\d.]+) ms of the step's ([\d.]+) ms \((\d+)%\)", line)
    assert found, line
    assert float(found[1]) == pytest.approx(path / 1e3, abs=1e-3)
    assert float(found[2]) == pytest.approx(step_us / 1e3, abs=1e-3)
    assert int(found[3]) == round(path / step_us * 100)


def test_the_roof_is_the_precision_of_the_drawn_rows() -> None:
    from profview.tui.main.roofline import chart_peaks, chart_roof

    frame = loaded("tracelens_mi300_vllm_piecewise_replay.json.gz").efficiency()
    on_chart = ((pl.col("tflops_s") > 0) & (pl.col("flops_per_byte") > 0)).fill_null(False)
    drawn = frame.filter(on_chart)
    assert set(drawn["precision"].drop_nulls()) == {"bf16"}  # and one aten::sub of unknown precision, 3.4 µs
    undrawn = frame.filter(~on_chart)
    assert undrawn["kernel_us"].sum() > drawn["kernel_us"].sum()  # what made the old roof fp32
    peak, _tb, precision = chart_roof(frame)
    bf16 = float(drawn.filter(pl.col("precision") == "bf16")["peak_tflops"][0])
    assert precision == "bf16" and peak == bf16 == chart_peaks(frame)[0]
    assert peak > float(undrawn["peak_tflops"].drop_nulls()[0])
