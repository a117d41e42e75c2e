"""Outlier steps, and one chosen step narrowing every view (CLI and viewer).

Each figure is checked against the raw trace JSON read with the standard library: step windows,
launches by correlation id and the GPU busy union are recomputed here in plain Python, and the
outlier rule with :mod:`statistics`.
"""

from __future__ import annotations

import csv
import re
import statistics
from pathlib import Path

import polars as pl
import pytest
from pilot import screen_text, wait_loaded
from support import loaded, raw_events, run_cli, sample, viewer

import profview
from profview.frames import fmt_us
from profview.tui.drill.screen import DrillScreen
from profview.tui.main.screen import MainScreen
from profview.tui.main.steps import StepList

CONTROL = "hta_diff_control_a100.json.gz"  # 6 steps; ProfilerStep#1014 is the slow one
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"  # 3 steps, H100, torch's own tables beside it
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
STEP = re.compile(r"ProfilerStep#(\d+)")


def raw_view(events: list[dict]) -> tuple[dict[int, tuple[float, float]], dict[int, tuple[float, float]], list[dict]]:
    """(host range per step, window per step, GPU events with ``launch_ts``), in plain Python.

    A window starts at the step's host start and ends at the end of the GPU work its runtime calls
    launched (at least its host end); a step starts no earlier than the previous window's end.
    """
    host: dict[int, tuple[float, float]] = {}
    for e in events:
        match = STEP.fullmatch(str(e.get("name")))
        if e.get("ph") == "X" and match and e.get("cat") in ("user_annotation", "cpu_op"):
            start, end = float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))
            old = host.get(int(match[1]), (start, end))
            host[int(match[1])] = (min(old[0], start), max(old[1], end))
    runtime: dict[int, float] = {}
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and corr is not None:
            runtime.setdefault(corr, float(e["ts"]))
    gpu = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            launch = runtime.get((e.get("args") or {}).get("correlation"))
            gpu.append({"name": e["name"], "ts": float(e["ts"]), "dur": float(e.get("dur", 0)), "launch_ts": launch})
    order = sorted(host, key=lambda n: host[n][0])
    ends = {n: host[n][1] for n in order}
    for g in gpu:
        for n in order:
            if g["launch_ts"] is not None and host[n][0] <= g["launch_ts"] <= host[n][1]:
                ends[n] = max(ends[n], g["ts"] + g["dur"])
    windows, previous_end = {}, float("-inf")
    for n in order:
        start = max(host[n][0], previous_end)
        end = max(ends[n], start)
        windows[n], previous_end = (start, end), end
    return host, windows, gpu


def in_step(g: dict, n: int, host: dict, windows: dict) -> bool:
    """The documented rule: launched inside the step's host range, else (no launch) started in its window."""
    if g["launch_ts"] is not None:
        return host[n][0] <= g["launch_ts"] <= host[n][1]
    return windows[n][0] <= g["ts"] < windows[n][1]


def witness_outliers(durations: dict[int, float]) -> tuple[float, set[int]]:
    """median + 3 × 1.4826 × MAD (at least 1.05 × median) and the steps above it, by statistics."""
    values = list(durations.values())
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    threshold = max(median + 3 * 1.4826 * mad, 1.05 * median)
    return threshold, {n for n, v in durations.items() if v > threshold}


def test_outlier_flags_match_statistics_on_raw_step_windows(tmp_path: Path) -> None:
    _host, windows, _gpu = raw_view(raw_events(CONTROL))
    durations = {n: end - start for n, (start, end) in windows.items()}
    threshold, flagged = witness_outliers(durations)
    assert flagged == {1014}  # 81.1 ms against a median of 76.8 ms: the test can fail both ways
    assert len(durations) - len(flagged) == 5
    out = tmp_path / "steps.csv"
    assert run_cli(["export", str(sample(CONTROL)), "--view", "steps", "-o", str(out), "--no-cache"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert {int(r["step"]) for r in rows if r["outlier"] == "true"} == flagged
    for r in rows:
        assert float(r["duration_us"]) == pytest.approx(durations[int(r["step"])], abs=1e-3)
    from profview.analysis.tables.step_outliers import outlier_threshold

    assert outlier_threshold(loaded(CONTROL).steps()["duration_us"]) == pytest.approx(threshold, abs=1e-3)


def test_summary_names_the_outlier_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(sample(CONTROL)), "--no-cache"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    _host, windows, _gpu = raw_view(raw_events(CONTROL))
    threshold, _flagged = witness_outliers({n: e - s for n, (s, e) in windows.items()})
    assert f"outlier steps (duration > {fmt_us(threshold)}" in text
    assert f"1014 ({fmt_us(windows[1014][1] - windows[1014][0])})" in text


def test_gpt2_big_first_outlier_is_step_17(shared_dir: Path) -> None:
    """The 40-step trace: the statistics witness and the export agree (step 17 is an outlier)."""
    path = shared_dir / "traces" / "gpt2_train_big.pt.trace.json.gz"
    import gzip
    import json

    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    _host, windows, _gpu = raw_view(events)
    _threshold, flagged = witness_outliers({n: e - s for n, (s, e) in windows.items()})
    assert 17 in flagged and len(flagged) < len(windows) / 4
    frame = profview.profiles.views.view_frame(profview.load(path), "steps")
    assert set(frame.filter(pl.col("outlier"))["step"].to_list()) == flagged


def test_step_narrowed_drill_downs_count_the_launches_of_the_step(tmp_path: Path) -> None:
    """Kernel → launching ops and op → kernels under step 3 equal the raw events launched in it."""
    events = raw_events(GPT2)
    host, windows, gpu = raw_view(events)
    step = 3
    mine = [g for g in gpu if in_step(g, step, host, windows)]
    counts: dict[str, int] = {}
    for g in mine:
        counts[g["name"]] = counts.get(g["name"], 0) + 1
    kernel = max(sorted(counts), key=lambda k: counts[k])  # the kernel launched most often in step 3
    total = sum(g["dur"] for g in mine if g["name"] == kernel)
    profile = loaded(GPT2)
    row = profile.kernels(step=step).filter(pl.col("name") == kernel)
    assert row["calls"][0] == counts[kernel] and row["total_us"][0] == pytest.approx(total, abs=1e-3)
    launches = profview.profiles.views.view_frame(profile, "launches", kernel=kernel, step=step)
    assert launches["calls"].sum() == counts[kernel]
    assert launches["total_us"].sum() == pytest.approx(total, abs=1e-3)
    everywhere = sum(1 for g in gpu if g["name"] == kernel)
    assert everywhere > counts[kernel]  # the whole trace has more: the step narrows
    # The CLI gives the same frame.
    out = tmp_path / "k.csv"
    args = ["export", str(sample(GPT2)), "--view", "launches", "--kernel", kernel, "--step", str(step), "-o", str(out)]
    assert run_cli([*args, "--no-cache"]) == 0
    written = pl.read_csv(out)
    assert written["calls"].to_list() == launches["calls"].to_list()
    # op → kernels: runtime calls inside an aten::mm call (same thread), launched inside step 3.
    mm = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e.get("name") == "aten::mm"]
    corr_in_mm = set()
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and corr is not None:
            ts = float(e["ts"])
            if host[step][0] <= ts <= host[step][1] and any(
                m["tid"] == e["tid"] and m["pid"] == e["pid"] and m["ts"] <= ts <= m["ts"] + m["dur"] for m in mm
            ):
                corr_in_mm.add(corr)
    launched = [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    under_mm = [e for e in launched if (e.get("args") or {}).get("correlation") in corr_in_mm]
    frame = profview.profiles.views.view_frame(profile, "launches", op="aten::mm", step=step)
    assert frame["calls"].sum() == len(under_mm) > 0
    assert frame["total_us"].sum() == pytest.approx(sum(float(e["dur"]) for e in under_mm), abs=1e-3)
    # The Operators table under the step counts the same calls (its row agrees with its drill-down).
    ops_row = profile.ops(step=step).filter(pl.col("name") == "aten::mm")
    assert ops_row["device_total_us"][0] == pytest.approx(sum(float(e["dur"]) for e in under_mm), abs=1e-3)
    assert ops_row["calls"][0] == sum(1 for m in mm if host[step][0] <= m["ts"] <= host[step][1])


def test_overview_of_a_step_equals_its_steps_row() -> None:
    """GPU busy inside the window (a plain-Python union of raw GPU intervals) = the step row's GPU categories."""
    _host, windows, gpu = raw_view(raw_events(GPT2))
    profile = loaded(GPT2)
    for step, (start, end) in windows.items():
        spans = sorted((max(g["ts"], start), min(g["ts"] + g["dur"], end)) for g in gpu)
        busy, reach = 0.0, start
        for lo, hi in spans:
            if hi > lo and hi > reach:
                busy += hi - max(lo, reach)
                reach = hi
        view = profile.step_overview(step)
        assert view["gpu_busy_us"] == pytest.approx(busy, abs=1e-2)
        gpu_row = sum(view[f"{c}_us"] for c in ("kernel", "memcpy", "memset", "communication", "prewindow"))
        assert gpu_row == pytest.approx(busy, abs=1e-2)
        assert view["duration_us"] == pytest.approx(end - start, abs=1e-3)


# -- the viewer ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_s_sorts_the_steps_and_marks_the_outlier() -> None:
    _host, windows, _gpu = raw_view(raw_events(CONTROL))
    durations = {n: e - s for n, (s, e) in windows.items()}
    app = viewer(CONTROL)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4", "s")
        await pilot.pause()
        steps = app.screen.query_one(StepList)
        assert steps.sort_key == "duration"
        assert steps.steps["step"].to_list() == sorted(durations, key=lambda n: -durations[n])
        text = screen_text(app)
        assert "sorted by duration ↓" in text and "!step 1014" in text
        assert "1 ! outlier of 6" in " ".join(text.split())  # the totals line (wrapped)
        assert sum(line.count("!step") for line in text.splitlines()) == 1
        await pilot.press("s")  # next: the first category with time (Kernel)
        await pilot.pause()
        assert steps.sort_key == "kernel" and "sorted by Kernel ↓" in screen_text(app)
        for _ in steps.sort_keys()[2:]:
            await pilot.press("s")
        await pilot.pause()
        assert steps.sort_key is None and steps.steps["step"].to_list() == sorted(durations)


@pytest.mark.asyncio
async def test_s_on_the_overview_says_there_is_nothing_to_sort() -> None:
    app = viewer(GPT2)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("s")
        await pilot.pause()
        assert any("Overview: nothing to sort here" in note for note in app.notices)


@pytest.mark.asyncio
async def test_a_chosen_step_narrows_the_overview_and_the_drill_down() -> None:
    events = raw_events(GPT2)
    host, windows, gpu = raw_view(events)
    step = 3
    counts: dict[str, int] = {}
    for g in gpu:
        if in_step(g, step, host, windows):
            counts[g["name"]] = counts.get(g["name"], 0) + 1
    kernel = max(sorted(counts), key=lambda k: counts[k])
    app = viewer(GPT2)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and app.screen.step == step
        await pilot.press("1")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        duration = windows[step][1] - windows[step][0]
        assert f"step {step} only: {fmt_us(duration)} · GPU busy" in text
        assert "Top kernels · step 3 only" in text
        await pilot.press("2")
        await pilot.pause()
        view = app.screen.query_one("#kernels")
        index = view.displayed["name"].to_list().index(kernel)
        view.table.move_cursor(row=index)
        await pilot.press("enter")
        for _ in range(100):
            if isinstance(app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, DrillScreen)
        frame = app.screen.frame_view().displayed
        assert frame["calls"].sum() == counts[kernel]
        assert f"step {step} only" in screen_text(app).splitlines()[0]
