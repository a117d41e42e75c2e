"""Active memory over time as a text chart: one column per slice of a device's events, as tall
as the most memory active in it, from the least active of the device (its label, at the
bottom) to the peak (the top label), the peak's column marked, annotations under it."""

from __future__ import annotations

import polars as pl

from ...frames import fmt_bytes
from ...sanitize import clean

FULL = "█"
PARTIAL = " ▁▂▃▄▅▆▇"


def chart_lines(
    timeline: pl.DataFrame, annotations: pl.DataFrame, device: int, width: int, height: int = 8
) -> list[str]:
    """The chart of ``device`` in ``width`` cells (its y labels included) and ``height`` rows,
    then the x axis (event numbers), the peak's marker line and the annotations' line; the x axis
    is the events' order, as torch's MemoryViz draws it."""
    own = timeline.filter(pl.col("device") == device).sort("index")
    label_width = 11
    columns = max(10, width - label_width - 1)
    if own.is_empty():
        return [f"device {device}: no events recorded (only the end state)"]
    values = own["active_bytes"].to_list()
    count = len(values)
    per = max(1, -(-count // columns))
    buckets = [max(values[i : i + per]) for i in range(0, count, per)]
    top = max(max(buckets), 1)
    bottom = min(buckets) if min(buckets) < top else 0  # the axis starts at the least active, labelled
    peak_index = int(own.filter(pl.col("is_peak"))["index"][0]) if own["is_peak"].any() else -1
    peak_column = (peak_index // per) if peak_index >= 0 else -1
    lines = []
    span = (top - bottom) / height
    for row in range(height, 0, -1):
        low = bottom + span * (row - 1)
        cells = []
        for value in buckets:
            if value >= bottom + span * row:
                cells.append(FULL)
            elif value > low or (row == 1 and value >= bottom):
                cells.append(PARTIAL[max(1, int((value - low) / span * (len(PARTIAL) - 1)))] if span else FULL)
            else:
                cells.append(" ")
        label = fmt_bytes(top) if row == height else (fmt_bytes(bottom) if row == 1 else "")
        lines.append(f"{label:>{label_width}}│{''.join(cells)}")
    axis = f"{'':>{label_width}}└{'─' * len(buckets)}"
    lines.append(axis)
    last = f"event {count - 1:,}"
    lines.append(f"{'':>{label_width}} event 0{last:>{max(0, len(buckets) - 7)}}")
    if peak_column >= 0:
        marker = " " * peak_column + "▲ peak " + fmt_bytes(top)
        if len(marker) > len(buckets):
            marker = " " * max(0, peak_column - len(fmt_bytes(top)) - 6) + "peak " + fmt_bytes(top) + " ▲"
        lines.append(f"{'':>{label_width}} {marker}")
    own_notes = annotations.filter((pl.col("device") == device) & pl.col("index").is_not_null())
    if own_notes.height:
        marks = [" "] * len(buckets)
        names: list[str] = []
        for stage, name, index in own_notes.select("stage", "name", "index").iter_rows():
            column = min(len(buckets) - 1, max(0, int(index) // per))
            if name not in names:
                names.append(name)
            number = names.index(name) + 1
            marks[column] = str(number % 10) if stage == "START" else "|"
        lines.append(f"{'annotations':>{label_width}} {''.join(marks)}")
        for number, name in enumerate(names, start=1):
            lines.append(f"{'':>{label_width}} {number % 10}: {clean(name)} (START; | its END)")
    return lines
