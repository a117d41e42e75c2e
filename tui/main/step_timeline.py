"""A per-stream timeline of GPU work in one step: a lane per stream, zoom and pan by keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl
from rich.text import Text
from textual.widget import Widget

from ...frames import fmt_us
from ...sanitize import clean
from ..keymap import bindings
from ..widgets.zoom_pan import ZoomPan

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the first screen draws no chart (profview.lazy_numpy)
    from ... import lazy_numpy as np

LABEL = 12
KIND_STYLE = {"kernel": "#4c9be8", "memcpy": "#e8a33c", "memset": "#c97bd6", "comm": "#e5534b"}
#: Issue 34: communication is ``░`` (as on the Timeline and in the Steps legend), not compute's ``█``.
KIND_CHAR = {"kernel": "█", "memcpy": "▓", "memset": "▒", "comm": "░"}


class Timeline(ZoomPan, Widget, can_focus=True):
    """GPU events of a window, one lane per (device, stream)."""

    BINDINGS = bindings("timeline")
    DEFAULT_CSS = "Timeline { height: auto; min-height: 4; }"
    MIN_CELL_US = 0.05

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.events = pl.DataFrame()
        self.lanes: list[tuple[str, pl.DataFrame]] = []
        self.start = self.end = 0.0
        self.view_start = self.view_end = 0.0
        self.cursor = 0
        self.lane = 0

    def show(self, gpu: pl.DataFrame, start: float, end: float) -> None:
        """Show the GPU events overlapping [start, end) (µs, trace clock); ``gpu`` with a ``backend``
        column (:meth:`Profile.communication`): the communication kernels are drawn as such."""
        window = gpu.filter((pl.col("end") > start) & (pl.col("ts") < end))
        if "backend" in window.columns:
            comm = pl.col("backend").is_not_null() & (pl.col("kind") == "kernel")
            kind = pl.when(comm).then(pl.lit("comm")).otherwise(pl.col("kind").cast(pl.String))
            window = window.with_columns(kind.alias("kind"))
        window = window.with_columns(
            (
                pl.lit("dev ")
                + pl.col("device").cast(pl.String).fill_null("?")
                + pl.lit(" s")
                + pl.col("stream").cast(pl.String).fill_null("?")
            ).alias("lane")
        )
        self.lanes = [(str(key[0]), frame.sort("ts")) for key, frame in window.group_by("lane", maintain_order=False)]
        self.lanes.sort(key=lambda item: item[0])
        self.start, self.end = start, end
        self.view_start, self.view_end = start, end
        self.cursor = self.lane = 0
        self.styles.height = len(self.lanes) + 3
        self.refresh()

    @property
    def cells(self) -> int:
        return max(self.size.width - LABEL - 1, 10)

    def under_cursor(self) -> dict[str, Any] | None:
        """The GPU event under the cursor on the selected lane (the longest if several)."""
        if not self.lanes:
            return None
        _name, frame = self.lanes[min(self.lane, len(self.lanes) - 1)]
        lo = self.view_start + self.cursor * self.cell_span()
        hit = frame.filter((pl.col("ts") < lo + self.cell_span()) & (pl.col("end") > lo))
        return hit.sort("dur", descending=True).row(0, named=True) if hit.height else None

    def render(self) -> Text:
        if not self.lanes:
            return Text("No GPU work in this step.", style="italic")
        cells, span = self.cells, self.cell_span()
        out = Text()
        out.append(
            f"{'':<{LABEL}} {fmt_us(self.view_start - self.start)} … {fmt_us(self.view_end - self.start)}"
            f"  ({fmt_us(span)}/cell)\n",
            style="dim",
        )
        for index, (name, frame) in enumerate(self.lanes):
            out.append(f"{name[:LABEL]:<{LABEL}} ", style="bold" if index == self.lane else "")
            row = [" "] * cells
            styles = [""] * cells
            for kind in ("memset", "memcpy", "kernel", "comm"):
                part = frame.filter(pl.col("kind") == kind)
                if not part.height:
                    continue
                first = np.floor((part["ts"].to_numpy() - self.view_start) / span).astype(np.int64)
                last = np.ceil((part["end"].to_numpy() - self.view_start) / span).astype(np.int64)
                marks = np.zeros(cells + 1, dtype=np.int64)
                np.add.at(marks, np.clip(first, 0, cells), 1)
                np.add.at(marks, np.clip(np.maximum(last, first + 1), 0, cells), -1)
                for i in np.flatnonzero(np.cumsum(marks)[:cells] > 0).tolist():
                    row[i], styles[i] = KIND_CHAR[kind], KIND_STYLE[kind]
            for i, (char, style) in enumerate(zip(row, styles, strict=True)):
                if index == self.lane and i == self.cursor:
                    out.append(char if char != " " else "│", style="reverse")
                else:
                    out.append(char, style=style)
            out.append("\n")
        event = self.under_cursor()
        if event:
            out.append(f"{clean(event['name'])[: max(self.size.width - 30, 20)]}  {fmt_us(event['dur'])}", style="bold")
        else:
            out.append("(no GPU work under the cursor)", style="dim")
        return out

    def action_timeline(self, action: str, value: float | None = None) -> None:
        """The keymap's timeline keys (the same ones the step list forwards here)."""
        method = getattr(self, f"action_{action}")
        method() if value is None else method(value)

    def action_move(self, delta: int) -> None:
        self.cursor = int(np.clip(self.cursor + delta, 0, self.cells - 1))
        self.refresh()

    def action_lane(self, delta: int) -> None:
        self.lane = int(np.clip(self.lane + delta, 0, max(len(self.lanes) - 1, 0)))
        self.refresh()

    def action_reset(self) -> None:
        self.fit_view()
