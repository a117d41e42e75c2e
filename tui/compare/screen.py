"""Compare mode (``profview diff BEFORE AFTER``): Kernels, Operators and Steps as before / after /
delta tables, sorted by the size of the change; Moved: one step of each side aligned by operator
(:meth:`profview.diff.comparison.Comparison.moved`), the kernels that changed under the same operator;
Phases: serving runs per phase, GPU µs per token before and after (``diff --view phases``).

Each row starts with a ``change`` cell: ▲ (grew), ▼ (shrank), ``▲ new``, ``▼ gone`` or ``=``,
coloured red / green where colour is available, readable without (NO_COLOR).  A header names
each side (its file name, one line each) with its step count and span, and a note line says what
explains surprising figures.  Enter drills down into both sides (a kernel's launch paths, an
operator's kernels: before / after / delta per row); ``w`` switches to one side's own drill-down.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import polars as pl
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from ...analysis.diff.compare import GLYPHS
from ...diff.comparison import Comparison
from ...sanitize import clean
from ..keymap import bindings
from ..widgets.table_view import FrameView
from .tabs import CompareTabs

if TYPE_CHECKING:
    from textual_fastdatatable import DataTable

COMPARE_PANES = ("kernels", "ops", "steps", "moved", "phases")
COMPARE_TITLES = {"kernels": "Kernels", "ops": "Operators", "steps": "Steps", "moved": "Moved", "phases": "Phases"}
#: Columns shown first (before / after / delta), so that 80 columns show the change first.
LEADING = {
    "kernels": ("change", "name", "delta_us", "delta_pct", "total_us_before", "total_us_after"),
    "ops": ("change", "name", "delta_us", "delta_pct", "device_self_us_before", "device_self_us_after",
            "host_self_us_before", "host_self_us_after"),
    "steps": ("change", "name", "delta_us", "delta_pct", "mean_us_before", "mean_us_after"),
    "moved": ("change", "op", "delta_us", "kernels_before", "kernels_after", "calls"),
    # serving runs per phase: the figure compared (GPU µs per token, else the median iteration's GPU µs)
    "phases": ("change", "name", "compared", "delta_us", "delta_pct", "gpu_us_per_token_before",
               "gpu_us_per_token_after", "iterations_before", "iterations_after"),
    # drill-downs of both sides: a kernel's launch paths, an operator's kernels
    "kernel_launches": ("change", "name", "delta_us", "delta_pct", "calls_before", "calls_after",
                        "total_us_before", "total_us_after"),
    "op_launches": ("change", "name", "delta_us", "delta_pct", "calls_before", "calls_after",
                    "total_us_before", "total_us_after"),
    # issue 34: a Moved row's aligned calls, in step order
    "moved_calls": ("change", "op", "delta_us", "kernels_before", "kernels_after", "position"),
}
#: Where Enter drills: both sides (before / after / delta), or one side's own drill-down; ``w`` cycles.
DRILL_SIDES = ("both", "after", "before")


def compare_frame(view: str, frame: pl.DataFrame) -> pl.DataFrame:
    """A diff frame as the viewer shows it: the ``change`` glyph, the name, before / after / delta
    first, then the rest."""
    if "status" not in frame.columns:  # moved: kernels changed under one operator, by the delta's sign
        sign = pl.col("delta_us").sign()
        status = pl.when(sign > 0).then(pl.lit("increased")).when(sign < 0).then(pl.lit("decreased"))
        frame = frame.with_columns(status.otherwise(pl.lit("unchanged")).alias("status"))
    glyphs = pl.col("status").replace_strict(GLYPHS, default="?").alias("change")
    shown = frame.with_columns(glyphs)
    leading = [c for c in LEADING[view] if c in shown.columns]
    return shown.select(*leading, *(c for c in shown.columns if c not in leading))


class CompareView(FrameView):
    """A diff table (before / after / delta) with coloured change glyphs."""

    def table_class(self) -> type[DataTable]:
        """The change-glyph table (tui/compare/change_table.py), imported when a first table is built."""
        from .change_table import ChangeTable

        return ChangeTable


class CompareScreen(CompareTabs):
    """The compare tabs of two profiles."""

    BINDINGS = bindings("compare")
    TABS = COMPARE_PANES
    TAB_TITLES = COMPARE_TITLES

    def __init__(self, comparison: Comparison, frames: dict[str, Any]) -> None:
        super().__init__(comparison, "kernels")
        self.comparison: Comparison = comparison
        self.frames = frames
        self.drill_side = "both"
        self.explained: dict[str, list[str]] = {}

    def panes(self) -> Iterator[Widget]:
        for pane in COMPARE_PANES:
            frame = self.frames.get(pane)
            if isinstance(frame, pl.DataFrame):
                yield CompareView(f"diff_{pane}", compare_frame(pane, frame), id=pane)
            else:
                reason = clean(frame or "not available")
                yield Static(Text(f"{COMPARE_TITLES[pane]}: cannot compare — {reason}", style="italic"), id=pane)

    def tab_line(self) -> Text:
        tabs = super().tab_line()
        into = "both sides" if self.drill_side == "both" else f"{self.drill_side.upper()} only"
        tabs.append(f"  Enter: {into} (w: switch)", style="dim")
        if self.pane == "moved" and isinstance(self.frames.get("moved"), pl.DataFrame):
            tabs.append(f"  · {self.comparison.steps_phrase()}, aligned by operator", style="dim")
        return tabs

    def notes(self, pane: str) -> list[str]:
        if pane not in self.explained:
            self.explained[pane] = self.comparison.explanations(pane)
        return self.explained[pane]

    def action_switch_side(self) -> None:
        self.drill_side = DRILL_SIDES[(DRILL_SIDES.index(self.drill_side) + 1) % len(DRILL_SIDES)]
        self.update_tabs()
        into = "both sides, before / after / delta" if self.drill_side == "both" else self.drill_side.upper()
        self.notify(f"Enter now drills down into {into}", timeout=3)

    def drill_target(self, row: dict[str, Any]) -> tuple[str, str | None, str | None] | str:
        """(side, name before, name after) that Enter on ``row`` opens, or why there is none.

        ``side``: ``both``, or the one side chosen with ``w`` (a row on one side only drills into that side).
        """
        if self.pane == "steps":
            return "the mean-step rows have no drill-down (open a side with profview TRACE for its timeline)"
        if self.pane == "phases":
            return "a phase row has no drill-down (open a side with profview TRACE: its Iterations tab, 0)"
        if self.pane == "moved":
            op = str(row.get("op"))
            return self.drill_side, op, op
        names = {"before": None if row.get("status") == "added" else row.get("name"),
                 "after": None if row.get("status") == "removed" else row.get("name_after") or row.get("name")}
        if not names["before"] and not names["after"]:
            return "this row has no name to drill into"
        before, after = (str(n) if n else None for n in (names["before"], names["after"]))
        if self.drill_side == "both":
            return "both", before, after
        side = self.drill_side if names[self.drill_side] else ("before" if names["before"] else "after")
        return side, before, after
