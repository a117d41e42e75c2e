"""The viewer at 80x24: never a cut or mislabelled figure, no dead key, every screen says
what it shows.  Each test drives the viewer (Textual's pilot) and checks what is on screen against
the raw events (gzip + json), or against the rule the screen claims."""

from __future__ import annotations

import re

import polars as pl
import pytest
from pilot import screen_text, wait_loaded, wait_until
from support import SAMPLES, raw_events, viewer

from profview.jobs.job import open_job
from profview.tui.drill.screen import DrillScreen
from profview.tui.job.app import JobApp
from profview.tui.job.screen import JobScreen
from profview.tui.widgets.table_view import FrameView, display_frame

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
RESNET = "resnet50_train_amp.pt.trace.json.gz"


def raw_kernel_durations(name: str) -> dict[str, list[float]]:
    """Each kernel name's durations (µs), from the raw events."""
    out: dict[str, list[float]] = {}
    for event in raw_events(name):
        if event.get("cat") == "kernel":
            out.setdefault(event["name"], []).append(float(event["dur"]))
    return out


def table_lines(app, view: FrameView) -> list[str]:  # type: ignore[no-untyped-def]
    """The table's lines as on screen: its header, then its rows."""
    table = view.table
    assert table is not None
    lines = screen_text(app).split("\n")
    top = table.region.y
    width = table.scrollable_content_region.width  # not the scrollbar
    return [line[:width] for line in lines[top : top + table.region.height]]


async def wait_drill(pilot, app) -> DrillScreen:  # type: ignore[no-untyped-def]
    await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
    await pilot.pause()
    assert isinstance(app.screen, DrillScreen)
    return app.screen


# -- 1. never part of a number --------------------------------------------------------------------


def whole_cells_only(line: str, name_cells: int, cells: dict[str, str]) -> list[str]:
    """The figures on one table line after the name column; each must be a whole cell of its row."""
    tokens = line[name_cells:].replace("‹", " ").replace("›", " ").split()
    assert tokens, line
    whole = set(cells.values())
    for token in tokens:
        assert token in whole, f"{token!r} is part of a figure: {line!r}"
    return tokens


async def test_a_column_cut_by_the_edge_is_left_blank_not_shown_in_part() -> None:
    durations = raw_kernel_durations(GPT2)
    app = viewer(GPT2)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        await pilot.pause()
        view = app.screen.active_frame_view()
        assert view is not None and view.table is not None
        name_cells = view.table.ordered_columns[0].render_width
        for scrolled in range(3):  # as opened, then twice scrolled right (the columns' left edge cut too)
            rows = table_lines(app, view)[1:8]
            cells = display_frame(view.displayed).with_columns(pl.all().cast(pl.String))
            for index, line in enumerate(rows):
                row = cells.row(index, named=True)
                tokens = whole_cells_only(line, name_cells, {k: v for k, v in row.items() if v is not None})
                raw = durations[view.displayed["name"][index]]
                if scrolled == 0:  # calls and total_us lead: the raw events' count and sum
                    assert tokens[:2] == [str(len(raw)), f"{sum(raw):.3f}"]
            await pilot.press(*["right"] * 4)
            await pilot.pause()
        # the first row's mean (6,628.064 µs) is cut by the edge at 80 columns: blank, and the header
        # says more columns follow
        header = table_lines(app, view)[0]
        assert "‹" in header or "›" in header


# -- 2. the details line: the name on up to four lines, the figures whole --------------------------


async def test_details_line_gives_a_long_name_four_lines_and_cuts_no_figure() -> None:
    kernels = raw_kernel_durations(RESNET)
    longest = max(kernels, key=len)
    app = viewer(RESNET)
    async with app.run_test(size=(80, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.active_frame_view()
        assert view is not None and view.table is not None
        view.table.move_cursor(row=view.displayed["name"].to_list().index(longest))
        await pilot.pause()
        details = str(app.screen.query_one("#kernels .details").render()).split("\n")
        start = next(i for i, line in enumerate(details) if line.startswith(longest[:20]))
        name_lines = details[start:]
        assert len(longest) > 3 * 80 and len(name_lines) == min(4, -(-len(longest) // 80))
        shown = "".join(name_lines)
        assert longest.startswith(shown.rstrip("…")) and len(shown.rstrip("…")) >= min(len(longest), 4 * 80 - 1)
        figures = " · ".join(details[:start]).split(" · ")
        assert figures[0] == f"calls {len(kernels[longest]):,}"
        assert figures[1] == f"total_us {sum(kernels[longest]):,.3f}"
        for figure in figures:  # every figure whole: none ends in an ellipsis
            assert not figure.endswith("…"), figure
            assert re.fullmatch(r"[a-z_]+ \S.*|\+\d+ more", figure), figure


# -- 3. the column that tells rows apart comes right after the name -------------------------------


async def test_a_kernels_launch_rows_show_where_they_come_from_beside_the_operator() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.active_frame_view()
        assert view is not None and view.table is not None
        # a batch-norm kernel: all its launch rows have one operator, aten::cudnn_batch_norm
        frame = view.displayed
        name = next(n for n in frame["name"] if "batchnorm_fwtr" in n)
        view.table.move_cursor(row=frame["name"].to_list().index(name))
        await pilot.press("enter")
        drill = await wait_drill(pilot, app)
        shown = drill.frame_view().displayed
        assert shown["op"].n_unique() < shown.height  # the operator repeats ...
        assert shown.columns[:2] == ["op", "launched_from"]  # ... so where it came from is next to it
        header = table_lines(app, drill.frame_view())[0].split()
        assert header[:2] == ["op", "launched_from"]


async def test_by_launch_shape_puts_grid_and_block_after_the_name() -> None:
    grids: dict[str, set[str]] = {}
    for event in raw_events(RESNET):
        if event.get("cat") == "kernel":
            grids.setdefault(event["name"], set()).add(str(event["args"]["grid"]))
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "b")
        await pilot.pause()
        view = app.screen.active_frame_view()
        assert view is not None
        shown = view.displayed
        assert shown.columns[:3] == ["name", "grid", "block"]
        for name, grid in shown.select("name", "grid").head(10).iter_rows():
            assert grid.replace(" ", "") in {g.replace(" ", "") for g in grids[name]}


# -- 4. the "sorted by" label names the real sort ------------------------------------------------


@pytest.fixture(scope="module")
def job():  # type: ignore[no-untyped-def]
    opened = open_job(SAMPLES / "param_dlrm_8rank_v100.tar.gz", workers=1, use_cache=False)
    yield opened
    opened.close()


async def test_the_sort_label_names_the_order_the_rows_are_in(job) -> None:  # type: ignore[no-untyped-def]
    app = JobApp(job)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, JobScreen)
        await pilot.press("2")
        await pilot.pause()
        view = screen.frame_view()
        assert view is not None
        status = str(view.query_one(".status").render())
        assert "sorted by max_wait_us ↓" in status
        waits = view.displayed["max_wait_us"].to_list()
        assert waits == sorted(waits, reverse=True)  # (so, here, is duration_us: the label said that)
        view.table.move_cursor(column=view.displayed.columns.index("max_wait_us"))
        await pilot.press("minus")  # hidden: the rows keep their order, and the label says so
        await pilot.pause()
        assert "max_wait_us" not in view.displayed.columns
        assert "sorted by max_wait_us ↓ (hidden)" in str(view.query_one(".status").render())
        await pilot.press("plus")
        await pilot.pause()
        view.table.move_cursor(column=0)
        await pilot.press("enter")
        drill = await wait_drill(pilot, app)
        status = str(drill.frame_view().query_one(".status").render())
        assert "sorted by wait_us ↓" in status
        collective = drill.frame_view().displayed
        waits = collective["wait_us"].to_list()
        assert waits == sorted(waits, reverse=True)
        # each rank's wait: the latest start of this collective's calls minus this rank's start
        starts = dict(zip(collective["rank"], collective["start_us"], strict=True))
        latest = max(starts.values())
        for rank, wait in zip(collective["rank"], waits, strict=True):
            assert wait == pytest.approx(latest - starts[rank], abs=1e-3)



# -- 5. with a step chosen, every Overview line says its scope -------------------------------------


def raw_step_names(name: str) -> list[str]:
    return sorted({e["name"] for e in raw_events(name) if str(e.get("name", "")).startswith("ProfilerStep#")})


async def test_with_a_step_chosen_every_overview_line_says_its_scope() -> None:
    steps = raw_step_names(GPT2)  # ProfilerStep#2, #3, #4
    second = int(steps[1].removeprefix("ProfilerStep#"))
    app = viewer(GPT2)
    async with app.run_test(size=(80, 60)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4", "down", "enter", "1")
        await pilot.pause()
        text = screen_text(app)
        assert "whole trace · span" in text and f"{len(steps)} steps" in text
        assert f"whole trace · average step of {len(steps)} steps" in text
        assert "critical path (all steps)" in text and f"critical path (step {second})" in text
        assert f"GPU time by category in step {second} (of all GPU events' time):" in text
        assert f"model FLOPs in step {second}: " in text and f"GPU busy in step {second}: " in text
        assert f"per step {second}" not in text  # "model FLOPs per step 17 6.623 TFLOP" read as one number
        # the step's own lines come under its heading, after the whole trace's
        assert text.index(f"step {second} only:") < text.index(f"model FLOPs in step {second}")
        assert text.index("whole trace · average step") < text.index(f"step {second} only:")


def test_a_trace_without_steps_never_says_per_step() -> None:
    from support import loaded

    name = "tracelens_b200_nccl_eager_no_steps.json.gz"
    assert not raw_step_names(name)
    lines = loaded(name).efficiency_lines()
    flops = next(line for line in lines if line.startswith("model FLOPs"))
    assert flops.startswith("model FLOPs in the whole trace (no steps): ")
    assert not any("per step" in line or "in the step" in line for line in lines)


# -- 6. Timeline: the lanes fill the height --------------------------------------------------------


async def wait_timeline(pilot, app):  # type: ignore[no-untyped-def]
    from profview.tui.main.timeline import TraceTimeline

    await wait_until(pilot, lambda: bool(app.screen.query(TraceTimeline)))
    await pilot.pause()
    return app.screen.query_one(TraceTimeline)


async def test_timeline_lanes_fill_the_height_after_the_inspector_folds() -> None:
    app = viewer(GPT2)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("7")
        timeline = await wait_timeline(pilot, app)
        lanes = len(timeline.lanes.lanes)
        assert timeline.lane == lanes - 1  # it opens on the GPU lane, the last: the window ends there
        await pilot.press("i")  # the inspector folds to one line: room for every lane
        await pilot.pause()
        rendered = timeline.render().plain.split("\n")
        assert f"lanes 1-{lanes} of {lanes}" in rendered[0]
        below = next(i for i, line in enumerate(rendered) if line.startswith("kernel ") or line.startswith("("))
        assert all(line.strip() for line in rendered[1:below]), rendered  # no empty row among the lanes
        labels = [line[:12].strip() for line in rendered[1:below] if line[:12].strip()]
        assert len(labels) == lanes  # every lane, each named once


# -- 7. no dead keys --------------------------------------------------------------------------------


async def test_keys_that_cannot_act_say_why_and_the_timeline_acts_on_y_g_g() -> None:
    stream_kernels = {e["name"] for e in raw_events(GPT2) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    app = viewer(GPT2)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("enter")  # the Overview's top tables are no table
        await pilot.pause()
        assert app.notices[-1].startswith("Enter drills down from a table")
        await pilot.press("7")
        timeline = await wait_timeline(pilot, app)
        for key, said in (("e", "--view gpu_idle"), ("b", "groups Kernels"), ("colon", "/ marks the events")):
            count = len(app.notices)
            await pilot.press(key)
            await pilot.pause()
            assert len(app.notices) == count + 1 and said in app.notices[-1], (key, app.notices[-1:])
        copied: list[str] = []
        app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
        await pilot.press("y")
        await pilot.pause()
        assert len(copied) == 1 and copied[0] in stream_kernels  # the selected GPU event's full name
        await pilot.press("g")
        assert timeline.lane == 0
        await pilot.press("G")
        assert timeline.lane == len(timeline.lanes.lanes) - 1
        slash = app.screen.active_bindings["slash"]
        assert slash.binding.description == "search"  # as the Timeline's caption says ("/ search")
        assert "/ search" in str(app.screen.query_one("#timeline-caption").render())


# -- 8 and 9. the job grid opens on the straggler; an opened rank says which -----------------------


async def test_the_job_grid_opens_on_the_straggler_and_an_opened_rank_says_which(job) -> None:  # type: ignore[no-untyped-def]
    from profview.tui.main.screen import MainScreen

    straggler = job.stragglers()[0]
    app = JobApp(job)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert f"straggler: rank {straggler}" in text
        grid = text.split("\n")[3 : 3 + 8]
        shown = [int(line[1:6]) for line in grid if line[1:6].strip().isdigit()]
        assert len(shown) < len(job.ranks)  # 80x24: not every rank fits ...
        assert straggler in shown  # ... and the straggler is among those shown
        assert f"ranks {shown[0]}–{shown[-1]} shown, {len(job.ranks)} in all" in text  # ids, not positions
        assert next(line for line in grid if line[1:6].strip() == str(straggler)).rstrip().endswith("◀ straggler")
        await pilot.press("enter")  # the cursor is on the straggler's row: its views open
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
        assert isinstance(app.screen, MainScreen)
        assert app.screen.profile.metadata["distributedInfo"]["rank"] == straggler  # the trace's own rank
        assert str(app.screen.query_one("#context").render()).startswith(f"rank {straggler} › ")
        await pilot.press("2")
        await pilot.pause()
        assert str(app.screen.query_one("#context").render()).startswith(f"rank {straggler} › ")
        await pilot.press("enter")
        drill = await wait_drill(pilot, app)
        assert drill.path[0] == f"rank {straggler} › Kernels"
        assert str(drill.query_one("#breadcrumb").render()).startswith(f"rank {straggler} › Kernels › kernel ")


# -- 11. Enter on a Moved row: the aligned calls it is about ---------------------------------------


async def test_enter_on_a_moved_row_opens_its_aligned_calls() -> None:
    from profview.tui.app import ProfviewApp
    from profview.tui.compare.screen import CompareScreen

    app = ProfviewApp(
        str(SAMPLES / "hta_diff_control_a100.json.gz"), no_cache=True,
        compare={"after": str(SAMPLES / "hta_diff_test_v100.json.gz")},
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen), 60)
        await pilot.pause()
        await pilot.press("4")
        await wait_until(pilot, lambda: app.screen.pane == "moved")
        moved = app.frame_view()
        assert moved is not None and moved.view == "diff_moved"
        row = moved.displayed.row(0, named=True)
        await pilot.press("enter")
        drill = await wait_drill(pilot, app)
        assert drill.view == "diff_moved_calls"
        assert drill.path[0].startswith("Moved · step ")  # not "Operators"
        calls = drill.frame_view().displayed
        assert calls.height == row["calls"] and set(calls["op"]) == {row["op"]}
        assert set(calls["kernels_before"]) == {row["kernels_before"]} and set(calls["kernels_after"]) == {
            row["kernels_after"]
        }
        # the calls add up to the row (summed there by a group-by, here one call a row)
        assert calls["device_us_before"].sum() == pytest.approx(row["device_us_before"])
        assert calls["delta_us"].sum() == pytest.approx(row["delta_us"])
        assert calls["position"].to_list() == sorted(calls["position"].to_list())  # in step order


# -- 12 and 13. ? follows the keymap; Ctrl+C is 130 -------------------------------------------------


async def test_help_names_the_remapped_keys(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import json

    from profview.tui.dialogs.help import HelpScreen

    keymap = tmp_path / "keymap.json"
    keymap.write_text(json.dumps({"export": "x"}))
    monkeypatch.setenv("PROFVIEW_KEYMAP", str(keymap))
    app = viewer(RESNET)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        lines = [line for _title, section in app.screen.sections for line in section]
        export = [keys for keys, meaning in lines if meaning.startswith("export the table on screen")]
        assert export == ["x"]


async def test_ctrl_c_after_loading_exits_130() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("ctrl+c")
    assert app.return_code == 130
