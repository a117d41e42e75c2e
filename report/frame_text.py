"""Any frame as an aligned text table on the terminal (``profview query`` without ``-o``).

Every cell is sanitised (:func:`profview.sanitize.clean`: no escape sequence from a trace reaches
the terminal) and whole: a line is as wide as its widest cells, never cut, so what is printed is
what a file would hold.  Numbers are right-aligned; floats keep three decimals (the nanosecond of
a µs figure, as CSV exports write them); a null is ``-``.
"""

from __future__ import annotations

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


def frame_lines(frame: pl.DataFrame) -> list[str]:
    """The header, a rule, and one line per row, columns two spaces apart."""
    frame = frame.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))
    headers = [clean(c) for c in frame.columns]
    rows = [[_cell(v) for v in row] for row in frame.iter_rows()]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    right = [dtype.is_numeric() for dtype in frame.dtypes]

    def line(cells: list[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return "  ".join(parts).rstrip()

    return [line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def print_frame(frame: pl.DataFrame, stream: TextIO | None = None) -> None:
    """Print ``frame`` aligned, then ``(N rows)``."""
    out = stream or sys.stdout
    for text in frame_lines(frame):
        out.write(text + "\n")
    out.write(f"({frame.height:,} row{'s' if frame.height != 1 else ''})\n")
