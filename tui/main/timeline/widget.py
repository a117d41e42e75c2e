"""The Timeline widget: CPU thread lanes (operators by depth) and GPU stream lanes on one time axis,
a cursor (cell, lane) that selects the event under it, and its keys.

Drawing asks each lane only for the events inside the visible window (two binary searches per
lane, :meth:`~profview.analysis.tables.lanes.Lane.visible`), so a redraw costs the same on a 3-step and
a 40-step trace.  Keys (``tui/keymap.py``, scope ``trace_timeline``): move, lane, zoom, pan, fit;
``n``/``p`` the next/previous event on the lane; ``f`` follows the flow link between a kernel and
the runtime call that launched it; ``t``/``T`` the next/previous step; ``c``/``C`` mark the
critical path (:data:`~.lanes.PATH_GLYPH`) and jump to its next/previous event; Enter opens the
drill-down.  The text under the lanes is :class:`~.lines.TimelineLines`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from rich.text import Text
from textual import work
from textual.widget import Widget

from ....analysis.tables.lanes import Lanes
from ....analysis.trace.name_rules import pattern_problem
from ....errors import ProfviewError
from ....frames import fmt_us
from ....profiles.iteration_scope import IterationScope
from ....profiles.trace_profile import Profile
from ....report.wording import plural
from ....sanitize import clean
from ...keymap import bindings
from ...messages import DrillRequested
from ...widgets import time_window
from ...widgets.zoom_pan import ZoomPan
from ..overview import compute_path
from .lanes import LABEL, MATCH_STYLE, draw_lane, lane_rows, next_match
from .lines import TimelineLines

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the first screen draws no chart (profview.lazy_numpy)
    from .... import lazy_numpy as np


class TraceTimeline(TimelineLines, ZoomPan, Widget, can_focus=True):
    """The lanes of a whole trace; a cursor (cell, lane) selects the event under it, the inspector
    below the lanes shows that event, ``/`` marks the events whose name matches a regex."""

    BINDINGS = bindings("trace_timeline")
    DEFAULT_CSS = "TraceTimeline { height: 1fr; }"
    MIN_CELL_US = 0.01
    MIN_WIDTH_US = 1.0  # a trace of one instant still has a width
    COUNTED = "events"  # what the filter bar counts

    def __init__(self, profile: Profile, lanes: Lanes, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.profile = profile
        self.lanes = lanes
        self.start, self.end = lanes.span
        self.view_start, self.view_end = time_window.fit(lanes.span, self.MIN_WIDTH_US)
        self.cursor = 0
        self.lane = self.first_gpu_lane()
        self.top = 0
        self.selected: tuple[int, int] | None = None  # (lane, position) of the chosen event
        self.iteration: IterationScope | None = None  # "iteration N only": the footer names it
        self.inspecting = True  # i: the inspector's full lines, or one line
        self.pattern = ""  # "/": events whose name matches are marked; n/N jump between them
        self.matched: np.ndarray | None = None  # per name index: whether it matches
        self._inspected: dict[tuple[int, int], object] = {}
        #: After ``c``: the critical path's events (lane, position), by start, and a mask per lane.
        self.path: list[tuple[int, int]] | None = None
        self.finding_path = False  # the path is being found off the UI thread (``c`` pressed)
        self.on_path: dict[int, np.ndarray] = {}
        #: ``{`` and ``}``: the marked range's start and end (trace µs; None: not marked yet).
        self.range_marks: list[float | None] = [None, None]

    def first_gpu_lane(self) -> int:
        return next((i for i, lane in enumerate(self.lanes.lanes) if lane.kind == "gpu"), 0)

    @property
    def cells(self) -> int:
        return max(self.size.width - LABEL - 1, 10)

    def instant(self) -> float:
        """The trace time at the middle of the cursor's cell."""
        return time_window.instant((self.view_start, self.view_end), self.cells, self.cursor)

    # -- drawing ------------------------------------------------------------------------------
    def render(self) -> Text:
        lanes = self.lanes.lanes
        if not lanes:
            return Text("No events to draw.", style="italic")
        below = self.describe()
        room = max(self.size.height - 1 - len(below.plain.split("\n")), 1)
        # Issue 34: the lanes fill the height: taller lanes where there are few, and the window of
        # lanes never ends before the last one (after the inspector folds, or a search bar closes).
        heights = lane_rows([lane.kind for lane in lanes], room)
        rows = min(len(lanes), room)
        if self.lane < self.top:
            self.top = self.lane
        elif self.lane >= self.top + rows:
            self.top = self.lane - rows + 1
        self.top = max(0, min(self.top, len(lanes) - rows))
        out = Text()
        head = Text(
            f"{'':<{LABEL}} {fmt_us(self.view_start - self.start)} … {fmt_us(self.view_end - self.start)}"
            f"  ({fmt_us(self.cell_span())}/cell)  lanes {self.top + 1}-{min(self.top + rows, len(lanes))}"
            f" of {len(lanes)}",
            style="dim",
        )
        if self.pattern:  # the search first: it must not be the part cut off
            found = Text(f"/{clean(self.pattern)}/ {plural(self.match_count(), 'match', 'matches')} · n N  ")
            found.stylize(MATCH_STYLE, 0, len(self.pattern) + 2)
            head = found + Text(head.plain.lstrip(), style="dim")
        head.truncate(max(self.size.width, 20), overflow="ellipsis")
        out.append_text(head)
        out.append("\n")
        drawn = 0
        for index in range(self.top, min(self.top + rows, len(lanes))):
            lane = lanes[index]
            window = (self.view_start, self.view_end)
            for line in range(heights[index - self.top]):  # a tall lane repeats its cells, without names
                row = draw_lane(
                    lane, self.lanes.names, *window, self.cells, self.matched, self.on_path.get(index), named=line == 0
                )
                if index == self.lane:
                    row.stylize("reverse", self.cursor, self.cursor + 1)
                    if row.plain[self.cursor] == " ":
                        row = row[: self.cursor] + Text("│", style="reverse") + row[self.cursor + 1 :]
                label = clean(lane.label)[:LABEL] if line == 0 else ""
                out.append(f"{label:<{LABEL}} ", style="bold reverse" if index == self.lane else "bold")
                out.append_text(row)
                out.append("\n")
                drawn += 1
        out.append("\n" * max(room - drawn, 0))  # the inspector stays at the bottom
        out.append_text(below)
        return out

    # -- selection ----------------------------------------------------------------------------
    def selected_event(self) -> tuple[int, int] | None:
        if self.selected is not None and self.selected[0] == self.lane:
            return self.selected
        lanes = self.lanes.lanes
        if not lanes:
            return None
        lane = lanes[self.lane]
        lo = self.view_start + self.cursor * self.cell_span()
        window = lane.visible(lo, lo + self.cell_span())
        if window.stop <= window.start:
            return None
        durations = lane.end[window] - lane.start[window]
        return (self.lane, window.start + int(np.argmax(durations)))

    def select(self, lane: int, position: int) -> None:
        """Select an event: its lane becomes current, the view pans (or widens) to show it."""
        self.lane, self.selected = lane, (lane, position)
        events = self.lanes.lanes[lane]
        start, end = float(events.start[position]), float(events.end[position])
        width = self.view_end - self.view_start
        if end - start > width:
            width = min((end - start) * 1.5, self.end - self.start)
        if start < self.view_start or end > self.view_end or width != self.view_end - self.view_start:
            centre = (start + end) / 2
            self.view_start = time_window.clamp_start(centre - width / 2, width, (self.start, self.end))
            self.view_end = self.view_start + width
        self.cursor = int(np.clip((start - self.view_start) / self.cell_span(), 0, self.cells - 1))
        self.refresh()

    def show_step(self, step: int | None) -> None:
        """Show step ``step`` whole (None: the whole trace), as chosen in Steps."""
        self.selected, self.iteration = None, None
        if step is None:
            self.fit_view()
            return
        try:
            steps = self.profile.steps()
        except ProfviewError:
            return
        row = steps.filter(pl.col("step") == step)
        if row.height == 0:
            return
        start = self.profile.span_start + float(row["start_us"][0])
        self.view_start, self.view_end = start, start + max(float(row["duration_us"][0]), 1.0)
        self.cursor = 0
        self.refresh()

    def show_iteration(self, scope: IterationScope | None) -> None:
        """Show an iteration chosen in Iterations whole, its host start to the end of the GPU work it
        launched, and name it under the lanes (None: the whole trace)."""
        self.show_range(None if scope is None else (scope.start, scope.window_end))
        self.iteration = scope

    def show_range(self, window: tuple[float, float] | None) -> None:
        """Show ``(start, end)`` whole, in the trace's µs (None: the whole trace)."""
        self.selected = None
        if window is None:
            self.fit_view()
            return
        self.view_start, self.view_end = window[0], max(window[1], window[0] + 1.0)
        self.cursor = 0
        self.refresh()

    # -- "/" search (the filter bar drives it, as it drives a table) ---------------------------
    def set_filter(self, pattern: str) -> str | None:
        """Mark the events whose name matches ``pattern`` (case-insensitive); the reason if it is no regex."""
        if not pattern:
            self.pattern, self.matched = "", None
            self.refresh()
            return None
        problem = pattern_problem(pattern, ignore_case=True)  # the tables' engine: linear in each name
        if problem is not None:
            return f"not a regex: {problem}"
        self.pattern = pattern
        names = pl.Series("name", self.lanes.names, dtype=pl.String)
        self.matched = names.str.contains(f"(?i){pattern}").fill_null(False).to_numpy()
        self.refresh()
        return None

    def match_count(self) -> int:
        if self.matched is None:
            return 0
        return int(sum(int(self.matched[lane.names].sum()) for lane in self.lanes.lanes))

    def counts(self) -> tuple[int, int]:
        """(events matching the search, all events): the filter bar's count."""
        total = sum(len(lane.start) for lane in self.lanes.lanes)
        return (self.match_count() if self.pattern else total), total

    def focus_table(self) -> None:
        self.focus()

    def action_search(self, direction: int) -> None:
        """n / N with a search: the next / previous matching event in time, on any lane (wrapping)."""
        if self.matched is None:
            if direction > 0:
                self.action_step_event(1)
            else:
                self.notify("N: the previous match of a / search (p: the previous event on the lane)")
            return
        event = self.selected_event()
        if event is not None:
            here = (float(self.lanes.lanes[event[0]].start[event[1]]), event[0])
        else:
            here = (self.instant() - (1e-9 if direction > 0 else -1e-9), -1 if direction > 0 else len(self.lanes.lanes))
        found = next_match(self.lanes.lanes, self.matched, here, direction)
        if found is None:
            self.notify(f"no event matches /{clean(self.pattern)}/", severity="warning")
            return
        self.select(*found)

    # -- keys ---------------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        self.cursor = int(np.clip(self.cursor + delta, 0, self.cells - 1))
        self.selected = None
        self.refresh()

    def action_lane(self, delta: int) -> None:
        self.lane = int(np.clip(self.lane + delta, 0, max(len(self.lanes.lanes) - 1, 0)))
        self.selected = None
        self.refresh()

    def action_edge(self, direction: int) -> None:
        """g / G: the first / last lane."""
        self.action_lane(direction * len(self.lanes.lanes))

    def action_copy(self) -> None:
        """y: the selected event's full name to the terminal's clipboard (OSC 52), made printable."""
        event = self.selected_event()
        if event is None:
            self.notify("no event under the cursor to copy (n/p: the next/previous event)", severity="warning")
            return
        lane = self.lanes.lanes[event[0]]
        name = clean(self.lanes.names[int(lane.names[event[1]])])
        self.app.copy_to_clipboard(name)
        self.notify(f"copied {name if len(name) <= 60 else name[:59] + '…'}", timeout=3)

    def action_fit(self) -> None:
        self.fit_view()

    def action_inspect(self) -> None:
        """i: the inspector's full lines, or one line (more lanes on a small screen)."""
        self.inspecting = not self.inspecting
        self.refresh()

    def action_step_event(self, delta: int) -> None:
        """n / p: the event after / before the selected one on the lane; with none selected, the
        first event starting in or after the cursor's cell / the last starting before it."""
        lane = self.lanes.lanes[self.lane]
        if self.selected is not None and self.selected[0] == self.lane:
            position = self.selected[1] + delta
        else:
            lo = self.view_start + self.cursor * self.cell_span()
            found = int(np.searchsorted(lane.start, lo, side="left"))
            position = found if delta > 0 else found - 1
        if 0 <= position < len(lane.start):
            self.select(self.lane, position)

    def action_follow(self) -> None:
        """f: from a kernel to the runtime call that launched it, and from a launch to its kernel."""
        event = self.selected_event()
        if event is None:
            self.notify("select an event first (n/p, or move the cursor onto one)", severity="warning")
            return
        lane = self.lanes.lanes[event[0]]
        row = int(lane.rows[event[1]])
        gpu = self.profile.model.gpu
        if lane.kind == "gpu":
            launch = gpu["launch_row"][row]
            if launch is None or self.lanes.host_lane[launch] < 0:
                self.notify("no launching call recorded for this GPU event", severity="warning")
                return
            self.select(int(self.lanes.host_lane[launch]), int(self.lanes.host_pos[launch]))
            return
        launched = np.flatnonzero((gpu["launch_row"] == row).fill_null(False).to_numpy())
        if not len(launched):
            self.notify("this event launched no GPU work", severity="warning")
            return
        target = int(launched[np.argmin(gpu["ts"].to_numpy()[launched])])
        self.select(int(self.lanes.gpu_lane[target]), int(self.lanes.gpu_pos[target]))

    def action_critical_path(self, delta: int) -> None:
        """c / C: mark the critical path of every step and select its next / previous event (after
        or before the selected one, else the first starting in or after / before the cursor's cell).
        A path not computed yet is found off the UI thread first (issue 25: no wait on a key)."""
        if self.path is None and not self.profile.has_step_paths():
            if not self.finding_path:
                self.finding_path = True
                self.notify("finding the critical path of every step…", timeout=3)
                self.find_path(delta)
            return
        if self.path is None and not self.mark_path():
            return
        path = self.path or []
        if not path:
            self.notify("the critical path holds no event", severity="warning")
            return
        current = self.selected_event()
        if current in path:
            index = path.index(current) + delta
        else:
            starts = [float(self.lanes.lanes[lane].start[pos]) for lane, pos in path]
            at = self.view_start + self.cursor * self.cell_span()  # the cursor cell's start, as n/p
            index = int(np.searchsorted(starts, at, side="left"))
            index = index if delta > 0 else index - 1
        self.select(*path[int(np.clip(index, 0, len(path) - 1))])

    @work(thread=True, exclusive=True, group="critical-path", exit_on_error=False)
    def find_path(self, delta: int) -> None:
        """The critical path of every step (a worker, as the Overview's); then ``c``/``C`` goes on
        where it was asked (a trace with no path: said when it is marked)."""
        compute_path(self.profile)
        self.app.call_from_thread(self.path_found, delta)

    def path_found(self, delta: int) -> None:
        self.finding_path = False
        self.action_critical_path(delta)

    def mark_path(self) -> bool:
        """Find the events on the critical paths (once) and mark them on their lanes."""
        from ....analysis.critical_path.frames import path_event_rows

        try:
            rows = path_event_rows(self.profile.step_paths())
        except ProfviewError as exc:  # the problem may say "no critical path" itself: not twice
            said = exc.problem if exc.problem.startswith("no critical path") else f"no critical path: {exc.problem}"
            self.notify(clean(said), severity="warning")
            return False
        lanes = self.lanes
        path: list[tuple[int, int]] = []
        for gpu, row in rows.select("gpu", "row").iter_rows():
            lane = int((lanes.gpu_lane if gpu else lanes.host_lane)[row])
            if lane >= 0:
                path.append((lane, int((lanes.gpu_pos if gpu else lanes.host_pos)[row])))
        self.path = path
        for lane, position in path:
            if lane not in self.on_path:
                self.on_path[lane] = np.zeros(len(lanes.lanes[lane].start), dtype=bool)
            self.on_path[lane][position] = True
        self.refresh()
        return True

    def action_next_step(self, delta: int) -> None:
        """t / T: show whole the first step starting after / the last starting before the view's start."""
        try:
            steps = self.profile.steps()
        except ProfviewError:
            return
        origin = self.profile.span_start
        starts = (steps["start_us"] + origin).to_numpy()
        ends = starts + steps["duration_us"].to_numpy()
        tolerance = 1e-3
        if delta > 0:
            later = np.flatnonzero(starts > self.view_start + tolerance)
            index = int(later[0]) if len(later) else len(starts) - 1
        else:
            earlier = np.flatnonzero(starts < self.view_start - tolerance)
            index = int(earlier[-1]) if len(earlier) else 0
        self.view_start, self.view_end = float(starts[index]), float(max(ends[index], starts[index] + 1.0))
        self.selected = None
        self.refresh()

    def action_mark_range(self, edge: int) -> None:
        """``{`` / ``}``: mark a range's start / end at the selected event's start / end, else at
        the cursor's instant; once both are marked (the end after the start), open the range's
        per-name aggregates."""
        event = self.selected_event()
        if event is not None:
            lane = self.lanes.lanes[event[0]]
            at = float((lane.end if edge else lane.start)[event[1]])
        else:
            at = self.instant()
        self.range_marks[edge] = at
        start, end = self.range_marks
        if start is None or end is None:
            said = (
                f"range from {fmt_us(at - self.start)}: }} marks its end"
                if edge == 0
                else (f"range to {fmt_us(at - self.start)}: {{ marks its start")
            )
            self.notify(said)
            return
        if end <= start:
            self.notify(f"a range ends after its start ({fmt_us(start - self.start)})", severity="warning")
            return
        rel = (start - self.start, end - self.start)
        name = f"range {fmt_us(rel[0])} … {fmt_us(rel[1])}"
        self.post_message(DrillRequested("timeline_range", {"name": name, "start_us": rel[0], "end_us": rel[1]}))

    def action_drill(self) -> None:
        """Enter: this one event's drill-down: a GPU event's launch path and Python stack; a host
        call's GPU work (this call's, not every call of its name)."""
        event = self.selected_event()
        if event is None:
            return
        lane = self.lanes.lanes[event[0]]
        row = int(lane.rows[event[1]])
        name = self.lanes.names[int(lane.names[event[1]])]
        at = fmt_us(float(lane.start[event[1]]) - self.start)
        if lane.kind == "gpu":
            self.post_message(DrillRequested("timeline_gpu", {"name": name, "gpu_row": row, "at": at}))
        else:
            self.post_message(DrillRequested("timeline_host", {"name": name, "host_row": row, "at": at}))
