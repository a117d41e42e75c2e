"""The keymap is data: every binding names a real action, users can remap keys by id, the help
screen lists what the keymap holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pilot import screen_text, wait_loaded
from support import viewer

from profview.tui.app import ProfviewApp
from profview.tui.compare.screen import CompareScreen
from profview.tui.dialogs.export import ExportDialog
from profview.tui.dialogs.help import HelpScreen
from profview.tui.drill.screen import DrillScreen
from profview.tui.drill.worker import DrillProgress
from profview.tui.job.compare import JobCompareScreen
from profview.tui.job.screen import JobScreen
from profview.tui.keymap import KEYMAP, help_lines
from profview.tui.main.efficiency import EfficiencyView
from profview.tui.main.graphs import GraphsView
from profview.tui.main.iterations import IterationsView
from profview.tui.main.memory import MemoryView
from profview.tui.main.modules import ModulesView
from profview.tui.main.screen import MainScreen
from profview.tui.main.step_timeline import Timeline
from profview.tui.main.steps import StepList
from profview.tui.main.timeline import TraceTimeline
from profview.tui.navigation import GotoPrompt
from profview.tui.snapshot.screen import SnapshotScreen
from profview.tui.widgets.filter_bar import FilterBar
from profview.tui.widgets.table_view import FrameView

RESNET = "resnet50_train_amp.pt.trace.json.gz"
SCOPES = {
    "app": ProfviewApp,
    "efficiency": EfficiencyView,  # the perf model and its roofline
    "drill": DrillScreen,
    "steps": StepList,
    "timeline": Timeline,
    "help": HelpScreen,
    "help_search": HelpScreen,
    "export_dialog": ExportDialog,
    "filter_bar": FilterBar,
    "job": JobScreen,
    "compare": CompareScreen,
    "job_compare": JobCompareScreen,  # two jobs compared (tui/job_compare.py)
    "memory": MemoryView,
    "modules": ModulesView,
    "trace_timeline": TraceTimeline,
    "goto": GotoPrompt,
    "drill_progress": DrillProgress,
    "table": FrameView,  # issue 22: hide and move columns
    "iterations": IterationsView,  # serving and decode loops
    "graphs": GraphsView,  # o opens the graph_ops table
    "main": MainScreen,  # a, wherever a step or iteration is chosen
    "snapshot": SnapshotScreen,  # a memory snapshot's tabs
}


@pytest.mark.parametrize("key", KEYMAP, ids=lambda k: k.id)
def test_every_binding_names_an_action_of_its_widget(key) -> None:  # type: ignore[no-untyped-def]
    bound_on = SCOPES[key.scope]
    assert f"profview.{key.id}" in {b.id for b in bound_on.BINDINGS}
    to_app = key.action.startswith("app.")
    target = ProfviewApp if to_app else bound_on
    name = key.action.removeprefix("app.").split("(")[0]
    assert callable(getattr(target, f"action_{name}", None)), f"{key.id}: {target.__name__} has no action {name}"


def test_ids_are_unique_and_help_comes_from_the_keymap() -> None:
    ids = [k.id for k in KEYMAP]
    assert len(ids) == len(set(ids))
    assert [line for line in help_lines() if line[0] == "Ctrl+C"] == [("Ctrl+C", "quit at any time")]


async def test_help_screen_lists_every_help_line() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(160, 140)) as pilot:  # tall enough for every line without scrolling
        await wait_loaded(pilot, app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for keys, _meaning in help_lines():
            assert keys in text


async def test_user_keymap_remaps_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keymap = tmp_path / "keymap.json"
    keymap.write_text(json.dumps({"export": "x", "no such id": "z"}))
    monkeypatch.setenv("PROFVIEW_KEYMAP", str(keymap))
    app = viewer(RESNET)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "e")
        await pilot.pause()
        assert not isinstance(app.screen, ExportDialog)  # "e" no longer exports
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ExportDialog)
