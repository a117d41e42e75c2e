"""The viewer on serving and compiled traces at the sizes a user meets (80x24, 120x40, 200x50): the
Timeline's scope under "iteration N only", the filter bar, the graph nodes table, the details line
and the notices.  Figures are checked against the raw events read with the standard library."""

from __future__ import annotations

import polars as pl
import pytest
from pilot import open_graph_nodes, screen_text, wait_loaded, wait_until
from serving_witness import EAGER, raw_iterations
from support import raw_events, viewer

from profview.tui.main.iterations import IterationsView
from profview.tui.main.timeline import TraceTimeline
from profview.tui.widgets.table_view import FrameView

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


async def open_iterations_table(pilot, app) -> FrameView:  # type: ignore[no-untyped-def]
    """Key 0: the Iterations tab, once its table is built."""
    await pilot.press("0")
    view = app.screen.query_one(IterationsView)
    await wait_until(pilot, lambda: bool(view.query(FrameView)))
    table = view.query_one(FrameView)
    await wait_until(pilot, lambda: table.table is not None)
    return table


def raw_gpu_busy(name: str, lo: float, hi: float) -> float:
    """µs of [lo, hi) during which some GPU event ran (the union, clipped), from the raw JSON."""
    spans = sorted(
        (max(e["ts"], lo), min(e["ts"] + e["dur"], hi))
        for e in raw_events(name)
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS and e["ts"] < hi and e["ts"] + e["dur"] > lo
    )
    busy, reach = 0.0, lo
    for start, end in spans:
        if end > reach:
            busy += end - max(start, reach)
            reach = end
    return busy


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_timeline_footer_names_the_chosen_iteration(size: tuple[int, int]) -> None:
    """Under "iteration 2 only" the line under the lanes gives the iteration's window and its GPU
    busy (not the whole trace's), and after a zoom says where the view is against that window."""
    chosen = raw_iterations(EAGER, lambda n: n in ("prefill", "decode"))[2]
    lo = chosen["ts"]
    hi = max(chosen["ts"] + chosen["host_us"], chosen["gpu_end"])
    busy = raw_gpu_busy(EAGER, lo, hi)
    app = viewer(EAGER)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app)
        main = app.screen
        await open_iterations_table(pilot, app)
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: main.iteration is not None)
        await pilot.press("7")
        await wait_until(pilot, lambda: bool(main.query(TraceTimeline)))
        await pilot.pause()
        timeline = main.query_one(TraceTimeline)
        line = timeline.step_line()
        assert line.startswith("iteration 2's window (")
        assert "whole trace" not in line
        from profview.frames import fmt_us

        assert f"GPU busy {fmt_us(busy)} of {fmt_us(hi - lo)}" in line
        assert "iteration 2's window" in " ".join(screen_text(app).split())
        await pilot.press("plus")  # zoomed in: the view is part of the window, and says so
        await pilot.pause()
        zoomed = timeline.step_line()
        assert zoomed.startswith("in view (") and "iteration 2: " in zoomed
        # a: every iteration again, and the footer no longer names one
        await pilot.press("1", "0", "a")
        await wait_until(pilot, lambda: main.iteration is None)
        await pilot.pause()
        assert timeline.iteration is None and "iteration 2" not in timeline.step_line()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_slash_focuses_the_filter_bar_after_esc_cleared_a_kept_filter(size: tuple[int, int]) -> None:
    """/ cutlass Enter (kept), Esc (cleared from the table), / again: what is typed goes to the bar,
    not to the table (where ``e`` would open the export and ``j`` move the cursor)."""
    from profview.tui.widgets.filter_bar import FilterBar

    app = viewer("gpt2_train_bf16.pt.trace.json.gz")
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "slash", *"cutlass", "enter")
        await pilot.pause()
        kernels = app.screen.query_one("#kernels", FrameView)
        assert kernels.pattern == "cutlass"
        await pilot.press("escape")
        await pilot.pause()
        assert kernels.pattern == ""
        await pilot.press("slash")
        await pilot.pause()
        bar = app.screen.query_one(FilterBar)
        assert app.focused is bar
        await pilot.press(*"gemm")
        await pilot.pause()
        assert bar.value == "gemm" and kernels.pattern == "gemm"
        assert all("gemm" in name.lower() for name in kernels.displayed["name"].to_list())


def details_of(view: FrameView) -> str:
    """The details line under a table, its wrapped lines joined back (a name or path wraps whole)."""
    from textual.widgets import Static

    return str(view.query_one(".details", Static).render().plain)  # type: ignore[attr-defined]


def raw_triton_args(name: str) -> dict[str, dict[str, object]]:
    """Per Triton kernel name: the launch arguments its host op recorded (kernel_file, hash, warps)."""
    keys = ("kernel_file", "kernel_hash", "num_warps", "num_stages")
    return {
        e["name"]: {k: e["args"][k] for k in keys if k in e["args"]}
        for e in raw_events(name)
        if "kernel_file" in e.get("args", {})
    }


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_details_line_shows_every_filled_triton_field_and_the_file_whole(size: tuple[int, int]) -> None:
    """A Triton kernel's details: its fused ops, warps, stages and its source file whole (the hash is
    that file's name); an eager kernel's: no ``fused_ops -`` for fields it does not have."""
    name = "h100_compile_reduce_overhead.json.gz"
    raw = raw_triton_args(name)
    app = viewer(name)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "slash", *"triton_poi_fused_gelu", "enter")
        await pilot.pause()
        kernels = app.screen.query_one("#kernels", FrameView)
        await wait_until(pilot, lambda: kernels.displayed.height == 1)
        await pilot.pause()
        kernel = kernels.displayed["name"][0]
        args = raw[kernel]
        text = details_of(kernels)
        flat = text.replace("\n", "")
        assert "fused_ops gelu, view" in text
        assert f"num_warps {args['num_warps']}" in text and f"num_stages {args['num_stages']}" in text
        assert f"kernel_file {args['kernel_file']}" in flat  # whole, wrapped at the screen's edge
        assert str(args["kernel_hash"]) in flat and "kernel_hash" in flat
        await pilot.press("escape", "slash", *"nvjet", "enter")
        await pilot.pause()
        await wait_until(pilot, lambda: kernels.displayed.height >= 1 and "nvjet" in kernels.displayed["name"][0])
        await pilot.pause()
        eager = details_of(kernels)
        assert "fused_ops" not in eager and "kernel_file" not in eager


async def test_graph_nodes_freeze_node_and_name_and_show_module_source_how() -> None:
    """A graph's nodes at 80x24: node and kernel name stay when scrolling right, device_us, replays and
    how follow the name on screen, and the details line shows module, source and how whole."""
    name = "h100_decode_cuda_graph.json.gz"
    app = viewer(name)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        nodes = await open_graph_nodes(pilot, app)
        assert nodes.displayed.columns[:5] == ["node", "name", "device_us", "replays", "how"]
        assert nodes.displayed.columns[-1] == "graph"
        assert nodes.table is not None and nodes.table.fixed_columns == 2
        header = next(line for line in screen_text(app).splitlines() if " node " in f" {line} ")  # under the caption
        assert all(word in header for word in ("node", "name", "device_us", "replays", "how"))
        await pilot.press(*["right"] * 8)
        await pilot.pause()
        header = next(line for line in screen_text(app).splitlines() if " node " in f" {line} ")  # under the caption
        assert header.split()[:2] == ["node", "name"]  # still there, scrolled right
        row = nodes.current_row()
        assert row is not None
        text = details_of(nodes)
        for column in ("module", "source", "how"):
            assert f"{column} {row[column]}" in text.replace("\n", "")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_compare_viewer_has_a_phases_tab_and_its_help_names_the_real_tabs(size: tuple[int, int]) -> None:
    """``profview diff`` of two decode runs: tab 5 is Phases, per phase the iterations and GPU µs per
    token before and after (the raw events' witness: prefill 128 tokens, 12 decode iterations of 4
    tokens on each side); ``?`` lists compare's tabs and not the one-trace viewer's as this screen's."""
    from support import sample

    from profview.tui.app import ProfviewApp
    from profview.tui.compare.screen import CompareScreen
    from profview.tui.dialogs.help import HelpScreen

    graph = "h100_decode_cuda_graph.json.gz"
    before = raw_iterations(EAGER, lambda n: n in ("prefill", "decode"))
    after = raw_iterations(graph, lambda n: n.startswith(("prefill", "decode")))
    app = ProfviewApp(str(sample(EAGER)), no_cache=True, compare={"after": str(sample(graph))})
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen), 40)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await pilot.pause(0.2)
        await pilot.press("5")
        await wait_until(pilot, lambda: screen.pane == "phases")
        assert "5 Phases" in screen_text(app)
        phases = screen.query_one("#phases", FrameView).displayed
        rows = {r["name"]: r for r in phases.iter_rows(named=True)}
        decode_before = [it for it in before if it["name"] == "decode"]
        assert rows["decode"]["iterations_before"] == len(decode_before) == 12
        assert rows["decode"]["iterations_after"] == len([it for it in after if it["name"].startswith("decode")])
        per_token = sum(it["gpu_us"] for it in decode_before) / sum(4 for _ in decode_before)
        assert abs(rows["decode"]["gpu_us_per_token_before"] - per_token) < 1e-3
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        sections = dict(app.screen.sections)
        this = " ".join(f"{k} {h}" for k, h in sections["This screen: compare"])
        assert "1 2 3 4 5, Tab" in this and "Phases" in this and "Moved" in this
        everywhere = " ".join(f"{k} {h}" for k, h in sections["Everywhere"])
        assert "Overview" not in everywhere


def flat_screen(app) -> str:  # type: ignore[no-untyped-def]
    """The screen's words in order, wrapped lines joined (a wrapped notice reads as one sentence)."""
    return " ".join(screen_text(app).split())


async def test_notices_and_captions_are_whole_at_80_columns(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """At 80x24 a notice wraps beside the context line instead of ending in ``…``: Enter on the
    Overview, ``e`` on the Timeline, and an export's path, whole; the Graphs caption keeps its
    ``--capture PATH`` remedy and the Modules caption its last key."""
    from profview.tui.app import OVERVIEW_ENTER

    monkeypatch.chdir(tmp_path)  # the export's default file lands here
    app = viewer("h100_compile_partial_window.json.gz")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("enter")
        await pilot.pause()
        assert " ".join(OVERVIEW_ENTER.split()) in flat_screen(app)
        await pilot.press("9")
        await pilot.pause()
        assert "or give it with --capture PATH" in flat_screen(app)
        await pilot.press("7")
        await wait_until(pilot, lambda: bool(app.screen.query(TraceTimeline)))
        await pilot.press("e")
        await pilot.pause()
        notice = " ".join(app.notices[-1].split())
        assert notice.startswith("the Timeline has no table to export") and notice in flat_screen(app)
        await pilot.press("2", "e")
        await pilot.pause()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.notices[-1].startswith("exported"))
        await pilot.pause()
        written = next(tmp_path.glob("*.csv"))
        assert str(written) in screen_text(app).replace("\n", "").replace(" ", "") or str(written) in flat_screen(app)
    app = viewer("resnet50_train_amp.pt.trace.json.gz")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("6")
        await pilot.pause()
        assert "x/z: deeper/shallower · Enter: its kernels · b: source lines" in flat_screen(app)


async def test_iterations_at_80_columns_export_and_the_name_under_an_iteration(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """At 80x24 the Iterations table shows ``gpu_us_per_token`` before the wide columns; its export
    writes ``outlier`` as ``true``/``false``, as ``profview export --view iterations`` does; under
    "iteration 2 only" the suggested export name says ``iteration-2``."""
    import csv

    from support import run_cli, sample

    from profview.tui.dialogs.export import ExportDialog

    monkeypatch.chdir(tmp_path)
    cli = tmp_path / "cli.csv"
    assert run_cli(["export", str(sample(EAGER)), "--view", "iterations", "-o", str(cli)]) == 0
    cli_outliers = [row["outlier"] for row in csv.DictReader(cli.open())]
    assert set(cli_outliers) == {"true", "false"}
    app = viewer(EAGER)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await open_iterations_table(pilot, app)
        await pilot.pause()
        header = next(line for line in screen_text(app).splitlines() if "iteration" in line and "phase" in line)
        assert "gpu_us_per_token" in header
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportDialog))
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.notices[-1].startswith("exported"))
        written = next(p for p in tmp_path.glob("profview-*.csv"))
        assert [row["outlier"] for row in csv.DictReader(written.open())] == cli_outliers
        written.unlink()
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: app.screen.iteration is not None)
        await pilot.press("2", "e")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportDialog))
        dialog = app.screen
        assert isinstance(dialog, ExportDialog) and dialog.suggestion.endswith("-kernels-iteration-2.csv")


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)])
async def test_footer_keys_whole_and_tabs_named_as_in_the_readme(size: tuple[int, int]) -> None:
    """Every key the footer shows is whole (at 80 columns ``e exp`` and ``b by sh`` were cut), the
    keys that do not fit are left out from the end; the tabs say Overview (not "Info") at every width."""
    from textual.widgets._footer import FooterKey

    from profview.tui.widgets.footer import WholeFooter, key_width

    app = viewer("gpt2_train_bf16.pt.trace.json.gz")
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app)
        for pane in ("2", "7", "1"):
            await pilot.press(pane)
            await pilot.pause(0.3)
            lines = screen_text(app).splitlines()
            assert lines[0].split()[:2] == ["1", "Overview"]
            footer = app.screen.query_one(WholeFooter)
            keys = list(footer.query(FooterKey))
            assert keys and sum(key_width(k) for k in keys) <= size[0]
            bottom = lines[-1]
            for key in keys:
                assert f"{key.key_display} {key.description}".strip() in bottom


def raw_replay_durations(name: str, position: int) -> list[float]:
    """The duration of the ``position``-th kernel of each graph replay (by start), from the raw JSON:
    the kernels whose correlation is a cudaGraphLaunch's."""
    events = raw_events(name)
    launches = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") == "cuda_runtime" and "GraphLaunch" in e.get("name", "") and "correlation" in e.get("args", {})
    }
    replays: dict[int, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("cat") == "kernel" and e.get("args", {}).get("correlation") in launches:
            replays.setdefault(e["args"]["correlation"], []).append((e["ts"], e["dur"]))
    return [sorted(kernels)[position][1] for kernels in replays.values()]


async def test_node_drill_gives_min_and_max_of_its_replays() -> None:
    """A graph node's drill-down gives the shortest and longest of its replays (``-`` before), as the
    raw events have them."""
    name = "h100_decode_cuda_graph.json.gz"
    durations = raw_replay_durations(name, 0)
    assert len(durations) == 12
    app = viewer(name)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await open_graph_nodes(pilot, app)
        from profview.tui.drill.screen import DrillScreen

        nodes = app.screen
        await pilot.press("enter")  # node 0
        await wait_until(pilot, lambda: app.screen is not nodes and isinstance(app.screen, DrillScreen))
        origin = app.screen.query_one(FrameView)
        await wait_until(pilot, lambda: origin.table is not None)
        row = origin.displayed.row(0, named=True)
        assert row["calls"] == 12
        assert abs(row["min_us"] - min(durations)) < 1e-6 and abs(row["max_us"] - max(durations)) < 1e-6


def test_roofline_caption_and_no_graphs_say_what_they_mean() -> None:
    """The chart's caption names the rows it leaves out and why ("25 rows: 0 FLOPs" read as a figure);
    a trace without replays says what was looked for in plain words."""
    from support import loaded

    from profview.profiles.graph_views import NO_GRAPHS
    from profview.tui.main.efficiency import screen_frame
    from profview.tui.main.roofline import chart_caption

    profile = loaded("h100_decode_kv_growth.json.gz")
    frame = screen_frame(profile.efficiency())
    left_out = frame.filter(~((pl.col("tflops_s") > 0) & (pl.col("flops_per_byte") > 0))).height
    assert left_out >= 1
    caption = chart_caption(frame, None, "H100 SXM").plain
    noun = "row" if left_out == 1 else "rows"
    assert f"{left_out} {noun} not drawn (no FLOPs or no bytes)" in caption
    assert "0 FLOPs" not in caption
    assert "one launch made" not in NO_GRAPHS and "several kernels" in NO_GRAPHS


async def test_training_iterations_are_named_by_their_step() -> None:
    """On a training trace (no serving annotation) iteration N is a ProfilerStep: the table shows the
    step right after the iteration (the raw JSON's ProfilerStep#2, 3, 4), the serving columns after
    the figures, and "iteration 0 only" says which step it is."""
    name = "gpt2_train_bf16.pt.trace.json.gz"
    steps = sorted(
        (e["ts"], int(e["name"].removeprefix("ProfilerStep#")))
        for e in raw_events(name)
        if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")
    )
    app = viewer(name)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        table = await open_iterations_table(pilot, app)
        assert table.displayed.columns[:2] == ["iteration", "step"]
        assert table.displayed["step"].to_list() == [number for _, number in steps]
        header = next(line for line in screen_text(app).splitlines() if "iteration" in line and "outlier" in line)
        assert header.split()[:3] == ["iteration", "step", "outlier"]
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.screen.iteration is not None)
        await pilot.pause()
        assert f"iteration 0 (step {steps[0][1]}) only" in screen_text(app)
