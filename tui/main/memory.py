"""The Memory pane: one device's allocated/reserved chart with its peak, over the table of
operators by bytes (``memory_ops``: sort by ``net_bytes`` or ``retained_bytes`` with s)."""

from __future__ import annotations

import polars as pl
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
from .memory_chart import chart_caption, memory_chart

CHART_ROWS = 8


class MemoryChart(Widget):
    """The chart of the device on show; it redraws to its own width."""

    DEFAULT_CSS = f"MemoryChart {{ height: {CHART_ROWS + 1}; }}"

    def __init__(self, memory: pl.DataFrame, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.memory = memory

    def render(self) -> Text:
        return memory_chart(self.memory, self.size.width, self.size.height)


class MemoryView(Vertical):
    """Chart, caption and the per-operator table; ``d`` shows the next device."""

    BINDINGS = bindings("memory")
    DEFAULT_CSS = "MemoryView { padding: 0 1; } #memory-caption { height: 2; }"

    def __init__(self, profile: Profile, *, id: str | None = None, deferred: bool = False) -> None:
        super().__init__(id=id)
        self.deferred = deferred  # issue 32: its table is built when the pane is first shown
        self.profile = profile
        peaks = profile.memory_peaks()
        # The device with the highest peak first (the GPU, on a training trace).
        self.peaks = peaks.sort("peak_allocated_bytes", descending=True)
        self.device = str(self.peaks["device"][0])
        #: Whether a step or iteration is chosen: the memory views are not narrowed to one, so the
        #: caption says they are the whole trace's.
        self.scoped = False

    def set_scope(self, scoped: bool) -> None:
        """A step or iteration chosen (or not): the caption says the pane shows the whole trace."""
        self.scoped = scoped
        if self.is_mounted:
            self.update_caption()

    def compose(self) -> ComposeResult:
        yield Static(id="memory-caption")
        yield MemoryChart(self.device_events(), id="memory-chart")
        yield FrameView("memory_ops", self.profile.memory_ops(), id="memory-ops", deferred=self.deferred)

    def on_mount(self) -> None:
        self.update_caption()

    def device_events(self) -> pl.DataFrame:
        return self.profile.memory().filter(pl.col("device") == self.device)

    def update_caption(self) -> None:
        peak = self.peaks.filter(pl.col("device") == self.device).row(0, named=True)
        hint = "   d: next device" if self.peaks.height > 1 else ""
        caption = chart_caption(clean(self.device), peak, hint)
        if self.scoped:
            caption = Text.assemble(Text("whole trace (not narrowed to the chosen step) · ", style="bold"), caption)
        self.query_one("#memory-caption", Static).update(caption)

    def action_next_device(self) -> None:
        devices = self.peaks["device"].to_list()
        self.device = devices[(devices.index(self.device) + 1) % len(devices)]
        chart = self.query_one(MemoryChart)
        chart.memory = self.device_events()
        chart.refresh()
        self.update_caption()

    def focus_table(self) -> None:
        self.query_one(FrameView).focus_table()


def memory_pane(profile: Profile, pane_id: str, deferred: bool = False) -> Widget:
    """The Memory pane, or the reason this profile has none."""
    try:
        return MemoryView(profile, id=pane_id, deferred=deferred)
    except ProfviewError as exc:
        return Static(Text(f"Memory: not available — {clean(exc.problem)}", style="italic"), id=pane_id)
