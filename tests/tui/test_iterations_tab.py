"""The Iterations tab at 80x24: the iterations table with its outlier, Enter narrowing the
Overview, Kernels, drill-downs and the Timeline to one iteration, ``a`` back to all, and the
Overview's per-phase lines.  Figures checked against the raw events (``tests/serving_witness.py``)."""

from __future__ import annotations

import io

import polars as pl
from pilot import screen_text, wait_loaded, wait_until
from rich.console import Console
from serving_witness import EAGER, raw_iterations
from support import raw_events, viewer

from profview.tui.drill.screen import DrillScreen
from profview.tui.main.iterations import IterationsView
from profview.tui.main.overview import OverviewView, overview_renderable
from profview.tui.main.timeline import TraceTimeline
from profview.tui.widgets.table_view import FrameView


def raw_kernels_of(name: str, lo: float, hi: float) -> dict[str, tuple[int, float]]:
    """kernel name → (launches, µs) of the kernels whose runtime call started in [lo, hi]."""
    events = raw_events(name)
    calls = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    found: dict[str, tuple[int, float]] = {}
    for e in events:
        at = calls.get(e.get("args", {}).get("correlation")) if e.get("cat") == "kernel" else None
        if at is not None and lo <= at <= hi:
            count, total = found.get(e["name"], (0, 0.0))
            found[e["name"]] = (count + 1, total + e["dur"])
    return found


async def test_iterations_tab_narrows_every_view_to_one_iteration() -> None:
    raw = raw_iterations(EAGER, lambda n: n in ("prefill", "decode"))
    chosen = raw[2]  # the second decode iteration
    lo, hi = chosen["ts"], chosen["ts"] + chosen["host_us"]
    mine = raw_kernels_of(EAGER, lo, hi)
    app = viewer(EAGER)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        main = app.screen
        await pilot.press("0")
        view = main.query_one(IterationsView)
        await wait_until(pilot, lambda: bool(view.query(FrameView)))
        table = view.query_one(FrameView)
        await wait_until(pilot, lambda: table.table is not None)
        text = screen_text(app)
        assert "0 Iter" in text and "Iterations · 13 · found by their annotations" in text
        assert "decode: 12 iterations × 4 tokens" in text
        assert table.displayed["outlier"].to_list() == [False, True] + [False] * 11  # the 804.8 ms warm-up decode
        assert "!" in screen_text(app)  # drawn as a mark
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: main.iteration is not None)
        assert main.iteration is not None and main.iteration.iteration == 2
        assert "iteration 2 only" in screen_text(app)
        # Kernels: exactly the kernels that iteration launched
        await pilot.press("2")
        await pilot.pause()
        kernels = main.query_one("#kernels", FrameView).base
        shown = {r["name"]: (r["calls"], r["total_us"]) for r in kernels.iter_rows(named=True)}
        assert {k: v[0] for k, v in shown.items()} == {k: v[0] for k, v in mine.items()}
        assert abs(kernels["total_us"].sum() - sum(v[1] for v in mine.values())) < 1e-3
        # a drill-down from Kernels stays in the iteration
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
        drill = app.screen
        assert isinstance(drill, DrillScreen) and "iteration 2 only" in " ".join(drill.path)
        first = kernels.row(0, named=True)["name"]
        assert drill.query_one(FrameView).base["calls"].sum() == mine[first][0]
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is main)
        # the Overview: the iteration's own line and its top kernels
        await pilot.press("1")
        await pilot.pause()
        view = main.query_one(OverviewView)
        assert view.iteration == main.iteration
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(overview_renderable(app.profile, 80, None, None, 5, view.iteration))
        overview = console.export_text()
        assert "iteration 2 only: decode, 4 tokens (embedding)" in overview
        assert "Top kernels · iteration 2 only" in overview
        # the Timeline opens on the iteration: its host start to the end of the GPU work it launched
        await pilot.press("7")
        await wait_until(pilot, lambda: bool(main.query(TraceTimeline)))
        timeline = main.query_one(TraceTimeline)
        gpu_end = chosen["gpu_end"]
        assert abs(timeline.view_start - lo) < 1e-3 and abs(timeline.view_end - max(hi, gpu_end)) < 1e-3
        # a: every iteration again (on a timeline 0 fits the view, so the tab is reached from another pane)
        await pilot.press("1", "0")
        await pilot.pause()
        await pilot.press("a")
        await wait_until(pilot, lambda: main.iteration is None)
        assert main.iteration is None
        assert main.query_one("#kernels", FrameView).base.height == app.profile.kernels().height


async def test_overview_per_phase_lines_of_a_serving_trace_and_none_for_training() -> None:
    app = viewer(EAGER)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await wait_until(pilot, lambda: "decode: 12 iterations" in screen_text(app))
        decode = [r for r in raw_iterations(EAGER, lambda n: n == "decode")]
        per_token = sum(r["gpu_us"] for r in decode) / 48
        assert f"decode: 12 iterations × 4 tokens, {per_token:.1f} us GPU/token" in screen_text(app)
    app = viewer("gpt2_train_bf16.pt.trace.json.gz")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await wait_until(pilot, lambda: app.profile is not None and app.profile.serving_known())
        await pilot.pause()
        text = screen_text(app)
        assert "iterations ×" not in text and "decode:" not in text
        await pilot.press("0")
        view = app.screen.query_one(IterationsView)
        await wait_until(pilot, lambda: bool(view.query(FrameView)))
        assert "no serving annotation: one iteration per ProfilerStep" in screen_text(app)
        steps = view.query_one(FrameView).base
        assert steps["name"].to_list() == app.profile.steps()["name"].to_list()
        assert steps.filter(pl.col("tokens").is_not_null()).height == 0
