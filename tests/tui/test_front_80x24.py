"""At 80x24 every figure a tab is about is on screen: names cut in the middle keep their telling tail,
Kernels' share and Ops-by-shape's sorted figures beside the name, the Efficiency tab's rows (the
chart folds) with TFLOP/s, % of roof and calls, a graph node's operator whole in the details, the
job's straggler row in the table.  Witnesses: the profile's own frames (names and figures), the
archive's ranks for the job."""

from __future__ import annotations

import pytest
from pilot import open_graph_nodes, screen_text, wait_loaded, wait_until
from support import SAMPLES, loaded, viewer

from profview.tui.main.efficiency import RooflineChart
from profview.tui.widgets.table_view import FrameView

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
QWEN = "tracelens_h100_qwen1.5-0.5b.json.gz"
COMPILED = "h100_compile_reduce_overhead.json.gz"


def table_lines(text: str) -> list[str]:
    """The screen's lines above the details rule (the table's rows and headers)."""
    return text.split("─" * 20, 1)[0].splitlines()


async def test_operator_names_keep_their_telling_tail() -> None:
    ops = loaded(GPT2).ops()
    evaluate = [n for n in ops["name"].to_list() if n.startswith("autograd::engine::evaluate_function: ")]
    assert len(evaluate) >= 3
    app = viewer(GPT2)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("3")
        await pilot.pause(0.3)
        lines = table_lines(screen_text(app))
    rows = [line for line in lines if line.strip().startswith("autograd::engin")]
    assert len(rows) >= 3
    cut = [row.strip().split("  ", 1)[0] for row in rows]
    for shown in cut:  # each cut name keeps the end of one of the names: MmBackward0, MulBackward0 ...
        head, _, tail = shown.partition("…")
        assert tail and any(n.startswith(head) and n.endswith(tail) for n in evaluate), shown
    assert len(set(cut)) == len(cut)  # told apart


async def test_kernels_share_and_ops_by_shape_sorted_figures_on_screen() -> None:
    profile = loaded(GPT2)
    kernels = profile.kernels()
    app = viewer(GPT2)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.3)
        lines = table_lines(screen_text(app))
        header = next(line for line in lines if line.lstrip().startswith("name"))
        assert "pct" in header.split() and "total_us" in header.split()
        first = next(line for line in lines if f" {kernels['total_us'][0]:.3f} " in line)
        assert f"{kernels['pct'][0]:.3f}" in first
        await pilot.press("3", "b")
        await pilot.pause(0.5)
        lines = table_lines(screen_text(app))
        header = next(line for line in lines if line.lstrip().startswith("name"))
        assert "device_total_us" in header.split() and "calls" in header.split()
        shapes = profile.ops(by_shapes=True).sort("device_total_us", descending=True)
        rows = [line for line in lines if "ProfilerStep*" in line]
        assert rows and f"{shapes['device_total_us'][0]:.3f}" in rows[0]


async def test_efficiency_rows_and_figures_at_80x24() -> None:
    frame = loaded(QWEN).efficiency().sort("kernel_us", descending=True)
    app = viewer(QWEN)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("8")
        await pilot.pause(0.5)
        chart = app.screen.query_one(RooflineChart)
        assert not chart.display
        text = screen_text(app)
        assert "chart folded (c shows it)" in text
        lines = table_lines(text)
        header = next(line for line in lines if line.lstrip().startswith("name"))
        for column in ("calls", "kernel_us", "tflops_s", "pct_of_roofline"):
            assert column in header.split(), column
        rows = [line for line in lines if f"{frame['kernel_us'][0]:.3f}" in line]
        assert rows
        assert f"{frame['tflops_s'][0]:.3f}" in rows[0] and f"{frame['pct_of_roofline'][0]:.3f}" in rows[0]
        assert str(frame["calls"][0]) in rows[0].split()
        table = app.screen.query_one("#efficiency-table", FrameView)
        assert table.table is not None and table.table.size.height - 1 >= 8  # rows, not one
        await pilot.press("c")
        await pilot.pause(0.3)
        assert chart.display  # c shows it on a short screen too
    wide = viewer(QWEN)
    async with wide.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, wide)
        await pilot.press("8")
        await pilot.pause(0.5)
        assert wide.screen.query_one(RooflineChart).display  # a tall screen keeps the chart


async def test_graph_node_operator_whole_in_the_details() -> None:
    app = viewer(COMPILED)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        nodes = await open_graph_nodes(pilot, app)
        row = nodes.displayed.row(nodes.table.cursor_row, named=True)
        await pilot.pause(0.3)
        text = screen_text(app)
    details = text.split("─" * 20, 1)[1]
    assert len(row["op"]) > 40  # longer than a figure's item
    assert f"op {row['op']}" in details


@pytest.fixture(scope="module")
def job():  # type: ignore[no-untyped-def]
    from profview.jobs.job import open_job

    opened = open_job(SAMPLES / "param_dlrm_8rank_v100.tar.gz", workers=1, use_cache=False)
    yield opened
    opened.close()


async def test_the_straggler_row_is_on_screen(job) -> None:  # type: ignore[no-untyped-def]
    from profview.tui.job.app import JobApp

    straggler = job.stragglers()[0]
    app = JobApp(job)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        view = app.screen.query_one("#ranks-table", FrameView)
        await wait_until(pilot, lambda: view.table is not None and view.current_name_raw() == f"rank {straggler}")
        await pilot.pause(0.5)
        lines = table_lines(screen_text(app))
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("name"))
    assert any(line.lstrip().startswith(f"rank {straggler} ") for line in lines[header + 1 :])


async def test_a_load_warning_is_in_the_header_line_not_a_toast(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A trace cut short (a killed job) opens with its warning in the header row; no toast covers
    the tab bar or the details."""
    import gzip

    from textual.widgets._toast import Toast

    from profview.tui.app import ProfviewApp
    from profview.tui.widgets.message_line import MessageLine

    raw = gzip.decompress((SAMPLES / GPT2).read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(raw[: int(len(raw) * 0.7)])
    shown: list[str] = []
    original = MessageLine.show

    def show(self, message: str, title: str = "", timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
        shown.append(f"{title}: {message}")
        original(self, message, title, timeout)

    MessageLine.show = show  # type: ignore[method-assign]
    try:
        app = ProfviewApp(str(cut), no_cache=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_loaded(pilot, app, path=False)
            await wait_until(pilot, lambda: any("warning" in n for n in shown))
            warnings = [n for n in app.notices if n.startswith("warning")]
            assert warnings and all(w in shown for w in warnings)
            assert not list(app.screen.query(Toast)) and not app._notifications
    finally:
        MessageLine.show = original  # type: ignore[method-assign]


async def test_overview_lists_operators_whose_work_is_replayed() -> None:
    """The Overview's top operators rank by the GPU time the capture attributes too: ``aten::mm``
    runs only inside the graph replays; its replayed figure equals TraceLens' capture-merged
    ops_summary.csv, summed over the rows of that name (one per module)."""
    import csv

    from profview.frames import fmt_us
    from profview.tui.app import ProfviewApp
    from profview.tui.main.overview import OverviewView

    name = "tracelens_mi300_sglang_qwen3_decode_graph_replay"
    with open(SAMPLES / f"{name}.ops_summary.csv", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["name"] == "aten::mm"]
    tracelens = sum(float(r["total_direct_kernel_time_sum"]) for r in rows)
    app = ProfviewApp(str(SAMPLES / f"{name}.json.gz"), no_cache=True,
                      capture=[str(SAMPLES / "sglang_decode_capture_traces")])
    async with app.run_test(size=(80, 50)) as pilot:
        from profview.tui.main.screen import MainScreen

        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.linked, 180)
        await pilot.pause(0.5)
        overview = app.screen.query_one(OverviewView)
        overview.scroll_end(animate=False)
        await pilot.pause(0.3)
        text = screen_text(app)
    section = text.split("Top operators", 1)[1]
    assert "replayed" in section.splitlines()[1]
    mm = next(line for line in section.splitlines() if line.strip().startswith("aten::mm "))
    assert fmt_us(tracelens) in mm


async def test_a_trace_without_steps_says_whole_trace() -> None:
    """No ProfilerStep in the trace (an XLA-style trace): the context line says ``whole trace``, not
    ``all steps``; a trace with steps keeps ``all steps``."""
    from support import sample

    from profview.tui.app import ProfviewApp

    assert loaded("xla_style_trace.json").step_numbers() == []
    for name, phrase in (("xla_style_trace.json", "whole trace"), (GPT2, "all steps")):
        app = ProfviewApp(str(sample(name)), no_cache=True, profile=loaded(name))
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_loaded(pilot, app, path=False)
            await pilot.pause(0.3)
            context = screen_text(app).splitlines()[1]
        assert context.strip().startswith(phrase), (name, context)
