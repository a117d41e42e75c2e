"""The gate's per-step samples (issue 41) against a second witness: each kernel's µs and calls per
ProfilerStep recomputed from the raw JSON with the standard library (launching call's start inside
the step's host range), and the steps' samples against the step table's own rows."""

from __future__ import annotations

import polars as pl
import pytest
from gate_witness import raw_step_kernels
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


def test_per_step_kernels_add_up_to_the_step_narrowed_table() -> None:
    profile = loaded("gpt2_train_bf16.pt.trace.json.gz")
    frame = profile.gate_samples("kernels")
    for step in profile.step_numbers():
        table = profile.kernels(step=step)
        ours = frame.filter(frame["step"] == step)
        assert ours["total_us"].sum() == pytest.approx(table["total_us"].sum(), rel=1e-9)
        assert ours["calls"].sum() == table["calls"].sum()


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
