"""The details line under a table: the full name and the figures of the row under the cursor.

Names are cut to fit a column on narrow terminals; this line shows them whole (wrapped), with the
row's numbers, so nothing needs a wider screen.  Pure text building, no widget.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ...sanitize import clean
from .cells import PERCENT_COLUMNS, percent_cell
from .text_fit import cap_lines

SHORT_TEXT = ("kind", "device", "stream", "step", "op")  # text columns the figures line keeps
OTHER_TEXT_WIDTH = 40  # other text cells (kind, chains) are shortened: the name is the point here


def figure(column: str, value: object) -> str:
    """One cell as the details line writes it: µs with 3 decimals (the table's and the CSV's
    rounding: the float's exact value to the nanosecond), shares as %, counts with commas;
    occupancy as % or ``–`` (not estimated)."""
    if column in PERCENT_COLUMNS and (value is None or isinstance(value, (int, float))):
        return percent_cell(value)  # type: ignore[arg-type]
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.1f}%" if column == "pct" else f"{value:,.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    text = clean(value)
    return text if len(text) <= OTHER_TEXT_WIDTH else text[: OTHER_TEXT_WIDTH - 1] + "…"


def details_text(
    columns: list[str], row: dict[str, Any] | None, name_column: str | None, width: int = 80
) -> Text:
    """'column value · column value ...' (at most two lines), then the full name (at most two
    lines, cut with …; ``y`` copies it whole) of the row under the cursor: figures first."""
    if row is None:
        return Text("")
    # Numbers, and short labels; long text (chains, stacks) has its own pane in a drill-down.
    shown = [c for c in columns if c != name_column and (not isinstance(row.get(c), str) or c in SHORT_TEXT)]
    parts = [f"{c} {figure(c, row.get(c))}" for c in shown]
    lines = cap_lines(Text(" · ".join(parts)), width, 2)
    if name_column is not None:
        lines += cap_lines(Text(clean(row.get(name_column) or ""), style="bold"), width, 2, at_spaces=False)
    return Text("\n").join(lines)
