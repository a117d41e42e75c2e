"""The Graphs tab, driven by Textual's pilot at 80x24 on the SGLang sample and its capture
folder: graphs → nodes → a node's captured operator chain and stack; a replayed kernel drills to
its captured operator; the Overview says how much GPU time the replays took and how much is
attributed, or, without a capture, how to get one.  Figures checked against the raw events
(tests/graph_witness.py)."""

from __future__ import annotations

import polars as pl
import pytest
from graph_witness import captured_launches, launch_attributions, read, replays
from pilot import screen_text, wait_loaded, wait_until
from support import SAMPLES

import profview
from profview.analysis.graphs.attribution import CAPTURED
from profview.tui.app import ProfviewApp
from profview.tui.drill.screen import DrillScreen

REPLAY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
FOLDER = SAMPLES / "sglang_decode_capture_traces"
CAPTURE = FOLDER / "bs_32_rank0.json.gz"


def app_on(capture: bool) -> ProfviewApp:
    profile = profview.load(REPLAY, use_cache=False)
    return ProfviewApp(str(REPLAY), no_cache=True, profile=profile, capture=[str(FOLDER)] if capture else None)


@pytest.mark.asyncio
async def test_graphs_tab_nodes_and_a_nodes_captured_stack() -> None:
    events = read(REPLAY)
    replayed = replays(events)[0]
    capture = read(CAPTURE)
    launches = captured_launches(capture)
    first_op, _module = launch_attributions(capture, launches[:1])[0]
    gpu = sum(e["dur"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    app = app_on(capture=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        share = sum(e["dur"] for e in replayed) / gpu * 100.0
        assert f"{share:.1f}% of GPU time" in screen_text(app)  # the Overview: 98.8%
        assert "attributed to operators: 100.0% through capture_32_DECODE" in screen_text(app)
        await pilot.press("9")
        assert app.screen.pane == "graphs"
        row = app.frame_view().displayed.row(0, named=True)
        assert (row["nodes"], row["replays"], row["attributed_pct"]) == (len(launches), 1, 100.0)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
        assert app.frame_view().displayed.height == len(launches)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen.view == "kernel_launches")
        node = app.frame_view().displayed.row(0, named=True)
        assert node["op"] == first_op
        assert node["op_chain"].startswith(CAPTURED)
        assert "python stack" in screen_text(app)


@pytest.mark.asyncio
async def test_o_in_graphs_opens_the_graph_ops_table_and_e_exports_it(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 40: ``o`` in Graphs opens graph_ops (every GPU µs by operator and module, replays through
    the capture): its replayed time per operator is the raw replay's events paired with the capture's
    launches (graph_witness), and ``e`` exports it."""
    from graph_witness import replayed_by_operator

    by_op: dict[str, float] = {}
    for (op, _module), us in replayed_by_operator(read(REPLAY), read(CAPTURE)).items():
        by_op[op] = by_op.get(op, 0.0) + us
    app = app_on(capture=True)
    monkeypatch.chdir(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("9", "o")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen.view == "graph_ops")
        frame = app.screen.frame
        replayed = frame.group_by("name").agg(pl.col("graph_us").sum())
        ours = {n: us for n, us in replayed.iter_rows() if us > 0}
        assert set(ours) == {op for op, us in by_op.items() if us > 0}
        for op, us in ours.items():
            assert us == pytest.approx(by_op[op], abs=0.01)
        await pilot.press("e")
        await pilot.pause()
        target = tmp_path / "graph_ops.csv"
        app.screen.query_one("#export-path").value = str(target)
        await pilot.press("enter")
        await pilot.pause()
    exported = pl.read_csv(target)
    assert float(exported["graph_us"].sum()) == pytest.approx(sum(by_op.values()), abs=0.1)


@pytest.mark.asyncio
async def test_the_graph_ops_table_shows_its_time_at_80_columns() -> None:
    """At 80x24 the graph_ops table led with the name, the module and the calls, and its time was
    off-screen; now the time and its share follow the name and the module that tell rows apart."""
    app = app_on(capture=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("9", "o")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen.view == "graph_ops")
        await pilot.pause()
        header = next(line for line in screen_text(app).splitlines() if " name " in f" {line} " and "module" in line)
        assert "device_us" in header, header


@pytest.mark.asyncio
async def test_a_replayed_kernel_drills_to_its_captured_operator() -> None:
    events = read(REPLAY)
    capture = read(CAPTURE)
    attributed = launch_attributions(capture, captured_launches(capture))
    top = max(
        {e["name"] for e in replays(events)[0]},
        key=lambda n: sum(e["dur"] for e in replays(events)[0] if e["name"] == n),
    )
    ops = {op for e, (op, _m) in zip(replays(events)[0], attributed, strict=True) if e["name"] == top}
    app = app_on(capture=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        assert app.frame_view().displayed.row(0, named=True)["name"] == top
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
        launchers = app.frame_view().displayed
        assert set(launchers["op"].to_list()) == ops


@pytest.mark.asyncio
async def test_without_a_capture_the_overview_says_how_to_get_one() -> None:
    app = app_on(capture=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        text = " ".join(screen_text(app).split())
        assert "graph replays not attributed to operators: no capture" in text
        assert "--capture PATH" in text
