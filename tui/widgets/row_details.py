"""The details line under a table: the full name and the figures of the row under the cursor.

Names are cut to fit a column on narrow terminals; this line shows them whole (wrapped), with the
row's numbers, so nothing needs a wider screen.  Pure text building, no widget.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ...sanitize import clean
from .cells import PERCENT_COLUMNS, percent_cell
from .text_fit import cap_lines, pack_items

SHORT_TEXT = ("kind", "device", "stream", "step", "op")  # text columns the figures line keeps
OTHER_TEXT_WIDTH = 40  # other text cells (kind, chains) are shortened: the name is the point here
FIGURE_LINES = 2  # the row's figures, each whole (those left over are counted: "+3 more")
NAME_LINES = 4  # the full name (docs/navigation.md): four lines of 80 hold a 320-character kernel name


def figure(column: str, value: object) -> str:
    """One cell as the details line writes it: µs with 3 decimals (the table's and the CSV's
    rounding: the float's exact value to the nanosecond), shares as %, counts with commas;
    occupancy as % or ``–`` (not estimated)."""
    if column in PERCENT_COLUMNS and (value is None or isinstance(value, (int, float))):
        return percent_cell(value)  # type: ignore[arg-type]
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.1f}%" if column == "pct" else f"{value:,.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    text = clean(value)
    return text if len(text) <= OTHER_TEXT_WIDTH else text[: OTHER_TEXT_WIDTH - 1] + "…"


def details_text(
    columns: list[str], row: dict[str, Any] | None, name_column: str | None, width: int = 80, name_lines: int = 0
) -> Text:
    """'column value · column value ...' (at most :data:`FIGURE_LINES` lines, each figure whole),
    then the full name (at most :data:`NAME_LINES` lines, cut with … beyond; ``y`` copies it whole)
    of the row under the cursor: figures first.  The figures always take :data:`FIGURE_LINES` lines
    and the name at least ``name_lines`` (the longest name of the table's): the line keeps one height
    while the cursor moves, so the rows above it do not jump."""
    if row is None:
        return Text("")
    # Numbers, and short labels; long text (chains, stacks) has its own pane in a drill-down.
    shown = [c for c in columns if c != name_column and (not isinstance(row.get(c), str) or c in SHORT_TEXT)]
    parts = [f"{c} {figure(c, row.get(c))}" for c in shown]
    lines = pack_items(parts, width, FIGURE_LINES)
    lines += [Text("")] * (FIGURE_LINES - len(lines))
    if name_column is not None:
        name = cap_lines(Text(clean(row.get(name_column) or ""), style="bold"), width, NAME_LINES, at_spaces=False)
        lines += name + [Text("")] * (min(name_lines, NAME_LINES) - len(name))
    return Text("\n").join(lines)
