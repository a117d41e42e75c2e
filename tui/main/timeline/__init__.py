"""The Timeline tab: every CPU thread and GPU stream of the trace on one time axis.

``lanes`` draws a lane's cells for a window of time (no widget); ``inspector`` and ``lines`` write
the text under the lanes (the selected event, the busy/idle line of what is on screen);
``widget`` is the timeline itself and its keys; ``pane`` the tab around it, which builds the lanes
off the UI thread.
"""

from .lanes import PATH_GLYPH, draw_lane
from .pane import TimelinePane
from .widget import TraceTimeline

__all__ = ["PATH_GLYPH", "TimelinePane", "TraceTimeline", "draw_lane"]
