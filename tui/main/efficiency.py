"""The Efficiency pane (issue 24): the roofline chart over the perf-model table.

The table is ``Profile.efficiency()`` (sortable and filterable like every table; Enter opens the
GPU work the operator launched); the chart (:mod:`.roofline`) draws its rows against the device's
two roofs, ``c`` hides or shows it.  A trace without shapes shows the one line that says so.
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
from ..widgets.table_view import FrameView
from .roofline import chart_caption, roofline_chart

#: The table's columns on screen: the figures one reads first before the wide shape columns
#: (the export keeps the view's own order); Kineto's FLOPs only where the trace has them.
SCREEN_ORDER = (
    "name", "input_dims", "calls", "kernel_us", "tflops_s", "pct_of_roofline", "bound", "tb_s", "gflops",
    "data_mb", "flops_per_byte", "peak_tflops", "peak_tb_s", "category", "precision", "kineto_gflops", "input_types",
)  # fmt: skip


def screen_frame(frame):  # type: ignore[no-untyped-def]
    """The efficiency frame in :data:`SCREEN_ORDER` (no Kineto column when it is empty)."""
    columns = [c for c in SCREEN_ORDER if c in frame.columns]
    if "kineto_gflops" in columns and frame["kineto_gflops"].null_count() == frame.height:
        columns.remove("kineto_gflops")
    return frame.select(columns)


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

    def __init__(self, profile: Profile, *, id: str | None = None, step: int | None = None) -> None:
        super().__init__(id=id)
        self.profile = profile
        self.step = step
        self.frame = profile.efficiency(step=step)

    def caption(self) -> Text:
        device, peak = self.profile.device_peak()
        text = chart_caption(self.frame, device, peak.name if peak else None)
        return text if self.step is None else Text.assemble(f"step {self.step} · ", text)

    def compose(self) -> ComposeResult:
        yield Static(self.caption(), id="efficiency-caption")
        yield RooflineChart(self.frame, id="roofline")
        yield FrameView("efficiency", screen_frame(self.frame), id="efficiency-table")

    def set_step(self, step: int | None) -> None:
        """Issue 33: "step N only" narrows the table, the chart and an export to the step's calls."""
        self.step = step
        try:
            self.frame = self.profile.efficiency(step=step)
        except ProfviewError as exc:  # no modelled call in that step
            self.frame = self.frame.clear()
            self.query_one("#efficiency-caption", Static).update(Text(clean(exc.problem), style="italic"))
        else:
            self.query_one("#efficiency-caption", Static).update(self.caption())
        chart = self.query_one(RooflineChart)
        chart.frame = self.frame
        chart.refresh()
        self.query_one(FrameView).set_frame(screen_frame(self.frame))

    def action_toggle_chart(self) -> None:
        chart = self.query_one(RooflineChart)
        chart.display = not chart.display

    def focus_table(self) -> None:
        self.query_one(FrameView).focus_table()


def efficiency_pane(profile: Profile, pane_id: str) -> Widget:
    """The Efficiency pane, or the one line saying why this profile has none."""
    try:
        return EfficiencyView(profile, id=pane_id)
    except ProfviewError as exc:
        return Static(Text(f"Efficiency: not available — {clean(exc.problem)}", style="italic"), id=pane_id)
