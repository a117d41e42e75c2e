"""The Timeline: it opens on the step chosen in Steps with that step's busy/idle line; the
inspector shows the selected event's arguments and origin; Enter drills into that one event;
"/" marks matching events and n/N jump between them.  Checked against the raw events (gzip + json)."""

from __future__ import annotations

import re

import pytest
from pilot import screen_text, type_text, wait_loaded
from support import ROOT, loaded, raw_events, viewer
from test_timeline import GPU_CATS, HOST_CATS, open_timeline

from profview.tui.app import ProfviewApp
from profview.tui.drill.screen import DrillScreen

RESNET = "resnet50_train_amp.pt.trace.json.gz"


def union_us(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of [start, end) intervals."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


def raw_step(number: int) -> dict:
    return next(e for e in raw_events(RESNET) if e.get("name") == f"ProfilerStep#{number}" and e.get("ph") == "X")


def fmt_ms(us: float) -> str:
    return f"{us / 1e3:.3f} ms"


async def test_timeline_opens_on_the_chosen_step_with_its_busy_line() -> None:
    step = raw_step(3)
    lo, hi = step["ts"], step["ts"] + step["dur"]
    busy = union_us(
        [
            (max(e["ts"], lo), min(e["ts"] + e["dur"], hi))
            for e in raw_events(RESNET)
            if e.get("cat") in GPU_CATS and e["ts"] < hi and e["ts"] + e["dur"] > lo
        ]
    )
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4", "down", "enter")  # the second step: ProfilerStep#3
        timeline = await open_timeline(pilot, app)
        assert timeline.view_start == pytest.approx(lo, abs=1e-3)
        assert timeline.view_end == pytest.approx(hi, abs=1e-3)
        text = " ".join(screen_text(app).split())
        assert f"step 3: GPU busy {fmt_ms(busy)} of {fmt_ms(step['dur'])}" in text
        assert "step 2" not in text
        await pilot.press("4", "a", "7")  # all steps again: the whole trace and its line
        assert (timeline.view_start, timeline.view_end) == (timeline.start, timeline.end)
        assert "whole trace: GPU busy" in " ".join(screen_text(app).split())


async def test_inspector_shows_a_kernels_launch_arguments_and_origin() -> None:
    events = raw_events(RESNET)
    gemm = [e for e in events if e.get("cat") == "kernel" and "gemm" in e["name"].lower()]
    first = min(gemm, key=lambda e: e["ts"])
    correlation = first["args"]["correlation"]
    launch = next(e for e in events if e.get("cat") == "cuda_runtime" and e["args"].get("correlation") == correlation)
    op = next(
        e for e in events if e.get("cat") == "cpu_op" and e["args"].get("External id") == first["args"]["External id"]
    )
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        timeline = await open_timeline(pilot, app)
        await pilot.press("slash")
        await type_text(pilot, "gemm")
        await pilot.press("enter", "n")  # the first gemm kernel of the trace
        lane, position = timeline.selected_event()
        assert timeline.lanes.lanes[lane].start[position] == first["ts"]
        text = screen_text(app)
        flat = "".join(text.split())  # lines wrap at 80 columns

        def shown(words: str) -> bool:
            return words.replace(" ", "") in flat

        args = first["args"]
        assert shown(f"grid {args['grid']}") and shown(f"block {args['block']}")
        assert shown(f"registers {args['registers per thread']}")
        assert shown(f"shared mem {args['shared memory']:,} B")
        occupancy = args["est. achieved occupancy %"]
        assert shown(f"occupancy {occupancy:.1f}%") if occupancy else shown("occupancy –")
        assert shown(f"correlation {args['correlation']}")
        assert shown(f"from {op['name']} via {launch['name']} {launch['dur']:.3f} us")
        assert shown(f"dims {op['args']['Input Dims']}")
        assert f"kernel {first['dur']:.3f} us" in text  # figures first, on the first line


async def test_inspector_shows_an_operators_inputs_children_and_gpu_work() -> None:
    profile = loaded(RESNET)
    events = raw_events(RESNET)
    conv = next(e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::cudnn_convolution")
    lo, hi = conv["ts"], conv["ts"] + conv["dur"]
    inside = [
        e
        for e in events
        if e.get("tid") == conv["tid"] and e.get("cat") in HOST_CATS and lo <= e["ts"] <= e["ts"] + e["dur"] <= hi
    ]
    correlations = {e["args"]["correlation"] for e in inside if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    launched = [e for e in events if e.get("cat") in GPU_CATS and e["args"].get("correlation") in correlations]
    host = profile.model.host
    row = int(host.with_row_index("i").filter((host["name"] == conv["name"]) & (host["ts"] == conv["ts"]))["i"][0])
    app = viewer(RESNET)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot, app)
        timeline = await open_timeline(pilot, app)
        timeline.select(int(timeline.lanes.host_lane[row]), int(timeline.lanes.host_pos[row]))
        await pilot.pause()
        flat = "".join(screen_text(app).split())
        assert f"cpu_op{conv['dur']:.3f}us".replace(" ", "") in flat
        assert f"dims{conv['args']['Input Dims']}".replace(" ", "") in flat
        assert f"GPUwork{len(launched)}event" in flat
        await pilot.press("enter")  # this call's GPU work, not that of every aten::cudnn_convolution
        for _ in range(100):
            if isinstance(app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, DrillScreen)
        shown = app.screen.frame_view().displayed
        assert shown["calls"].sum() == len(launched)
        assert shown["total_us"].sum() == pytest.approx(sum(e["dur"] for e in launched), abs=1e-6)
        every = sum(1 for e in events if e.get("cat") == "cpu_op" and e["name"] == conv["name"])
        assert every > 1  # so one instance is not all of them


async def test_enter_on_a_kernel_drills_into_that_launch() -> None:
    events = raw_events(RESNET)
    kernels = sorted((e for e in events if e.get("cat") in GPU_CATS), key=lambda e: e["ts"])
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await open_timeline(pilot, app)
        await pilot.press(*["n"] * 7, "enter")  # the seventh GPU event
        for _ in range(100):
            if isinstance(app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        shown = app.screen.frame_view().displayed
        assert shown.height == 1 and shown["calls"][0] == 1
        assert shown["total_us"][0] == pytest.approx(kernels[6]["dur"], abs=1e-6)
        same_name = sum(1 for e in kernels if e["name"] == kernels[6]["name"])
        assert same_name > 1  # the name alone would have drilled into all of them


async def test_search_marks_matches_and_n_N_walk_them_in_time() -> None:
    events = raw_events(RESNET)
    matching = sorted(
        (
            e
            for e in events
            if e.get("ph") == "X" and e.get("cat") in GPU_CATS + HOST_CATS and re.search("relu", e["name"], re.I)
        ),
        key=lambda e: e["ts"],
    )
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        timeline = await open_timeline(pilot, app)
        await pilot.press("slash")
        await type_text(pilot, "relu")
        await pilot.press("enter")
        assert f"/relu/ {len(matching):,} matches" in screen_text(app)
        await pilot.press("n")
        lane, position = timeline.selected_event()
        assert timeline.lanes.lanes[lane].start[position] == matching[0]["ts"]
        await pilot.press("n", "n")
        lane, position = timeline.selected_event()
        assert timeline.lanes.lanes[lane].start[position] == matching[2]["ts"]
        await pilot.press("N")
        lane, position = timeline.selected_event()
        assert timeline.lanes.lanes[lane].start[position] == matching[1]["ts"]
        assert timeline.lanes.names[int(timeline.lanes.lanes[lane].names[position])] == matching[1]["name"]
        await pilot.press("escape")
        assert timeline.pattern == "" and "matches" not in screen_text(app)


def test_timeline_layout(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """80x24: step 3 chosen, the Timeline on it, a gemm kernel found by / and inspected."""
    monkeypatch.chdir(ROOT)

    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_loaded(pilot, pilot.app)
        await pilot.press("4", "down", "enter")
        await open_timeline(pilot, pilot.app)
        await pilot.press("slash", *"gemm", "enter", "n")
        await pilot.pause()

    app = ProfviewApp(f"samples/{RESNET}", no_cache=True)
    assert snap_compare(app, terminal_size=(80, 24), run_before=steps)
