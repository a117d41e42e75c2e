"""Issue 40, item 5: every pane under a chosen iteration or step is narrowed to it or says it is not,
``a`` lets go of it from any tab, and the viewer opens narrowed with ``--iteration N``.

The H100 CUDA-graph decode loop (modules and stacks recorded): iteration 5's GPU work counted from
the raw events by correlation (``tests/serving_witness.py``)."""

from __future__ import annotations

import pytest
from pilot import screen_text, wait_loaded, wait_until
from serving_witness import GRAPH, raw_iterations
from support import loaded, sample

from profview.tui.app import ProfviewApp
from profview.tui.main.efficiency import EfficiencyView
from profview.tui.main.graphs import GraphsView
from profview.tui.main.modules import ModulesView


async def test_open_narrowed_to_an_iteration_and_a_lets_go_from_any_tab() -> None:
    raw = raw_iterations(GRAPH, lambda n: n in ("prefill", "decode"))[5]
    app = ProfviewApp(str(sample(GRAPH)), no_cache=True, profile=loaded(GRAPH), iteration=5)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_loaded(pilot, app)
        main = app.screen
        await wait_until(pilot, lambda: main.iteration is not None)
        assert main.iteration is not None and main.iteration.iteration == 5
        modules = main.query_one(ModulesView)
        assert "iteration 5 only" in str(modules.query_one("#modules-caption").render())
        assert modules.modules["self_us"].sum() == pytest.approx(raw["gpu_us"], abs=1e-3 * modules.modules.height)
        efficiency = main.query_one(EfficiencyView)
        assert str(efficiency.caption()).startswith("iteration 5 only · ")
        graphs = main.query_one(GraphsView)
        assert "whole trace (not narrowed)" in str(graphs.caption())
        await pilot.press("6")  # Modules: the context line offers a, and a works here
        await pilot.pause(0.1)
        assert "(a: all)" in screen_text(app)
        await pilot.press("a")
        await wait_until(pilot, lambda: main.iteration is None)
        assert "iteration 5 only" not in str(modules.query_one("#modules-caption").render())
        assert modules.modules["self_us"].sum() > raw["gpu_us"] * 2  # the whole trace again
        assert "not narrowed" not in str(graphs.caption())
        assert not str(efficiency.caption()).startswith("iteration")


def test_viewer_refuses_an_iteration_that_is_not_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    from support import run_cli

    assert run_cli(["open", str(sample(GRAPH)), "--iteration", "decode"]) == 2
    assert "--iteration in the viewer: one trace's iteration number" in capsys.readouterr().err


async def test_memory_under_a_step_says_it_is_the_whole_traces() -> None:
    """The Memory tab is not narrowed to a step: under "step 4 only" its caption says so, and its
    chart is the whole trace's (its highest column is the raw events' peak over all steps)."""
    from support import raw_events
    from witness import raw_peaks

    from profview.tui.main.memory import MemoryChart, MemoryView
    from profview.tui.main.memory_chart import column_levels

    resnet = "resnet50_train_amp.pt.trace.json.gz"
    app = ProfviewApp(str(sample(resnet)), no_cache=True, profile=loaded(resnet), step=4)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        main = app.screen
        await wait_until(pilot, lambda: main.step == 4)
        await pilot.press("5")
        view = main.query_one(MemoryView)
        await wait_until(pilot, lambda: "not narrowed" in str(view.query_one("#memory-caption").render()))
        chart = view.query_one(MemoryChart)
        alloc, _res, _start, _end = column_levels(chart.memory, chart.size.width - 11)
        assert alloc.max() == raw_peaks(raw_events(resnet))["cuda:0"]
        await pilot.press("a")
        await wait_until(pilot, lambda: main.step is None)
        await pilot.pause(0.1)
        assert "not narrowed" not in str(view.query_one("#memory-caption").render())
