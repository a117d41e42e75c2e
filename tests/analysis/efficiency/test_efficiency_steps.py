"""One step's efficiency and categories (``--step N``, the viewer's "step N only"), the
Overview's one definition of model TFLOP/s, and the B200's FP8-named batched GEMMs as GEMM.
Each figure is recomputed from the raw events (tests/witness.py)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from support import loaded, raw_events, run_cli, sample
from witness import kernels_under

from profview.profiles.views import with_efficiency

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
B200 = "tracelens_b200_nccl_eager_no_steps.json.gz"


def _step_range(step: int) -> tuple[float, float]:
    (annotation,) = [
        e for e in raw_events(GPT2) if e.get("name") == f"ProfilerStep#{step}" and e.get("cat") == "user_annotation"
    ]
    return annotation["ts"], annotation["ts"] + annotation["dur"]


def test_export_efficiency_of_one_step(tmp_path: Path) -> None:
    """``export --view efficiency --step 3``: the calls that started in ProfilerStep#3 and the GPU
    time they launched; the LM-head GEMM ran once a step (3 calls in the trace)."""
    out = tmp_path / "eff-step-3.csv"
    assert run_cli(["export", str(sample(GPT2)), "-v", "efficiency", "--step", "3", "-o", str(out), "--no-cache"]) == 0
    frame = pl.read_csv(out)
    start, end = _step_range(3)
    dims = [[8192, 768], [768, 50257]]
    calls = [
        (e, us)
        for e, us in kernels_under(raw_events(GPT2), "aten::mm")
        if start <= e["ts"] <= end and e["args"]["Input Dims"] == dims
    ]
    row = frame.filter((pl.col("name") == "aten::mm") & (pl.col("input_dims") == json.dumps(dims))).row(0, named=True)
    assert row["calls"] == len(calls) == 1
    assert row["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-3)
    whole = loaded(GPT2).efficiency()
    assert int(frame["calls"].sum()) * 3 == int(whole["calls"].sum())  # three identical steps
    # every call of the step, by name: as many as the raw cpu_op events that started in its range
    counts = dict(frame.group_by("name").agg(pl.col("calls").sum()).iter_rows())
    for name in ("aten::addmm", "aten::_scaled_dot_product_cudnn_attention", "aten::native_layer_norm"):
        raw = [e for e in raw_events(GPT2) if e.get("name") == name and e.get("cat") == "cpu_op"]
        in_step = [e for e in raw if start <= e["ts"] <= end]
        assert counts[name] * (2 if name == "aten::addmm" else 1) == len(in_step), name  # addmm: autocast's pair


def test_categories_of_one_step_and_an_unknown_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cat.csv"
    assert run_cli(["export", str(sample(GPT2)), "-v", "categories", "--step", "3", "-o", str(out), "--no-cache"]) == 0
    frame = pl.read_csv(out)
    start, end = _step_range(3)
    launched = {
        e["args"]["correlation"]
        for e in raw_events(GPT2)
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and "correlation" in e.get("args", {})
        and start <= e["ts"] <= end
    }
    gpu = [
        e
        for e in raw_events(GPT2)
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in launched
    ]
    assert float(frame["total_us"].sum()) == pytest.approx(sum(e["dur"] for e in gpu), abs=0.05)
    assert int(frame["calls"].sum()) == len(gpu)
    assert run_cli(["export", str(sample(GPT2)), "-v", "efficiency", "--step", "9", "-o", str(out), "--force"]) == 2
    assert "no step 9 (steps: [2, 3, 4])" in capsys.readouterr().err


def test_overview_rate_is_total_flops_over_total_time() -> None:
    """One definition: the steps' model FLOPs over their duration, total ÷ total (not the mean of
    per-step rates); the summary prints the same line."""
    profile = loaded(GPT2)
    per_step = profile.step_efficiency().join(profile.steps().select("step", "duration_us"), on="step")
    rate = float(per_step["model_tflop"].sum()) / (float(per_step["duration_us"].sum()) / 1e6)
    mean_of_rates = float(per_step["tflops_s"].mean())  # type: ignore[arg-type]
    assert abs(rate - mean_of_rates) > 0.05  # the two definitions differ on this trace
    line = next(line for line in profile.efficiency_lines() if line.startswith("model FLOPs"))
    assert f", {rate:.1f} TFLOP/s" in line
    mfu = rate / 989.4 * 100
    assert f"MFU {mfu:.1f}%" in line


def test_fp8_named_batched_gemms_are_gemm() -> None:
    """The B200 trace's MoE GEMMs (``bmm_MxE4m3…``, ``bmm_Bfloat16…``, launched by
    ``vllm::moe_forward``: 48% of its kernel time) are GEMM by their name, not "other"."""
    profile = loaded(B200)
    kernels = with_efficiency(profile, "kernels", profile.kernels())  # the kernel table's name rule
    bmm = kernels.filter(pl.col("name").str.starts_with("bmm_"))
    assert set(bmm["category"].to_list()) == {"gemm"}
    raw = [e for e in raw_events(B200) if e.get("cat") == "kernel" and e["name"].startswith("bmm_")]
    total = sum(e["dur"] for e in raw)
    kernel_time = sum(e["dur"] for e in raw_events(B200) if e.get("cat") == "kernel")
    assert float(bmm["total_us"].sum()) == pytest.approx(total, abs=1e-3)
    assert total / kernel_time == pytest.approx(0.48, abs=0.005)  # of all kernel time
    assert "other" not in set(bmm["category"].to_list())
