"""Polars scalars as plain floats: what ``Series.min()``, ``.mean()`` or a row's cell return is typed
as any Python value; these say what the figures are."""

from __future__ import annotations

import polars as pl


def as_float(value: object) -> float | None:
    """A numeric scalar as a float; None when it is missing."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"not a number: {value!r}")


def mean_or_zero(frame: pl.DataFrame, column: str) -> float:
    """The mean of a numeric column; 0.0 for an empty frame or an all-missing column."""
    return as_float(frame[column].mean()) or 0.0
