"""The Timeline tab: a caption (the legend and the keys) over the trace timeline, whose lanes are
built off the UI thread when the tab is first shown."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ....analysis.tables.lanes import Lanes
from ....errors import ProfviewError
from ....profiles.trace_profile import Profile
from ....sanitize import clean
from .lanes import LEGEND, STYLES

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from .widget import TraceTimeline


def mounted_timelines(node: DOMNode) -> list[TraceTimeline]:
    """The trace timelines mounted under ``node``. None can be before the widget's module is
    imported (:meth:`TimelinePane.ready` imports it to make the first), so until then this imports
    nothing: the viewer's first screen does not wait for the timeline's modules."""
    widget = sys.modules.get(f"{__package__}.widget")
    return [] if widget is None else list(node.query(widget.TraceTimeline))


class TimelinePane(Vertical):
    """A caption over the trace timeline; the lanes are built off the UI thread by :meth:`start`
    (when the tab is first shown), so opening a trace, even from the cache, never waits for them."""

    DEFAULT_CSS = "#timeline-caption { height: 1; padding: 0 1; } #timeline-wait { padding: 0 1; }"

    def __init__(self, profile: Profile, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.profile = profile
        self.started = False

    def compose(self) -> ComposeResult:
        caption = Text("Timeline ", style="bold")
        for key, (char, colour) in STYLES.items():
            caption.append(char * 2, style=colour)
            caption.append(f" {LEGEND[key]} ")
        caption.append(
            "  / search · n/p event · i inspect · f launch↔kernel · t/T step · c/C critical path · Enter drill",
            style="dim",
        )
        yield Static(caption, id="timeline-caption")
        yield Static(Text("building the lanes…", style="italic"), id="timeline-wait")

    def start(self) -> None:
        """Build the lanes (once) and show them."""
        if not self.started:
            self.started = True
            self.build()

    @work(thread=True, exit_on_error=False)
    def build(self) -> None:
        try:
            lanes = self.profile.timeline_lanes()
            self.profile.gpu_idle()
        except ProfviewError as exc:
            self.app.call_from_thread(self.failed, exc.problem)
            return
        self.app.call_from_thread(self.ready, lanes)  # type: ignore[arg-type]  # Textual's hint: no async

    def failed(self, problem: str) -> None:
        self.query_one("#timeline-wait", Static).update(Text(f"Timeline: not available — {clean(problem)}"))

    async def ready(self, lanes: Lanes) -> None:
        from .widget import TraceTimeline

        timeline = TraceTimeline(self.profile, lanes, id="trace-timeline")
        await self.mount(timeline)
        step = getattr(self.screen, "step", None)  # the step chosen in Steps: the timeline opens on it
        if step is not None:
            timeline.show_step(step)
        iteration = getattr(self.screen, "iteration", None)  # issue 31: the iteration chosen in Iterations
        if iteration is not None:
            timeline.show_iteration(iteration)
        await self.query_one("#timeline-wait").remove()
        if self.display:
            timeline.focus()

    def focus_table(self) -> None:
        found = mounted_timelines(self)
        if found:
            found[0].focus()
        else:
            self.focus()

