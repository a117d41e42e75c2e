"""The operator table: host and device, self and total time per operator name."""

from __future__ import annotations

import numpy as np
import polars as pl

from ..frames import OPERATOR_COLUMNS, UNATTRIBUTED, display_name
from .model import TraceModel


def operator_rows(model: TraceModel) -> pl.DataFrame:
    """One row per operator call (host row) with its four times in µs.

    host_total = the call's duration; host_self = that minus its direct child operators and
    the runtime calls it made (as in torch's key_averages);
    device_self = GPU work (kernels, memcpy, memset) whose innermost launching operator is this
    call; device_total = device_self of the call and every call below it.
    """
    host, tree = model.host, model.tree
    n = host.height
    device_self = np.zeros(n)
    attributed = model.gpu.filter(pl.col("op_row").is_not_null())
    if attributed.height:
        np.add.at(device_self, attributed["op_row"].to_numpy(), attributed["dur"].to_numpy())
    cumulative = np.concatenate([[0.0], np.cumsum(device_self)])
    device_total = cumulative[tree.subtree_end] - cumulative[np.arange(n)]
    durations = host["dur"].to_numpy()
    # Direct children in the operator layer: child operators and the runtime calls an operator
    # makes itself (as torch's key_averages counts Self CPU).  Python frames are another layer.
    in_op_layer = ~host["is_python"].to_numpy() & (tree.parent >= 0)
    child_ops = np.zeros(n)
    np.add.at(child_ops, tree.parent[in_op_layer], durations[in_op_layer])
    rows = host.with_columns(
        pl.Series("host_self_us", np.clip(durations - child_ops, 0.0, None)),
        pl.col("dur").alias("host_total_us"),
        pl.Series("device_self_us", device_self),
        pl.Series("device_total_us", device_total),
    )
    return rows.filter(pl.col("is_op"))


def operator_table(rows: pl.DataFrame, unattributed_gpu: pl.DataFrame, by_shapes: bool = False) -> pl.DataFrame:
    """Group operator calls by name (and input shapes); add the ``(unattributed)`` GPU row.

    ``unattributed_gpu`` is the GPU work no operator launched; it becomes one row so that the
    device_self column adds up to all GPU time.
    """
    keys = ["name", "input_dims"] if by_shapes else ["name"]
    table = (
        rows.with_columns(display_name(pl.col("name")).alias("name"), pl.col("kind").cast(pl.String))
        .group_by(keys)
        .agg(
            pl.col("kind").first(),
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("host_self_us").sum(),
            pl.col("host_total_us").sum(),
            pl.col("device_self_us").sum(),
            pl.col("device_total_us").sum(),
        )
    )
    if unattributed_gpu.height:
        gpu_time = float(unattributed_gpu["dur"].sum())
        extra = {
            "name": [UNATTRIBUTED],
            "kind": ["gpu"],
            "calls": [unattributed_gpu.height],
            "host_self_us": [0.0],
            "host_total_us": [0.0],
            "device_self_us": [gpu_time],
            "device_total_us": [gpu_time],
        }
        if by_shapes:
            extra["input_dims"] = [None]
        table = pl.concat([table, pl.DataFrame(extra).select(table.columns).cast(table.schema)])
    columns = [*OPERATOR_COLUMNS, "input_dims"] if by_shapes else list(OPERATOR_COLUMNS)
    return table.select(columns).sort(["device_total_us", "host_total_us", "name"], descending=[True, True, False])
