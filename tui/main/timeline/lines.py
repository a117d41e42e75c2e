"""The Timeline's text under the lanes: the inspector (the selected event's figures, name,
arguments, origin and stack; a ``ProfilerStep#N`` range's relation to step N) and the busy/idle line
of what is on screen (one step, the window, or the whole trace).

A mixin of :class:`~.widget.TraceTimeline`: it reads the widget's profile, lanes and window and
draws nothing itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl
from rich.text import Text

from ....analysis.tables.instance import KernelInstance, OpInstance, kernel_instance, op_instance
from ....analysis.tables.lanes import Lanes, gpu_busy_between
from ....errors import ProfviewError
from ....frames import busy_text, fmt_share, fmt_us, span_text
from ....profiles.iteration_scope import IterationScope
from ....profiles.trace_profile import Profile
from ....report.wording import plural
from ...widgets.text_fit import cap_lines
from .inspector import kernel_lines, op_lines
from .lanes import PATH_GLYPH

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the first screen draws no chart (profview.lazy_numpy)
    from .... import lazy_numpy as np


class TimelineLines:
    """The inspector and the step/window line of a timeline widget."""

    profile: Profile
    lanes: Lanes
    start: float
    end: float
    view_start: float
    view_end: float
    inspecting: bool
    #: The iteration the views are narrowed to ("iteration N only"): the footer speaks of it.
    iteration: IterationScope | None
    on_path: dict[int, np.ndarray]
    _inspected: dict[tuple[int, int], object]

    if TYPE_CHECKING:

        @property
        def size(self) -> Any: ...  # the widget's size (Textual)

        def selected_event(self) -> tuple[int, int] | None: ...

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
            unlaunched = found.launch is None and found.op is None  # a cut replay's node: say which
            replay = self.profile.replay_place(row) if unlaunched else None
            return kernel_lines(found, self.start, width, replay, self.profile.missing.get("launches"))
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
        if self.iteration is not None:
            return self.iteration_line(self.iteration)
        r = self.step_in_view()
        if r is None and (self.view_start > self.start or self.view_end < self.end):
            return self.window_line()  # issue 34: the figures of what is on screen, not the whole trace's
        if r is None:
            try:
                view = self.profile.overview()
            except ProfviewError:
                return ""
            return (
                f"whole trace: GPU busy {fmt_us(view.gpu_busy_us)} of {span_text(view.span_us)} "
                f"({busy_text(view.gpu_busy_pct)})  ·  t/T: one step"
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

    def iteration_line(self, scope: IterationScope) -> str:
        """Under "iteration N only": GPU busy in the window on screen, named as the iteration's window
        (its host start to the end of the GPU work it launched, where the Timeline opens) or placed
        against it once zoomed or panned; any GPU work in the window counts, whoever launched it
        (the Iterations table's ``gpu_busy_pct`` rule)."""
        lo, hi = self.view_start, self.view_end
        busy = gpu_busy_between(self.lanes.lanes, lo, hi)
        share = busy / (hi - lo) * 100 if hi > lo else 0.0
        tolerance = max((scope.window_end - scope.start) * 1e-6, 1e-3)
        window = f"{fmt_us(scope.start - self.start)} … {fmt_us(scope.window_end - self.start)}"
        if abs(lo - scope.start) <= tolerance and abs(hi - max(scope.window_end, scope.start + 1.0)) <= tolerance:
            where = f"iteration {scope.iteration}'s window ({window})"
        else:
            view = f"{fmt_us(lo - self.start)} … {fmt_us(hi - self.start)}"
            where = f"in view ({view}; iteration {scope.iteration}: {window})"
        return f"{where}: GPU busy {fmt_us(busy)} of {fmt_us(hi - lo)} ({fmt_share(share)}), any launcher's work"

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
