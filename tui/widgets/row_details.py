"""The details line under a table: the full name and the figures of the row under the cursor.

Names are cut to fit a column on narrow terminals; this line shows them whole (wrapped), with the
row's numbers, so nothing needs a wider screen.  Pure text building, no widget.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ...sanitize import clean

SHORT_TEXT = ("kind", "device", "stream", "step", "op")  # text columns the figures line keeps
OTHER_TEXT_WIDTH = 40  # other text cells (kind, chains) are shortened: the name is the point here


def figure(column: str, value: object) -> str:
    """One cell as the details line writes it: µs with 3 decimals, shares as %, counts with commas."""
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


def details_text(columns: list[str], row: dict[str, Any] | None, name_column: str | None) -> Text:
    """'<full name>' then 'column value · column value ...' for the row under the cursor."""
    if row is None:
        return Text("")
    text = Text()
    if name_column is not None:
        text.append(clean(row.get(name_column) or ""), style="bold")
        text.append("\n")
    # Numbers, and short labels; long text (chains, stacks) has its own pane in a drill-down.
    shown = [c for c in columns if c != name_column and (not isinstance(row.get(c), str) or c in SHORT_TEXT)]
    parts = [f"{c} {figure(c, row.get(c))}" for c in shown]
    text.append(" · ".join(parts), style="dim")
    return text
