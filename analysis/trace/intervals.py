"""Sets of time intervals: union, intersection and difference lengths (µs), on NumPy arrays.

An interval set is a pair (starts, ends); :func:`union` makes it sorted and disjoint.
"""

from __future__ import annotations

import numpy as np

from .communication import merge_intervals

Intervals = tuple[np.ndarray, np.ndarray]


def union(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """The union of intervals, as sorted, disjoint (starts, ends)."""
    return merge_intervals(np.asarray(starts, dtype=float), np.asarray(ends, dtype=float))


def length(intervals: Intervals) -> float:
    """Total length of a disjoint interval set."""
    return float(np.sum(intervals[1] - intervals[0])) if len(intervals[0]) else 0.0


def intersection(a: Intervals, b: Intervals) -> Intervals:
    """The intersection of two disjoint sorted interval sets (disjoint, sorted)."""
    if not len(a[0]) or not len(b[0]):
        return np.zeros(0), np.zeros(0)
    # Every nonempty piece starts at a start of one set and lies inside an interval of the other.
    points = np.concatenate([a[0], b[0]])
    in_a = _containing(a, points)
    in_b = _containing(b, points)
    keep = (in_a >= 0) & (in_b >= 0)
    starts = points[keep]
    ends = np.minimum(a[1][in_a[keep]], b[1][in_b[keep]])
    nonempty = ends > starts
    return union(starts[nonempty], ends[nonempty])


def _containing(intervals: Intervals, points: np.ndarray) -> np.ndarray:
    """Index of the interval holding each point (start inclusive, end exclusive), else -1."""
    index = np.searchsorted(intervals[0], points, side="right") - 1
    inside = (index >= 0) & (points < intervals[1][np.clip(index, 0, None)])
    return np.where(inside, index, -1)


def clip(intervals: Intervals, lo: float, hi: float) -> Intervals:
    """A disjoint set cut to the window [lo, hi)."""
    starts, ends = np.maximum(intervals[0], lo), np.minimum(intervals[1], hi)
    keep = ends > starts
    return starts[keep], ends[keep]
