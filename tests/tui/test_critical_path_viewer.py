"""The viewer's critical path (issue 26), driven by Textual's pilot on gpt2: the Overview says what
bounds the steps, and in the Timeline ``c`` marks the path with a glyph and walks it.

Witness for the walk: HTA 0.5.0's critical path of ProfilerStep#2 (instance 0; see
tests/analysis/test_critical_path.py) starts with ``cudaStreamIsCapturing`` 600 µs after the
trace's first event and goes on to ``aten::view``."""

from __future__ import annotations

import pytest
from pilot import screen_text, wait_loaded
from support import sample, viewer
from test_timeline import open_timeline

import profview
from profview.tui.app import ProfviewApp
from profview.tui.main.timeline import PATH_GLYPH

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"

#: gpt2_train_bf16's path line: its length against the steps', then what bounds it.
PATH_LINE = (
    "critical path (all steps): 212.171 ms of the steps' 245.723 ms (86%): "
    "67% GPU compute, 31% CPU, 2% kernel-kernel gaps"
)


async def test_overview_says_what_bounds_the_steps_and_c_walks_the_path() -> None:
    app = viewer(GPT2)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.pause(0.2)
        # HTA's steps 2 and 3: 64% GPU compute, 33% CPU; exact times: 2% gaps instead of 3%; each step
        # within its span (issue 40): step 3's host time while step 2's GPU work ran is step 2's.
        assert PATH_LINE in screen_text(app)
        timeline = await open_timeline(pilot, app)
        assert PATH_GLYPH not in screen_text(app)  # nothing is marked before c
        await pilot.press("c")
        await pilot.pause()
        lane, position = timeline.selected_event()
        events = timeline.lanes.lanes[lane]
        assert timeline.lanes.names[int(events.names[position])] == "cudaStreamIsCapturing"
        assert round(events.start[position] - timeline.start) == 600
        text = screen_text(app)
        assert f"{PATH_GLYPH} on the critical path" in text and text.count(PATH_GLYPH) > 1
        await pilot.press("c")
        lane, position = timeline.selected_event()
        assert timeline.lanes.names[int(timeline.lanes.lanes[lane].names[position])] == "aten::view"
        await pilot.press("C")
        lane, position = timeline.selected_event()
        assert timeline.lanes.names[int(timeline.lanes.lanes[lane].names[position])] == "cudaStreamIsCapturing"


async def test_a_large_traces_path_is_computed_off_the_ui_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above PATH_ON_THE_SPOT events the Overview says 'computing…' and fills the line in when the
    worker is done (here the limit is lowered so the small sample counts as large)."""
    from profview.tui.main import overview

    monkeypatch.setattr(overview, "PATH_ON_THE_SPOT", 0)
    fresh = profview.load(sample(GPT2), use_cache=False)  # no critical path computed yet
    app = ProfviewApp(str(sample(GPT2)), no_cache=True, profile=fresh)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(pilot, app)
        for _ in range(100):
            if "critical path (all steps): 67% GPU compute" in screen_text(app):
                break
            await pilot.pause(0.05)
        assert PATH_LINE in screen_text(app)
        assert "computing…" not in screen_text(app)


async def test_c_waits_for_the_path_off_the_ui_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """``c`` before the path is known does not block the viewer: the path is found by a
    worker (here held back until the test lets it go, while the UI keeps answering), and then ``c``
    selects the path's first event, as when the path was ready (HTA's witness above)."""
    import threading

    from profview.tui.main import overview

    monkeypatch.setattr(overview, "PATH_ON_THE_SPOT", 0)  # the Overview's own worker, not the UI thread
    fresh = profview.load(sample(GPT2), use_cache=False)
    release = threading.Event()
    compute = fresh._compute_step_paths

    def held_back(*args, **kwargs):  # type: ignore[no-untyped-def]
        release.wait(10)
        return compute(*args, **kwargs)

    monkeypatch.setattr(fresh, "_compute_step_paths", held_back)
    app = ProfviewApp(str(sample(GPT2)), no_cache=True, profile=fresh)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_loaded(pilot, app, path=False)  # the path is held back: not waited for
        timeline = await open_timeline(pilot, app)
        await pilot.press("c")
        await pilot.pause(0.1)
        assert timeline.path is None and timeline.finding_path  # asked, not waited for
        inspecting = timeline.inspecting
        await pilot.press("i")  # the viewer still answers keys
        assert timeline.inspecting is not inspecting
        await pilot.press("i")
        release.set()
        for _ in range(200):
            if timeline.path is not None:
                break
            await pilot.pause(0.05)
        lane, position = timeline.selected_event()
        events = timeline.lanes.lanes[lane]
        assert timeline.lanes.names[int(events.names[position])] == "cudaStreamIsCapturing"
        assert not timeline.finding_path


async def test_a_reopened_trace_shows_its_path_line_without_linking(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The first open keeps the critical path with the trace; the re-open's Overview has
    the same line at once (no 'computing…', even for a trace counted as large), with no model linked
    and no events read."""
    from profview.tui.main import overview

    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path))
    line = PATH_LINE
    first = ProfviewApp(str(sample(GPT2)))
    async with first.run_test(size=(160, 50)) as pilot:
        await wait_loaded(pilot, first)
        while first.threads.busy():  # the load thread's last part: the cache written
            await pilot.pause(0.05)
    monkeypatch.setattr(overview, "PATH_ON_THE_SPOT", 0)  # it would be computed off the UI thread
    again = ProfviewApp(str(sample(GPT2)))
    async with again.run_test(size=(160, 50)) as pilot:
        await wait_loaded(pilot, again, path=False)
        await pilot.pause(0.1)
        assert line in screen_text(again) and "computing…" not in screen_text(again)
        assert again.profile is not None
        await pilot.press("4", "8")  # the Steps and Efficiency tabs
        await pilot.pause(0.2)
        assert "model" not in vars(again.profile) and "events" not in vars(again.profile)
        assert again.profile.fresh == {}  # every view it showed was kept by the first open
