"""The operator table: host and device, self and total time per operator name (and per runtime call
and overhead range), with torch's key_averages rules (docs/figures.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from ...frames import CUT_REPLAY, HOST_CALL_KINDS, OPERATOR_COLUMNS, UNATTRIBUTED, display_name
from ..trace.calltree import fold_same_name
from ..trace.model import ASYNC_LAYER, OP_LAYER, TRITON_HOST_COLUMNS, TraceModel

#: The host columns an operator row keeps (what the operator, efficiency and step views read):
#: the rest of the host frame (links, stacks, nesting threads) is not copied with the rows.
OPERATOR_ROW_COLUMNS = (
    "row",
    "kind",
    "name",
    "pid",
    "tid",
    "ts",
    "dur",
    "end",
    "is_op",
    "layer",
    "input_dims",
    "input_type",
    "concrete_inputs",
    "flops",
)


def operator_rows(
    model: TraceModel, only: Callable[[str], bool] | None = None, keep_folded: bool = False
) -> pl.DataFrame:
    """One row per operator call, runtime/driver call and overhead range (host row), times in µs;
    ``only``: of the names it accepts alone (the same rows, without copying the rest: the perf
    model's calls are a tenth of them); ``keep_folded``: the calls folded into their parent too,
    with their own device time (the perf model's calls: which of two nested calls is a row must
    not depend on whether another thread's calls landed between them).

    The rules are torch's ``key_averages`` (docs/figures.md): a call that is the only child of a
    call of the same name folds into it (:func:`fold_same_name`), its GPU work moving up;
    host_total = the call's duration; host_self = that minus its direct children (operators,
    runtime calls, overhead ranges; the async collective annotations and Python frames are
    other layers), 0 for an async collective annotation; device_self = GPU work (kernels,
    memcpy, memset) whose innermost launching operator is this call; device_total =
    device_self of the call and every call below it.
    Runtime calls and overhead ranges carry no GPU time of their own.
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
    in_op_layer = (host["layer"] == OP_LAYER).to_numpy()
    # One code per distinct name (only equality matters): a categorical's codes, no string sort.
    codes = pl.col("name").cast(pl.String).fill_null("").cast(pl.Categorical).to_physical()
    names = host.select(codes)[:, 0].to_numpy()
    into = fold_same_name(tree, names, in_op_layer)
    folded = into != np.arange(n)
    np.add.at(device_self, into[folded], device_self[folded])
    # Direct children in the operator layer, counted for the call they belong to after folding.
    counted = in_op_layer & (tree.parent >= 0) & ~folded
    child_time = np.zeros(n)
    np.add.at(child_time, into[tree.parent[counted]], durations[counted])
    # An async annotation is nobody's parent: torch gives it no self time (its span is the
    # collective's, and the calls inside it are their caller's children), so self times add up.
    self_time = np.where(host["layer"].to_numpy() == ASYNC_LAYER, 0.0, np.clip(durations - child_time, 0.0, None))
    triton = [c for c in TRITON_HOST_COLUMNS if c in host.columns]  # issue 36: Triton host ops' kernels
    rows = host.select(
        *OPERATOR_ROW_COLUMNS,
        *triton,
        pl.Series("host_self_us", self_time),
        pl.col("dur").alias("host_total_us"),
        pl.Series("device_self_us", device_self),
        pl.Series("device_total_us", device_total),
    )
    shown = (pl.col("is_op") | pl.col("kind").is_in(HOST_CALL_KINDS)) & pl.Series(~folded | keep_folded)
    if only is not None:
        accepted = [name for name in host["name"].unique().drop_nulls().to_list() if only(name)]
        shown &= pl.col("name").is_in(accepted)
    return rows.filter(shown)


def operator_table(rows: pl.DataFrame, unattributed_gpu: pl.DataFrame, by_shapes: bool = False) -> pl.DataFrame:
    """Group operator calls by name (and input shapes); add the ``(unattributed)`` GPU row.

    ``unattributed_gpu`` is the GPU work no operator launched; it becomes one row so that the
    device_self column adds up to all GPU time.  Where it has ``cut_graph``/``cut_replay`` (the
    graph and replay of a replay launched before the window: cut by it, or queued), that work is a
    :data:`~profview.frames.CUT_REPLAY` row per graph instead, ``calls`` those replays.  Such a
    row's host times are null: no operator ran on the host for it, so it has none to give.
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
    groups: list[tuple[str, int, float]] = []
    rest = unattributed_gpu
    if "cut_graph" in unattributed_gpu.columns:
        cut = unattributed_gpu.filter(pl.col("cut_graph").is_not_null())
        rest = unattributed_gpu.filter(pl.col("cut_graph").is_null())
        per_graph = cut.group_by("cut_graph").agg(pl.col("cut_replay").n_unique(), pl.col("dur").sum())
        for graph, replays, us in per_graph.sort("cut_graph").iter_rows():
            groups.append((CUT_REPLAY.format(graph=graph), int(replays), float(us)))
    if rest.height:
        groups.append((UNATTRIBUTED, rest.height, float(rest["dur"].sum())))
    for name, calls, gpu_time in groups:
        extra: dict[str, list[object]] = {
            "name": [name],
            "kind": ["gpu"],
            "calls": [calls],
            # GPU work no operator launched has no host time to give: unknown, not 0.
            "host_self_us": [None],
            "host_total_us": [None],
            "device_self_us": [gpu_time],
            "device_total_us": [gpu_time],
        }
        if by_shapes:
            extra["input_dims"] = [None]
        table = pl.concat([table, pl.DataFrame(extra).select(table.columns).cast(table.schema)])
    columns = [*OPERATOR_COLUMNS, "input_dims"] if by_shapes else list(OPERATOR_COLUMNS)
    # Ties broken by every key (a name's shapes of equal time), so that the view is the same from run to run.
    order = ["device_total_us", "host_total_us", *keys]
    return table.select(columns).sort(order, descending=[True, True] + [False] * len(keys))
