"""A terminal chart of a device's allocated and reserved memory over time (inert Rich Text).

Each column is a slice of time: the allocated bytes (the highest in the slice) fill it from the
bottom in eighth-blocks; the reserved level is a thin line (``─``) where it stands above the
fill; the column holding the peak is marked ``▼`` in the top row.  Pure functions of a frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl
from rich.text import Text

from ...frames import CHAIN_SEPARATOR, fmt_bytes, fmt_us
from ...sanitize import clean

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the first screen draws no chart (profview.lazy_numpy)
    from ... import lazy_numpy as np

EIGHTHS = " ▁▂▃▄▅▆▇█"
ALLOCATED_STYLE = "#4c9be8"
RESERVED_STYLE = "#e8a33c"
PEAK_STYLE = "bold #e5534b"
AXIS_WIDTH = 10


def column_levels(memory: pl.DataFrame, width: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Per column, the highest allocated and reserved bytes in its time slice (carried forward
    through slices without events), and the slice's start and end times (µs)."""
    ts = memory["ts_us"].to_numpy()
    allocated = memory["allocated_bytes"].to_numpy().astype(np.float64)
    reserved = memory["reserved_bytes"].fill_null(0).to_numpy().astype(np.float64)
    start, end = float(ts.min()), float(ts.max())
    span = max(end - start, 1e-9)
    which = np.minimum(((ts - start) / span * width).astype(np.int64), width - 1)
    alloc_cols = np.full(width, np.nan)
    res_cols = np.full(width, np.nan)
    np.fmax.at(alloc_cols, which, allocated)
    np.fmax.at(res_cols, which, reserved)
    # A slice without events keeps the level the last event before it left.
    last = np.searchsorted(which, np.arange(width), side="right") - 1
    empty = np.isnan(alloc_cols)
    carried = np.clip(last, 0, None)
    alloc_cols[empty] = np.where(last[empty] >= 0, allocated[carried[empty]], 0.0)
    res_cols[empty] = np.where(last[empty] >= 0, reserved[carried[empty]], 0.0)
    return alloc_cols, res_cols, start, end


def memory_chart(memory: pl.DataFrame, width: int, height: int) -> Text:
    """The chart of one device's events, ``width`` x ``height`` cells, with a y axis and a time axis."""
    out = Text()
    plot_width = max(width - AXIS_WIDTH - 1, 8)
    rows = max(height - 1, 2)
    if memory.height == 0:
        return Text("no memory events on this device", style="italic")
    alloc, res, start, end = column_levels(memory, plot_width)
    top = float(max(np.nanmax(res), np.nanmax(alloc), 1.0))
    peak_column = int(np.argmax(alloc))
    alloc_eighths = np.round(alloc / top * rows * 8).astype(np.int64)
    res_row = np.minimum((res / top * rows).astype(np.int64), rows - 1)
    for line in range(rows):
        level = rows - 1 - line  # 0 at the bottom
        label = fmt_bytes(top) if line == 0 else ("0 B" if line == rows - 1 else "")
        out.append(f"{label:>{AXIS_WIDTH}}│", style="dim")
        for column in range(plot_width):
            fill = int(np.clip(alloc_eighths[column] - level * 8, 0, 8))
            if line == 0 and column == peak_column:
                out.append("▼", style=PEAK_STYLE)
            elif fill:
                out.append(EIGHTHS[fill], style=ALLOCATED_STYLE)
            elif res[column] > 0 and res_row[column] == level:
                out.append("─", style=RESERVED_STYLE)
            else:
                out.append(" ")
        out.append("\n")
    left, right = fmt_us(start), fmt_us(end)
    gap = max(plot_width - len(left) - len(right), 1)
    out.append(f"{'':>{AXIS_WIDTH}}└{left}{'─' * gap}{right}", style="dim")
    return out


def chart_caption(device: str, peak: dict[str, Any], hint: str = "") -> Text:
    """Two lines: 'cuda:0 █ allocated ─ reserved (max …)' and '▼ peak 3.06 GiB at 219.980 ms in
    aten::nll_loss_forward ← the innermost two Python frames' (where the trace has a stack)."""
    text = Text(f"{device}  ", style="bold")
    text.append("█", style=ALLOCATED_STYLE)
    text.append(" allocated  ")
    text.append("─", style=RESERVED_STYLE)
    text.append(f" reserved (max {fmt_bytes(peak['peak_reserved_bytes'])})")
    text.append(hint, style="dim")
    text.append("\n▼", style=PEAK_STYLE)
    text.append(f" peak {fmt_bytes(peak['peak_allocated_bytes'])} at {fmt_us(peak['ts_us'])} in {clean(peak['op'])}")
    stack = (peak.get("python_stack") or "").split(CHAIN_SEPARATOR)[-2:]
    if any(stack):
        text.append(f" ← {clean(CHAIN_SEPARATOR.join(stack))}", style="dim")
    return text
