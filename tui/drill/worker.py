"""Slow actions on a screen (a drill-down, a rank of a job opened): a progress screen, Esc gives up.

Enter on a row runs the route (tui/drill/routes.py) in a thread worker (the one pattern of
tui/workers.py) that posts :class:`~profview.tui.messages.DrillReady`.  A quick one (most) opens
as before; one still running after :data:`GRACE_S` puts up :class:`DrillProgress` ("computing…",
seconds so far), which takes the keys typed meanwhile, so none is replayed on the table later.
Esc cancels: the screen comes back at once and the result, when the thread ends, is dropped
(each request has a token; only the awaited one's answer is shown).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import LoadingIndicator, Static
from textual.worker import Worker

from ...errors import ProfviewError
from ...sanitize import clean
from ..host import ViewerApp
from ..keymap import bindings
from ..messages import DrillReady
from ..widgets.footer import WholeFooter
from ..workers import Cancelled, detached

GRACE_S = 0.25  # a drill-down done within this opens without the progress screen


class DrillProgress(ModalScreen[None]):
    """'computing <what> … 3.2 s · Esc: cancel' while a drill-down runs."""

    BINDINGS = bindings("drill_progress")
    DEFAULT_CSS = """
    DrillProgress { align: center middle; }
    DrillProgress > Vertical { width: 70%; height: auto; border: round $accent; background: $surface; }
    DrillProgress LoadingIndicator { height: 1; }
    """

    def __init__(self, what: str, cancel: Callable[[], None], doing: str = "computing") -> None:
        super().__init__()
        self.what = what
        self.cancel = cancel
        self.doing = doing
        self.started = time.monotonic()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="drill-progress-text")
            yield LoadingIndicator()
        yield WholeFooter()

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(0.2, self.tick)

    def tick(self) -> None:
        elapsed = time.monotonic() - self.started
        text = Text(f"{self.doing} {clean(self.what)} …", style="bold")
        text.append(f"\n{elapsed:.1f} s · Esc: cancel (keys typed meanwhile are dropped)", style="dim")
        self.query_one("#drill-progress-text", Static).update(text)

    def action_cancel(self) -> None:
        self.cancel()
        self.dismiss(None)


class DrillWorker:
    """The app's side: start a slow action's worker, wait briefly, then show progress; take its answer."""

    awaited: int | None = None  # the token of the request whose answer is awaited (None: none)
    tokens: int = 0

    def next_token(self: ViewerApp) -> int:
        """A new request's token; it is now the awaited one (an older one's answer is dropped)."""
        self.tokens += 1
        self.awaited = self.tokens
        return self.tokens

    async def show_progress_unless_done(
        self: ViewerApp, worker: Worker[Any], token: int, what: str, doing: str = "computing"
    ) -> None:
        """Wait up to :data:`GRACE_S` for ``worker``; still running: the progress screen (Esc cancels).

        This waits inside the message handler on purpose: keys typed meanwhile wait too, and then
        reach the progress screen, never the table below it."""
        deadline = time.monotonic() + GRACE_S
        while not worker.is_finished and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if worker.is_finished or self.awaited != token:
            return

        def cancel() -> None:
            worker.cancel()
            if self.awaited == token:
                self.awaited = None

        self.push_screen(DrillProgress(what, cancel, doing))

    def take_answer(self: ViewerApp, token: int) -> bool:
        """Whether ``token``'s answer is the awaited one; if so its progress screen closes."""
        if token != self.awaited:
            return False
        self.awaited = None
        if isinstance(self.screen, DrillProgress):
            self.pop_screen()
        return True

    async def start_drill(self: ViewerApp, build: Callable[[], Screen[Any] | str], what: str) -> None:
        """Compute a drill-down (``build``: its screen, or why there is none) in a worker."""
        token = self.next_token()
        worker = self.compute_drill(token, build)
        await self.show_progress_unless_done(worker, token, what)

    @work(thread=True, exclusive=True, group="slow", exit_on_error=False)
    def compute_drill(self: ViewerApp, token: int, build: Callable[[], Screen[Any] | str]) -> None:
        """The drill-down's screen (its table computed off the UI thread) or why there is none, posted."""
        outcome: Screen[Any] | str
        try:
            outcome = detached(self.threads, build, "profview-drill")
        except Cancelled:
            return
        except ProfviewError as exc:
            outcome = f"no drill-down: {exc.problem}"
        except Exception as exc:  # a bug: one line, never a silent Enter
            outcome = f"no drill-down: internal error: {type(exc).__name__}: {exc}"
        self.post_message(DrillReady(token, outcome))

    def on_drill_ready(self: ViewerApp, message: DrillReady) -> None:
        """Open the drill-down (replacing the progress screen), or say why there is none."""
        if not self.take_answer(message.token):
            return
        if isinstance(message.outcome, str):
            self.notify(clean(message.outcome), severity="warning")
        else:
            self.push_screen(message.outcome)
