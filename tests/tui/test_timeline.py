"""The Timeline tab (issue 15) driven by Textual's pilot: lanes, next/previous kernel, the jump
between a kernel and the runtime call that launched it, steps, zoom, drill-down, redraw time.
Checked against the raw events (gzip + json)."""

from __future__ import annotations

import time

import pytest
from pilot import wait_loaded
from support import loaded, raw_events, viewer

from profview.tui.drill.screen import DrillScreen
from profview.tui.main.timeline import TraceTimeline

RESNET = "resnet50_train_amp.pt.trace.json.gz"
DDP = "ddp_nccl_streams.pt.trace.json.gz"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CATS = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "overhead")  # profiler overhead ranges too


async def open_timeline(pilot, app) -> TraceTimeline:  # type: ignore[no-untyped-def]
    """Press 7 and wait for the lanes, which are built off the UI thread when first shown."""
    await pilot.press("7")
    for _ in range(200):
        found = app.screen.query(TraceTimeline)
        if found:
            await pilot.pause()
            return found.first()
        await pilot.pause(0.05)
    raise AssertionError("the timeline was not built")


def raw_gpu(name: str) -> list[dict]:
    return [e for e in raw_events(name) if e.get("ph") == "X" and e.get("cat") in GPU_CATS]


@pytest.mark.parametrize("name", [RESNET, DDP])
def test_lanes_hold_every_host_and_gpu_event(name: str) -> None:
    lanes = loaded(name).timeline_lanes().lanes
    gpu = raw_gpu(name)
    host = [e for e in raw_events(name) if e.get("ph") == "X" and e.get("cat") in HOST_CATS]
    gpu_lanes = [lane for lane in lanes if lane.kind == "gpu"]
    assert {lane.label for lane in gpu_lanes} == {f"GPU{e['args']['device']} s{e['args']['stream']}" for e in gpu}
    assert sum(len(lane.start) for lane in gpu_lanes) == len(gpu)
    assert sum(len(lane.start) for lane in lanes if lane.kind == "cpu") == len(host)
    assert {lane.label.split(" ")[0] for lane in lanes if lane.kind == "cpu"} == {str(e["tid"]) for e in host}


async def test_next_kernel_follow_launch_and_back() -> None:
    name = RESNET
    by_corr = {}
    for e in raw_events(name):
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e["args"]:
            by_corr[e["args"]["correlation"]] = e
    kernels = sorted(raw_gpu(name), key=lambda e: e["ts"])
    app = viewer(name)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_loaded(pilot, app)
        timeline = await open_timeline(pilot, app)
        lanes = timeline.lanes.lanes
        assert lanes[timeline.lane].kind == "gpu"
        await pilot.press("n")  # the first GPU event after the cursor's instant (the trace start)
        lane_no, pos = timeline.selected_event()
        assert lanes[lane_no].start[pos] == kernels[0]["ts"]
        for _ in range(5):
            await pilot.press("n")
        lane_no, pos = timeline.selected_event()
        chosen = kernels[5]  # six presses of n: the sixth GPU event
        assert lanes[lane_no].start[pos] == chosen["ts"]
        await pilot.press("p")
        assert lanes[timeline.lane].start[timeline.selected_event()[1]] == kernels[4]["ts"]
        await pilot.press("n", "n")
        chosen = kernels[6]
        assert chosen["cat"] == "kernel"
        # its Python stack where it was launched: the innermost raw frame open at the launch call
        launch = by_corr[chosen["args"]["correlation"]]
        open_frames = [
            e
            for e in raw_events(name)
            if e.get("cat") == "python_function"
            and e["tid"] == launch["tid"]
            and e["ts"] <= launch["ts"] <= e["ts"] + e["dur"]
        ]
        innermost = max(open_frames, key=lambda e: e["ts"])["name"]
        py_line = next(line for line in str(timeline.describe()).split("\n") if line.startswith("py: "))
        assert py_line.startswith(f"py: {innermost}")  # the inspector: innermost frame first
        await pilot.press("f")  # kernel → the runtime call with its correlation id
        lane_no, pos = timeline.selected_event()
        launch = by_corr[chosen["args"]["correlation"]]
        assert lanes[lane_no].kind == "cpu"
        assert lanes[lane_no].start[pos] == launch["ts"]
        assert timeline.lanes.names[int(lanes[lane_no].names[pos])] == launch["name"]
        assert lanes[lane_no].label.startswith(str(launch["tid"]))
        await pilot.press("f")  # and back to the GPU work it launched
        lane_no, pos = timeline.selected_event()
        assert lanes[lane_no].start[pos] == chosen["ts"]
        await pilot.press("enter")  # issue 22: this one kernel's launch, not every kernel of its name
        for _ in range(100):
            if isinstance(app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, DrillScreen)
        shown = app.screen.frame_view().displayed
        assert shown["calls"].to_list() == [1] and shown["total_us"][0] == pytest.approx(chosen["dur"], abs=1e-6)


async def test_steps_zoom_and_redraw_time() -> None:
    app = viewer(RESNET)
    profile = loaded(RESNET)
    steps = profile.steps()
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        timeline = await open_timeline(pilot, app)
        await pilot.press("t")
        first = steps.row(0, named=True)
        assert timeline.view_start - profile.span_start == pytest.approx(first["start_us"], abs=1e-3)
        assert timeline.view_end - timeline.view_start == pytest.approx(first["duration_us"], abs=1e-3)
        await pilot.press("t")
        assert timeline.view_start - profile.span_start == pytest.approx(steps["start_us"][1], abs=1e-3)
        assert "step 3: GPU busy" in str(timeline.describe())
        await pilot.press("T")
        assert timeline.view_start - profile.span_start == pytest.approx(first["start_us"], abs=1e-3)
        width = timeline.view_end - timeline.view_start
        await pilot.press("plus")
        assert timeline.view_end - timeline.view_start == pytest.approx(width / 2)
        await pilot.press("minus", "minus")
        await pilot.press("0")
        assert (timeline.view_start, timeline.view_end) == (timeline.start, timeline.end)
        began = time.perf_counter()
        for _ in range(10):
            timeline.render()
        per_redraw = (time.perf_counter() - began) / 10
        assert per_redraw < 0.1  # the whole trace at 200x50


async def test_large_trace_timeline_waits_for_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a large trace is being linked, Memory/Modules/Timeline say so; once linked they show
    (the timeline builds its lanes then, as it is on screen)."""
    import threading

    from profview.tui import lifecycle as app_module
    from profview.tui.main.memory import MemoryView

    release = threading.Event()
    real_prepare = app_module.prepare

    def slow_prepare(profile, phase):  # type: ignore[no-untyped-def]
        release.wait(20)
        real_prepare(profile, phase)

    monkeypatch.setattr(app_module, "LARGE_TRACE_EVENTS", 1)
    monkeypatch.setattr(app_module, "prepare", slow_prepare)
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("7")
        assert app.screen.pane == "trace" and not app.linked
        assert not app.screen.query(TraceTimeline)
        release.set()
        for _ in range(200):
            if app.linked and app.screen.query(TraceTimeline):
                break
            await pilot.pause(0.05)
        timeline = app.screen.query_one(TraceTimeline)
        assert sum(len(lane.start) for lane in timeline.lanes.lanes if lane.kind == "gpu") == len(raw_gpu(RESNET))
        await pilot.press("5")
        assert app.screen.query_one(MemoryView).device == "cuda:0"
