"""Drill-down between operators and the GPU work they launched.

``op_launches``: for an operator name, the kernels (and memcpy/memset) launched by its calls,
directly or through the operators below them.  ``kernel_launches``: for a kernel name, the
operator chains (and Python stacks, when recorded) that launched it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..frames import (
    CHAIN_SEPARATOR,
    HOST_CALL_KINDS,
    KERNEL_LAUNCH_COLUMNS,
    OP_LAUNCH_COLUMNS,
    UNATTRIBUTED,
    display_name,
    with_share,
)
from .calltree import subtree_mask
from .model import TraceModel, innermost_frames


def op_launches(model: TraceModel, op_name: str) -> pl.DataFrame:
    """GPU work launched by every call of ``op_name`` (a name as the operator table shows it).

    For a runtime call (``cudaLaunchKernel``, ``cudaGraphLaunch``), the GPU work its calls launched.

    ``calls`` counts all launches under the operator, ``direct_calls`` those whose innermost
    launching operator is the operator itself; ``pct`` is the share of the operator's device time.
    """
    gpu = model.gpu
    if op_name == UNATTRIBUTED:
        launched = gpu.filter(pl.col("op_row").is_null()).with_columns(pl.lit(True).alias("direct"))
    else:
        names = model.host.select(display_name(pl.col("name")).alias("name"), "is_op", "kind")
        named = (names["name"] == op_name).to_numpy()
        roots = np.flatnonzero(named & names["is_op"].to_numpy())
        inside = subtree_mask(model.tree, roots)
        root_mask = np.zeros(len(inside), dtype=bool)
        root_mask[roots] = True
        attributed = gpu.filter(pl.col("op_row").is_not_null())
        op_rows = attributed["op_row"].to_numpy()
        launched = attributed.filter(pl.Series(inside[op_rows])).with_columns(
            pl.Series("direct", root_mask[op_rows][inside[op_rows]])
        )
        # A runtime call (a row of the table too): the GPU work each of its calls launched.
        calls = np.flatnonzero(named & names["kind"].is_in(HOST_CALL_KINDS).to_numpy())
        if len(calls):
            by_call = gpu.filter(pl.col("launch_row").is_in(pl.Series(calls).implode()))
            launched = pl.concat([launched, by_call.with_columns(pl.lit(True).alias("direct"))])
    return launch_table(launched)


def launch_table(launched: pl.DataFrame) -> pl.DataFrame:
    """GPU work (with a boolean ``direct`` column) grouped by name: :data:`OP_LAUNCH_COLUMNS`."""
    table = launched.group_by("name", "kind").agg(
        pl.len().cast(pl.Int64).alias("calls"),
        pl.col("direct").sum().cast(pl.Int64).alias("direct_calls"),
        pl.col("dur").sum().alias("total_us"),
        pl.col("dur").mean().alias("mean_us"),
        pl.col("dur").min().alias("min_us"),
        pl.col("dur").max().alias("max_us"),
    )
    table = with_share(table.with_columns(pl.col("kind").cast(pl.String)))
    return table.select(OP_LAUNCH_COLUMNS).sort(["total_us", "name"], descending=[True, False])


def kernel_launches(model: TraceModel, kernel_name: str) -> pl.DataFrame:
    """Where the GPU events named ``kernel_name`` came from: one row per launching path.

    ``op`` is the innermost launching operator, ``op_chain`` the operators enclosing it
    (outermost first), ``python_stack`` the Python frames enclosing it, innermost first (the frame
    nearest the operator leads, so launches from different call sites differ at a glance) when the
    trace was recorded with_stack, or the legacy ``Call stack`` argument (innermost first too).
    """
    calls = model.gpu.filter(pl.col("name") == kernel_name)
    per_op = calls.group_by("op_row").agg(
        pl.len().cast(pl.Int64).alias("calls"),
        pl.col("dur").sum().alias("total_us"),
        pl.col("dur").min().alias("min_us"),
        pl.col("dur").max().alias("max_us"),
    )
    paths = _launch_paths(model, per_op["op_row"].to_list())
    per_op = per_op.with_columns(
        pl.Series("op", [p[0] for p in paths], dtype=pl.String),
        pl.Series("op_chain", [p[1] for p in paths], dtype=pl.String),
        pl.Series("python_stack", [p[2] for p in paths], dtype=pl.String),
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


def _launch_paths(model: TraceModel, op_rows: list[int | None]) -> list[tuple[str, str, str]]:
    """(op, op chain, python stack) for each launching operator row (None: unattributed).

    Only the rows on these paths are read from the host frame (a decode trace has thousands of
    launching rows among millions of host events); the chains are joined once per row, each from
    its parent's (issue 13: the drill-down within 2x of the kernel listing).
    """
    parent = model.tree.parent
    known = sorted({row for row in op_rows if row is not None})
    innermost = dict(zip(known, innermost_frames(model, known), strict=True))
    up: dict[int, int] = {}  # every row on a path -> its parent
    for start in [*known, *innermost.values()]:
        node = start
        while node >= 0 and node not in up:
            up[node] = node = int(parent[node])
    rows = list(up)
    on_paths = model.host.select(pl.col("name").gather(rows), pl.col("call_stack").gather(rows))
    names = dict(zip(rows, on_paths.select(display_name(pl.col("name")))["name"].to_list(), strict=True))
    legacy = dict(zip(rows, on_paths["call_stack"].to_list(), strict=True))
    op_chains: dict[int, str] = {}
    frame_stacks: dict[int, str] = {-1: ""}

    def op_chain(row: int) -> str:
        """Operator names from the outermost down to ``row``."""
        pending = []
        node = row
        while node >= 0 and node not in op_chains:
            pending.append(node)
            node = up[node]
        text = op_chains.get(node, "")
        for item in reversed(pending):
            text = f"{text}{CHAIN_SEPARATOR}{names[item]}" if text else names[item]
            op_chains[item] = text
        return op_chains[row]

    def frame_stack(frame: int) -> str:
        """Python frames from ``frame`` (innermost) out to the outermost (joined once per frame:
        stacks are deep, so no text is built for the frames in between)."""
        if frame not in frame_stacks:
            stack = []
            node = frame
            while node >= 0:
                stack.append(names[node])
                node = up[node]
            frame_stacks[frame] = CHAIN_SEPARATOR.join(stack)
        return frame_stacks[frame]

    paths = []
    for row in op_rows:
        if row is None:
            paths.append((UNATTRIBUTED, UNATTRIBUTED, ""))
            continue
        stack = frame_stack(innermost[row])
        if not stack:  # the legacy ``Call stack`` argument, already innermost first
            stack = CHAIN_SEPARATOR.join(frame for frame in (legacy[row] or "").split(";") if frame)
        paths.append((names[row], op_chain(row), stack))
    return paths
