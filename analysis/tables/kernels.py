"""The kernel table: one row per kernel name (or name + launch shape)."""

from __future__ import annotations

import polars as pl

from ...frames import KERNEL_COLUMNS, SHAPE_KEYS, with_share


def kernel_table(gpu: pl.DataFrame, by_shape: bool = False) -> pl.DataFrame:
    """Aggregate kernel events (``kind == "kernel"`` rows of the GPU frame).

    ``pct`` is each row's share of all kernel time.  Grouped by name, the shape columns hold the
    most frequent launch shape and ``shapes`` counts the distinct shapes; grouped by name and
    shape (``by_shape``), each row is one shape.

    Where the trace records kernels' short names (an Nsight Systems export: ``shortName`` beside
    the demangled name), ``short_name`` is the last column (the one most of its calls have; null for
    a kernel without one); a trace that records none (Kineto) has no such column, so its table
    is what it always was.
    """
    kernels = gpu.filter(pl.col("kind") == "kernel")
    short = "short_name" in kernels.columns and kernels["short_name"].null_count() < kernels.height
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
        # Kineto writes 0 where it did not estimate the occupancy: those calls are left out (none: null).
        pl.col("occupancy").filter(pl.col("occupancy") > 0).mean().alias("occupancy"),
        pl.struct(SHAPE_KEYS).n_unique().cast(pl.Int64).alias("shapes"),
        *shape_aggs,
        *([pl.col("short_name").drop_nulls().mode().sort().first().cast(pl.String)] if short else []),
    )
    # Last, so the figures keep their place beside the name (the viewer at 80 columns shows them).
    columns = [*KERNEL_COLUMNS, "short_name"] if short else list(KERNEL_COLUMNS)
    table = with_share(table).select(columns)
    table = table.with_columns(pl.col(SHAPE_KEYS[:2]).cast(pl.String))  # as text tables' (not Categorical)
    # Ties broken by every key (a name's shapes of equal time), so that the view is the same from run to run.
    order = ["total_us", *keys]
    return table.sort(order, descending=[True] + [False] * len(keys))
