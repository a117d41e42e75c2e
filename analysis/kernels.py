"""The kernel table: one row per kernel name (or name + launch shape)."""

from __future__ import annotations

import polars as pl

#: Columns of the kernel table, in order.
KERNEL_COLUMNS = (
    "name",
    "calls",
    "total_us",
    "mean_us",
    "median_us",
    "min_us",
    "max_us",
    "std_us",
    "pct",
    "grid",
    "block",
    "registers",
    "shared_mem",
    "occupancy",
    "shapes",
)
SHAPE_KEYS = ("grid", "block", "registers", "shared_mem")
TEXT_COLUMNS = ("name", "grid", "block")


def conform_kernels(frame: pl.DataFrame) -> pl.DataFrame:
    """A kernel table from a format that knows only some columns: the rest null, in order."""
    missing = [
        pl.lit(None, dtype=pl.String if c in TEXT_COLUMNS else pl.Int64 if c == "calls" else pl.Float64).alias(c)
        for c in KERNEL_COLUMNS
        if c not in frame.columns
    ]
    return frame.with_columns(missing).select(KERNEL_COLUMNS)


def kernel_table(gpu: pl.DataFrame, by_shape: bool = False) -> pl.DataFrame:
    """Aggregate kernel events (``kind == "kernel"`` rows of the GPU frame).

    ``pct`` is each row's share of all kernel time.  Grouped by name, the shape columns hold the
    most frequent launch shape and ``shapes`` counts the distinct shapes; grouped by name and
    shape (``by_shape``), each row is one shape.
    """
    kernels = gpu.filter(pl.col("kind") == "kernel")
    keys = ["name", *SHAPE_KEYS] if by_shape else ["name"]
    shape_aggs = [] if by_shape else [pl.col(k).drop_nulls().mode().sort().first().alias(k) for k in SHAPE_KEYS]
    table = kernels.group_by(keys).agg(
        pl.len().cast(pl.Int64).alias("calls"),
        pl.col("dur").sum().alias("total_us"),
        pl.col("dur").mean().alias("mean_us"),
        pl.col("dur").median().alias("median_us"),
        pl.col("dur").min().alias("min_us"),
        pl.col("dur").max().alias("max_us"),
        pl.col("dur").std(ddof=0).fill_null(0.0).alias("std_us"),
        pl.col("occupancy").mean().alias("occupancy"),
        pl.struct(SHAPE_KEYS).n_unique().cast(pl.Int64).alias("shapes"),
        *shape_aggs,
    )
    total = table["total_us"].sort().sum() or 0.0  # sorted: the same sum on every run
    table = table.with_columns((pl.col("total_us") / total * 100.0 if total else pl.lit(0.0)).alias("pct"))
    return table.select(KERNEL_COLUMNS).sort(["total_us", "name"], descending=[True, False])
