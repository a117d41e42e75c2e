"""The Timeline tab: every CPU thread and GPU stream of the trace on one time axis.

``lanes`` draws a lane's cells for a window of time (no widget); ``inspector`` and ``lines`` write
the text under the lanes (the selected event, the busy/idle line of what is on screen);
``widget`` is the timeline itself and its keys; ``pane`` the tab around it, which builds the lanes
off the UI thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .lanes import PATH_GLYPH, draw_lane
from .pane import TimelinePane, mounted_timelines

if TYPE_CHECKING:
    from .widget import TraceTimeline


def __getattr__(name: str) -> Any:
    """``TraceTimeline``, its module imported on the first lookup: the viewer's first screen shows
    no timeline, and the widget's modules (its lines, inspector, instances) are not on its path."""
    if name == "TraceTimeline":
        from .widget import TraceTimeline

        return TraceTimeline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["PATH_GLYPH", "TimelinePane", "TraceTimeline", "draw_lane", "mounted_timelines"]
