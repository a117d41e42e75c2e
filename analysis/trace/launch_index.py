"""A kernel's launchers from a launch index: every GPU event's launching operator row, and every
such row's launching path, computed once per trace so that a kernel's drill-down does not walk
the host rows again.

A row's path (``op``, ``op_chain``, ``python_stack``) depends on the linked model only, so
:func:`profview.analysis.tables.launches.launch_index` computes the paths of every launching row once
(the viewer after linking, the first drill-down export; the cache keeps them beside the model).
Then the launchers of any kernel are a group-by of its GPU events and two joins: no host row is
read, and this module needs Polars alone (no NumPy, no call tree).  Witness:
tests/analysis/trace/test_launch_index.py, against the per-kernel computation and the raw events
matched by correlation with the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ...frames import KERNEL_LAUNCH_COLUMNS, UNATTRIBUTED, with_share

#: The columns of the model's GPU frame a launch index holds.
KERNEL_LAUNCH_GPU_COLUMNS = ("name", "op_row", "dur")
LAUNCH_ROWS_SCHEMA = {"op_row": pl.Int64, "path": pl.Int64}
LAUNCH_PATHS_SCHEMA = {"path": pl.Int64, "op": pl.String, "op_chain": pl.String, "python_stack": pl.String}


@dataclass(frozen=True)
class LaunchIndex:
    """``gpu``: GPU events (:data:`KERNEL_LAUNCH_GPU_COLUMNS`; ``op_row`` null: no operator launched
    it); ``rows``: a launching operator row → its ``path`` (a number); ``paths``: a path number →
    ``op``, ``op_chain``, ``python_stack`` (the text, once per distinct path)."""

    gpu: pl.DataFrame
    rows: pl.DataFrame
    paths: pl.DataFrame


def kernel_launchers(index: LaunchIndex, kernel_name: str) -> pl.DataFrame:
    """Where the GPU events named ``kernel_name`` came from: one row per launching path
    (:data:`KERNEL_LAUNCH_COLUMNS`), longest first; see :func:`profview.analysis.tables.launches.kernel_launches`."""
    per_op = (
        index.gpu.filter(pl.col("name") == kernel_name)
        .group_by("op_row")
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("dur").sum().alias("total_us"),
            pl.col("dur").min().alias("min_us"),
            pl.col("dur").max().alias("max_us"),
        )
        .sort("op_row", nulls_last=True)
        .join(index.rows, on="op_row", how="left", maintain_order="left")
        .join(index.paths, on="path", how="left", maintain_order="left")
        .with_columns(  # a GPU event that no operator launched (no runtime call recorded)
            pl.col("op").fill_null(UNATTRIBUTED),
            pl.col("op_chain").fill_null(UNATTRIBUTED),
            pl.col("python_stack").fill_null(""),
        )
    )
    table = per_op.group_by("op", "op_chain", "python_stack").agg(
        pl.col("calls").sum(),
        pl.col("total_us").sum(),
        pl.col("min_us").min(),
        pl.col("max_us").max(),
    )
    table = with_share(table.with_columns((pl.col("total_us") / pl.col("calls")).alias("mean_us")))
    order = ["total_us", "op_chain", "python_stack"]  # all three: ties come out in one order on every run
    return table.select(KERNEL_LAUNCH_COLUMNS).sort(order, descending=[True, False, False])
