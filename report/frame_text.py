"""Any frame as an aligned text table on the terminal (``profview query`` without ``-o``).

Every cell is sanitised (:func:`profview.sanitize.clean`: no escape sequence from a trace reaches
the terminal).  Numbers are right-aligned and never cut; floats keep three decimals (the nanosecond
of a µs figure, as CSV exports write them); a null is ``-``.  Piped or redirected, every cell is
whole, so what is printed is what a file would hold.  On a terminal, text cells (a 700-character
kernel name) are shortened in the middle with ``…`` until the table fits the window, and a last line
says so: the figures stay whole and readable in an 80-column window.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from typing import TextIO

import polars as pl

from ..sanitize import clean

FLOAT_DECIMALS = 3


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{FLOAT_DECIMALS}f}"
    return clean(value)


MIN_TEXT_WIDTH = 12  # a shortened text column keeps at least this many characters


def _shorten(text: str, width: int) -> str:
    """``text`` in ``width`` characters: its start and end around one ``…``."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2 + (width - 1) % 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def fitted_widths(widths: list[int], right: list[bool], room: int) -> list[int]:
    """Column widths that fit ``room`` characters: the widest text columns give way first, down to
    :data:`MIN_TEXT_WIDTH`; numeric columns never shrink."""
    widths = list(widths)
    while sum(widths) + 2 * (len(widths) - 1) > room:
        text = [i for i, r in enumerate(right) if not r and widths[i] > MIN_TEXT_WIDTH]
        if not text:
            break
        widest = max(text, key=lambda i: widths[i])
        excess = sum(widths) + 2 * (len(widths) - 1) - room
        widths[widest] = max(MIN_TEXT_WIDTH, widths[widest] - excess)
    return widths


#: Rows rendered at a time: the widths are measured over every batch, then each batch is written and
#: let go, so the text of all cells is never held at once (``SELECT * FROM events`` of 512,907
#: events took 2.26 GB as one string per cell).
BATCH_ROWS = 10_000


def frame_lines(frame: pl.DataFrame, room: int | None = None) -> list[str]:
    """The header, a rule, and one line per row, columns two spaces apart; with ``room`` (a
    terminal's width) text cells are shortened to fit it (:func:`fitted_widths`)."""
    layout = _layout(frame, room)
    return [line for batch in _batches(frame, layout) for line in batch]


class _Layout:
    """The printed columns: headers, widths, which are right-aligned, whether cells are shortened."""

    def __init__(self, headers: list[str], widths: list[int], right: list[bool], shortened: bool) -> None:
        self.headers, self.widths, self.right, self.shortened = headers, widths, right, shortened

    def line(self, cells: list[str]) -> str:
        if self.shortened:
            cells = [_shorten(c, w) for c, w in zip(cells, self.widths, strict=True)]
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, self.widths, self.right, strict=True)]
        return "  ".join(parts).rstrip()


def _texts(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))


def _layout(frame: pl.DataFrame, room: int | None) -> _Layout:
    """The widths over every row, measured a batch at a time (one pass; no cell kept)."""
    frame = _texts(frame)
    headers = [clean(c) for c in frame.columns]
    widths = [len(h) for h in headers]
    for batch in frame.iter_slices(BATCH_ROWS):
        for i, column in enumerate(batch.iter_columns()):
            widths[i] = max(widths[i], max((len(_cell(v)) for v in column), default=0))
    right = [dtype.is_numeric() for dtype in frame.dtypes]
    shortened = False
    if room is not None:
        fitted = fitted_widths(widths, right, room)
        shortened = fitted != widths
        widths = fitted
    return _Layout(headers, widths, right, shortened)


def _batches(frame: pl.DataFrame, layout: _Layout) -> Iterator[list[str]]:
    """The header and rule, then each batch of rows' lines."""
    yield [layout.line(layout.headers), "  ".join("-" * w for w in layout.widths)]
    for batch in _texts(frame).iter_slices(BATCH_ROWS):
        yield [layout.line([_cell(v) for v in row]) for row in batch.iter_rows()]


def print_frame(frame: pl.DataFrame, stream: TextIO | None = None) -> None:
    """Print ``frame`` aligned, then ``(N rows)``; on a terminal, fitted to its width.  Written a
    batch of rows at a time (:data:`BATCH_ROWS`)."""
    out = stream or sys.stdout
    isatty = getattr(out, "isatty", None)
    room = shutil.get_terminal_size().columns if isatty is not None and isatty() else None
    layout = _layout(frame, room)
    for lines in _batches(frame, layout):
        out.write("".join(text + "\n" for text in lines))
    rows = f"{frame.height:,} row{'s' if frame.height != 1 else ''}"
    if layout.shortened:
        rows += "; text shortened with … to fit: -o FILE keeps it whole"
    out.write(f"({rows})\n")
