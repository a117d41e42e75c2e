"""The viewer driven by Textual's pilot on real sample traces: what is on screen, and exports."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from pilot import screen_text, type_text, wait_loaded, wait_path
from support import loaded, sample, viewer

from profview.profiles.views import refine, view_frame
from profview.tui.app import ProfviewApp
from profview.tui.dialogs.help import HelpScreen
from profview.tui.drill.screen import DrillScreen
from profview.tui.main.screen import MainScreen
from profview.tui.main.step_timeline import Timeline
from profview.tui.main.steps import StepList
from profview.tui.messages import StepChosen
from profview.tui.widgets.table_view import FrameView

RESNET = "resnet50_train_amp.pt.trace.json.gz"


@pytest.mark.asyncio
async def test_overview_shows_device_steps_and_hints() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 40)) as pilot:  # the hints sit below the efficiency and path lines
        await wait_loaded(pilot, app)
        shot = screen_text(app)
        assert "NVIDIA H100 80GB HBM3" in shot
        assert "3 steps" in shot
        assert "GPU busy 15.6%" in shot
        assert "CUDA runtime calls take 13.0%" in shot


def same_frame(shown: pl.DataFrame, expected: pl.DataFrame) -> bool:
    """The viewer's table is the view's frame, its columns in the viewer's order (figures first)."""
    return set(shown.columns) == set(expected.columns) and shown.equals(expected.select(shown.columns))


@pytest.mark.asyncio
async def test_kernels_filter_sort_and_export_equal_the_frame(tmp_path: Path) -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.frame_view()
        assert view is not None and view.view == "kernels"
        # With category (by name, issue 32) and the on-path column (issue 26).
        assert same_frame(view.displayed, view_frame(loaded(RESNET), "kernels", on_path=True))
        await pilot.press("slash")
        await type_text(pilot, "gemm")
        await pilot.press("enter")
        expected = refine(view_frame(loaded(RESNET), "kernels", on_path=True), pattern="gemm")
        assert same_frame(view.displayed, expected)
        assert f"{expected.height} of 78" in screen_text(app)
        await pilot.press("right", "s")  # the column under the cursor: calls
        assert view.sort == "calls" and not view.ascending
        await pilot.press("s")
        assert view.ascending
        expected = refine(
            view_frame(loaded(RESNET), "kernels", on_path=True), pattern="gemm", sort="calls", ascending=True
        )
        assert view.displayed["name"].to_list() == expected["name"].to_list()
        target = tmp_path / "kernels.csv"
        await pilot.press("e")
        await pilot.pause()
        dialog_input = app.screen.query_one("#export-path")
        dialog_input.value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        written = pl.read_csv(target)
        assert written["name"].to_list() == expected["name"].to_list()
        assert written["calls"].to_list() == expected["calls"].to_list()
        assert sorted(written.columns) == sorted(expected.columns)  # in the viewer's column order


@pytest.mark.asyncio
async def test_export_asks_before_overwriting(tmp_path: Path) -> None:
    target = tmp_path / "ops.csv"
    target.write_text("keep me")
    app = viewer(RESNET)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("3", "e")
        await pilot.pause()
        app.screen.query_one("#export-path").value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert target.read_text() == "keep me"  # first Enter only warns
        assert "exists" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert pl.read_csv(target).height == loaded(RESNET).ops().height


@pytest.mark.asyncio
async def test_operator_drill_down_and_back() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("3", "slash")
        await type_text(pilot, "^aten::convolution_backward$")
        await pilot.press("enter", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen)
        frame = app.screen.frame_view().displayed
        assert frame["total_us"].sum() == pytest.approx(10331.192)
        assert "Operators › op aten::convolution_backward" in screen_text(app)
        # Enter on a kernel of the drill-down goes on to what launched it
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.view == "kernel_launches"
        assert "operator chain" in screen_text(app)
        await pilot.press("escape")
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@pytest.mark.asyncio
async def test_kernel_drill_down_shows_python_stack() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(140, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "slash")
        await type_text(pilot, "amp_update_scale")
        await pilot.press("enter", "enter")
        await pilot.pause()
        shot = screen_text(app)
        assert "aten::_amp_update_scale_" in shot
        assert "torch/amp/grad_scaler.py" in shot


@pytest.mark.asyncio
async def test_steps_select_narrows_tables_and_timeline_names_kernels() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4")
        steps = app.screen.query_one(StepList)
        assert steps.steps.height == 3
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.screen.step == 3
        await wait_path(pilot, app.screen)  # the step's own critical path, from a worker
        await pilot.press("2")  # issue 32: a table is made when its pane is shown
        kernels = app.screen.query_one("#kernels").displayed
        assert same_frame(kernels, view_frame(loaded(RESNET), "kernels", step=3, on_path=True))
        await pilot.press("4")
        timeline = app.screen.query_one(Timeline)
        await pilot.press(*["right"] * 5)
        assert timeline.cursor == 5
        before = timeline.view_end - timeline.view_start
        await pilot.press("plus")
        assert timeline.view_end - timeline.view_start == pytest.approx(before / 2, rel=0.2)
        await pilot.press("0")
        event = next((timeline.under_cursor() for _ in [0] if timeline.under_cursor()), None)
        assert event is None or event["name"]
        await pilot.press("a")
        await pilot.pause()
        assert app.screen.step is None


@pytest.mark.asyncio
async def test_help_and_keys_switch_views() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        for key, pane in (("2", "kernels"), ("3", "ops"), ("4", "steps"), ("1", "overview")):
            await pilot.press(key)
            assert app.screen.pane == pane
        await pilot.press("tab")
        assert app.screen.pane == "kernels"
        await pilot.press("b")
        assert app.screen.by_shape["kernels"]
        assert app.frame_view().displayed.height == loaded(RESNET).kernels(by_shape=True).height
        await pilot.press("q")
    assert app.return_code == 0


@pytest.mark.asyncio
async def test_bad_file_exits_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "empty.json"
    bad.write_bytes(b"")
    app = ProfviewApp(str(bad), no_cache=True)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            if app.error:
                break
            await pilot.pause(0.05)
    assert app.return_code == 2
    assert app.error == f"{bad}: the file is empty"


@pytest.mark.asyncio
async def test_hostile_names_are_shown_inert(tmp_path: Path) -> None:
    with gzip.open(sample("ddp_nccl_streams.pt.trace.json.gz"), "rt") as fh:
        doc = json.load(fh)
    evil = "\x1b[2J\x1b]0;pwned\x07[bold red]boom[/] [@click=app.quit]x[/]"
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            event["name"] = evil + event["name"]
            break
    trace = tmp_path / "evil.json"
    trace.write_text(json.dumps(doc))
    app = ProfviewApp(str(trace), no_cache=True)
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "slash")
        await type_text(pilot, "boom")
        await pilot.press("enter")
        await pilot.pause()
        shot = screen_text(app)
        assert "[bold red]boom[/]" in shot
        assert "␛[2J" in shot
        assert "\x1b[2J" not in app.frame_view().table.backend.get_cell_at(0, 0)
        assert app.is_running  # the [@click=app.quit] text did nothing


@pytest.mark.asyncio
async def test_a_table_pane_is_built_when_first_shown() -> None:
    """A view pays only for what it shows. The Kernels and Operators tables of a viewer
    that opens on the Overview are not built (their frames formatted into a table widget) until
    their tab is shown; a step chosen meanwhile is what the table then shows."""
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen.pane == "overview"
        kernels, ops = (screen.query_one(f"#{pane}", FrameView) for pane in ("kernels", "ops"))
        assert kernels.table is None and ops.table is None
        await pilot.press("3")
        await pilot.pause()
        assert ops.table is not None and kernels.table is None
        expected = view_frame(loaded(RESNET), "ops", on_path=True)
        assert ops.table.row_count == expected.height == ops.displayed.height
        assert ops.displayed["name"].to_list() == expected["name"].to_list()
        screen.post_message(StepChosen(screen.profile.step_numbers()[1]))  # Kernels is still hidden
        await pilot.pause()
        assert kernels.table is None
        await pilot.press("2")
        await pilot.pause()
        step = screen.profile.step_numbers()[1]
        narrowed = screen.profile.kernels(step=step)
        assert kernels.table is not None and kernels.table.row_count == narrowed.height
        assert sorted(kernels.displayed["name"].to_list()) == sorted(narrowed["name"].to_list())
