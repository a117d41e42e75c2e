"""Drill-down between operators and the GPU work they launched.

``op_launches``: for an operator name, the kernels (and memcpy/memset) launched by its calls,
directly or through the operators below them.  ``kernel_launches``: for a kernel name, the
operator chains (and Python stacks, when recorded) that launched it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ...frames import (
    CHAIN_SEPARATOR,
    HOST_CALL_KINDS,
    OP_LAUNCH_COLUMNS,
    UNATTRIBUTED,
    display_name,
    with_share,
)
from ..trace.calltree import subtree_mask
from ..trace.launch_index import (
    KERNEL_LAUNCH_GPU_COLUMNS,
    LAUNCH_PATHS_SCHEMA,
    LAUNCH_ROWS_SCHEMA,
    LaunchIndex,
    kernel_launchers,
)
from ..trace.model import TraceModel, innermost_frames

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the viewer's first screen needs none (profview.lazy_numpy)
    from ... import lazy_numpy as np


def op_launches(
    model: TraceModel, op_name: str, input_dims: str | None = None, replayed: pl.DataFrame | None = None
) -> pl.DataFrame:
    """GPU work launched by every call of ``op_name`` (a name as the operator table shows it);
    ``input_dims``: only its calls with these input shapes (issue 24: a row of the efficiency view);
    ``replayed``: GPU events (with ``direct``) graph replays ran for its captured calls (issue 36).

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
        if input_dims is not None:
            named &= (model.host["input_dims"] == input_dims).fill_null(False).to_numpy()
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
    if replayed is not None:
        keep = ["name", "kind", "dur", "direct"]
        launched = pl.concat([launched.select(keep), replayed.select(keep)])
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


#: The columns of the model :func:`launch_index` reads (a cached model is read with these only).
KERNEL_LAUNCH_HOST_COLUMNS = ("name", "call_stack", "is_python", "pid", "tid", "ts", "end", "row")


def launch_index(model: TraceModel, op_rows: list[int] | None = None) -> LaunchIndex:
    """The model's GPU events with the launching paths of the operator rows ``op_rows`` (None:
    every row that launched GPU work: what a trace computes once, issue 25)."""
    if op_rows is None:
        op_rows = model.gpu["op_row"].drop_nulls().unique().sort().to_list()
    found = _launch_paths(model, list(op_rows))
    numbers: dict[tuple[str, str, str], int] = {}
    path_of = [numbers.setdefault(path, len(numbers)) for path in found]
    rows = pl.DataFrame({"op_row": op_rows, "path": path_of}, schema=LAUNCH_ROWS_SCHEMA)
    texts = list(zip(*numbers, strict=True)) if numbers else [(), (), ()]
    paths = pl.DataFrame(
        {"path": list(numbers.values()), "op": texts[0], "op_chain": texts[1], "python_stack": texts[2]},
        schema=LAUNCH_PATHS_SCHEMA,
    )
    return LaunchIndex(model.gpu.select(KERNEL_LAUNCH_GPU_COLUMNS), rows, paths)


def kernel_launches(model: TraceModel, kernel_name: str) -> pl.DataFrame:
    """Where the GPU events named ``kernel_name`` came from: one row per launching path.

    ``op`` is the innermost launching operator, ``op_chain`` the operators enclosing it
    (outermost first), ``python_stack`` the Python frames enclosing it, innermost first (the frame
    nearest the operator leads, so launches from different call sites differ at a glance) when the
    trace was recorded with_stack, or the legacy ``Call stack`` argument (innermost first too).

    Only this kernel's launching rows get their paths here; a profile computes every row's once
    (:func:`launch_index`) and answers each kernel with :func:`kernel_launchers`: the same frame.
    """
    op_rows = model.gpu.filter(pl.col("name") == kernel_name)["op_row"].drop_nulls().unique().sort()
    return kernel_launchers(launch_index(model, op_rows.to_list()), kernel_name)


def _launch_paths(model: TraceModel, op_rows: list[int | None]) -> list[tuple[str, str, str]]:
    """(op, op chain, python stack) for each launching operator row (None: unattributed).

    A decode loop launches from thousands of rows that repeat a few paths, so every row on a
    launching path (operators and Python frames) first gets a path number: equal numbers for equal
    names all the way up to the root (a trie of (name, parent path), built one tree level at a time
    with NumPy).  Text is joined once per distinct path, and only the rows on these paths are read
    from the host frame (issue 13: the drill-down within 2x of the kernel listing).
    """
    parent = model.tree.parent
    known = [row for row in op_rows if row is not None]
    frames_of = np.array(innermost_frames(model, known), dtype=np.int64)
    rows = _rows_on_paths(parent, np.concatenate([np.array(known, dtype=np.int64), frames_of]))
    shown = model.host.select(display_name(pl.col("name").gather(rows)).alias("name"))["name"]
    names = shown.unique().sort().to_list()  # the dense ranks below number these
    codes = (shown.rank("dense") - 1).cast(pl.Int64).to_numpy()
    numbers, trie_name, trie_parent = _path_numbers(parent, rows, codes)
    at = np.searchsorted(rows, known)  # the known rows' places in ``rows`` (which holds them)
    frame_numbers = np.where(frames_of >= 0, numbers[np.searchsorted(rows, np.maximum(frames_of, 0))], -1)
    legacy = model.host["call_stack"].gather(known).to_list()

    def names_up(number: int) -> list[str]:
        """Names from path ``number`` up to the root (innermost first)."""
        out = []
        while number >= 0:
            out.append(names[trie_name[number]])
            number = trie_parent[number]
        return out

    op_chains: dict[int, str] = {}
    frame_stacks: dict[int, str] = {-1: ""}
    found = []
    for chain, frames, code, call_stack in zip(
        numbers[at].tolist(), frame_numbers.tolist(), codes[at].tolist(), legacy, strict=True
    ):
        if chain not in op_chains:
            op_chains[chain] = CHAIN_SEPARATOR.join(reversed(names_up(chain)))  # outermost first
        if frames not in frame_stacks:
            frame_stacks[frames] = CHAIN_SEPARATOR.join(names_up(frames))  # innermost first
        stack = frame_stacks[frames]
        if not stack:  # the legacy ``Call stack`` argument, already innermost first
            stack = CHAIN_SEPARATOR.join(frame for frame in (call_stack or "").split(";") if frame)
        found.append((names[code], op_chains[chain], stack))
    paths = iter(found)  # in the order of ``known``: the unattributed rows go between
    return [(UNATTRIBUTED, UNATTRIBUTED, "") if row is None else next(paths) for row in op_rows]


def _rows_on_paths(parent: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The sorted host rows ``starts`` and all their ancestors (-1 starts are ignored)."""
    seen = np.zeros(len(parent), dtype=bool)
    frontier = np.unique(starts[starts >= 0])
    while frontier.size:
        seen[frontier] = True
        up = parent[frontier]
        up = up[up >= 0]
        frontier = np.unique(up[~seen[up]])
    return np.flatnonzero(seen)


def _path_numbers(parent: np.ndarray, rows: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, list[int], list[int]]:
    """Per row of ``rows`` (closed under parents), its path number, and the trie: per number, its
    name code and parent number (-1: a root).  Built level by level from the roots down."""
    index = np.full(len(parent), -1, dtype=np.int64)
    index[rows] = np.arange(len(rows))
    up = parent[rows]
    up_index = np.where(up >= 0, index[np.maximum(up, 0)], -1)  # each row's parent, as an index into rows
    depth = np.zeros(len(rows), dtype=np.int64)
    above = up_index.copy()
    while (more := above >= 0).any():  # depth = how many ancestors
        depth += more
        above = np.where(more, up_index[np.maximum(above, 0)], -1)
    numbers = np.full(len(rows), -1, dtype=np.int64)
    trie_name: list[int] = []
    trie_parent: list[int] = []
    for level in range(int(depth.max()) + 1 if len(rows) else 0):
        at = np.flatnonzero(depth == level)
        parent_numbers = np.where(up_index[at] >= 0, numbers[np.maximum(up_index[at], 0)], -1)
        base = len(trie_name) + 1  # above every parent number + 1 so far
        unique, inverse = np.unique(codes[at] * base + (parent_numbers + 1), return_inverse=True)
        numbers[at] = len(trie_name) + inverse
        trie_name += (unique // base).tolist()
        trie_parent += (unique % base - 1).tolist()
    return numbers, trie_name, trie_parent


def telling_frames(stacks: list[str], modules: bool = True) -> list[str]:
    """Per launching path's Python stack (innermost first, :data:`CHAIN_SEPARATOR`-joined), the first
    frame that differs between the paths: the frames every path shares at its innermost end
    (``<built-in method conv2d …>``, ``conv.py(534): _conv_forward``) are passed over.  A path
    whose stack is all shared (or the only one) gets its innermost ``nn.Module`` frame, else its
    first frame; a path without a stack gets ``""``."""
    frames = [stack.split(CHAIN_SEPARATOR) if stack else [] for stack in stacks]
    with_frames = [f for f in frames if f]
    shared = 0
    if len(with_frames) > 1:
        while all(len(f) > shared for f in with_frames) and len({f[shared] for f in with_frames}) == 1:
            shared += 1
    out = []
    for stack in frames:
        if not stack:
            out.append("")
        elif shared < len(stack) and len(with_frames) > 1:
            out.append(stack[shared])
        else:
            module = next((f for f in stack if modules and f.startswith("nn.Module: ")), None)
            out.append(module or stack[0])
    return out
