"""The order each table's frame comes in, as the status line names it (``sorted by total_us ↓``).

Why: the label used to be guessed from whichever known column happened to be descending, so the
job's Collectives said ``sorted by duration_us ↓`` while their rows are sorted by
``max_wait_us``.  Here each table says how its frame is sorted (its first key: where the frame is
made, ``analysis/`` and ``jobs/``), and the label is shown only when the frame really is in that
order; a frame in another order gets no label rather than a wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class FrameSort:
    """A frame's first sort key: ``column``, descending or not, by its magnitude or its value."""

    column: str
    descending: bool = True
    magnitude: bool = False  # sorted by the absolute value (a diff: the size of the change)
    #: Whether the table may bring the column next to the name when it is off screen (not where the
    #: name says it already: the Ranks table's ``rank 7``).
    movable: bool = True

    def label(self) -> str:
        name = f"|{self.column}|" if self.magnitude else self.column
        return f"{name} {'↓' if self.descending else '↑'}"

    def holds(self, frame: pl.DataFrame) -> bool:
        """Whether ``frame``'s rows are in this order."""
        if self.column not in frame.columns or not frame.schema[self.column].is_numeric():
            return False
        values = frame[self.column].abs() if self.magnitude else frame[self.column]
        return values.is_sorted(descending=self.descending, nulls_last=True)


#: The first sort key of each table's frame, by the view name its FrameView is given.
FRAME_SORTS: dict[str, FrameSort] = {
    "kernels": FrameSort("total_us"),  # analysis/tables/kernels.py
    "ops": FrameSort("device_total_us"),  # analysis/tables/operators.py (then host_total_us)
    "kernel_launches": FrameSort("total_us"),  # analysis/trace/launch_index.py
    "op_launches": FrameSort("total_us"),  # analysis/tables/launches.py (modules and source lines too)
    "memory_ops": FrameSort("allocated_bytes"),  # analysis/tables/memory.py
    "efficiency": FrameSort("kernel_us"),  # analysis/efficiency/perf_model.py
    "collectives": FrameSort("max_wait_us"),  # analysis/distributed/collectives.py
    "collective_ranks": FrameSort("wait_us"),  # tui/job/screen.py
    "ranks": FrameSort("rank", descending=False, movable=False),  # analysis/distributed/ranks.py: the name is the rank
    "diff_moved_calls": FrameSort("position", descending=False),  # analysis/diff/align.py: in step order
}
#: Compare mode's tables (two profiles, two jobs) are sorted by the size of the change.
BY_CHANGE = FrameSort("delta_us", magnitude=True)


def frame_sort(view: str, frame: pl.DataFrame) -> FrameSort | None:
    """How ``frame`` (the rows of table ``view``) is sorted, if it is known and holds; else None."""
    sort = FRAME_SORTS.get(view)
    if sort is None and view.startswith(("diff_", "jobdiff_")):
        sort = BY_CHANGE
    if sort is None or frame.height < 2 or not sort.holds(frame):
        return None
    return sort


__all__ = ["BY_CHANGE", "FRAME_SORTS", "FrameSort", "frame_sort"]
