"""The viewer at 80x24, its smaller defects (issue 34's low items): each checked on screen
(Textual's pilot) or on the function that draws it,
against the raw events (gzip + json) where a figure is shown."""

from __future__ import annotations

import json
import tarfile
import threading
from pathlib import Path

import polars as pl
import pytest
from pilot import screen_text, wait_loaded, wait_until
from support import SAMPLES, raw_events, sample, viewer

import profview
from profview.analysis.tables.lanes import gpu_busy_between
from profview.frames import CATEGORY_CHAR, fmt_us
from profview.tui.app import ProfviewApp
from profview.tui.dialogs.loading import LoadingScreen
from profview.tui.job.screen import fit_missing
from profview.tui.main.screen import reserve_path_columns, tab_line
from profview.tui.widgets.bars import legend
from profview.tui.widgets.table_view import FrameView, display_frame

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
RESNET = "resnet50_train_amp.pt.trace.json.gz"


def test_a_legend_breaks_between_items_never_inside_one() -> None:
    swatches = {char * 2 for char in CATEGORY_CHAR.values()}
    values = {c: 1.0 for c in CATEGORY_CHAR}
    for width in range(40, 101, 3):
        lines = legend(values, float(len(values)), width).plain.split("\n")
        assert all(len(line) <= width for line in lines)
        assert all(line[:2] in swatches for line in lines)  # each line starts with a swatch ...
        assert all(line.rstrip()[-2:] not in swatches for line in lines)  # ... and none ends with one


def test_a_job_header_drops_missing_ranks_whole() -> None:
    note = "7 of 64 ranks (missing: 2, 3, 5, 8, 13, 21, 34, 40, 41, 42, …)"
    assert fit_missing(note, 80) == note
    assert fit_missing(note, 40) == "7 of 64 ranks (missing: 2, 3, 5, 8, …)"
    for room in range(15, 70):
        shown = fit_missing(note, room)
        assert len(shown) <= room or shown == "7 of 64 ranks"
        ids = shown.partition("missing: ")[2].rstrip(")").split(", ")
        assert all(i in ("", "…") or i in note for i in ids)  # whole numbers only


def test_tabs_a_profile_cannot_fill_are_dim() -> None:
    line = tab_line("kernels", 200, empty=frozenset({"memory", "trace"}))
    spans = {line.plain[s.start : s.end].strip(): str(s.style) for s in line.spans}
    assert spans["5 Memory"] == "dim" and spans["7 Timeline"] == "dim"
    assert spans["2 Kernels"] == "bold reverse" and "3 Operators" not in spans


def test_yes_and_no_not_the_widgets_check_marks() -> None:
    cells = display_frame(pl.DataFrame({"straggler": [True, False, None]}))
    assert cells["straggler"].to_list() == ["yes", "no", None]


def test_on_path_columns_are_reserved_where_they_will_come() -> None:
    kernels = profview.load(sample(RESNET), use_cache=False).kernels()
    reserved = reserve_path_columns(kernels)
    at = reserved.columns.index("total_us")
    assert reserved.columns[at + 1 : at + 3] == ["on_path_us", "path_pct"]
    assert reserved["on_path_us"].null_count() == reserved.height
    assert reserved.drop("on_path_us", "path_pct").equals(kernels)


def test_gpu_busy_in_a_window_is_the_union_of_the_gpu_events_in_it() -> None:
    events = [e for e in raw_events(GPT2) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e]
    profile = profview.load(sample(GPT2), use_cache=False)
    lanes = profile.timeline_lanes()
    origin = min(float(e["ts"]) for e in raw_events(GPT2) if "ts" in e)
    for lo, hi in ((10_000.0, 30_000.0), (85_000.0, 170_000.0), (0.0, 250_000.0)):
        # the witness: the raw intervals clipped to the window, merged in plain Python
        clipped = sorted(
            (max(float(e["ts"]), origin + lo), min(float(e["ts"]) + float(e["dur"]), origin + hi)) for e in events
        )
        busy, reach = 0.0, origin + lo
        for start, end in clipped:
            if end > max(start, reach):
                busy += end - max(start, reach)
                reach = end
        assert gpu_busy_between(lanes.lanes, origin + lo, origin + hi) == pytest.approx(busy, abs=1e-3)


async def test_tab_titles_follow_the_width_both_ways() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        assert "2 Kern " in screen_text(app).split("\n")[0]
        await pilot.resize_terminal(160, 30)
        await pilot.pause(0.3)
        assert "2 Kernels" in screen_text(app).split("\n")[0]


async def test_the_details_line_keeps_its_height_while_the_cursor_moves() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.query_one("#kernels", FrameView)
        names = view.displayed["name"].to_list()[:20]
        assert len({len(n) // 80 for n in names}) > 1  # names of 1 to 4 lines among them
        heights = set()
        for row in range(len(names)):
            view.table.move_cursor(row=row)
            await pilot.pause()
            heights.add(view.query_one(".details").outer_size.height)
        assert len(heights) == 1


async def test_the_loading_screen_gives_the_size_its_own_line(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def slow_load(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        release.wait(30)
        raise AssertionError("never reached")

    monkeypatch.setattr("profview.profiles.loading.load", slow_load)
    path = sample(GPT2)
    app = ProfviewApp(str(path), no_cache=True)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            assert isinstance(app.screen, LoadingScreen)
            import gzip

            with gzip.open(path) as fh:
                inflated = len(fh.read())
            text = screen_text(app)
            assert f"{inflated / 1e6:,.1f} MB of JSON" in text  # whole, whatever the path's length
            await pilot.press("q")
    finally:
        release.set()


async def test_a_notice_in_compare_mode_is_no_toast_over_the_rows() -> None:
    from profview.tui.compare.screen import CompareScreen
    from profview.tui.widgets.message_line import MessageLine

    app = ProfviewApp(
        str(SAMPLES / "hta_diff_control_a100.json.gz"), no_cache=True,
        compare={"after": str(SAMPLES / "hta_diff_test_v100.json.gz")},
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen), 60)
        await pilot.pause()
        await pilot.press("w")
        await pilot.pause()
        assert app.screen.query_one(MessageLine).text == "Enter now drills down into AFTER"
        assert not app._notifications  # no toast


def rank_trace(tmp_path: Path, rank: int) -> Path:
    with tarfile.open(SAMPLES / "param_dlrm_8rank_v100.tar.gz") as archive:
        member = next(m for m in archive.getmembers() if Path(m.name).name.startswith(f"worker{rank}_"))
        data = archive.extractfile(member).read()  # type: ignore[union-attr]
    path = tmp_path / Path(member.name).name
    path.write_bytes(data)
    return path


async def test_steps_draws_communication_as_communication(tmp_path: Path) -> None:
    path = rank_trace(tmp_path, 7)
    raw = json.loads(path.read_text())["traceEvents"]
    nccl = [e for e in raw if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel")]
    assert nccl  # the rank's NCCL kernels, in the raw events
    app = ProfviewApp(str(path), no_cache=True)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4")
        await pilot.pause(0.3)
        lanes = [line for line in screen_text(app).split("\n") if line.startswith(" dev ")]
        streams = {str(e["args"]["stream"]) for e in nccl}
        comm = [line for line in lanes if line.split()[2].removeprefix("s") in streams]
        assert comm and all("░" in line and "█" not in line[14:] for line in comm)


async def test_a_profiler_step_range_says_how_it_relates_to_its_step() -> None:
    from profview.tui.main.timeline import TraceTimeline

    ranges = {
        e["name"]: float(e["dur"])
        for e in raw_events(GPT2)
        if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation"
    }
    app = viewer(GPT2)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("7")
        await wait_until(pilot, lambda: bool(app.screen.query(TraceTimeline)))
        timeline = app.screen.query_one(TraceTimeline)
        lanes = timeline.lanes
        found = None
        for index, lane in enumerate(lanes.lanes):
            for position, name in enumerate(lane.names.tolist()):
                if lanes.names[name] == "ProfilerStep#3":
                    found = (index, position)
                    break
            if found:
                break
        assert found is not None
        timeline.select(*found)
        await pilot.pause()
        text = timeline.describe().plain
        step = profview.load(sample(GPT2), use_cache=False).steps().filter(pl.col("step") == 3)
        duration = fmt_us(float(step["duration_us"][0]))
        assert f"Steps: step 3 is {duration}, this range {fmt_us(ranges['ProfilerStep#3'])}" in text

