"""The host call tree: which host event encloses which, per thread, by time containment."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

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
    open event is not nested in it.
    """
    n = host.height
    threads = (host["is_python"].cast(pl.String) + "\x00" + host["pid"] + "\x00" + host["tid"]).to_list()
    starts = host["ts"].to_list()
    ends = (host["ts"] + host["dur"]).to_list()
    is_op = host["is_op"].to_list()
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
