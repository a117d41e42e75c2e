"""Notices in the header line on every screen (the job's, the memory snapshot's, under a dialog), a
breadcrumb with its root, names wrapped at whole words, at 80x24 and 200x50.  Witnesses: the raw
events' names (read with the standard library), the screen's first row."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pilot import screen_text, wait_loaded, wait_until
from support import SAMPLES, raw_events, viewer

from profview.tui.widgets.message_line import MessageLine

SIZES = [(80, 24), (200, 50)]
COMPILED = "h100_compile_reduce_overhead.json.gz"
PARTIAL = "h100_compile_partial_window.json.gz"
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"


def no_toast(app: Any) -> bool:
    from textual.widgets._toast import Toast

    return not list(app.screen.query(Toast)) and not app._notifications


def header_notice(app: Any, screen: Any) -> str:
    """The text of the message line in ``screen``'s header, its first two rows (the tabs, the
    context line); '' where it shows none there."""
    lines = list(screen.query(MessageLine))
    if not lines or lines[0].region.y > 1:
        return ""
    return lines[0].text


@pytest.fixture(scope="module")
def job():  # type: ignore[no-untyped-def]
    from profview.jobs.job import open_job

    opened = open_job(SAMPLES / "param_dlrm_8rank_v100.tar.gz", workers=1, use_cache=False)
    yield opened
    opened.close()


@pytest.mark.parametrize("size", SIZES)
async def test_a_job_screens_notice_is_in_its_header_line(job, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    from profview.tui.job.app import JobApp
    from profview.tui.job.screen import JobScreen

    app = JobApp(job)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, JobScreen))
        await pilot.pause(0.3)
        await pilot.press("c")  # shade the grid by the next column: a notice says by which
        await wait_until(pilot, lambda: bool(header_notice(app, app.screen)))
        shown = header_notice(app, app.screen)
        text = screen_text(app).splitlines()
        assert shown.startswith("grid shaded by") and no_toast(app)
        assert "grid shaded by" in text[0] and "Ranks" in text[0]  # beside the tabs, on the first row


@pytest.mark.parametrize("size", SIZES)
async def test_a_notice_under_a_dialog_goes_to_the_header_line_below_it(size: tuple[int, int]) -> None:
    from profview.tui.dialogs.help import HelpScreen
    from profview.tui.main.screen import MainScreen

    app = viewer(GPT2)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app, path=False)
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        app.notify("copied aten::mm", timeout=5)
        await pilot.pause(0.2)
        assert no_toast(app)
        assert header_notice(app, main) == "copied aten::mm"


@pytest.mark.parametrize("size", SIZES)
async def test_a_memory_snapshots_notice_is_in_its_header_line(size: tuple[int, int]) -> None:
    from profview.tui.snapshot.app import SnapshotApp
    from profview.tui.snapshot.screen import SnapshotScreen

    app = SnapshotApp(str(SAMPLES / "magma27_memory_snapshot.pickle"))
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SnapshotScreen), 30)
        await pilot.pause(0.3)
        app.notify("no stack was recorded for this allocation", severity="warning", timeout=5)
        await pilot.pause(0.2)
        assert no_toast(app)
        assert header_notice(app, app.screen) == "warning: no stack was recorded for this allocation"


@pytest.mark.parametrize("size", SIZES)
async def test_operators_through_the_capture_have_a_rooted_breadcrumb(size: tuple[int, int]) -> None:
    from profview.tui.drill.screen import DrillScreen

    app = viewer(COMPILED)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app, path=False)
        await pilot.press("9")
        await pilot.pause(0.3)
        await pilot.press("o")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
        await pilot.pause(0.3)
        first = screen_text(app).splitlines()[0].strip()
        assert isinstance(app.screen, DrillScreen) and app.screen.path[0] == "Graphs"
    assert first.startswith("Graphs › operators through the capture"), first


def whole_words_shown(text: str, name: str, width: int) -> list[str]:
    """The words of ``name`` (those shorter than a line) that no line of ``text`` shows whole."""
    lines = text.splitlines()
    return [w for w in name.split() if len(w) < width - 2 and not any(w in line.split() for line in lines)]


@pytest.mark.parametrize("size", [(80, 24), (64, 24), (200, 50)])
async def test_the_timeline_inspector_wraps_a_long_name_at_whole_words(size: tuple[int, int]) -> None:
    """The compiled graph's host call (its name longer than the inspector's line at 64 and 80
    columns) is wrapped between words: each word is on one line, none split over two."""
    from profview.tui.main.timeline import TraceTimeline

    names = {e.get("name", "") for e in raw_events(PARTIAL) if e.get("ph") == "X"}
    name = next(n for n in names if n.startswith("## Call CompiledFxGraph"))
    app = viewer(PARTIAL)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app, path=False)
        await pilot.press("7")
        await wait_until(pilot, lambda: bool(app.screen.query(TraceTimeline)))
        await pilot.pause(0.3)
        widget = app.screen.query_one(TraceTimeline)
        found = [
            (index, int(position))
            for index, lane in enumerate(widget.lanes.lanes)
            for position in range(len(lane.names))
            if widget.lanes.names[int(lane.names[position])] == name
        ]
        assert found, "the compiled graph's call is on a lane"
        widget.select(*found[0])
        await pilot.pause(0.3)
        text = screen_text(app)
    below = text.split(name.split()[0], 1)[1] if name.split()[0] in text else text
    assert whole_words_shown(name.split()[0] + below, name, size[0]) == []
    assert "CompiledFxGraph" in text


@pytest.mark.parametrize("size", [(64, 24), (80, 24), (200, 50)])
async def test_the_details_line_wraps_a_long_name_at_whole_words(size: tuple[int, int]) -> None:
    """Operators, the compiled graph's call under the cursor: the details line below the table
    shows its name whole, each word on one line."""
    names = {e.get("name", "") for e in raw_events(PARTIAL) if e.get("ph") == "X"}
    name = next(n for n in names if n.startswith("## Call CompiledFxGraph"))
    app = viewer(PARTIAL)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app, path=False)
        await pilot.press("3")
        await pilot.pause(0.3)
        view = app.frame_view()
        assert view is not None and view.table is not None
        rows = view.displayed["name"].to_list()
        view.table.move_cursor(row=rows.index(name))
        await pilot.pause(0.3)
        details = screen_text(app).split("─" * 20, 1)[1]
    assert whole_words_shown(details, name, size[0]) == []


@pytest.mark.parametrize("size", SIZES)
async def test_choosing_the_one_row_of_a_step_less_trace_says_whole_trace(size: tuple[int, int]) -> None:
    """Steps of a trace without ProfilerStep ranges: its one row is the whole trace, which the
    context line says; Enter and ``a`` choose nothing there, so they are not offered (the footer
    said ``⏎ this step  a all steps``), and pressing them says no ``all steps`` of a trace that has none."""
    name = "tracelens_b200_nccl_eager_no_steps.json.gz"
    assert not any(str(e.get("name", "")).startswith("ProfilerStep#") for e in raw_events(name))
    app = viewer(name)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app, path=False)
        await pilot.press("4")
        await pilot.pause(0.3)
        await pilot.press("enter", "a")
        await pilot.pause(0.3)
        said = [n for n in app.notices if n.startswith("now:")]
        text = screen_text(app)
    lines = text.splitlines()
    assert said == [] and lines[1].strip() == "whole trace" and "all steps" not in text, lines[1]
    assert "this step" not in lines[-1]


@pytest.mark.parametrize("size", SIZES)
async def test_the_straggler_line_says_what_the_last_column_shows(job, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    """The job screen names the straggler on the least wait and says which other ranks the ranks
    table's ``last`` column shows arriving last as often: read from the table on screen."""
    from profview.tui.job.app import JobApp
    from profview.tui.job.screen import JobScreen
    from profview.tui.widgets.table_view import FrameView

    app = JobApp(job)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, JobScreen))
        await pilot.pause(0.3)
        table = app.screen.query_one("#ranks-table", FrameView).displayed
        header = " ".join(screen_text(app).split())
    last = dict(zip(table["rank"].to_list(), table["last_arrivals"].to_list(), strict=True))
    waits = dict(zip(table["rank"].to_list(), table["wait_us"].to_list(), strict=True))
    named = min(waits, key=lambda r: waits[r])
    ties = sorted(r for r, n in last.items() if r != named and n == last[named] and n > 0)
    assert len(ties) == 2 and not any(n > last[named] for n in last.values())  # ranks 4 and 7 tie with 5
    expected = f"straggler: rank {named}, named by the least total wait"
    assert expected in header and f"as do ranks {', '.join(map(str, ties))}" in header


@pytest.mark.parametrize("size", SIZES)
async def test_a_dead_key_on_the_overview_lists_every_tab_with_a_table(size: tuple[int, int]) -> None:
    """``:`` and ``/`` on the Overview (no table there) say where they act: every tab that shows a
    table on this trace is named, found by visiting each tab."""
    from profview.tui.main.screen import PANES

    app = viewer("resnet50_train_amp.pt.trace.json.gz")
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app, path=False)
        with_table = []
        for index, pane in enumerate(PANES, 1):
            await pilot.press(str(index % 10))
            await pilot.pause(0.2)
            if pane not in ("steps", "trace"):  # Steps is a list of bars, the Timeline lanes
                await wait_until(pilot, lambda: app.frame_view() is not None, 3)
            if app.frame_view() is not None:
                with_table.append(str(index % 10))
        await pilot.press("1")
        await pilot.pause(0.2)
        said = []
        for key in ("colon", "slash"):
            await pilot.press(key)
            await pilot.pause(0.2)
            said.append(app.notices[-1])
    assert {"2", "3", "5", "6", "8"} <= set(with_table)  # this trace records memory, modules and shapes
    for reason in said:
        listed = set(re.findall(r"\b\d\b", reason))  # the tab keys it names
        assert set(with_table) <= listed, (reason, with_table)
