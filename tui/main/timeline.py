"""The Timeline pane: CPU thread lanes (operators by depth) and GPU stream lanes on one time axis.

Drawing asks each lane only for the events inside the visible window (two binary searches per
lane, :meth:`~profview.analysis.tables.lanes.Lane.visible`), so a redraw costs the same on a 3-step and
a 40-step trace.  Keys (``tui/keymap.py``, scope ``trace_timeline``): move, lane, zoom, pan, fit;
``n``/``p`` the next/previous event on the lane; ``f`` follows the flow link between a kernel and
the runtime call that launched it; ``t``/``T`` the next/previous step; ``c``/``C`` mark the
critical path (:data:`PATH_GLYPH`) and jump to its next/previous event; Enter opens the drill-down.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from ...analysis.tables.instance import KernelInstance, OpInstance, kernel_instance, op_instance
from ...analysis.tables.lanes import Lane, Lanes, gpu_busy_between
from ...analysis.trace.name_rules import pattern_problem
from ...errors import ProfviewError
from ...frames import fmt_us
from ...profiles.trace_profile import Profile
from ...report.wording import plural
from ...sanitize import clean
from ..keymap import bindings
from ..messages import DrillRequested
from ..widgets import time_window
from ..widgets.text_fit import cap_lines
from ..widgets.zoom_pan import ZoomPan
from .inspector import kernel_lines, op_lines
from .overview import compute_path

LABEL = 12
#: (character, colour) per lane kind and event style (see Lane.style).
STYLES = {
    ("cpu", 0): ("█", "#6cb6c4"),
    ("cpu", 1): ("▚", "#57ab5a"),
    ("gpu", 0): ("█", "#4c9be8"),
    ("gpu", 1): ("▓", "#e8a33c"),
    ("gpu", 2): ("▒", "#c97bd6"),
    ("gpu", 3): ("░", "#e5534b"),
}
LABEL_STYLE = "bold #ffffff on #2d4f73"
#: The cells of an event on the critical path, once ``c`` marked it (a glyph: it reads under NO_COLOR).
PATH_GLYPH = "◆"
#: Events matching the "/" search: underlined (it reads under NO_COLOR too) on amber.
MATCH_STYLE = "bold underline #000000 on #ffd75f"
DRAW_ORDER = {"cpu": (0, 1), "gpu": (2, 1, 0, 3)}


def draw_lane(
    lane: Lane,
    names: list[str],
    lo: float,
    hi: float,
    width: int,
    matched: np.ndarray | None = None,
    on_path: np.ndarray | None = None,
    named: bool = True,
) -> Text:
    """One lane's cells for the window [lo, hi): the events' characters, names inside wide ones
    (``named`` False: none, for the further lines of a tall lane);
    ``matched`` (per name index): the cells of matching events are drawn in :data:`MATCH_STYLE`;
    ``on_path`` (a mask over the lane's events): theirs are drawn with :data:`PATH_GLYPH`."""
    span = (hi - lo) / width
    window = lane.visible(lo, hi)
    starts, ends, styles = lane.start[window], lane.end[window], lane.style[window]
    cells = np.full(width, -1, dtype=np.int64)  # the style drawn in each cell (-1: empty)
    first = np.clip(np.floor((starts - lo) / span).astype(np.int64), 0, width - 1) if len(starts) else starts
    last = np.clip(np.ceil((ends - lo) / span).astype(np.int64), 1, width) if len(starts) else ends
    last = np.maximum(last, first + 1) if len(starts) else last
    for style in DRAW_ORDER[lane.kind]:  # later styles win a shared cell: kernels over memsets
        pick = styles == style
        if not pick.any():
            continue
        marks = np.zeros(width + 1, dtype=np.int64)
        np.add.at(marks, first[pick], 1)
        np.add.at(marks, last[pick], -1)
        cells[np.cumsum(marks)[:width] > 0] = style
    chars = [" "] * width
    colours = [""] * width
    for style in np.unique(cells[cells >= 0]).tolist():
        char, colour = STYLES[(lane.kind, style)]
        for i in np.flatnonzero(cells == style).tolist():
            chars[i], colours[i] = char, colour
    if on_path is not None and len(starts):
        marked = on_path[window]
        for a, b in zip(first[marked].tolist(), last[marked].tolist(), strict=True):
            for i in range(a, b):
                chars[i] = PATH_GLYPH
    if matched is not None and len(starts):
        hit = matched[lane.names[window]]
        if hit.any():
            marks = np.zeros(width + 1, dtype=np.int64)
            np.add.at(marks, first[hit], 1)
            np.add.at(marks, last[hit], -1)
            for i in np.flatnonzero(np.cumsum(marks)[:width] > 0).tolist():
                colours[i] = MATCH_STYLE
                if chars[i] == " ":
                    chars[i] = "█"
    wide = np.flatnonzero(last - first >= 8) if named else np.array([], dtype=np.int64)  # room for a name
    for k in wide[:width].tolist():
        name = clean(names[int(lane.names[window][k])])
        room = int(last[k] - first[k]) - 1
        for offset, ch in enumerate(name[:room]):
            cell = first[k] + offset
            chars[cell] = ch
            colours[cell] = MATCH_STYLE if colours[cell] == MATCH_STYLE else LABEL_STYLE
    out = Text()
    run_start = 0
    for i in range(1, width + 1):
        if i == width or colours[i] != colours[run_start]:
            out.append("".join(chars[run_start:i]), style=colours[run_start])
            run_start = i
    return out


#: The most screen lines one lane takes when there is room to spare (issue 34: lanes fill the height).
MAX_LANE_ROWS = 3


def lane_rows(kinds: list[str], room: int) -> list[int]:
    """Screen lines of each lane (``kinds``: ``cpu``/``gpu``, in order) in ``room`` lines: one each
    while the lanes outnumber the lines, else the lines shared out, the odd ones to the GPU lanes
    first, at most :data:`MAX_LANE_ROWS` each."""
    lanes = len(kinds)
    if lanes == 0 or lanes >= room:
        return [1] * min(lanes, max(room, 1))
    each, odd = divmod(room, lanes)
    order = sorted(range(lanes), key=lambda i: (kinds[i] != "gpu", i))
    extra = set(order[:odd])
    return [min(MAX_LANE_ROWS, each + (index in extra)) for index in range(lanes)]


class TraceTimeline(ZoomPan, Widget, can_focus=True):
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
        self.inspecting = True  # i: the inspector's full lines, or one line
        self.pattern = ""  # "/": events whose name matches are marked; n/N jump between them
        self.matched: np.ndarray | None = None  # per name index: whether it matches
        self._inspected: dict[tuple[int, int], object] = {}
        #: After ``c``: the critical path's events (lane, position), by start, and a mask per lane.
        self.path: list[tuple[int, int]] | None = None
        self.finding_path = False  # the path is being found off the UI thread (``c`` pressed)
        self.on_path: dict[int, np.ndarray] = {}

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

    def describe(self) -> Text:
        """The inspector: the selected event (figures first, then its name, arguments, origin and
        Python stack; ``i`` folds it to one line), then the busy/idle line of the step in view."""
        width = max(self.size.width - 1, 20)
        event = self.selected_event()
        lines: list[Text]
        if event is None:
            lines = [Text("(nothing under the cursor: n/p the next/previous event on the lane)", style="dim")]
        else:
            lines = self.inspect(*event, width)
            if event[0] in self.on_path and self.on_path[event[0]][event[1]]:
                lines[0] = lines[0] + Text(f"  {PATH_GLYPH} on the critical path", style="bold")
            if not self.inspecting:
                lines = [lines[0] + Text("  · i: inspect", style="dim")]
        lines += cap_lines(Text(self.step_line(), style="dim"), width, 2)
        out = Text()
        for number, line in enumerate(lines):
            if number:
                out.append("\n")
            line.truncate(width, overflow="ellipsis")  # one screen line each: the lanes get the rest
            out.append_text(line)
        return out

    def inspect(self, lane_index: int, position: int, width: int) -> list[Text]:
        """The inspector's lines for one event (its instance read once and kept)."""
        lane = self.lanes.lanes[lane_index]
        row = int(lane.rows[position])
        key = (0 if lane.kind == "gpu" else 1, row)
        found = self._inspected.get(key)
        model = self.profile.model
        if found is None:
            found = kernel_instance(model, row) if lane.kind == "gpu" else op_instance(model, row)
            self._inspected[key] = found
        if isinstance(found, KernelInstance):
            return kernel_lines(found, self.start, width)
        assert isinstance(found, OpInstance)
        lines = op_lines(found, self.start, width)
        note = self.step_note(found.call.name, found.call.dur)
        return [lines[0], note, *lines[1:]] if note is not None else lines

    def step_note(self, name: str, host_us: float) -> Text | None:
        """Issue 34: a ``ProfilerStep#N`` range says how it relates to step N of Steps (its host range
        is not the step's duration: :func:`profview.analysis.trace.model.step_windows`)."""
        if not name.startswith("ProfilerStep#") or not name.removeprefix("ProfilerStep#").isdigit():
            return None
        try:
            row = self.profile.steps().filter(pl.col("step") == int(name.removeprefix("ProfilerStep#")))
        except ProfviewError:
            return None
        if row.height == 0:
            return None
        duration = float(row["duration_us"][0])
        return Text(
            f"Steps: step {row['step'][0]} is {fmt_us(duration)}, this range {fmt_us(host_us)}: a step ends with its "
            "range or the GPU work launched in it (the later), and starts no earlier than the previous step ends",
            style="dim",
        )

    def step_in_view(self) -> dict | None:
        """The step whose window holds the window on screen (None: the view spans several, or none)."""
        try:
            idle = self.profile.gpu_idle()
        except ProfviewError:
            return None
        origin = self.profile.span_start
        lo, hi = self.view_start - origin, self.view_end - origin
        tolerance = max((hi - lo) * 1e-6, 1e-3)
        inside = idle.filter(
            (pl.col("start_us") <= lo + tolerance) & (pl.col("start_us") + pl.col("duration_us") >= hi - tolerance)
        )
        if inside.height == 0:
            return None
        return inside.row(0, named=True)

    def step_line(self) -> str:
        """GPU busy and idle (by cause) of the step in view; of the whole trace when the view spans more."""
        r = self.step_in_view()
        if r is None and (self.view_start > self.start or self.view_end < self.end):
            return self.window_line()  # issue 34: the figures of what is on screen, not the whole trace's
        if r is None:
            try:
                view = self.profile.overview()
            except ProfviewError:
                return ""
            return (
                f"whole trace: GPU busy {fmt_us(view.gpu_busy_us)} of {fmt_us(view.span_us)} "
                f"({view.gpu_busy_pct:.1f}%)  ·  t/T: one step"
            )
        causes = ", ".join(
            f"{c} {fmt_us(r[f'idle_{c}_us'])}" for c in ("host", "sync", "data", "other") if r[f"idle_{c}_us"]
        )
        comm = (
            f"comm {fmt_us(r['comm_us'])}, {r['overlap_pct']:.0f}% overlapped with compute"
            if r["overlap_pct"] is not None
            else "no communication"
        )
        where = "the whole trace" if r["step"] is None or r["step"] < 0 else f"step {r['step']}"
        return (
            f"{where}: GPU busy {fmt_us(r['gpu_busy_us'])} of {fmt_us(r['duration_us'])}; idle "
            f"{fmt_us(r['idle_us'])} in {plural(r['gaps'], 'gap')} ({causes}); {comm}"
        )

    def window_line(self) -> str:
        """GPU busy in the window on screen, and the steps it overlaps (it holds no one step whole)."""
        lo, hi = self.view_start, self.view_end
        busy = gpu_busy_between(self.lanes.lanes, lo, hi)
        where = f"{fmt_us(lo - self.start)} … {fmt_us(hi - self.start)}"
        try:
            steps = self.profile.steps()
        except ProfviewError:
            steps = None
        if steps is not None and steps.height and (steps["step"] >= 0).any():
            origin = self.profile.span_start
            starts = steps["start_us"] + origin
            inside = steps.filter((starts < hi) & (starts + steps["duration_us"] > lo))["step"].to_list()
            if inside:
                where += f", step {inside[0]}" if len(inside) == 1 else f", steps {inside[0]}–{inside[-1]}"
            else:
                where += ", between steps"
        share = busy / (hi - lo) * 100 if hi > lo else 0.0
        return f"in view ({where}): GPU busy {fmt_us(busy)} of {fmt_us(hi - lo)} ({share:.1f}%)  ·  t/T: one step"

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
        self.selected = None
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

    def show_range(self, window: tuple[float, float] | None) -> None:
        """Issue 31: show ``(start, end)`` whole (an iteration chosen in Iterations; None: the whole trace)."""
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
        from ...analysis.critical_path.frames import path_event_rows

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


def next_match(
    lanes: list[Lane], matched: np.ndarray, here: tuple[float, int], direction: int
) -> tuple[int, int] | None:
    """The matching event after (``direction`` 1) or before (-1) ``here`` = (start, lane), ordered by
    (start, lane); wrapping around the trace.  Returns (lane, position) or None."""
    best: tuple[float, int, int] | None = None
    wrap: tuple[float, int, int] | None = None
    for index, lane in enumerate(lanes):
        hits = np.flatnonzero(matched[lane.names])
        if not len(hits):
            continue
        starts = lane.start[hits]
        if direction > 0:
            after = (starts > here[0]) | ((starts == here[0]) & (index > here[1]))
            pick = np.flatnonzero(after)
            candidate = (float(starts[pick[0]]), index, int(hits[pick[0]])) if len(pick) else None
            first = (float(starts[0]), index, int(hits[0]))
            if candidate is not None and (best is None or candidate[:2] < best[:2]):
                best = candidate
            if wrap is None or first[:2] < wrap[:2]:
                wrap = first
        else:
            before = (starts < here[0]) | ((starts == here[0]) & (index < here[1]))
            pick = np.flatnonzero(before)
            candidate = (float(starts[pick[-1]]), index, int(hits[pick[-1]])) if len(pick) else None
            last = (float(starts[-1]), index, int(hits[-1]))
            if candidate is not None and (best is None or candidate[:2] > best[:2]):
                best = candidate
            if wrap is None or last[:2] > wrap[:2]:
                wrap = last
    chosen = best or wrap
    return None if chosen is None else (chosen[1], chosen[2])


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
        timeline = TraceTimeline(self.profile, lanes, id="trace-timeline")
        await self.mount(timeline)
        step = getattr(self.screen, "step", None)  # the step chosen in Steps: the timeline opens on it
        if step is not None:
            timeline.show_step(step)
        iteration = getattr(self.screen, "iteration", None)  # issue 31: the iteration chosen in Iterations
        if iteration is not None:
            timeline.show_range((iteration.start, iteration.window_end))
        await self.query_one("#timeline-wait").remove()
        if self.display:
            timeline.focus()

    def focus_table(self) -> None:
        found = self.query(TraceTimeline)
        if found:
            found.first().focus()
        else:
            self.focus()


LEGEND = {
    ("cpu", 0): "op",
    ("cpu", 1): "runtime",
    ("gpu", 0): "kernel",
    ("gpu", 1): "memcpy",
    ("gpu", 2): "memset",
    ("gpu", 3): "comm",
}
