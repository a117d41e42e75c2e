"""Compare mode's table widget: the whole-row cursor table with its change glyphs coloured
(▲ red, ▼ green, = dim), readable without colour (NO_COLOR keeps the glyphs).

Its own module because it subclasses the table widget (textual_fastdatatable, which imports
pyarrow): :class:`profview.tui.compare.screen.CompareView` imports it when it builds a first table,
so opening the viewer does not pay for that import before a table is shown.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from ...analysis.diff.compare import GLYPHS
from ..widgets.row_cursor import RowCursorTable

#: Glyph → colour of a change cell (red: more time, green: less).
GLYPH_STYLE = {"▲": "bold red", "▼": "bold green", "=": "dim"}
CHANGE_GLYPHS = frozenset(GLYPHS.values())


class ChangeTable(RowCursorTable):  # issue 13: whole-row cursor (tui/widgets/row_cursor.py)
    """A DataTable whose change glyphs are coloured (▲ red, ▼ green)."""

    def _get_cell_renderable(
        self, row_index: int, column_index: int, max_width: int | None = None
    ) -> RenderableType | Text:
        cell = super()._get_cell_renderable(row_index, column_index, max_width)
        plain = cell.plain if isinstance(cell, Text) else cell if isinstance(cell, str) else None
        if row_index >= 0 and plain in CHANGE_GLYPHS:  # exactly a glyph: the change column
            return Text(plain, style=GLYPH_STYLE[plain[:1]])
        return cell


__all__ = ["CHANGE_GLYPHS", "GLYPH_STYLE", "ChangeTable"]
