"""Chrome traces without categories (JAX/XLA, TensorFlow style): GPU lanes from process names.

samples/xla_style_trace.json is hand-written in that shape (no such trace is in ../shared)."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import loaded, run_cli, sample

XLA = "xla_style_trace.json"
GEMM = "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_nn_align8"


def test_gpu_lanes_give_kernels_and_streams() -> None:
    profile = loaded(XLA)
    assert profile.format.startswith("Chrome trace without categories")
    kernels = profile.kernels()
    assert kernels["name"].to_list() == [GEMM, "loop_add_fusion"]  # memset32_kernel is memset work
    gemm = kernels.filter(pl.col("name") == GEMM).row(0, named=True)
    assert (gemm["calls"], gemm["total_us"]) == (2, pytest.approx(600))
    gpu = profile.gpu
    assert set(gpu["kind"].cast(pl.String)) == {"kernel", "memcpy", "memset"}
    assert set(gpu["stream"].to_list()) == {14, 15}
    assert set(gpu["device"].to_list()) == {0}
    ops = profile.ops()
    assert ops.filter(pl.col("name") == "PjitFunction(train_step)")["host_total_us"][0] == 900
    # no host→kernel links: all GPU time is unattributed, and the drill-down says why
    assert ops.filter(pl.col("name") == "(unattributed)")["device_self_us"][0] == pytest.approx(
        20 + 300 + 80 + 300 + 10
    )
    assert "does not link host operations" in profile.missing["launches"]


def test_steps_cover_the_whole_trace_and_export_explains(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    steps = loaded(XLA).steps()
    assert steps.height == 1 and steps["name"][0] == "(whole trace)"
    assert steps["kernel_us"][0] == pytest.approx(300 + 80 + 300)
    code = run_cli(
        [
            "export",
            str(sample(XLA)),
            "-v",
            "launches",
            "--op",
            "PjitFunction(train_step)",
            "-o",
            str(tmp_path / "l.csv"),
        ]
    )
    assert code == 2
    assert "does not link host operations" in capsys.readouterr().err
