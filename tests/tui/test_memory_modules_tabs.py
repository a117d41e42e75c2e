"""The Memory and Modules tabs (issue 15) driven by Textual's pilot on the real ResNet-50 and
GPT-2 samples; figures checked against the raw events (the witnesses of test_memory/test_modules)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from pilot import screen_text, wait_loaded
from support import loaded, raw_events, sample, viewer
from witness import backward_witness, device_of, memory_raw, raw_peaks, witness

from profview.tui.drill.screen import DrillScreen
from profview.tui.main.memory import MemoryChart, MemoryView
from profview.tui.main.memory_chart import column_levels
from profview.tui.main.modules import ModulesView

RESNET = "resnet50_train_amp.pt.trace.json.gz"
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"


@pytest.mark.asyncio
async def test_memory_tab_chart_peak_and_ops(tmp_path: Path) -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("5")
        assert app.screen.pane == "memory"
        shot = screen_text(app)
        assert "peak 3.06 GiB" in shot and "aten::nll_loss_forward" in shot
        view = app.screen.query_one(MemoryView)
        assert view.device == "cuda:0"
        chart = view.query_one(MemoryChart)
        # The chart's highest column is the raw events' maximum Total Allocated on cuda:0.
        alloc, _res, _start, _end = column_levels(chart.memory, chart.size.width - 11)
        assert alloc.max() == raw_peaks(raw_events(RESNET))["cuda:0"]
        assert chart.memory.height == sum(1 for e in memory_raw(raw_events(RESNET)) if device_of(e["args"]) == "cuda:0")
        # The table is memory_ops, sortable and exportable as any other.
        assert app.frame_view().displayed.equals(loaded(RESNET).memory_ops())
        await pilot.press("d")
        assert view.device == "cpu"
        assert "cpu" in screen_text(app)


@pytest.mark.asyncio
async def test_modules_tab_tree_depth_and_drill_down() -> None:
    total, _own, _outside = witness(raw_events(RESNET))
    backward = backward_witness(raw_events(RESNET))
    both = total["ResNet_0"] + backward["bwd_total"]["ResNet_0"]
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("6")
        modules = loaded(RESNET).modules()
        view = app.screen.query_one(ModulesView)
        table = app.frame_view()
        assert table.displayed.height == modules.filter(pl.col("depth") < 3).height
        first = table.displayed.row(0, named=True)
        assert first["module"] == "ResNet_0"
        assert first["fwd_total_us"] == pytest.approx(total["ResNet_0"], abs=1e-6)
        assert first["bwd_total_us"] == pytest.approx(backward["bwd_total"]["ResNet_0"], abs=1e-6)
        assert first["total_us"] == pytest.approx(both, abs=1e-6)
        optimizer = table.displayed.filter(pl.col("path") == "Optimizer.step#SGD.step").row(0, named=True)
        assert optimizer["total_us"] == pytest.approx(backward["optimizer"]["Optimizer.step#SGD.step"], abs=1e-6)
        await pilot.press("x")
        assert view.max_depth == 4
        assert app.frame_view().displayed.height == modules.filter(pl.col("depth") < 4).height
        await pilot.press("x", "x")
        assert app.frame_view().displayed.height == modules.height  # every level
        await pilot.press("z")
        assert view.max_depth == 4
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen)
        drilled = app.screen.frame_view().displayed
        assert drilled["total_us"].sum() == pytest.approx(both, abs=1e-3)  # forward and backward kernels
        assert "Modules › module ResNet_0" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("b")
        assert view.by_source
        sources = app.frame_view().displayed
        assert sources.equals(loaded(RESNET).sources())
        await pilot.press("down", "enter")  # a source line → the GPU work launched under it
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen)
        line = sources.row(1, named=True)
        assert app.screen.frame_view().displayed["total_us"].sum() == pytest.approx(line["total_us"], abs=1e-3)
        await pilot.press("escape")
        await pilot.press("b")
        assert not view.by_source


@pytest.mark.asyncio
async def test_gpt2_memory_and_no_modules() -> None:
    app = viewer(GPT2)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("5")
        shot = screen_text(app)
        assert "peak 12.68 GiB" in shot  # 13,611,741,696 B
        assert raw_peaks(raw_events(GPT2))["cuda:0"] == 13_611_741_696
        await pilot.press("6")
        assert "no nn.Module frames" in screen_text(app)
        assert app.frame_view() is None


@pytest.mark.asyncio
async def test_text_tables_say_why_there_is_no_memory_modules_or_timeline() -> None:
    app = viewer("resnet50_train_amp.tables.txt")
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_loaded(pilot, app)
        for key, title in (("5", "Memory"), ("6", "Modules"), ("7", "Timeline")):
            await pilot.press(key)
            assert f"{title}: not available for this profile — a PyTorch key_averages table has no" in screen_text(app)
        await pilot.press("q")
    assert app.return_code == 0


@pytest.mark.asyncio
async def test_the_viewer_lets_the_events_go_once_its_views_are_saved(tmp_path: Path, monkeypatch) -> None:
    """A trace parsed with the cache on is viewed without its events frame; the memory
    pane, which is made from the events, still shows the raw events' peak, and the events asked for
    again equal the first read (from the cache entry)."""
    from profview.tui.app import ProfviewApp

    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path))
    app = ProfviewApp(str(sample(RESNET)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        profile = app.profile
        assert profile is not None and "events" not in vars(profile)
        assert not isinstance(profile.events_source, pl.DataFrame)
        await pilot.press("5")
        chart = app.screen.query_one(MemoryView).query_one(MemoryChart)
        alloc, _res, _start, _end = column_levels(chart.memory, chart.size.width - 11)
        assert alloc.max() == raw_peaks(raw_events(RESNET))["cuda:0"]
        assert profile.events is not None and profile.events.equals(loaded(RESNET).events)
    app = viewer(RESNET)  # --no-cache: reading the events again would mean parsing again
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        assert app.profile is not None and isinstance(app.profile.events_source, pl.DataFrame)
