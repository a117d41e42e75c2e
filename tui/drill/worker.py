"""Drill-downs computed off the UI thread: a progress screen while they run, Esc gives up.

Enter on a row runs the route (tui/drill_routes.py) in a thread worker.  A quick one (most) opens
as before; one still running after :data:`GRACE_S` puts up :class:`DrillProgress` ("computing…",
seconds so far), which takes the keys typed meanwhile, so none is replayed on the table later.
Esc cancels: the screen comes back at once and the result, when the thread ends, is dropped.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, LoadingIndicator, Static
from textual.worker import Worker, WorkerState

from ...errors import ProfviewError
from ...sanitize import clean
from ..keymap import bindings

GRACE_S = 0.25  # a drill-down done within this opens without the progress screen


class DrillProgress(ModalScreen[None]):
    """'computing <what> … 3.2 s · Esc: cancel' while a drill-down runs."""

    BINDINGS = bindings("drill_progress")
    DEFAULT_CSS = """
    DrillProgress { align: center middle; }
    DrillProgress > Vertical { width: 70%; height: auto; border: round $accent; background: $surface; }
    DrillProgress LoadingIndicator { height: 1; }
    """

    def __init__(self, what: str, worker: Worker[Any]) -> None:
        super().__init__()
        self.what = what
        self.worker = worker
        self.started = time.monotonic()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="drill-progress-text")
            yield LoadingIndicator()
        yield Footer()

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(0.2, self.tick)

    def tick(self) -> None:
        elapsed = time.monotonic() - self.started
        text = Text(f"computing {clean(self.what)} …", style="bold")
        text.append(f"\n{elapsed:.1f} s · Esc: cancel (keys typed meanwhile are dropped)", style="dim")
        self.query_one("#drill-progress-text", Static).update(text)

    def action_cancel(self) -> None:
        self.worker.cancel()
        self.dismiss(None)


class DrillWorker:
    """The app's side: start the worker, wait briefly, then show progress or the result."""

    drill_worker: Worker[Any] | None = None

    async def start_drill(self, route: Any, profile: Any, row: dict[str, Any], path: list[str], what: str) -> None:
        worker = self.compute_drill(route, profile, row, path)
        self.drill_worker = worker
        deadline = time.monotonic() + GRACE_S
        while not worker.is_finished and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if worker.is_finished:
            self.finish_drill(worker)
        else:
            self.push_screen(DrillProgress(what, worker))  # type: ignore[attr-defined]

    @work(thread=True, exclusive=True, group="drill", exit_on_error=False)
    def compute_drill(self, route: Any, profile: Any, row: dict[str, Any], path: list[str]) -> Screen | str:
        """The route's screen (its table computed here, off the UI thread) or why there is none."""
        try:
            return route(profile, row, path)
        except ProfviewError as exc:
            return f"no drill-down: {exc.problem}"

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker is self.drill_worker and event.state == WorkerState.SUCCESS:
            self.finish_drill(worker)

    def finish_drill(self, worker: Worker[Any]) -> None:
        """Open the drill-down (once), replacing the progress screen; a cancelled one is dropped."""
        if worker is not self.drill_worker or worker.is_cancelled:
            return
        self.drill_worker = None
        if isinstance(self.screen, DrillProgress):  # type: ignore[attr-defined]
            self.pop_screen()  # type: ignore[attr-defined]
        result = worker.result
        if isinstance(result, str):
            self.notify(clean(result), severity="warning")  # type: ignore[attr-defined]
        elif isinstance(result, Screen):
            self.push_screen(result)  # type: ignore[attr-defined]
