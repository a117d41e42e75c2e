"""How a cell is written where the table and the details line must agree (percentages, unknowns)."""

from __future__ import annotations

import polars as pl


def percent_or_dash(values: pl.Series) -> pl.Series:
    """``62.5%``; ``–`` where the value is unknown (Kineto's occupancy 0 means "not estimated")."""
    return pl.Series(values.name, [percent_cell(v) for v in values], dtype=pl.String)


def percent_cell(value: float | None) -> str:
    return "–" if value is None or value != value or value <= 0 else f"{value:.1f}%"


#: Columns written as a percentage (unknown: ``–``), in the table and the details line alike.
PERCENT_COLUMNS = ("occupancy",)


#: Boolean columns drawn as a mark, ``!`` where true and blank where false (readable without colour,
#: narrow at 80 columns); the frame keeps the boolean, so an export writes ``true``/``false``.
MARK_COLUMNS = ("outlier",)


__all__ = ["MARK_COLUMNS", "PERCENT_COLUMNS", "percent_cell", "percent_or_dash"]
