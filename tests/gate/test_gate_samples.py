"""The gate's per-step samples (issue 41) against a second witness: each kernel's µs and calls per
ProfilerStep recomputed from the raw JSON with the standard library (launching call's start inside
the step's host range), and the steps' samples against the step table's own rows."""

from __future__ import annotations

import polars as pl
import pytest
from gate_witness import load_raw, raw_step_kernels
from support import loaded, sample

TRACES = ("gpt2_train_bf16.pt.trace.json.gz", "resnet50_train_amp.pt.trace.json.gz")


@pytest.mark.parametrize("name", TRACES)
def test_kernel_samples_equal_the_raw_events(name: str) -> None:
    frame = loaded(name).gate_samples("kernels")
    ours = {(r["name"], r["step"]): (r["total_us"], r["calls"]) for r in frame.iter_rows(named=True)}
    raw = raw_step_kernels(sample(name))
    assert set(ours) == set(raw)
    for key, (total, calls) in raw.items():
        assert ours[key][0] == pytest.approx(total, abs=1e-3) and ours[key][1] == calls


def _raw_prewindow_kernel_us(name: str) -> float:
    """The µs of the kernels launched before the profiling window that run in the first step: no
    launching call in the trace, a start before the first GPU event of their stream that a call
    launched, and after the first step's start (raw events)."""
    events = load_raw(sample(name))["traceEvents"]
    start = min(e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                and str(e.get("name", "")).startswith("ProfilerStep#"))
    launched = {e["args"]["correlation"] for e in events if e.get("ph") == "X"
                and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    first: dict[tuple, float] = {}
    for e in gpu:
        if e.get("args", {}).get("correlation") in launched:
            first[(e["pid"], e["tid"])] = min(first.get((e["pid"], e["tid"]), e["ts"]), e["ts"])
    return sum(e["dur"] for e in gpu if e["cat"] == "kernel" and e.get("args", {}).get("correlation") not in launched
               and start <= e["ts"] < first.get((e["pid"], e["tid"]), min(first.values())))


def test_per_step_kernels_are_the_step_narrowed_table_less_the_prewindow_work() -> None:
    """Each step's kernel µs is the step-narrowed table's, except the first step's: the table counts
    the work launched before the profiling window there, the gate keeps it apart (its own sample)."""
    name = "gpt2_train_bf16.pt.trace.json.gz"
    profile = loaded(name)
    frame = profile.gate_samples("kernels")
    prewindow = _raw_prewindow_kernel_us(name)
    assert prewindow > 1000
    for i, step in enumerate(profile.step_numbers()):
        table = profile.kernels(step=step)
        ours = frame.filter(frame["step"] == step)
        expected = table["total_us"].sum() - (prewindow if i == 0 else 0.0)
        assert ours["total_us"].sum() == pytest.approx(expected, rel=1e-9)


def test_step_samples_are_the_step_table() -> None:
    profile = loaded("resnet50_train_amp.pt.trace.json.gz")
    frame = profile.gate_samples("steps")
    assert frame["duration_us"].to_list() == profile.steps()["duration_us"].to_list()


def test_collective_samples_equal_the_raw_nccl_kernels() -> None:
    name = "hta_sampled_rank-0.json.gz"
    frame = loaded(name).gate_samples("collectives")
    raw = raw_step_kernels(sample(name))
    nccl: dict[int, float] = {}
    for (kernel, step), (total, _calls) in raw.items():
        if "nccl" in kernel.lower():
            nccl[step] = nccl.get(step, 0.0) + total
    ours = frame.group_by("step").agg(pl.col("total_us").sum()).sort("step")
    assert nccl and dict(zip(ours["step"].to_list(), ours["total_us"].to_list(), strict=True)) == pytest.approx(nccl)


def test_category_samples_share_out_each_steps_kernel_time() -> None:
    name = "resnet50_train_amp.pt.trace.json.gz"
    frame = loaded(name).gate_samples("categories")
    per_step: dict[int, float] = {}
    for (_kernel, step), (total, _calls) in raw_step_kernels(sample(name)).items():
        per_step[step] = per_step.get(step, 0.0) + total
    ours = frame.group_by("step").agg(pl.col("total_us").sum()).sort("step")
    assert dict(zip(ours["step"].to_list(), ours["total_us"].to_list(), strict=True)) == pytest.approx(per_step)
    assert {"convolution", "normalization", "elementwise"} <= set(frame["name"].to_list())
