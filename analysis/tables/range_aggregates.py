"""Per-name aggregates of a time range of a trace, as Perfetto's area selection gives them.

A range is ``[start, end)`` in µs on the trace's clock.  An event is in it when it overlaps it
(``ts < end`` and ``ts + dur > start``); its time in the range is the overlap,
``min(end, ts + dur) - max(start, ts)``, so an event cut by an edge counts only its part inside.
One row per (``kind``, ``name``): GPU work (``kernel``, ``memcpy``, ``memset``) and host operators
(``cpu_op``, ``user_annotation``; runtime and driver calls are left out, as the Operators table
leaves them), with

* ``count``: the events overlapping the range;
* ``total_us``: their time in the range;
* ``pct_of_range``: ``total_us`` as a share of the range's length (nested operators each count
  their own time, so a column of host shares may sum above 100%, as Perfetto's does);
* ``whole_us``: their whole durations, inside the range or not.

Worked example: a range 100 µs long, 40-140 µs, over kernel ``k`` at 30-50 µs and 120-200 µs:
``count`` 2, ``total_us`` (50 - 40) + (140 - 120) = 30, ``pct_of_range`` 30.0, ``whole_us`` 100.
"""

from __future__ import annotations

import polars as pl

RANGE_COLUMNS = ("kind", "name", "count", "total_us", "pct_of_range", "whole_us")
#: Host kinds aggregated (the operators' and the user's ranges).
HOST_KINDS = ("cpu_op", "user_annotation")


def range_aggregates(gpu: pl.DataFrame, host: pl.DataFrame, start: float, end: float) -> pl.DataFrame:
    """The per-name aggregates of ``[start, end)`` (µs on the frames' clock) over ``gpu`` and
    ``host`` (frames with ``kind``, ``name``, ``ts``, ``dur``), largest ``total_us`` first."""
    length = end - start
    frames = [
        frame.select(pl.col("kind").cast(pl.String), pl.col("name").cast(pl.String), "ts", "dur")
        for frame in (gpu, host.filter(pl.col("kind").cast(pl.String).is_in(HOST_KINDS)))
    ]
    events = pl.concat(frames).filter((pl.col("ts") < end) & (pl.col("ts") + pl.col("dur") > start))
    inside = pl.min_horizontal(pl.col("ts") + pl.col("dur"), pl.lit(end)) - pl.max_horizontal("ts", pl.lit(start))
    table = events.group_by("kind", "name").agg(
        pl.len().cast(pl.Int64).alias("count"),
        inside.sum().round(3).alias("total_us"),
        pl.col("dur").sum().round(3).alias("whole_us"),
    )
    table = table.with_columns((100.0 * pl.col("total_us") / length).round(3).alias("pct_of_range"))
    return table.select(RANGE_COLUMNS).sort(["total_us", "kind", "name"], descending=[True, False, False])


__all__ = ["HOST_KINDS", "RANGE_COLUMNS", "range_aggregates"]
