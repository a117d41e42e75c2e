"""Helpers for driving the viewer with Textual's pilot (wait for a load, read the screen, type)."""

from __future__ import annotations

import io

from rich.console import Console

from profview.tui.app import ProfviewApp
from profview.tui.main.screen import MainScreen


async def wait_loaded(pilot, app: ProfviewApp, path: bool = True) -> None:  # type: ignore[no-untyped-def]
    """The main screen is up (``path``: and the Kernels and Operators tables have their on-path
    column, or know there is none: issue 26's worker, so that what a test reads does not change)."""
    for _ in range(200):
        if isinstance(app.screen, MainScreen):
            break
        await pilot.pause(0.05)
    await pilot.pause()
    assert isinstance(app.screen, MainScreen), "the trace did not load"
    if path:
        await wait_path(pilot, app.screen)


async def wait_path(pilot, screen: MainScreen) -> None:  # type: ignore[no-untyped-def]
    """Until the screen's tables show what is known of the critical path (:meth:`MainScreen.path_settled`)."""
    for _ in range(400):
        if screen.path_settled():
            break
        await pilot.pause(0.05)
    await pilot.pause()
    assert screen.path_settled(), "the critical path never reached the tables"


async def wait_until(pilot, done, seconds: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until ``done()`` holds (or ``seconds`` pass): queued events handled on a
    loaded machine, where a fixed pause may be too short (the caller asserts what it expects)."""
    for _ in range(int(seconds / 0.05)):
        if done():
            return
        await pilot.pause(0.05)


def screen_text(app: ProfviewApp) -> str:
    """Everything on screen as plain text, rendered the way export_screenshot renders it."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def type_text(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    for char in text:
        await pilot.press(char)


async def open_graph_nodes(pilot, app: ProfviewApp):  # type: ignore[no-untyped-def]
    """Tab 9 Graphs, Enter on the first graph: its nodes' drill-down, built and drawn; returns the
    nodes' table view."""
    from profview.tui.drill.screen import DrillScreen
    from profview.tui.widgets.table_view import FrameView

    await pilot.press("9")
    await pilot.pause()
    graphs = app.screen.query_one("#graphs-table", FrameView)
    await wait_until(pilot, lambda: graphs.table is not None)
    graphs.focus_table()
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
    nodes = app.screen.query_one(FrameView)
    await wait_until(pilot, lambda: nodes.table is not None)
    await pilot.pause()
    return nodes
