"""What was open on a thread at an instant: the innermost host event of one layer at (pid, tid, ts).

The host frame of :class:`.model.TraceModel` is sorted by (is_python, pid, tid,
ts, -dur), so each thread's operators and its Python frames are two ts-sorted runs of rows.  The
innermost event open at ``ts`` is the latest-starting one at or before ``ts``, or the nearest of
its ancestors that has not ended yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from .model import TraceModel

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the viewer's first screen needs none (profview.lazy_numpy)
    from ... import lazy_numpy as np


def innermost_open(model: TraceModel, pid: pl.Series, tid: pl.Series, ts: np.ndarray, python: bool) -> np.ndarray:
    """Per query, the host row of the innermost event open at ``ts`` on (pid, tid); -1 if none.

    ``python`` picks the layer: Python frames (True), or operators (False: the innermost cpu_op /
    user_annotation, a runtime call found first gives way to its enclosing operator).
    """
    host = model.host
    result = np.full(len(ts), -1, dtype=np.int64)
    if len(ts) == 0 or host.height == 0:
        return result
    runs = (
        host.filter(pl.col("is_python") == python)
        .group_by("pid", "tid")
        .agg(pl.col("row").min().alias("lo"), (pl.col("row").max() + 1).alias("hi"))
    )
    bounds = {(p, t): (lo, hi) for p, t, lo, hi in runs.iter_rows()}
    starts = host["ts"].to_numpy()
    ends = host["end"].to_numpy()
    is_op = host["is_op"].to_numpy()
    parent = model.tree.parent
    queries = pl.DataFrame({"pid": pid, "tid": tid, "i": np.arange(len(ts))})
    for (p, t), group in queries.group_by("pid", "tid"):
        if (p, t) not in bounds:
            continue
        lo, hi = bounds[(p, t)]
        index = group["i"].to_numpy()
        at = ts[index]
        found = lo + np.searchsorted(starts[lo:hi], at, side="right") - 1
        for k, row, moment in zip(index.tolist(), found.tolist(), at.tolist(), strict=True):
            node = row if row >= lo else -1
            while node >= 0 and (ends[node] < moment or (not python and not is_op[node])):
                node = int(parent[node])
            result[k] = node
    return result


def chain(model: TraceModel, row: int) -> list[int]:
    """``row`` and its enclosing events (same layer and thread), outermost first."""
    rows = []
    node = row
    while node >= 0:
        rows.append(node)
        node = int(model.tree.parent[node])
    return rows[::-1]
