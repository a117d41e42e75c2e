"""A message area in a screen's header row, for informational notices: one line, or wrapped
over up to four when the notice is longer (its point is often at the end: a path, a remedy).

Textual's toasts are drawn over the bottom-right of the screen, where the table's rows are.
:meth:`profview.tui.app.ProfviewApp.notify` sends an *information* notice here when the screen
has a :class:`MessageLine`; warnings and errors stay toasts (they must not be missed).
"""

from __future__ import annotations

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

from ...sanitize import clean


class MessageLine(Static):
    """Shows one notice at the right of the header row, for a few seconds, wrapped whole (the row
    grows while it shows); hidden when empty."""

    DEFAULT_CSS = """
    MessageLine { height: auto; max-height: 4; width: auto; max-width: 60%; display: none; padding: 0 1;
                  background: $accent 30%; text-style: bold; }
    MessageLine.shown { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""
        self._timer: Timer | None = None

    def show(self, message: str, title: str = "", timeout: float = 5.0) -> None:
        """Show ``title: message`` (one line, cleaned) for ``timeout`` seconds."""
        line = " ".join(clean(f"{title}: {message}" if title else message).split())
        self.text = line
        self.update(Text(line, overflow="fold"))  # wrapped at spaces, a long path folded: never cut
        self.add_class("shown")
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(max(timeout, 1.0), self.clear)

    def clear(self) -> None:
        self.text = ""
        self.update("")
        self.remove_class("shown")


__all__ = ["MessageLine"]
