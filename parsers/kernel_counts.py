"""Kernel-dispatch count lists (``"name" : count`` per line, as READMEs and logs print them)."""

from __future__ import annotations

import re

import polars as pl

from ..frames import conform_kernels

LINE = re.compile(r'^\s*"(?P<name>(?:[^"\\]|\\.)+)"\s*:\s*(?P<count>\d+)\s*,?\s*$')
MIN_LINES = 3


def parse_kernel_counts(text: str) -> pl.DataFrame | None:
    """A kernels frame (name, calls; times unknown) from the count lines, or None if too few."""
    rows = [(m.group("name"), int(m.group("count"))) for m in map(LINE.match, text.splitlines()) if m]
    if len(rows) < MIN_LINES:
        return None
    frame = pl.DataFrame(rows, schema={"name": pl.String, "calls": pl.Int64}, orient="row")
    frame = frame.group_by("name", maintain_order=True).agg(pl.col("calls").sum())
    return conform_kernels(frame).sort("calls", descending=True, maintain_order=True)
