"""The Graphs pane (issue 36): the CUDA/HIP graphs the trace replays, a row each, under a caption.

Each row: its nodes, whole replays and replays the window cut, the GPU time they took (and its share
of all GPU time), the share of it attributed to operators through a capture, the capture, and a note
on what is not known and why.  Enter on a graph lists its nodes (tui/drill/routes.py); Enter on a
node shows its captured launch's operator chain and Python stack.  A :class:`FrameView`, so filter,
sort and export work as everywhere.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from ...errors import ProfviewError
from ...profiles.trace_profile import Profile
from ...sanitize import clean
from ..widgets.table_view import FrameView


class GraphsView(Vertical):
    """A caption (the Overview's graph lines) and the graphs table."""

    DEFAULT_CSS = "#graphs-caption { height: auto; max-height: 6; padding: 0 1; }"

    def __init__(self, profile: Profile, *, id: str | None = None, deferred: bool = False) -> None:
        super().__init__(id=id)
        self.deferred = deferred  # issue 32: its table is built when the pane is first shown
        self.profile = profile
        self.frame = profile.graphs()  # computed off the UI thread by lifecycle.prepare (kept on the profile)

    def compose(self) -> ComposeResult:
        caption = Text("; ".join(clean(line) for line in self.profile.graph_lines()), style="bold")
        caption.append("   Enter: the graph's nodes", style="dim")
        yield Static(caption, id="graphs-caption")
        yield FrameView("graphs", self.frame, id="graphs-table", deferred=self.deferred)

    def focus_table(self) -> None:
        self.query_one(FrameView).focus_table()


def graphs_pane(profile: Profile, pane_id: str, deferred: bool = False) -> Widget:
    """The Graphs pane, or the reason this profile has none."""
    try:
        return GraphsView(profile, id=pane_id, deferred=deferred)
    except ProfviewError as exc:
        return Static(Text(f"Graphs: not available — {clean(exc.problem)}", style="italic"), id=pane_id)
