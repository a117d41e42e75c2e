"""The / filter bar: a live regex filter on the table on screen."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input


class FilterBar(Input):
    """Hidden until / is pressed; every keystroke re-filters; Enter keeps, Esc clears."""

    BINDINGS = [Binding("escape", "clear_filter", "clear filter", show=False)]
    DEFAULT_CSS = "FilterBar { dock: bottom; display: none; }"

    def __init__(self) -> None:
        super().__init__(placeholder="filter rows by regex (Enter: keep, Esc: clear)", id="filter-bar")
        self.target = None

    def open(self, target) -> None:  # type: ignore[no-untyped-def]
        """Show the bar for a FrameView, starting from its current filter."""
        self.target = target
        self.value = target.pattern
        self.display = True
        self.focus()

    def close(self) -> None:
        self.display = False
        if self.target is not None:
            self.target.focus_table()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.target is None:
            return
        problem = self.target.set_filter(event.value)
        self.border_subtitle = problem or f"{self.target.displayed.height:,} of {self.target.base.height:,} rows"
        self.set_class(problem is not None, "invalid")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.close()

    def action_clear_filter(self) -> None:
        if self.target is not None:
            self.target.set_filter("")
        self.value = ""
        self.close()
