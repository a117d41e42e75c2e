"""A DataTable whose cursor marks the whole row, with the cell under it marked again.

The cursor stays a *cell* cursor (``s`` sorts by the column under it, ``←``/``→`` pick that
column), but every cell of the cursor's row gets the ``datatable--cursor-row`` style, so the row
reads across the screen.  Under ``NO_COLOR`` colours are gone (Textual's monochrome filter), so the
row is drawn in reverse video and the cell under the cursor bold and underlined: visible without
any colour.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.coordinate import Coordinate
from textual_fastdatatable import DataTable

from .whole_columns import WholeColumnsTable

#: A list of segments per line, as DataTable renders a cell.
SegmentLines = list[list[Segment]]


class RowCursorTable(WholeColumnsTable):
    """DataTable with a whole-row cursor highlight over a cell cursor (see the module docstring)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | {"datatable--cursor-row"}

    DEFAULT_CSS = """
    RowCursorTable > .datatable--cursor-row { background: $secondary 35%; text-style: bold; }
    RowCursorTable:nocolor > .datatable--cursor-row { text-style: reverse; }
    RowCursorTable:nocolor > .datatable--cursor { text-style: bold underline; }
    RowCursorTable:nocolor > .datatable--fixed-cursor { text-style: bold underline; }
    """

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
        in_range: bool = False,
    ) -> SegmentLines:
        """A cell of the cursor's row is drawn over the cursor-row style (the cache keys on it)."""
        if row_index >= 0 and self.show_cursor and row_index == self.cursor_row:
            base_style = base_style + self.get_component_rich_style("datatable--cursor-row")
        return super()._render_cell(row_index, column_index, base_style, width, cursor, hover, in_range)

    def watch_cursor_coordinate(self, old_coordinate: Coordinate, new_coordinate: Coordinate) -> None:
        """Redraw the whole old and new rows (a cell cursor alone redraws two cells)."""
        super().watch_cursor_coordinate(old_coordinate, new_coordinate)
        if old_coordinate.row != new_coordinate.row:
            self.refresh_row(old_coordinate.row)
            self.refresh_row(new_coordinate.row)


__all__ = ["RowCursorTable"]
