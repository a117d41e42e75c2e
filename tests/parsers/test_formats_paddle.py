"""The Paddle profiler summary inside a training log (seed 002): figures read by hand."""

from __future__ import annotations

import polars as pl
import pytest
from support import loaded, run_cli, sample

PADDLE = "seed_paddle_profiler_summary_log.txt"


def test_kernel_summary_row() -> None:
    profile = loaded(PADDLE)
    assert profile.format == "Paddle profiler summary"
    row = profile.kernels().filter(pl.col("name") == "void phi::GPURoiAlignBackward<float>").row(0, named=True)
    assert row["calls"] == 10
    assert row["total_us"] == pytest.approx(239.31e3)  # "239.31 / 23.93 / 35.01 / 19.64 / 12.89" ms
    assert (row["mean_us"], row["max_us"], row["min_us"]) == (
        pytest.approx(23.93e3),
        pytest.approx(35.01e3),
        pytest.approx(19.64e3),
    )
    assert row["pct"] == pytest.approx(12.89)


def test_operator_tree_drills_down_to_its_kernels() -> None:
    """The kernels under `conv2d dygraph`, counted from the file's indentation by hand."""
    lines = sample(PADDLE).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("conv2d dygraph "))
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" "))
    gpu_rows = [line for line in lines[start + 1 : end] if "- / - / - / - / -" in line]
    profile = loaded(PADDLE)
    op = profile.ops().filter(pl.col("name") == "conv2d dygraph").row(0, named=True)
    assert (op["calls"], op["host_total_us"], op["device_total_us"]) == (
        1140,
        pytest.approx(441.72e3),
        pytest.approx(566.98e3),
    )
    launches = profile.launches("conv2d dygraph")
    assert launches.height == len(gpu_rows) == 18
    assert launches["calls"].sum() == sum(int(line[54:62]) for line in gpu_rows)
    top = launches.sort("total_us", descending=True).row(0, named=True)
    assert top["name"] == "void xmma_cudnn::gemm::kernel<xmma_cudnn::imp..." and top["calls"] == 294
    assert top["total_us"] == pytest.approx(139.14e3)
    assert launches.filter(pl.col("name") == "MEMSET")["kind"][0] == "memset"
    # and back: which operators ran the RoiAlign backward kernel
    back = profile.kernel_launches("void phi::GPURoiAlignBackward<float>(int, flo...")
    assert back["op"].to_list() == ["RoiAlignGradNode"]


def test_paddle_views_and_export(tmp_path) -> None:  # type: ignore[no-untyped-def]
    profile = loaded(PADDLE)
    assert not profile.available("steps")
    out = tmp_path / "l.csv"
    assert run_cli(["export", str(sample(PADDLE)), "-v", "launches", "--op", "conv2d dygraph", "-o", str(out)]) == 0
    assert pl.read_csv(out).height == 18


def test_other_summary_sections() -> None:
    """User-defined ranges and memory copies join the operator view; device, model, event-type and
    perf summaries are shown as facts of the run (values read by hand from the log)."""
    profile = loaded(PADDLE)
    ops = profile.ops()
    bbox = ops.filter(pl.col("name") == "MaskRCNN::bbox_head").row(0, named=True)
    assert (bbox["kind"], bbox["calls"]) == ("user_annotation", 10)
    assert (bbox["host_total_us"], bbox["device_total_us"]) == (pytest.approx(541.23e3), pytest.approx(455.12e3))
    copy = ops.filter(pl.col("name") == "GpuMemcpyAsync:GPU->CPU").row(0, named=True)
    assert (copy["kind"], copy["calls"], copy["host_total_us"]) == ("memcpy", 230, pytest.approx(497.50e3))
    facts = profile.metadata["environments"]
    assert facts["GPU0 utilization"] == "69.54 %"
    assert facts["model Backward"] == "CPU 992.41 ms (37.17%), GPU 1115.35 ms (60.07%)"
    assert facts["perf ips (avg)"] == "1.42885"
