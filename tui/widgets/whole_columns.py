"""A DataTable that never shows part of a cell: a column cut by the table's edge is left blank.

A scrolled table shows a window of its columns; the column at the right edge (and, once scrolled
right, the one just after the frozen name column) usually shows only part of its width, and
``6628.`` of ``6,628.064`` reads like a real number (issue 34).  Here the cells of a column that
does not fit whole are drawn blank, in the row's own style, and the header marks where columns
continue: ``›`` at the right edge, ``‹`` left of the scrolled columns.  A text column (names,
kernel lists) keeps what fits, its cut marked with ``…``: part of a name reads as part of a name.
Scrolling (``←``/``→``) brings a column into view whole.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual_fastdatatable import DataTable

#: What the header row shows where columns go on beyond the right edge / before the left one.
MORE_RIGHT = "›"
MORE_LEFT = "‹"


def cut_spans(widths: list[int], scroll_x: int, visible: int) -> tuple[list[tuple[int, int, int]], bool, bool]:
    """The cells (start, end) of the scrollable area, counted from its left edge, that show only part
    of a column, with that column's place among ``widths``; whether columns lie beyond the right
    edge; whether some lie left of the view.

    ``widths``: the scrollable columns' widths in order; ``scroll_x``: how far they are scrolled;
    ``visible``: the cells the scrollable area has on screen."""
    spans: list[tuple[int, int, int]] = []
    start = 0
    right = left = False
    for place, width in enumerate(widths):
        end = start + width
        shown_from, shown_to = max(start, scroll_x), min(end, scroll_x + visible)
        if end <= scroll_x:
            left = True
        elif start >= scroll_x + visible:
            right = True
        elif shown_from > start or shown_to < end:  # on screen, but not whole
            spans.append((shown_from - scroll_x, shown_to - scroll_x, place))
            if shown_to < end:
                right = True
            if shown_from > start:
                left = True
        start = end
    return spans, right, left


def blank(strip: Strip, start: int, end: int, mark: str = "") -> Strip:
    """``strip`` with cells [start, end) blank in the style found there (``mark`` at their end)."""
    if end <= start:
        return strip
    style = _style_at(strip, start)
    fill = " " * (end - start - len(mark)) + mark if len(mark) <= end - start else " " * (end - start)
    return Strip.join([strip.crop(0, start), Strip([Segment(fill, style)]), strip.crop(end, strip.cell_length)])


def ellipsis_at(strip: Strip, cell: int) -> Strip:
    """``strip`` with ``…`` in cell ``cell`` (the cut of a text column), in the style found there."""
    style = _style_at(strip, cell)
    return Strip.join([strip.crop(0, cell), Strip([Segment("…", style)]), strip.crop(cell + 1, strip.cell_length)])


def _style_at(strip: Strip, cell: int) -> Style | None:
    for segment in strip.crop(cell, cell + 1):
        return segment.style
    return None


class WholeColumnsTable(DataTable):
    """DataTable whose partly visible columns are drawn blank (see the module docstring)."""

    #: The columns (by place, the frozen ones counted) that hold text: cut with ``…``, not blanked.
    text_columns: frozenset[int] = frozenset()

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        strip = super()._render_line(y, x1, x2, base_style)
        if y > 0 and not self.is_valid_row_index(y - 1):  # below the last row: nothing drawn
            return strip
        columns = self.ordered_columns
        fixed = sum(column.render_width for column in columns[: self.fixed_columns])
        visible = self.scrollable_content_region.width - fixed  # the vertical scrollbar covers the rest
        if visible <= 0 or not columns:
            return strip
        widths = [column.render_width for column in columns[self.fixed_columns :]]
        spans, right, left = cut_spans(widths, x1, visible)
        header = y == 0 and self.show_header
        text = {place - self.fixed_columns for place in self.text_columns}
        for start, end, place in spans:
            if place in text:  # a name keeps what fits (its header too), the cut marked
                strip = ellipsis_at(strip, fixed + (end - 1 if end == visible else start))
                continue
            mark = MORE_RIGHT if header and end == visible else ""
            strip = blank(strip, fixed + start, fixed + end, mark)
        if header and right and not any(end == visible for _start, end, _place in spans):  # ends between columns
            strip = blank(strip, fixed + visible - 1, fixed + visible, MORE_RIGHT)
        if header and left and fixed:
            strip = blank(strip, fixed, fixed + 1, MORE_LEFT)
        return strip


__all__ = ["MORE_LEFT", "MORE_RIGHT", "WholeColumnsTable", "cut_spans"]
