"""The / filter bar: a live regex filter on the table on screen."""

from __future__ import annotations

from textual.timer import Timer
from textual.widgets import Input

from ..keymap import bindings

# Tables with more rows than this are re-filtered when typing pauses, not on every keystroke.
DEBOUNCE_ROWS = 100_000
DEBOUNCE_S = 0.15


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a regex the filter's engine runs (case-insensitive), in one line
    (None: it is one; :mod:`profview.analysis.trace.name_rules`)."""
    from ...analysis.trace.name_rules import pattern_problem

    problem = pattern_problem(pattern, ignore_case=True)
    return None if problem is None else f"not a regex: {problem}"


class FilterBar(Input):
    """Hidden until / is pressed; every keystroke re-filters; Enter keeps, Esc clears."""

    BINDINGS = bindings("filter_bar")
    DEFAULT_CSS = "FilterBar { display: none; }"  # in the flow above the footer (a dock would hide under it)

    def __init__(self) -> None:
        super().__init__(placeholder="filter rows by regex (Enter: keep, Esc: clear)", id="filter-bar")
        self.target = None
        self._pending: Timer | None = None

    def open(self, target) -> None:  # type: ignore[no-untyped-def]
        """Show the bar for a FrameView, starting from its current filter.  Setting that text
        re-filters nothing: the table already shows it (a re-filter rebuilds the table, which would
        take the focus back from the bar, e.g. after Esc cleared a kept filter)."""
        self.target = target
        with self.prevent(Input.Changed):
            self.value = target.pattern
        self.set_class(False, "invalid")  # a kept filter is a valid one
        self.border_title = "filter by regex"
        self.border_subtitle = self.count_text()
        self.display = True
        self.focus()  # takes effect after the keys already queued: the app holds those for the bar

    def count_text(self) -> str:
        """'3 of 78 rows' (a table), '12 of 2,495 events' (the Timeline, which marks instead of hiding)."""
        if self.target is None:
            return ""
        shown, total = self.target.counts()
        noun = getattr(self.target, "COUNTED", "rows")
        return f"{shown:,} of {total:,} {noun}"

    def close(self) -> None:
        self.display = False
        if self.target is not None:
            self.target.focus_table()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.target is None:
            return
        if self._pending is not None:
            self._pending.stop()
            self._pending = None
        if self.target.counts()[1] > DEBOUNCE_ROWS:
            self._pending = self.set_timer(DEBOUNCE_S, self.apply)
        else:
            self.apply()

    def apply(self) -> None:
        """Filter the target table by what is typed; show the match count or why the regex is bad."""
        self._pending = None
        if self.target is None:
            return
        problem = regex_problem(self.value) or self.target.set_filter(self.value)
        self.border_subtitle = problem or self.count_text()
        self.set_class(problem is not None, "invalid")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._pending is not None:
            self._pending.stop()
            self.apply()
        if self.has_class("invalid"):  # never drop what was typed silently: say why, stay open
            self.border_subtitle = f"{regex_problem(self.value) or 'not a filter'} · fix it, or Esc to clear"
            return
        self.close()

    def action_clear_filter(self) -> None:
        if self._pending is not None:
            self._pending.stop()
            self._pending = None
        if self.target is not None:
            self.target.set_filter("")
        self.value = ""
        self.close()
