"""The Graphs pane: the CUDA/HIP graphs the trace replays, a row each, under a caption.

Each row: its nodes, whole replays and replays the window cut, the GPU time they took (and its share
of all GPU time), the share of it attributed to operators through a capture, the capture, and a note
on what is not known and why.  Enter on a graph lists its nodes (tui/drill/routes.py); Enter on a
node shows its captured launch's operator chain and Python stack; ``o`` opens the graph_ops table
(every GPU µs by operator and module, replays through their capture).  A :class:`FrameView`, so
filter, sort and export work as everywhere.
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
from ..keymap import bindings
from ..messages import DrillRequested
from ..widgets.table_view import FrameView


class GraphsView(Vertical):
    """A caption (the Overview's graph lines) and the graphs table."""

    BINDINGS = bindings("graphs")
    DEFAULT_CSS = "#graphs-caption { height: auto; max-height: 6; padding: 0 1; }"

    def __init__(self, profile: Profile, *, id: str | None = None, deferred: bool = False) -> None:
        super().__init__(id=id)
        self.deferred = deferred  # issue 32: its table is built when the pane is first shown
        self.profile = profile
        self.frame = profile.graphs()  # computed off the UI thread by lifecycle.prepare (kept on the profile)
        self.narrowed = False

    def compose(self) -> ComposeResult:
        yield Static(self.caption(), id="graphs-caption")
        yield FrameView("graphs", self.frame, id="graphs-table", deferred=self.deferred)

    def caption(self) -> Text:
        """The Overview's graph lines; under a chosen step or iteration, that the graphs are the
        whole trace's (a graph's replays are not split by step)."""
        caption = Text("; ".join(clean(line) for line in self.profile.graph_lines()), style="bold")
        if self.narrowed:
            caption.append(" · whole trace (not narrowed)", style="bold")
        caption.append("   Enter: the graph's nodes · o: operators through the capture", style="dim")
        return caption

    def set_scope(self, narrowed: bool) -> None:
        """Say (or stop saying) that the pane is not narrowed to the chosen step or iteration."""
        self.narrowed = narrowed
        self.query_one("#graphs-caption", Static).update(self.caption())

    def focus_table(self) -> None:
        self.query_one(FrameView).focus_table()

    def action_graph_ops(self) -> None:
        """Issue 40: the graph_ops table, as a drill-down (a worker computes it; e exports it)."""
        self.post_message(DrillRequested("graph_ops_all", {"name": "graph_ops"}))


def graphs_pane(profile: Profile, pane_id: str, deferred: bool = False) -> Widget:
    """The Graphs pane, or the reason this profile has none."""
    try:
        return GraphsView(profile, id=pane_id, deferred=deferred)
    except ProfviewError as exc:
        return Static(Text(f"Graphs: not available — {clean(exc.problem)}", style="italic"), id=pane_id)
