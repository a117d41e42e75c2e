"""The tabbed layout both compare screens share (two profiles: tui/compare_screen.py; two jobs:
tui/job_compare.py): a BEFORE / AFTER header, a numbered tab line, one pane a tab in a
ContentSwitcher, the filter bar and the footer; ``1`` ``2`` … and Tab switch tabs and focus the
table of the tab shown."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Static

from ...diff.comparison import SIDES
from ...sanitize import clean
from ..widgets.filter_bar import FilterBar
from ..widgets.footer import WholeFooter
from ..widgets.message_line import MessageLine
from ..widgets.table_view import FrameView


class CompareTabs(Screen[None]):
    """A compare screen's tabs; a subclass names them and yields a widget (id: the tab) for each."""

    #: The tabs in order (their keys 1, 2, …) and their titles.
    TABS: ClassVar[tuple[str, ...]] = ()
    TAB_TITLES: ClassVar[dict[str, str]] = {}

    def __init__(self, comparison: Any, pane: str) -> None:
        super().__init__()
        self.comparison = comparison  # header(side) and settings_line(), as Comparison and JobComparison
        self.pane = pane

    def panes(self) -> Iterable[Widget]:
        """One widget per tab, its id the tab's name."""
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        yield Static(self.header_text(), id="compare-header")
        with Horizontal(id="context-row"):  # issue 34: notices beside the tabs, not toasts over the rows
            yield Static(id="tabs")
            yield MessageLine()
        yield Static(id="compare-notes")
        with ContentSwitcher(initial=self.pane, id="panes"):
            yield from self.panes()
        yield FilterBar()
        yield WholeFooter()

    def header_text(self) -> Text:
        """BEFORE and AFTER (what each is), and how they are compared."""
        text = Text(no_wrap=True, overflow="ellipsis")  # one line each, whatever the width
        for which in SIDES:
            line = clean(self.comparison.header(which, file_name=True))
            text.append(line + "\n", style="bold" if which == "after" else "")
        text.append(self.comparison.settings_line(), style="dim")
        return text

    def notes(self, pane: str) -> list[str]:
        """What explains surprising figures on tab ``pane`` (a subclass says; none by default)."""
        return []

    def update_notes(self) -> None:
        notes = self.notes(self.pane)
        box = self.query_one("#compare-notes", Static)
        box.display = bool(notes)
        box.update(Text("\n".join(f"note: {clean(n)}" for n in notes), style="italic"))

    def on_mount(self) -> None:
        self.update_tabs()
        self.call_after_refresh(self.show, self.pane)

    def tab_line(self) -> Text:
        """The numbered tabs, the one shown highlighted; a subclass may append hints."""
        tabs = Text()
        for index, pane in enumerate(self.TABS, 1):
            tabs.append(f" {index} {self.TAB_TITLES[pane]} ", style="bold reverse" if pane == self.pane else "")
            tabs.append(" ")
        return tabs

    def update_tabs(self) -> None:
        self.query_one("#tabs", Static).update(self.tab_line())
        self.update_notes()

    def action_show(self, pane: str) -> None:
        self.show(pane)

    def show(self, pane: str) -> None:
        """Switch to a tab and focus its table (a tab without one, a reason: nothing to focus)."""
        self.pane = pane
        self.query_one(ContentSwitcher).current = pane
        self.update_tabs()
        view = self.active_frame_view()
        if view is not None:
            view.focus_table()

    def cycle(self) -> None:
        """The next tab (after the last, the first)."""
        self.show(self.TABS[(self.TABS.index(self.pane) + 1) % len(self.TABS)])

    def action_next_tab(self) -> None:
        self.cycle()

    def active_frame_view(self) -> FrameView | None:
        widget = self.query_one(f"#{self.pane}")
        return widget if isinstance(widget, FrameView) else None


__all__ = ["CompareTabs"]
