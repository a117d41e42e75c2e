"""App mixin: open something slow (a job, two jobs) on a thread behind the loading screen.

The opener gets a progress callback ``(done, total, elapsed)``; the loading screen shows each
progress line; a ProfviewError (or, for a bug, any exception) ends the app with one line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..errors import ProfviewError
from .dialogs.loading import LoadingScreen


class OpensOnThread:
    """For :class:`~profview.tui.app.ProfviewApp` subclasses (uses ``call_from_thread``, ``exit``)."""

    def open_on_thread(
        self,
        opener: Callable[[Callable[[int, int, float], None]], Any],
        what: str,
        progress_line: Callable[[int, int, float], str],
        opened: Callable[[Any], None],
    ) -> None:
        """Run ``opener`` on a daemon thread (``self.load_thread``); hand its result to ``opened``."""
        app: Any = self

        def run() -> None:
            def progress(done: int, total: int, elapsed: float) -> None:
                app.call_from_thread(self._phase, progress_line(done, total, elapsed))

            try:
                result = opener(progress)
            except ProfviewError as exc:
                app.call_from_thread(self._failed, str(exc))
            except Exception as exc:  # a bug: one line, never a hung loading screen
                app.call_from_thread(self._failed, f"internal error while opening {what}: {type(exc).__name__}: {exc}")
            else:
                app.call_from_thread(opened, result)

        app.load_thread = threading.Thread(target=run, name="profview-open", daemon=True)
        app.load_thread.start()

    def _phase(self, text: str) -> None:
        app: Any = self
        if isinstance(app.screen, LoadingScreen):
            app.screen.phase = text

    def _failed(self, reason: str) -> None:
        app: Any = self
        app.error = reason
        app.exit(return_code=2)
