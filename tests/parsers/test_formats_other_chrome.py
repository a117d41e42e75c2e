"""Chrome traces without categories (JAX/XLA, TensorFlow style): GPU lanes from process names.

samples/xla_style_trace.json is hand-written in that shape (no such trace is in ../shared): a
/device:GPU:0 process with two stream lanes and the derived Steps / XLA Modules / XLA Ops lines
that XLA's profiler adds over the same GPU work, a /host:CPU process, and launch shapes in
``kernel_details`` strings."""

from __future__ import annotations

import json

import polars as pl
import pytest
from support import loaded, run_cli, sample

import profview

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


def test_derived_lines_are_not_kernels_and_launch_shapes_come_from_kernel_details() -> None:
    profile = loaded(XLA)
    on_lines = profile.events.filter(pl.col("name").is_in(["0", "jit_train_step(12345)", "dot.3", "add.5", "dot.7"]))
    assert set(on_lines["kind"].cast(pl.String)) == {"gpu_annotation"}
    assert profile.gpu["dur"].sum() == 20 + 300 + 80 + 300 + 10  # each instant of GPU work once
    gemm = profile.kernels().filter(pl.col("name") == GEMM).row(0, named=True)
    # "regs:168 static_shared:0 dynamic_shared:73728 grid:128,1,1 block:256,1,1 occ_pct:12.5"
    assert (gemm["grid"], gemm["block"], gemm["registers"], gemm["shared_mem"], gemm["occupancy"]) == (
        "[128, 1, 1]",
        "[256, 1, 1]",
        168,
        73728,
        12.5,
    )


def test_gpu_process_without_named_streams(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """With no thread named as a stream, every thread of a GPU process is a lane of GPU work;
    a trace with no GPU process says that it has no kernels."""
    doc = json.loads(sample(XLA).read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e["name"] != "thread_name"]
    unnamed = tmp_path / "unnamed.json"
    unnamed.write_text(json.dumps(doc))
    profile = profview.load(unnamed, use_cache=False)
    assert profile.gpu.height == 5 + 5  # the stream work and the five ranges, all read as GPU work
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("pid") == 2]
    host_only = tmp_path / "host_only.json"
    host_only.write_text(json.dumps(doc))
    profile = profview.load(host_only, use_cache=False)
    assert "no process of this trace is named as a GPU" in profile.missing["kernels"]
    assert not profile.available("kernels")


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


PADDLE = "paddle_style_trace.json"  # hand-written in the shape PaddlePaddle's trace writer gives


def test_paddle_trace_names_links_and_steps() -> None:
    """Paddle's categories map onto the Kineto kinds; the ``[1.234 ms]`` suffix of every name is
    dropped (else each event is a row of its own); ``correlation id`` links kernels to their
    runtime calls and so to operators; ``ProfileStep#N`` ranges are the steps."""
    profile = loaded(PADDLE)
    assert profile.format == "PaddlePaddle Chrome trace" and not profile.missing
    kernels = profile.kernels()
    relu = kernels.filter(pl.col("name") == "relu_kernel").row(0, named=True)
    assert (relu["calls"], relu["total_us"], relu["grid"], relu["occupancy"]) == (2, 90.0, "[2048, 1, 1]", 100.0)
    assert kernels["name"].to_list() == ["implicit_convolve_sgemm", "relu_kernel"]
    ops = profile.ops()
    conv = ops.filter(pl.col("name") == "conv2d dygraph").row(0, named=True)
    assert (conv["kind"], conv["host_total_us"], conv["device_total_us"]) == ("cpu_op", 500.0, 300.0 + 2.0)
    assert ops.filter(pl.col("name") == "conv2d compute")["device_self_us"][0] == 302.0  # the innermost launcher
    launches = profile.launches("conv2d dygraph")
    assert dict(zip(launches["name"], launches["kind"], strict=True)) == {
        "implicit_convolve_sgemm": "kernel",
        "MEMSET": "memset",
    }
    assert profile.kernel_launches("relu_kernel")["op"].to_list() == ["relu dygraph"]
    steps = profile.steps()
    assert steps["step"].to_list() == [1, 2]
    assert steps["duration_us"].to_list() == [1200.0, 800.0]
    assert steps["kernel_us"].to_list() == [300.0 + 50.0, 40.0]
