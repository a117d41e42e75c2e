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

SHORT_TEXT = ("kind", "device", "stream", "step", "op")  # text columns always kept with the figures
OTHER_TEXT_WIDTH = 40  # a longer text cell gets lines of its own, whole
#: Text too long for the details line: a drill-down shows it (a launch's operator chain and stack).
DRILL_TEXT = ("op_chain", "python_stack")
FIGURE_LINES = 2  # the row's figures, each whole (those left over are counted: "+3 more")
TEXT_LINES = 4  # the text cells, each whole (a Triton kernel's file, a graph node's module and source)
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


def long_text(column: str, value: object) -> bool:
    """Whether ``column value`` is longer than a figure's item may be (:data:`OTHER_TEXT_WIDTH`)."""
    return isinstance(value, str) and len(column) + 1 + len(clean(value)) > OTHER_TEXT_WIDTH


def text_lines(items: list[tuple[str, str]], width: int, lines: int) -> list[Text]:
    """``column value`` items in at most ``lines`` lines of ``width``: the short ones packed (as the
    figures), then each long one whole on lines of its own (a path is not cut); those that do not fit
    are counted, ``+2 more``.  A long value held whole in another's is named there, not repeated
    (a Triton kernel's hash is its file's name: ``kernel_file /tmp/…/c2x….py (kernel_hash in it)``)."""
    short = [f"{c} {v}" for c, v in items if len(c) + 1 + len(v) <= OTHER_TEXT_WIDTH]
    long = [(c, v) for c, v in items if len(c) + 1 + len(v) > OTHER_TEXT_WIDTH]
    inside = {c: [o for o, w in long if o != c and w != v and w in v] for c, v in long}
    held = {o for found in inside.values() for o in found}
    out = pack_items(short, width, lines) if short else []
    left = 0
    for column, value in long:
        if column in held:
            continue
        item = Text(f"{column} ", style="dim") + Text(value)
        if inside[column]:
            item.append(f" ({', '.join(inside[column])} in it)", style="dim")
        room = lines - len(out)
        wrapped = cap_lines(item, width, lines + 1)  # at spaces: whole words, a path longer than a line folded
        if len(wrapped) > room:  # whole words take a line more: every line full (a path's two lines)
            tight = cap_lines(item, width, lines + 1, at_spaces=False)
            wrapped = tight if len(tight) < len(wrapped) else wrapped
        if len(wrapped) > room and out:
            left += 1
            continue
        out += wrapped if len(wrapped) <= lines else cap_lines(item, width, lines)  # alone, cut past all
    if left and out:
        out[-1] = out[-1] + Text(f" · +{left} more", style="dim")
    return out


def details_text(
    columns: list[str],
    row: dict[str, Any] | None,
    name_column: str | None,
    width: int = 80,
    name_lines: int = 0,
    text_columns: frozenset[str] = frozenset(),
) -> Text:
    """'column value · column value ...' (at most :data:`FIGURE_LINES` lines, each figure whole),
    then the text cells (:data:`TEXT_LINES` in all, each whole: a Triton kernel's
    ``kernel_file``, a graph node's ``module`` and ``source``), then the full name (at most
    :data:`NAME_LINES` lines, cut with … beyond; ``y`` copies it whole) of the row under the cursor.

    Every filled cell is shown: a text column (``text_columns``) left empty on this row is left out
    (an eager kernel has no ``fused_ops``: no ``fused_ops -``), as is one that only repeats the end
    of the name; a figure that is not known reads
    ``-``.  The figures always take :data:`FIGURE_LINES` lines and the name at least ``name_lines``
    (the longest name of the table's): the line keeps its height while the cursor moves among rows
    alike, so the rows above it do not jump."""
    if row is None:
        return Text("")

    name = str(row.get(name_column) or "") if name_column is not None else ""

    def empty_text(column: str) -> bool:
        """Not filled, or only the end of the name again (the Modules tree's indented module: its path)."""
        value = row.get(column)
        if column not in text_columns or column in SHORT_TEXT:
            return False
        return value is None or not str(value).strip() or (bool(name) and name.endswith(str(value).strip()))

    shown = [c for c in columns if c != name_column and c not in DRILL_TEXT and not empty_text(c)]
    # a short-text column (an operator) too long for the figures' lines gets a line of its own, whole
    words = [c for c in shown if c in text_columns and (c not in SHORT_TEXT or long_text(c, row.get(c)))]
    parts = [f"{c} {figure(c, row.get(c))}" for c in shown if c not in words]
    lines = pack_items(parts, width, FIGURE_LINES)
    lines += [Text("")] * (FIGURE_LINES - len(lines))
    lines += text_lines([(c, clean(row[c])) for c in words], width, TEXT_LINES)
    if name_column is not None:
        title = Text(clean(row.get(name_column) or ""), style="bold")
        # whole words where the name fits its lines so; a longer one (a C++ signature) fills every
        # line, so that as much of it shows as the lines hold
        full = cap_lines(title, width, NAME_LINES + 1)
        if len(full) > NAME_LINES:
            full = cap_lines(title, width, NAME_LINES, at_spaces=False)
        lines += full + [Text("")] * (min(name_lines, NAME_LINES) - len(full))
    return Text("\n").join(lines)
