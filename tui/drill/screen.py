"""Drill-down screens: operator → the GPU work it launched; kernel → what launched it."""

from __future__ import annotations

import polars as pl
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from ...frames import CHAIN_SEPARATOR
from ...profiles.trace_profile import Profile
from ...sanitize import clean
from ..keymap import bindings
from ..widgets.breadcrumb import Breadcrumb
from ..widgets.filter_bar import FilterBar
from ..widgets.footer import WholeFooter
from ..widgets.message_line import MessageLine
from ..widgets.table_view import FrameView


class DrillScreen(Screen[None]):
    """One level of drill-down: a launches table under a breadcrumb; Esc or q goes back."""

    BINDINGS = bindings("drill")

    def __init__(
        self,
        view: str,
        frame: pl.DataFrame,
        path: list[str],
        with_stack: bool = False,
        profile: Profile | None = None,
        table: type[FrameView] = FrameView,
        caption: str | None = None,
    ) -> None:
        """``profile``: the one the rows come from, where Enter on a row drills further (None: both
        sides of a comparison); ``table``: the table widget (compare mode's colours its change glyphs);
        ``caption``: a line above the table saying what an inferred column means (a graph's blocks)."""
        super().__init__()
        self.caption = caption
        self.profile = profile
        self.table_view = table
        self.view = view
        self.frame = frame
        self.shown = frame  # what the table shows: the frame, and for launchers the telling frame
        if view == "kernel_launches" and "python_stack" in frame.columns and "launched_from" not in frame.columns:
            # issue 22: each launcher row names the frame that tells it from the others (or its nn.Module)
            from ...analysis.tables.launches import telling_frames  # NumPy with it: not on the first screen

            telling = telling_frames([str(s or "") for s in frame["python_stack"].to_list()])
            self.shown = frame.with_columns(pl.Series("launched_from", telling, dtype=pl.String))
        self.stack_shown = True
        self.path = path
        self.with_stack = with_stack

    def compose(self) -> ComposeResult:
        with Horizontal(id="crumb-row"):  # the path, fitted to the width, and the notices beside it
            yield Breadcrumb(self.path, id="breadcrumb")
            yield MessageLine()
        if self.caption:
            yield Static(Text(clean(self.caption), style="dim"), id="drill-caption")
        yield self.table_view(self.view, self.shown, id="drill-table")
        if self.view == "kernel_launches":
            with VerticalScroll(id="launch-detail", can_focus=False):
                yield Static(id="launch-text")
        yield FilterBar()
        yield WholeFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("scroll_detail", "toggle_stack"):
            return self.view == "kernel_launches"
        return True

    def action_scroll_detail(self, lines: int) -> None:
        """J/K scroll the operator chain and Python stack below the table."""
        self.query_one("#launch-detail").scroll_relative(y=lines, animate=False)

    def action_toggle_stack(self) -> None:
        """v: hide the operator chain and Python stack pane (more rows), or show it again."""
        self.stack_shown = not self.stack_shown
        self.query_one("#launch-detail").display = self.stack_shown

    def frame_view(self) -> FrameView:
        return self.query_one(FrameView)

    def on_mount(self) -> None:
        self.call_after_refresh(self.frame_view().focus_table)
        self.call_after_refresh(self.update_detail)

    def on_data_table_cell_highlighted(self) -> None:
        self.update_detail()

    def update_detail(self) -> None:
        """The full operator chain and Python stack of the highlighted launch path."""
        if self.view != "kernel_launches":
            return
        row = self.frame_view().current_row()
        detail = Text()
        if row is not None:
            detail.append("operator chain (outermost first): ", style="bold")
            for depth, op in enumerate(str(row["op_chain"] or "").split(CHAIN_SEPARATOR)):
                if depth:
                    detail.append(" › ", style="dim")
                detail.append(clean(op))
            detail.append("\n")
            stack = str(row["python_stack"] or "")
            if stack:
                heading = "python stack (innermost first: the frame nearest the operator leads):\n"
            elif self.with_stack:
                heading = "python stack: none on this thread (e.g. backward ops run on autograd's thread)\n"
            else:
                heading = "python stack: not recorded (the trace was made without with_stack)\n"
            detail.append(heading, style="bold")
            for frame in stack.split(CHAIN_SEPARATOR) if stack else []:
                detail.append(f"  {clean(frame)}\n")
        self.query_one("#launch-text", Static).update(detail)
