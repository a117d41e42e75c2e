"""The host call tree: which host event encloses which, per thread, by time containment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from ...compiled import compiled_module

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the viewer's first screen needs none (profview.lazy_numpy)
    from ... import lazy_numpy as np

_calltree = compiled_module("_calltree")  # None: the nesting pass runs in Python

#: Float rounding of µs timestamps: a child may appear to end this much after its parent.
CONTAINMENT_TOLERANCE_US = 0.002


@dataclass
class CallTree:
    """Parent links over host events sorted by (pid, tid, ts, -dur).

    ``parent[i]`` is the innermost enclosing event (-1 at the root), ``op_parent[i]`` the innermost
    enclosing operator (cpu_op or user_annotation), and the descendants of ``i`` are exactly the
    rows ``i + 1 .. subtree_end[i] - 1``.
    """

    parent: np.ndarray
    op_parent: np.ndarray
    subtree_end: np.ndarray


def build_call_tree(host: pl.DataFrame) -> CallTree:
    """Nest the sorted host events of each thread by time containment (one pass with a stack).

    An event is a child of the innermost open event that contains it; one that outlasts the
    open event is not nested in it.  The pass runs in C (``native/calltree.c``) when it was built.
    """
    thread = thread_index(host)
    start = host["ts"].to_numpy()
    end = (host["ts"] + host["dur"]).to_numpy()
    is_op = host["is_op"].to_numpy().astype(np.uint8)
    if _calltree is not None:
        links = _calltree.nest(thread, start, end, is_op, CONTAINMENT_TOLERANCE_US)
        return CallTree(*(np.frombuffer(buffer, dtype=np.int64) for buffer in links))
    return _nest_in_python(thread.tolist(), start.tolist(), end.tolist(), is_op.tolist())


def thread_index(host: pl.DataFrame) -> np.ndarray:
    """Per host row, a number that changes exactly where (layer, nest_pid, nest_tid) does: its layer-thread."""
    keys = ("layer", "nest_pid", "nest_tid") if "layer" in host.columns else ("is_python", "pid", "tid")
    changed = pl.any_horizontal(pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys)
    return host.select(changed.fill_null(True).cum_sum().cast(pl.Int64))[:, 0].to_numpy()


def _nest_in_python(threads: list[int], starts: list[float], ends: list[float], is_op: list[int]) -> CallTree:
    """The stack pass of :func:`build_call_tree`, for installs without the compiled module."""
    n = len(threads)
    parent = [-1] * n
    op_parent = [-1] * n
    subtree_end = [n] * n
    stack: list[int] = []
    current = None
    for i in range(n):
        if threads[i] != current:
            for k in stack:
                subtree_end[k] = i
            stack.clear()
            current = threads[i]
        start, end = starts[i], ends[i]
        # Pop what ended before this event starts, and what it outlasts: events that only
        # partly overlap (a Python frame across a step boundary) are siblings, not children.
        while stack and (ends[stack[-1]] <= start or end > ends[stack[-1]] + CONTAINMENT_TOLERANCE_US):
            subtree_end[stack.pop()] = i
        if stack:
            top = stack[-1]
            parent[i] = top
            op_parent[i] = top if is_op[top] else op_parent[top]
        stack.append(i)
    return CallTree(
        np.asarray(parent, dtype=np.int64),
        np.asarray(op_parent, dtype=np.int64),
        np.asarray(subtree_end, dtype=np.int64),
    )


def fold_same_name(tree: CallTree, names: np.ndarray, foldable: np.ndarray) -> np.ndarray:
    """Per event, the event it folds into (itself if none), as torch's ``EventList._remove_dup_nodes``.

    An event folds into its parent when both have the same name (``names``: one integer code per
    name) and it is the parent's only child (every child counts: runtime calls, overhead ranges);
    a chain ``a > a > a`` folds into the outermost.  ``foldable`` marks the events this applies
    to (the operator layer).  Folding never depends on the order events are visited: a parent
    that absorbed its only child takes over that child's children, so the question for a
    grandchild is the same as in the unfolded tree (same name, the child had one child).
    """
    n = len(tree.parent)
    parent = tree.parent
    has_parent = parent >= 0
    children = np.bincount(parent[has_parent], minlength=n)
    safe_parent = np.where(has_parent, parent, 0)
    folds = foldable & has_parent & (children[safe_parent] == 1) & (names == names[safe_parent])
    target = np.where(folds, parent, np.arange(n))
    while True:  # pointer jumping: every event ends at the outermost of its same-name chain
        further = target[target]
        if np.array_equal(further, target):
            return target
        target = further


def ancestors(tree: CallTree, index: int) -> list[int]:
    """The chain of enclosing events of ``index``, innermost first."""
    chain: list[int] = []
    node = int(tree.parent[index])
    while node >= 0:
        chain.append(node)
        node = int(tree.parent[node])
    return chain


def subtree_mask(tree: CallTree, roots: np.ndarray) -> np.ndarray:
    """Boolean mask over host rows: True for each root and everything below it."""
    n = len(tree.parent)
    marks = np.zeros(n + 1, dtype=np.int64)
    np.add.at(marks, roots, 1)
    np.add.at(marks, tree.subtree_end[roots], -1)
    return np.cumsum(marks[:n]) > 0
