"""Tables and history: the sorted column stays on screen, the name column is frozen and
follows the terminal's width, the cursor marks the whole row, a breadcrumb names the drill-down
path, each tab keeps its place, notices do not cover the rows, and "q" then "e" is harmless.

Witnesses are the raw trace events, read here with the standard library (conftest.raw_events).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from pilot import screen_text, wait_loaded
from rich.cells import cell_len
from support import loaded, raw_events, viewer
from textual.widgets._toast import Toast

from profview.tui.dialogs.export import ExportDialog
from profview.tui.drill.screen import DrillScreen
from profview.tui.main.screen import MainScreen
from profview.tui.widgets.breadcrumb import Breadcrumb, fit_path
from profview.tui.widgets.message_line import MessageLine
from profview.tui.widgets.row_cursor import RowCursorTable

RESNET = "resnet50_train_amp.pt.trace.json.gz"
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"


def kernels() -> list[dict]:
    return [e for e in raw_events(RESNET) if e.get("cat") == "kernel"]


def by_total() -> list[str]:
    """Kernel names by total GPU time, largest first (the Kernels tab's order)."""
    totals: dict[str, float] = defaultdict(float)
    for event in kernels():
        totals[event["name"]] += event["dur"]
    return sorted(totals, key=totals.get, reverse=True)


def cell_on_screen(table: RowCursorTable) -> bool:
    """Whether the cursor's cell lies inside the table's visible window (right of frozen columns)."""
    region = table._get_cell_region(table.cursor_coordinate)
    fixed = table._get_fixed_offset().left
    left = int(table.scroll_x) + fixed
    if table.cursor_column < table.fixed_columns:
        return region.right <= fixed
    return region.x >= left and region.right <= int(table.scroll_x) + table.scrollable_content_region.width


@pytest.mark.asyncio
async def test_sorting_by_a_right_hand_column_keeps_it_on_screen_at_80x24() -> None:
    most_registers = max(e["args"]["registers per thread"] for e in kernels())
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.query_one("#kernels")
        column = view.displayed.columns.index("registers")
        await pilot.press(*["right"] * column)
        await pilot.pause()
        assert view.table.scroll_x > 0  # registers lies right of what 80 columns show at first
        await pilot.press("s")
        await pilot.pause()
        await pilot.pause()
        table = view.table
        # issue 22: a sorted column off screen moves next to the name, the cursor with it
        assert view.sort == "registers" and table.cursor_column == 1 == view.displayed.columns.index("registers")
        assert cell_on_screen(table)
        assert view.current_row()["registers"] == most_registers  # sorted descending: the raw maximum
        assert "registers" in screen_text(app).splitlines()[3]  # its header is drawn


@pytest.mark.asyncio
async def test_the_name_column_stays_when_scrolling_right() -> None:
    top = by_total()[0]
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.query_one("#kernels")
        await pilot.press(*["right"] * (view.displayed.width - 1))  # to the last column
        await pilot.pause()
        table = view.table
        assert table.fixed_columns == 1 and table.scroll_x > 0
        lines = screen_text(app).splitlines()
        assert lines[3].split()[0] == "name"
        assert lines[4].strip().startswith(top[:12])  # the first row's name, though scrolled right
        assert "shapes" in lines[3]  # and the last column is shown beside it


@pytest.mark.asyncio
async def test_the_name_column_width_follows_a_resize() -> None:
    top = by_total()[0]
    assert len(top) > 100
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "down")
        await pilot.pause()
        view = app.screen.query_one("#kernels")
        narrow = view.table.max_column_content_width
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        await pilot.pause()
        wide = view.table.max_column_content_width
        assert narrow == 30 and wide >= 60
        assert view.table.cursor_row == 1  # the rebuild kept the cursor's row
        line = screen_text(app).splitlines()[4]
        shown = line.split("  ")[0].strip()
        # the top kernel's name to the new width: its start, and (as a sibling differs from it only
        # in a template argument) the part that tells them apart
        assert len(shown) > 40 and shown.startswith(top[:20]) and "1, 1, true" in shown


@pytest.mark.asyncio
async def test_the_cursor_row_is_marked_across_the_table() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "down", "down", "right")
        await pilot.pause()
        table = app.screen.query_one("#kernels").table
        assert isinstance(table, RowCursorTable) and table.cursor_type == "cell"
        row_style = table.get_component_rich_style("datatable--cursor-row")
        marked = table._render_cell(2, 3, table.rich_style, 10)  # a cell of the cursor's row, not the cursor
        other = table._render_cell(3, 3, table.rich_style, 10)
        assert marked != other
        assert any(seg.style and seg.style.bgcolor == row_style.bgcolor for seg in marked[0])


def crumb(app) -> str:  # type: ignore[no-untyped-def]
    return app.screen.query_one(Breadcrumb).plain


@pytest.mark.asyncio
async def test_breadcrumb_after_two_drill_downs_and_back_with_esc_and_backspace() -> None:
    events = kernels()
    name = by_total()[0]
    launches = Counter(e["name"] for e in events)[name]  # raw GPU events with that name
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "enter")
        for _ in range(40):
            await pilot.pause(0.05)
            if isinstance(app.screen, DrillScreen):
                break
        first = app.screen
        assert isinstance(first, DrillScreen)
        assert first.frame["calls"].sum() == launches  # every launch of the kernel, by its operators
        text = crumb(app)
        assert text.startswith("Kernels › kernel ") and name[:20] in text and cell_len(text) <= 79
        op = first.frame_view().current_row()["op"]
        await pilot.press("enter")
        for _ in range(40):
            await pilot.pause(0.05)
            if app.screen is not first and isinstance(app.screen, DrillScreen):
                break
        second = app.screen
        assert isinstance(second, DrillScreen) and second is not first
        text = crumb(app)
        parts = text.split(" › ")
        assert len(parts) == 3 and parts[0] == "Kernels" and parts[1].startswith("kernel ")
        assert parts[2].startswith("op ") and op.startswith(parts[2][3:].rstrip("…"))
        assert cell_len(text) <= 79
        row = second.frame.filter(second.frame["name"] == name).row(0, named=True)
        assert row["calls"] == launches  # this kernel has one launching operator in the trace
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is first and crumb(app).count(" › ") == 1
        await pilot.press("backspace")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and app.screen.pane == "kernels"


def test_breadcrumb_fits_any_width_and_is_sanitised() -> None:
    path = ["Kernels", "kernel " + "x" * 200 + "\x1b[31m", "op aten::mm\nnext"]
    for width in (40, 80, 120):
        parts = fit_path(path, width)
        joined = " › ".join(parts)
        assert cell_len(joined) <= width and "\x1b" not in joined and "\n" not in joined
        assert parts[0] == "Kernels" and parts[-1].startswith("op aten::mm")
    assert fit_path(["Kernels", "kernel k"], 80) == ["Kernels", "kernel k"]  # fits: unchanged
    many = fit_path(["Operators", *[f"op {'y' * 30}" for _ in range(6)]], 60)
    assert many[0] == "Operators" and "…" in many and cell_len(" › ".join(many)) <= 60


@pytest.mark.asyncio
async def test_each_tab_keeps_its_place_across_switches_and_drill_downs() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "right", "right", "s", "down", "down", "down")
        kernels_view = app.screen.query_one("#kernels")
        kernel = kernels_view.current_row()["name"]
        await pilot.press("3", "down", "down", "down", "down", "down", "right")
        await pilot.pause()
        ops_view = app.screen.query_one("#ops")
        op_place = tuple(ops_view.table.cursor_coordinate)
        op = ops_view.current_row()["name"]
        await pilot.press("enter")  # a drill-down from Operators, and back
        for _ in range(40):
            await pilot.pause(0.05)
            if isinstance(app.screen, DrillScreen):
                break
        assert isinstance(app.screen, DrillScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert tuple(ops_view.table.cursor_coordinate) == op_place and ops_view.current_row()["name"] == op
        await pilot.press("2")
        await pilot.pause()
        assert tuple(kernels_view.table.cursor_coordinate) == (3, 2)
        assert kernels_view.sort == "total_us" and kernels_view.current_row()["name"] == kernel
        await pilot.press("3")
        await pilot.pause()
        assert tuple(ops_view.table.cursor_coordinate) == op_place


@pytest.mark.asyncio
async def test_a_new_frame_keeps_the_cursor_on_the_same_name() -> None:
    """A refresh (a step chosen, b) rebuilds the table: the cursor stays on its row's name."""
    app = viewer(RESNET)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "down", "down", "down", "down")
        await pilot.pause()
        view = app.screen.query_one("#kernels")
        name = view.current_row()["name"]
        view.set_frame(view.base.reverse())  # the same kernels, in the other order
        await pilot.pause()
        assert view.current_row()["name"] == name
        assert view.table.cursor_row == view.base.height - 1 - 4


@pytest.mark.asyncio
async def test_information_notices_do_not_cover_the_table_but_warnings_stay_toasts() -> None:
    name = by_total()[0]
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "y")
        await pilot.pause()
        line = app.screen.query_one(MessageLine)
        assert line.display and line.text.startswith("copied ") and name[:20] in line.text
        assert not list(app.screen.query(Toast))
        table = app.screen.query_one("#kernels").table
        assert not line.region.overlaps(table.region)
        assert line.region.y < table.region.y  # in the header row, above the table
        await pilot.press("colon", *"no-such-kernel-xyz", "enter")  # a warning: the header line too, marked
        await pilot.pause()
        assert line.text.startswith("warning: no row matches")
        assert not list(app.screen.query(Toast)) and not app._notifications


@pytest.mark.asyncio
async def test_q_then_e_at_once_leaves_cleanly() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "e")
        await pilot.pause()
        assert isinstance(app.screen, ExportDialog) and app.focused is app.screen.query_one("#export-path")
        await pilot.press("escape", "q", "e")
        await pilot.pause()
    assert app.return_code == 0


def test_summary_and_hints_of_a_trace_without_steps_say_so() -> None:
    """`profview summary` on a trace with no ProfilerStep range: no "0 steps", no "step -1", no "the step"."""
    import io

    from rich.console import Console

    from profview.report.profile_summary import print_summary

    name = "tracelens_b200_nccl_eager_no_steps.json.gz"
    events = raw_events(name)
    assert not any(str(e.get("name", "")).startswith("ProfilerStep") for e in events)
    profile = loaded(name)
    console = Console(width=100, file=io.StringIO(), record=True)
    print_summary(profile, 10, console=console)
    text = console.export_text()
    assert "no ProfilerStep ranges" in text and "0 steps" not in text
    assert "\nwhole " in text and "\n-1 " not in text
    assert "of the step" not in text and "of the trace" in text  # the CPU-bound hint


@pytest.mark.asyncio
async def test_y_writes_the_full_name_as_an_osc52_payload_from_a_drill_down() -> None:
    """y in a drill-down: ESC ] 52 ; c ; base64(full kernel name) BEL reaches the terminal."""
    import base64

    name = by_total()[0]
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "enter")
        for _ in range(40):
            await pilot.pause(0.05)
            if isinstance(app.screen, DrillScreen):
                break
        await pilot.press("enter")  # the operator's launches: the kernel is its first row
        for _ in range(40):
            await pilot.pause(0.05)
            if isinstance(app.screen, DrillScreen) and app.screen.path[-1].startswith("op "):
                break
        written: list[str] = []
        app._driver.write = written.append  # type: ignore[method-assign, union-attr]
        await pilot.press("y")
        await pilot.pause()
        payloads = [w for w in written if w.startswith("\x1b]52;c;")]
        assert payloads and payloads[-1].endswith("\a")
        assert base64.b64decode(payloads[-1][len("\x1b]52;c;") : -1]).decode() == name
        assert app.screen.query_one(MessageLine).text.startswith("copied ")


@pytest.mark.asyncio
async def test_steps_of_a_trace_without_steps_name_the_whole_trace_uncut_at_80x24() -> None:
    name = "tracelens_b200_nccl_eager_no_steps.json.gz"
    complete = [e for e in raw_events(name) if e.get("ph") == "X" and "dur" in e]
    span_ms = (max(e["ts"] + e["dur"] for e in complete) - min(e["ts"] for e in complete)) / 1000
    app = viewer(name)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        text = screen_text(app)
        lines = text.splitlines()[2:]  # below the tab bar and the context line (which says "whole trace" too)
        row = next(line for line in lines if line.strip().startswith("whole "))
        assert f"{span_ms:.3f} ms" in row  # its one row spans the raw events
        assert "(whole tra " not in text


@pytest.mark.asyncio
@pytest.mark.parametrize(("size", "form"), [((80, 24), "step 2 only (a: all steps)"), ((200, 50), "drill-downs")])
async def test_a_chosen_steps_context_line_and_its_notice_both_fit(size: tuple[int, int], form: str) -> None:
    """Enter on a step: the header's context line names it and the message line says "now: step 2";
    at 80 columns the context line takes its short form, so the notice no longer cuts it (it read
    "…(Steps: a =  now: step 2"); at 200 the long form, naming what the step narrows."""
    app = viewer(GPT2)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4", "enter")
        await pilot.pause()
        header = screen_text(app).splitlines()[1]
        assert form in header and header.rstrip().endswith("now: step 2")
        context = app.screen.query_one("#context")
        line = app.screen.query_one(MessageLine)
        assert cell_len(str(context.render()).rstrip()) < line.region.x  # side by side, not over each other
