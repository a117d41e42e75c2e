"""Two snapshots compared: what grew by allocation site and by segment.

``sites_diff`` joins the two ``sites`` tables (:mod:`.views`) on the site: ``bytes_delta`` and
``count_delta`` per site (a site on one side only counts as zero on the other), so the deltas sum
exactly to the change in ``allocated_bytes``.  ``segments_diff`` does the same per device and
pool with the reserved, allocated and free bytes of its segments.
"""

from __future__ import annotations

import polars as pl

from .totals import LIVE

SITES_DIFF_SCHEMA: dict[str, pl.DataType] = {
    "site": pl.String(), "bytes_a": pl.Int64(), "bytes_b": pl.Int64(), "bytes_delta": pl.Int64(),
    "count_a": pl.Int64(), "count_b": pl.Int64(), "count_delta": pl.Int64(), "pct_change": pl.Float64(),
    "status": pl.String(),
}


def sites_diff(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """Per site of either side (:data:`SITES_DIFF_SCHEMA`): bytes and count on each, the deltas,
    the change in % of A (null for a site new in B) and ``status`` (``new``, ``gone``, ``both``);
    largest growth first."""
    left = a.select("site", bytes_a="bytes", count_a="count")
    right = b.select("site", bytes_b="bytes", count_b="count")
    joined = left.join(right, on="site", how="full", coalesce=True)
    status = (
        pl.when(pl.col("bytes_a").is_null()).then(pl.lit("new")).when(pl.col("bytes_b").is_null())
        .then(pl.lit("gone")).otherwise(pl.lit("both"))
    )
    filled = joined.with_columns(status=status).with_columns(
        pl.col("bytes_a", "bytes_b", "count_a", "count_b").fill_null(0)
    )
    return (
        filled.with_columns(
            bytes_delta=pl.col("bytes_b") - pl.col("bytes_a"),
            count_delta=pl.col("count_b") - pl.col("count_a"),
        )
        .with_columns(
            pct_change=pl.when(pl.col("bytes_a") > 0)
            .then(100.0 * pl.col("bytes_delta") / pl.col("bytes_a"))
            .otherwise(None)
        )
        .sort(pl.col("bytes_delta").abs(), "site", descending=[True, False])
        .select(list(SITES_DIFF_SCHEMA))
    )


def _segment_groups(segments: pl.DataFrame, blocks: pl.DataFrame) -> pl.DataFrame:
    live = (
        blocks.group_by("segment")
        .agg(
            allocated=pl.col("size").filter(pl.col("state").is_in(LIVE)).sum(),
            free=pl.col("size").filter(~pl.col("state").is_in(LIVE)).sum(),
        )
    )
    return (
        segments.join(live, on="segment", how="left")
        .group_by("device", "segment_type", "pool")
        .agg(
            segments=pl.len().cast(pl.Int64()),
            reserved=pl.col("total_size").sum(),
            allocated=pl.col("allocated").fill_null(0).sum(),
            free=pl.col("free").fill_null(0).sum(),
        )
    )


def segments_diff(
    segments_a: pl.DataFrame, blocks_a: pl.DataFrame, segments_b: pl.DataFrame, blocks_b: pl.DataFrame
) -> pl.DataFrame:
    """Per device, pool type (``large``/``small``) and pool: segments and their reserved, allocated
    and free bytes on each side, and the deltas."""
    keys = ["device", "segment_type", "pool"]
    left = _segment_groups(segments_a, blocks_a)
    right = _segment_groups(segments_b, blocks_b)
    joined = left.join(right, on=keys, how="full", coalesce=True, suffix="_b")
    figures = ["segments", "reserved", "allocated", "free"]
    joined = joined.rename({name: f"{name}_a" for name in figures}).with_columns(
        [pl.col(f"{name}_{side}").fill_null(0) for name in figures for side in ("a", "b")]
    )
    out = joined.with_columns([(pl.col(f"{n}_b") - pl.col(f"{n}_a")).alias(f"{n}_delta") for n in figures])
    order = [*keys, *[f"{n}_{s}" for n in figures for s in ("a", "b", "delta")]]
    renamed = {f"{n}_{s}": (f"{n}_bytes_{s}" if n != "segments" else f"segments_{s}") for n in figures
               for s in ("a", "b", "delta")}
    return out.select(order).rename(renamed).sort("device", "segment_type", "pool")
