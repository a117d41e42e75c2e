"""Select, filter and sort a view of a profile: shared by the CLI, the viewer and exports."""

from __future__ import annotations

import re

import polars as pl

from .errors import ProfviewError
from .trace_profile import Profile

VIEW_NAMES = ("kernels", "ops", "steps", "launches")


def view_frame(
    profile: Profile,
    view: str,
    *,
    op: str | None = None,
    kernel: str | None = None,
    by_shape: bool = False,
    step: int | None = None,
) -> pl.DataFrame:
    """The frame of ``view``; ``launches`` needs ``op`` (kernels under it) or ``kernel``."""
    if view == "kernels":
        return profile.kernels(by_shape=by_shape, step=step)
    if view == "ops":
        return profile.ops(by_shapes=by_shape, step=step)
    if view == "steps":
        return profile.steps()
    if view == "launches":
        if kernel:
            return profile.kernel_launches(kernel)
        if not op:
            raise ProfviewError(profile.path, "--view launches needs --op NAME or --kernel NAME")
        return profile.launches(op)
    raise ProfviewError(None, f"unknown view {view!r}: choose one of {', '.join(VIEW_NAMES)}")


def filter_column(frame: pl.DataFrame) -> str | None:
    """The text column a filter matches: ``name`` where there is one, else the first text column."""
    if "name" in frame.columns:
        return "name"
    for column, dtype in frame.schema.items():
        if dtype == pl.String:
            return column
    return None


def compile_filter(pattern: str) -> str:
    """Validate a user regex (case-insensitive); raise ProfviewError if it is not one."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ProfviewError(None, f"bad --filter regex {pattern!r}: {exc}") from None
    return f"(?i){pattern}"


def refine(
    frame: pl.DataFrame,
    *,
    pattern: str | None = None,
    sort: str | None = None,
    ascending: bool = False,
    top: int | None = None,
) -> pl.DataFrame:
    """Filter rows whose name matches ``pattern``, sort by ``sort``, keep the first ``top``."""
    if pattern:
        column = filter_column(frame)
        if column is not None:
            frame = frame.filter(pl.col(column).str.contains(compile_filter(pattern)).fill_null(False))
    if sort:
        if sort not in frame.columns:
            raise ProfviewError(None, f"no column {sort!r} to sort by (columns: {', '.join(frame.columns)})")
        frame = frame.sort(sort, descending=not ascending, nulls_last=True, maintain_order=True)
    if top is not None:
        frame = frame.head(top)
    return frame
