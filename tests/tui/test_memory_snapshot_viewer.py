"""A memory snapshot on its own screen, piloted at 80x24 and 200x50: the summary and header say
the figures ``summary --format json`` says (one source), the sites table drills to its blocks and
a block to its whole stack, the timeline marks the peak, the OOM tab lists what was live."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from pilot import screen_text, wait_until
from support import SAMPLES

from profview.frames import fmt_bytes
from profview.profiles.snapshot_profile import load_snapshot
from profview.tui.drill.screen import DrillScreen
from profview.tui.snapshot.app import SnapshotApp
from profview.tui.snapshot.screen import SnapshotScreen

SAMPLE = SAMPLES / "magma27_memory_snapshot.pickle"


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"no globals here ({module}.{name})")


async def _opened(pilot: Any, app: SnapshotApp) -> SnapshotScreen:
    await wait_until(pilot, lambda: isinstance(app.screen, SnapshotScreen), 30)
    await pilot.pause()
    assert isinstance(app.screen, SnapshotScreen)
    return app.screen


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_summary_sites_drill_and_timeline(size: tuple[int, int]) -> None:
    figures = load_snapshot(SAMPLE).summary(5)
    app = SnapshotApp(str(SAMPLE))
    async with app.run_test(size=size) as pilot:
        screen = await _opened(pilot, app)
        text = screen_text(app)
        assert "1 Summary" in text and "2 Sites" in text
        assert f"reserved {fmt_bytes(figures['reserved_bytes'])}" in text
        assert f"peak {fmt_bytes(figures['devices'][0]['peak_active_bytes'])}" in text
        assert all(len(line) <= size[0] for line in text.splitlines())
        await pilot.press("2")
        await pilot.pause()
        view = screen.frame_view()
        assert view is not None
        assert int(view.displayed["bytes"].sum()) == figures["allocated_bytes"]
        top = view.displayed.row(0, named=True)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
        drill = app.screen
        assert isinstance(drill, DrillScreen)
        blocks = drill.frame_view().displayed
        assert blocks.height == top["count"] and int(blocks["size"].sum()) == top["bytes"]
        # a block with a stack: its whole stack, innermost first
        with_stack = blocks.with_row_index("row").filter(pl.col("stack").is_not_null())
        if with_stack.height:
            drill.frame_view().table.move_cursor(row=int(with_stack["row"][0]))
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen is not drill)
            frames = app.screen.frame_view().displayed
            assert frames["depth"].to_list() == list(range(frames.height))
            await pilot.press("escape")
            await pilot.pause()
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, SnapshotScreen))
        await pilot.press("4")
        await pilot.pause()
        text = screen_text(app)
        assert "▲ peak" in text or "peak " + fmt_bytes(figures["devices"][0]["peak_active_bytes"]) + " ▲" in text
        assert all(len(line) <= size[0] for line in text.splitlines())
        await pilot.press("3")
        await pilot.pause()
        peak = screen.frame_view()
        assert peak is not None
        assert int(peak.displayed["bytes"].sum()) == figures["devices"][0]["peak_active_bytes"]


async def test_an_oom_is_listed(tmp_path: Path) -> None:
    """A snapshot with an OOM event (the sample with one appended): the OOM tab lists what was
    live then, by site, summing to the active bytes then."""
    with open(SAMPLE, "rb") as fh:
        snap = _PlainData(fh).load()
    trace = snap["device_traces"][0]
    trace.append({"action": "oom", "addr": 0, "size": 2**34, "stream": 0, "time_us": trace[-1]["time_us"] + 1,
                  "device_free": 12345, "frames": []})
    path = tmp_path / "oom.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    profile = load_snapshot(path)
    ooms = profile.view("ooms")
    end_active = profile.summary(0)["devices"][0]["end_active_bytes"]
    assert int(ooms["bytes"].sum()) == end_active == int(ooms["active_bytes"][0])
    assert ooms["device_free_bytes"].unique().to_list() == [12345]
    app = SnapshotApp(str(path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _opened(pilot, app)
        assert "1 OOM" in screen_text(app)
        await pilot.press("5")
        await pilot.pause()
        view = screen.frame_view()
        assert view is not None and view.displayed.height == ooms.height


async def test_a_refused_pickle_ends_with_one_line(tmp_path: Path) -> None:
    """A pickle with a global: the viewer ends with the reader's one line, nothing run."""
    evil = tmp_path / "evil.pickle"
    evil.write_bytes(b"\x80\x04cbuiltins\nprint\n)R.")
    app = SnapshotApp(str(evil))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.error is not None, 20)
    assert app.error is not None and "refused: pickle opcode GLOBAL" in app.error


@pytest.mark.parametrize("size", [(80, 24), (120, 30)])
async def test_the_summary_is_folded_to_its_pane_not_wrapped_by_it(size: tuple[int, int]) -> None:
    """The summary's lines fit the pane beside its scroll bar, so a long line folds at a space
    with an indent and a table's rule stays whole (they were folded to the terminal's width, and
    the pane wrapped the last columns onto a line of their own)."""
    from textual.widgets import Static

    app = SnapshotApp(str(SAMPLE))
    async with app.run_test(size=size) as pilot:
        screen = await _opened(pilot, app)
        summary = screen.query_one("#summary-text", Static)
        lines = str(summary.render()).splitlines()
        assert len(lines) > 10
        assert all(len(line) <= summary.size.width for line in lines), max(len(line) for line in lines)


async def test_a_snapshot_without_history_says_why_its_peak_tab_is_empty(tmp_path: Path) -> None:
    with open(SAMPLE, "rb") as fh:
        snap = _PlainData(fh).load()
    del snap["device_traces"]
    path = tmp_path / "no_history.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    app = SnapshotApp(str(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await _opened(pilot, app)
        assert "peak unknown (no event recorded)" in screen_text(app)
        await pilot.press("3")
        await pilot.pause()
        assert "0 rows · no peak: no allocator event was recorded" in screen_text(app)
        await pilot.press("5")
        await pilot.pause()
        assert "0 rows · no OOM event in the recorded events" in screen_text(app)
