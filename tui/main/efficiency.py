"""The Efficiency pane: the roofline chart over the perf-model table.

The table is ``Profile.efficiency()`` (sortable and filterable like every table; Enter opens the
GPU work the operator launched); the chart (:mod:`.roofline`) draws its rows against the device's
two roofs, ``c`` hides or shows it.  A trace without shapes shows the one line that says so.
``t``, ``l`` and ``u`` open the Tensor Core table (per GEMM kernel), the launch delays per kernel
and the queue length per stream as drill-downs (they need no shapes).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from ...errors import ProfviewError
from ...profiles.iteration_scope import IterationScope
from ...profiles.trace_profile import Profile
from ...sanitize import clean
from ..keymap import bindings
from ..messages import DrillRequested
from ..widgets.table_view import FrameView
from .roofline import chart_caption, roofline_chart

#: The table's columns on screen: the view's own order (figures first, the model's parameters and
#: the wide shape columns after, so that 80 columns show figures); Kineto's FLOPs, the notes and the
#: GEMM kernels' layout only where the trace has some.
OPTIONAL_COLUMNS = ("kineto_gflops", "note", "kernel_layout")


def screen_frame(frame):  # type: ignore[no-untyped-def]
    """The efficiency frame as shown (no Kineto or note column when it is empty)."""
    columns = [c for c in frame.columns if c not in OPTIONAL_COLUMNS or frame[c].null_count() < frame.height]
    return frame.select(columns)


#: The screen height below which the chart folds (the table's rows first; ``c`` shows it again).
CHART_MIN_HEIGHT = 36


class RooflineChart(Widget):
    """The roofline of the efficiency frame; it redraws to its own size."""

    DEFAULT_CSS = "RooflineChart { height: 45%; min-height: 7; }"

    def __init__(self, frame, *, id: str | None = None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(id=id)
        self.frame = frame

    def render(self) -> Text:
        return roofline_chart(self.frame, self.size.width, self.size.height)


class EfficiencyView(Vertical):
    """Caption, roofline chart and the efficiency table."""

    BINDINGS = bindings("efficiency")
    DEFAULT_CSS = "EfficiencyView { padding: 0 1; } #efficiency-caption { height: 1; }"

    def __init__(
        self,
        profile: Profile,
        *,
        id: str | None = None,
        step: int | IterationScope | None = None,
        deferred: bool = False,
    ) -> None:
        super().__init__(id=id)
        self.deferred = deferred  # issue 32: its table is built when the pane is first shown
        self.profile = profile
        self.step = step
        self.frame = profile.efficiency(step=step)
        self.problem: Text | None = None  # why a chosen step has no row, in place of the caption
        self.chart_chosen: bool | None = None  # c: the user's choice; None: the chart folds on a short screen

    def caption(self) -> Text:
        device, peak = self.profile.device_peak()
        text = chart_caption(self.frame, device, peak.name if peak else None)
        # what share of GPU time the rows size comes first (the caption is one line)
        share = Text(f"{self.profile.efficiency_share_short(self.frame, self.step)} · ", style="dim")
        text = Text.assemble(share, text)
        if self.step is None:
            return text
        which = f"iteration {self.step.iteration}" if isinstance(self.step, IterationScope) else f"step {self.step}"
        return Text.assemble(f"{which} only · ", text)

    def compose(self) -> ComposeResult:
        yield Static(self.caption(), id="efficiency-caption")
        yield RooflineChart(self.frame, id="roofline")
        yield FrameView("efficiency", screen_frame(self.frame), id="efficiency-table", deferred=self.deferred)

    def on_mount(self) -> None:
        self.on_resize()

    def on_resize(self, _event: object = None) -> None:
        """The chart folds where the screen is shorter than :data:`CHART_MIN_HEIGHT` (at 80x24 it
        would leave the table one row), unless ``c`` asked for it; the caption says so first."""
        if self.chart_chosen is not None:
            return
        chart = self.query_one(RooflineChart)
        fold = self.app.size.height < CHART_MIN_HEIGHT
        if chart.display == fold:
            chart.display = not fold
            self.update_caption()

    def update_caption(self) -> None:
        caption = self.problem or self.caption()
        if not self.query_one(RooflineChart).display:
            caption = Text.assemble(Text("chart folded (c shows it) · ", style="dim"), caption.copy())
        self.query_one("#efficiency-caption", Static).update(caption)

    def set_step(self, step: int | IterationScope | None) -> None:
        """A step chosen ("step N only") narrows the table, the chart and an export to the step's
        calls; an iteration chosen ("iteration N only") to the calls that started in its host range."""
        self.step = step
        self.problem = None
        try:
            self.frame = self.profile.efficiency(step=step)
        except ProfviewError as exc:  # no modelled call in that step
            self.frame = self.frame.clear()
            self.problem = Text(clean(exc.problem), style="italic")
        self.update_caption()
        chart = self.query_one(RooflineChart)
        chart.frame = self.frame
        chart.refresh()
        self.query_one(FrameView).set_frame(screen_frame(self.frame))

    def action_toggle_chart(self) -> None:
        chart = self.query_one(RooflineChart)
        chart.display = self.chart_chosen = not chart.display
        self.update_caption()

    def focus_table(self) -> None:
        self.query_one(FrameView).focus_table()

    def action_peer(self, route: str) -> None:
        """``t``, ``l``, ``u``: the Tensor Core, launch-delay or queue-length table, as a drill-down."""
        self.post_message(DrillRequested(route, {"name": route.removesuffix("_all")}))


class EfficiencyUnavailable(Static):
    """The Efficiency pane of a trace the perf model cannot size (no shapes): its reason, and the
    keys of the tables that need no shapes (``t``, ``l``, ``u``) still work."""

    BINDINGS = bindings("efficiency")
    can_focus = True  # focused when its tab is shown (the screen focuses a pane), so that its keys work

    def action_peer(self, route: str) -> None:
        self.post_message(DrillRequested(route, {"name": route.removesuffix("_all")}))

    def action_toggle_chart(self) -> None:
        self.app.notify("no roofline chart: this trace's efficiency table is not available", timeout=3)


def efficiency_pane(profile: Profile, pane_id: str, deferred: bool = False) -> Widget:
    """The Efficiency pane, or the one line saying why this profile has none."""
    try:
        return EfficiencyView(profile, id=pane_id, deferred=deferred)
    except ProfviewError as exc:
        text = Text(f"Efficiency: not available — {clean(exc.problem)}", style="italic")
        text.append("\n t: Tensor Cores per GEMM kernel · l: launch delays · u: queue length per stream", style="dim")
        return EfficiencyUnavailable(text, id=pane_id)
