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


def frame_lines(frame: pl.DataFrame, room: int | None = None) -> list[str]:
    """The header, a rule, and one line per row, columns two spaces apart; with ``room`` (a
    terminal's width) text cells are shortened to fit it (:func:`fitted_widths`)."""
    return _lines(frame, room)[0]


def _lines(frame: pl.DataFrame, room: int | None) -> tuple[list[str], bool]:
    frame = frame.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))
    headers = [clean(c) for c in frame.columns]
    rows = [[_cell(v) for v in row] for row in frame.iter_rows()]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    right = [dtype.is_numeric() for dtype in frame.dtypes]
    shortened = False
    if room is not None:
        fitted = fitted_widths(widths, right, room)
        shortened = fitted != widths
        if shortened:
            widths = fitted
            headers = [_shorten(h, w) for h, w in zip(headers, widths, strict=True)]
            rows = [[_shorten(c, w) for c, w in zip(r, widths, strict=True)] for r in rows]

    def line(cells: list[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return "  ".join(parts).rstrip()

    return [line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)], shortened


def print_frame(frame: pl.DataFrame, stream: TextIO | None = None) -> None:
    """Print ``frame`` aligned, then ``(N rows)``; on a terminal, fitted to its width."""
    out = stream or sys.stdout
    isatty = getattr(out, "isatty", None)
    room = shutil.get_terminal_size().columns if isatty is not None and isatty() else None
    lines, shortened = _lines(frame, room)
    for text in lines:
        out.write(text + "\n")
    rows = f"{frame.height:,} row{'s' if frame.height != 1 else ''}"
    if shortened:
        rows += "; text shortened with … to fit: -o FILE keeps it whole"
    out.write(f"({rows})\n")
