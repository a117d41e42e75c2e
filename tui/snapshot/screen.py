"""The snapshot screen: tabs for the summary, the sites live at the snapshot, what was live at the
peak, the timeline of active memory per device, the OOM events, and the segments.

Enter on a site opens its blocks; Enter on a block, a row of the peak or an OOM opens its whole
stack.  The header line says reserved, allocated and each device's peak.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Static

from ...frames import fmt_bytes
from ...profiles.snapshot_profile import SnapshotProfile
from ...report.snapshot_summary import summary_lines
from ...sanitize import clean
from ..keymap import bindings
from ..widgets.filter_bar import FilterBar
from ..widgets.footer import WholeFooter
from ..widgets.message_line import MessageLine
from ..widgets.table_view import FrameView
from .chart import chart_lines

SNAPSHOT_TABS = ("summary", "sites", "peak", "timeline", "ooms", "segments")
SNAPSHOT_TITLES = {
    "summary": "Summary", "sites": "Sites", "peak": "Peak", "timeline": "Timeline", "ooms": "OOMs",
    "segments": "Segments",
}
#: The table tabs and the view each shows (its FrameView's name: what Enter and exports see).
TABLE_TABS = {"sites": "snapshot_sites", "peak": "snapshot_peak", "ooms": "snapshot_ooms",
              "segments": "snapshot_segments"}


def site_first(frame: pl.DataFrame) -> pl.DataFrame:
    """A view with its ``site`` first (the column ``/`` filters and the details line names)."""
    if "site" not in frame.columns:
        return frame
    return frame.select("site", pl.exclude("site"))



def _peak_text(peak: int | None) -> str:
    """A device's peak, or why there is none (no event recorded: only the end state is known)."""
    return "unknown (no event recorded)" if peak is None else fmt_bytes(peak)

class SnapshotScreen(Screen[None]):
    """A memory snapshot's views, by keyboard (1-6 or Tab: the tabs)."""

    BINDINGS = bindings("snapshot")
    DEFAULT_CSS = """
    #snapshot-line { height: 1; }
    #summary-text, #timeline-text { height: auto; }
    """

    def __init__(self, profile: SnapshotProfile) -> None:
        super().__init__()
        self.profile = profile
        self.tab = "summary"

    def compose(self) -> ComposeResult:
        with Horizontal(id="context-row"):  # notices at the right of the tabs, not toasts over the rows
            yield Static(id="tabs")
            yield MessageLine()
        yield Static(id="snapshot-line")
        with ContentSwitcher(initial="summary", id="panes"):
            with VerticalScroll(id="summary"):
                yield Static(id="summary-text")
            yield FrameView(TABLE_TABS["sites"], site_first(self.profile.view("sites")), id="sites")
            yield FrameView(
                TABLE_TABS["peak"], site_first(self.profile.view("peak")), id="peak", empty_note=self._no_peak()
            )
            with VerticalScroll(id="timeline"):
                yield Static(id="timeline-text")
            yield FrameView(
                TABLE_TABS["ooms"], site_first(self.profile.view("ooms")), id="ooms",
                empty_note="no OOM event in the recorded events",
            )
            yield FrameView(TABLE_TABS["segments"], self.profile.view("segments"), id="segments")
        yield FilterBar()
        yield WholeFooter()

    def on_mount(self) -> None:
        self.update_header()
        self.query_one("#summary-text", Static).update(Text("\n".join(self._summary_lines())))
        self.query_one("#timeline-text", Static).update(Text("\n".join(self._timeline_lines())))

    def on_resize(self) -> None:
        self.update_header()
        self.query_one("#summary-text", Static).update(Text("\n".join(self._summary_lines())))
        self.query_one("#timeline-text", Static).update(Text("\n".join(self._timeline_lines())))

    def _no_peak(self) -> str | None:
        """Why the peak view is empty: no device recorded an event, so none has a peak."""
        devices = self.profile.summary(0)["devices"]
        if devices and all(d["peak_active_bytes"] is None for d in devices):
            return "no peak: no allocator event was recorded (only the end state is known)"
        return None

    def _width(self) -> int:
        return self.app.size.width if self.is_attached else 80

    def _summary_lines(self) -> list[str]:
        return summary_lines(self.profile, top=5, width=max(self._width() - 2, 40))  # the pane's scroll bar

    def _timeline_lines(self) -> list[str]:
        profile = self.profile
        timeline = profile.view("timeline")
        annotations = profile.view("annotations")
        lines: list[str] = []
        for device in profile.summary(0)["devices"]:
            lines.append(
                f"device {device['device']}: active memory (requested bytes) over its {device['events']:,} "
                f"recorded events; peak {_peak_text(device['peak_active_bytes'])}"
            )
            lines.extend(chart_lines(timeline, annotations, device["device"], self._width() - 2))
            lines.append("")
        ooms = profile.summary(0)["oom_events"]
        lines.append(f"OOM events: {len(ooms)}" if ooms else "OOM events: none recorded")
        for oom in ooms:
            lines.append(
                f"  OOM {oom['oom']}: device {oom['device']} asked {fmt_bytes(oom['requested_bytes'])}, "
                f"{fmt_bytes(oom['device_free_bytes'])} free, {fmt_bytes(oom['active_bytes'])} active "
                f"(event {oom['index']:,})"
            )
        return [clean(line) for line in lines]

    def update_header(self) -> None:
        tabs = Text(no_wrap=True, overflow="ellipsis")
        for index, tab in enumerate(SNAPSHOT_TABS, 1):
            style = "reverse bold" if tab == self.tab else ""
            tabs.append(f" {index} {SNAPSHOT_TITLES[tab]} ", style=style)
        tabs.append(f"  {clean(Path(self.profile.path).name)}", style="dim")
        self.query_one("#tabs", Static).update(tabs)
        figures = self.profile.summary(0)
        peaks = ", ".join(f"dev {d['device']} peak {_peak_text(d['peak_active_bytes'])}" for d in figures["devices"])
        line = (
            f"reserved {fmt_bytes(figures['reserved_bytes'])} · allocated {fmt_bytes(figures['allocated_bytes'])} · "
            f"{peaks} · {figures['ooms']} OOM"
        )
        self.query_one("#snapshot-line", Static).update(Text(clean(line), no_wrap=True, overflow="ellipsis"))

    def frame_view(self) -> FrameView | None:
        """The table on screen (None on the summary and timeline tabs)."""
        return self.query_one(f"#{self.tab}", FrameView) if self.tab in TABLE_TABS else None

    def action_tab(self, tab: str) -> None:
        self.tab = tab
        self.query_one(ContentSwitcher).current = tab
        self.update_header()
        view = self.frame_view()
        if view is not None:
            self.call_after_refresh(view.focus_table)
        else:
            self.call_after_refresh(self.query_one(f"#{tab}", VerticalScroll).focus)

    def action_next_tab(self) -> None:
        self.action_tab(SNAPSHOT_TABS[(SNAPSHOT_TABS.index(self.tab) + 1) % len(SNAPSHOT_TABS)])


__all__ = ["SNAPSHOT_TABS", "SnapshotScreen"]
