"""The Efficiency tab (issue 24): the perf-model table and the roofline chart on screen, with
TraceLens' figures for the H100 Qwen trace (samples/tracelens_h100_qwen1.5-0.5b.GEMM.csv), Enter
on a row opening the GPU work its calls of those shapes launched, and the one line of a trace
without shapes."""

from __future__ import annotations

import csv

import polars as pl
import pytest
from pilot import screen_text, wait_loaded
from support import sample, viewer

from profview.tui.drill.screen import DrillScreen
from profview.tui.main.efficiency import EfficiencyView, RooflineChart
from profview.tui.main.roofline import COMPUTE_ROOF, MEMORY_ROOF, RIDGE
from profview.tui.widgets.table_view import FrameView

QWEN = "tracelens_h100_qwen1.5-0.5b.json.gz"


def first_gemm_row() -> dict[str, str]:
    with open(sample("tracelens_h100_qwen1.5-0.5b.GEMM.csv"), newline="") as fh:
        return next(csv.DictReader(fh))


async def test_efficiency_tab_shows_tracelens_figures_and_the_roofline() -> None:
    theirs = first_gemm_row()  # aten::mm 8944×1024 @ 1024×2816: 48 calls, 4,055.25 µs
    app = viewer(QWEN)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("8")
        await pilot.pause()
        view = app.screen.query_one(EfficiencyView)
        text = screen_text(app)
        # the chart: both roofs and the ridge, the device's peaks in the caption, operator 1 drawn
        assert COMPUTE_ROOF in text and MEMORY_ROOF in text and RIDGE in text
        assert "H100 SXM · bf16 989.4 TFLOP/s" in text and "3.35 TB/s" in text and "ridge 295 FLOP/B" in text
        # issue 40: the caption says what share of GPU time the rows size (the summary line's figure)
        sized = app.profile.efficiency_share(view.frame)[0]
        assert f"rows size {sized:.1f}% of GPU time" in text and 0 < sized <= 100
        assert "1 610.5 TFLOP/s, 62% of roof (compute), 4.055 ms · aten::mm [[8944, 1024], [1024, 2816]]" in text
        # the table's first row is TraceLens' first GEMM row
        table = view.query_one(FrameView)
        first = table.displayed.row(0, named=True)
        assert (first["name"], first["input_dims"]) == (theirs["name"], theirs["Input Dims_first"])
        assert first["calls"] == int(theirs["name_count"]) == 48
        assert abs(first["kernel_us"] - float(theirs["Kernel Time (µs)_sum"])) < 2e-3
        assert "[[8944, 1024], [1024, 2816]]" in text and "4,055.251" in text and "610.545" in text
        # c hides the chart and shows it again
        await pilot.press("c")
        await pilot.pause()
        assert not view.query_one(RooflineChart).display
        assert "TFLOP/s └" not in screen_text(app)  # the chart's axis is gone (the caption stays)
        await pilot.press("c")
        await pilot.pause()
        # Enter: the GPU work of the 48 calls of this shape (the GEMM kernel and cuBLAS' memset)
        table.focus_table()
        await pilot.press("enter")
        for _ in range(100):
            if isinstance(app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, DrillScreen)
        frame = app.screen.query_one(FrameView).base
        assert int(frame["calls"].sum()) == 96  # 48 GEMM kernels + 48 memsets
        assert abs(float(frame["total_us"].sum()) - float(first["kernel_us"])) < 1e-9
        assert set(frame["kind"].to_list()) == {"kernel", "memset"}


async def test_kernels_and_operators_tabs_gain_a_category_and_no_tflops() -> None:
    """Each table's category needs no model (operators by the operator rule, kernels by
    their name); TFLOP/s is the Efficiency tab's, per operator and shapes."""
    app = viewer(QWEN)
    async with app.run_test(size=(250, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("3")
        await pilot.pause()
        ops = app.screen.query_one("#ops", FrameView).base
        assert ops.filter(pl.col("name") == "aten::mm")["category"].to_list() == ["gemm"]
        assert "tflops_s" not in ops.columns
        await pilot.press("2")
        await pilot.pause()
        kernels = app.screen.query_one("#kernels", FrameView).base
        flash = kernels.filter(pl.col("name").str.contains("flash_fwd_kernel")).row(0, named=True)
        assert flash["category"] == "attention"
        assert "tflops_s" not in kernels.columns
        assert "category" in screen_text(app) and "tflops_s" not in screen_text(app)


async def test_efficiency_tab_without_shapes_says_so() -> None:
    app = viewer("hta_legacy_inference_rank_1.json.gz")
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("8")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "Efficiency: not available — no input shapes in this trace" in text


async def test_step_only_narrows_the_efficiency_tab_and_its_export(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Enter on step 2 in Steps, then 8: the table holds step 2's calls (a third of
    gpt2's three identical steps) and the export named …-step-2.csv writes them.  At 80 columns
    the table shows figures (calls, kernel time, TFLOP/s) beside the name, the shapes after."""
    app = viewer("gpt2_train_bf16.pt.trace.json.gz")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4", "enter")
        await pilot.pause()
        await pilot.press("8")
        await pilot.pause()
        view = app.screen.query_one(EfficiencyView)
        table = view.query_one(FrameView)
        whole = app.profile.efficiency()
        assert int(table.base["calls"].sum()) * 3 == int(whole["calls"].sum())
        header = next(line for line in screen_text(app).splitlines() if "calls" in line)
        assert "kernel_us" in header and "tflops_s" in header and "input_dims" not in header
        table.focus_table()
        await pilot.press("e")
        await pilot.pause()
        field = app.screen.query_one("#export-path")
        assert field.value.endswith("-step-2.csv")
        field.value = str(tmp_path / "eff.csv")
        await pilot.press("enter")
        await pilot.pause()
    written = pl.read_csv(tmp_path / "eff.csv")
    step = app.profile.efficiency(step=2)
    assert int(written["calls"].sum()) == int(step["calls"].sum())
    assert float(written["kernel_us"].sum()) == pytest.approx(float(step["kernel_us"].sum()), abs=0.01)
