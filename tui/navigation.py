"""Moving around a table without filtering it, and taking a name with you.

``y`` copies the full name of the row under the cursor (OSC 52: the terminal's clipboard, so it
works over SSH); ``:`` asks for a row number (jump there) or a regex (search for it); ``n``/``N``
go to the next/previous row matching that search, or the filter bar's text; Backspace goes back
one drill-down.  A mixin of the app, as :mod:`profview.tui.compare.mode` is (its view of the app:
:class:`profview.tui.host.ViewerApp`).
"""

from __future__ import annotations

import polars as pl
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Input, Static

from ..analysis.trace.name_rules import pattern_problem
from ..profiles.views import filter_column
from ..sanitize import clean
from .drill.screen import DrillScreen
from .host import ViewerApp
from .keymap import bindings
from .widgets.table_view import FrameView


def matching_rows(frame: pl.DataFrame, pattern: str) -> list[int]:
    """Row numbers of ``frame`` whose name (the filtered column) matches ``pattern`` (case-insensitive)."""
    column = filter_column(frame)
    if column is None or not frame.height:
        return []
    try:
        hits = frame.select(pl.col(column).str.contains(f"(?i){pattern}").fill_null(False))
    except pl.exceptions.PolarsError:  # a regex Python accepts and Polars' engine does not
        return []
    return hits.with_row_index("row").filter(pl.col(column))["row"].to_list()


def next_match(rows: list[int], current: int, direction: int) -> int | None:
    """The first of ``rows`` after (``direction`` 1) or before (-1) ``current``, wrapping around."""
    if not rows:
        return None
    if direction > 0:
        return next((r for r in rows if r > current), rows[0])
    return next((r for r in reversed(rows) if r < current), rows[-1])


class GotoPrompt(ModalScreen[str | None]):
    """One line at the bottom: a row number jumps there, anything else is a search regex."""

    BINDINGS = bindings("goto")
    DEFAULT_CSS = """
    GotoPrompt { align: center bottom; }
    GotoPrompt > Vertical { height: auto; border: round $accent; background: $surface; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.box = Input(placeholder="row number, or a regex to search (n/N: next/previous)", id="goto-input")

    def compose(self) -> ComposeResult:
        with Vertical():
            yield self.box
            yield Static("", id="goto-note")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        if value and not value.isdigit():
            problem = pattern_problem(value, ignore_case=True)
            if problem is not None:
                self.query_one("#goto-note", Static).update(f"not a valid regex: {clean(problem)} (Esc: cancel)")
                return
        self.dismiss(value or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Navigation:
    """Copy, search, jump and history actions of the viewer (mixed into ProfviewApp)."""

    search_text: str = ""
    keys_held_for: Widget | None = None  # the box that keys typed before it has focus wait for

    def action_copy_name(self: ViewerApp) -> None:
        """y: the full name of the row under the cursor to the terminal's clipboard (OSC 52)."""
        view = self.frame_view()
        name = view.current_name() if view is not None else None
        if not name:
            self.notify("no row under the cursor to copy", severity="warning", timeout=3)
            return
        self.copy_to_clipboard(name)
        shown = name if len(name) <= 60 else name[:59] + "…"
        self.notify(f"copied {shown}", timeout=3)

    def action_goto(self: ViewerApp) -> None:
        """: asks for a row number or a search regex."""
        view = self.frame_view()
        if view is None:
            return

        def chosen(value: str | None) -> None:
            if not value:
                return
            if value.isdigit():
                self.goto_row(view, int(value))
            else:
                self.search_text = value
                self.search_in(view, 1, from_row=-1)

        prompt = GotoPrompt()
        self.push_screen(prompt, chosen)
        self.keys_held_for = prompt.box  # keys typed straight after ":" wait for the box (as after "/")

    def goto_row(self: ViewerApp, view: FrameView, number: int) -> None:
        """Move the cursor to row ``number`` (1 = the first row on screen; past the end: the last)."""
        table = view.table
        if table is None or not view.displayed.height:
            return
        table.move_cursor(row=min(max(number, 1), view.displayed.height) - 1)

    def action_search(self: ViewerApp, direction: int) -> None:
        """n / N: the next / previous row matching the search (or the filter bar's text)."""
        view = self.frame_view()
        if view is not None:
            self.search_in(view, direction)

    def search_in(self: ViewerApp, view: FrameView, direction: int, from_row: int | None = None) -> None:
        pattern = self.search_text or self.filter_text()
        if not pattern:
            self.notify("nothing to search for: press : and type a regex", severity="warning", timeout=4)
            return
        table = view.table
        if table is None:
            return
        current = table.cursor_row if from_row is None else from_row
        rows = matching_rows(view.displayed, pattern)
        target = next_match(rows, current, direction)
        if target is None:
            self.notify(f"no row matches /{clean(pattern)}/", severity="warning", timeout=4)
            return
        table.move_cursor(row=target)
        place = rows.index(target) + 1
        self.notify(f"/{clean(pattern)}/: match {place} of {len(rows)} (row {target + 1})", timeout=2)

    def filter_text(self: ViewerApp) -> str:
        """What the filter bar of the screen holds (typed, kept or not)."""
        from .widgets.filter_bar import FilterBar

        bars = self.screen.query(FilterBar)
        return bars.first().value if bars else ""

    def action_history_back(self: ViewerApp) -> None:
        """Backspace: back one drill-down (the screen below keeps its cursor and filter)."""
        if isinstance(self.screen, DrillScreen):
            self.pop_screen()
