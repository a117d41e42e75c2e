"""``profview diff A B --summary`` for two memory snapshots: the totals side by side, then the
sites that grew and shrank most (bytes and count), whose deltas sum to the change in allocated
bytes."""

from __future__ import annotations

import shutil
import sys
from typing import TYPE_CHECKING, TextIO

import polars as pl

from ..frames import fmt_bytes
from ..sanitize import clean
from .frame_text import frame_lines

if TYPE_CHECKING:
    from ..diff.snapshot_comparison import SnapshotComparison


def _signed(value: int | None) -> str:
    if value is None:
        return "-"
    return ("+" if value > 0 else "") + fmt_bytes(value)


def snapshot_diff_lines(comparison: SnapshotComparison, top: int = 10) -> list[str]:
    """The summary's lines (sanitised)."""
    room = max(80, shutil.get_terminal_size((100, 24)).columns)
    lines = [f"before: {clean(comparison.before.path)}", f"after:  {clean(comparison.after.path)}", ""]
    totals = pl.DataFrame(
        [
            {
                "figure": row["figure"],
                "before": fmt_bytes(row["before"]) if "bytes" in row["figure"] else f"{row['before']:,}",
                "after": fmt_bytes(row["after"]) if "bytes" in row["figure"] else f"{row['after']:,}",
                "change": _signed(row["delta"]) if "bytes" in row["figure"] else f"{row['delta']:+,}",
            }
            for row in comparison.totals()
        ]
    )
    lines.extend(frame_lines(totals, room))
    for view, what in (("sites", "allocated bytes at the snapshot"), ("peak", "bytes live at the peak")):
        lines.extend(_site_changes(comparison.view(view), what, top, room))
    return lines


def _site_changes(sites: pl.DataFrame, what: str, top: int, room: int) -> list[str]:
    """The sites that grew and shrank most, under a line saying what their changes sum to."""
    change = int(sites["bytes_delta"].sum()) if sites.height else 0
    lines = ["", f"{what} by site (the changes sum to {_signed(change)}):"]
    for title, part in (
        ("grew", sites.filter(pl.col("bytes_delta") > 0).sort("bytes_delta", descending=True)),
        ("shrank", sites.filter(pl.col("bytes_delta") < 0).sort("bytes_delta")),
    ):
        if part.is_empty():
            lines.append(f"  {title}: none")
            continue
        shown = part.head(top).select(
            change=pl.col("bytes_delta").map_elements(_signed, return_dtype=pl.String),
            count=pl.col("count_delta"),
            before=pl.col("bytes_a").map_elements(fmt_bytes, return_dtype=pl.String),
            after=pl.col("bytes_b").map_elements(fmt_bytes, return_dtype=pl.String),
            status="status",
            site="site",
        )
        lines.append(f"  {title}:")
        lines.extend("    " + line for line in frame_lines(shown, room - 4))
    return lines


def print_snapshot_diff_summary(comparison: SnapshotComparison, top: int, stream: TextIO | None = None) -> None:
    """The summary on stdout."""
    (stream or sys.stdout).write("\n".join(snapshot_diff_lines(comparison, top)) + "\n")
