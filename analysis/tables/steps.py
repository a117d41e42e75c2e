"""The step breakdown: each ``ProfilerStep#N`` split into exclusive time categories.

As in the TensorBoard profiler plugin, every instant of a step is counted once, in the first
category of :data:`CATEGORIES` that is active at that instant; what none covers is ``other``.
Kernel, Memcpy and Memset are GPU work; Communication is collective kernels and host time inside
CPU collectives (the rules are :mod:`~profview.analysis.trace.communication`'s); Before window
(``prewindow``) is GPU work
launched before the profiling window (:func:`before_window`), which would otherwise inflate the
first step's kernel time; Runtime is CUDA/HIP runtime and driver
calls; DataLoader is ``enumerate(DataLoader)`` ranges; CPU Exec is any other host operator (the
ProfilerStep annotation itself excluded).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ...frames import CATEGORIES, STEP_COLUMNS, STEP_NAME
from ..trace.communication import classify_communication, host_collective_intervals
from ..trace.model import TraceModel, step_windows

DATALOADER_RANGE = r"^enumerate\(DataLoader\)"


def before_window(gpu: pl.DataFrame) -> pl.Series:
    """Per GPU event, whether it was launched before the profiling window: no launching call in
    the trace, and it starts before the first event of its stream whose launch the trace holds
    (a stream runs its work in launch order; a stream with no such event uses the first of any
    stream).  A trace that links no GPU work to launches at all has none: there a missing link
    says nothing about when the work was launched."""
    if gpu.height == 0 or "launch_row" not in gpu.columns:
        return pl.Series("early", [False] * gpu.height, dtype=pl.Boolean)
    linked = pl.col("launch_row").is_not_null()
    first_any = gpu.filter(linked)["ts"].min()
    if first_any is None:
        return pl.Series("early", [False] * gpu.height, dtype=pl.Boolean)
    first = pl.col("ts").filter(linked).min().over("device", "stream").fill_null(first_any)
    return gpu.select((~linked & (pl.col("ts") < first)).alias("early"))["early"]


def category_intervals(model: TraceModel, comm_pattern: str | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(starts, ends) in µs of the events of each category except ``other``.

    ``comm_pattern``: the user's regex for communication kernels (``--comm-pattern``).
    """
    gpu, host = classify_communication(model.gpu, comm_pattern), model.host
    early = before_window(gpu)
    gpu, prewindow = gpu.filter(~early), gpu.filter(early)
    is_comm = pl.col("backend").is_not_null()
    selections = {
        "kernel": gpu.filter((pl.col("kind") == "kernel") & ~is_comm),
        "memcpy": gpu.filter(pl.col("kind") == "memcpy"),
        "memset": gpu.filter(pl.col("kind") == "memset"),
        "communication": gpu.filter((pl.col("kind") == "kernel") & is_comm),
        "prewindow": prewindow,
        "runtime": host.filter(pl.col("kind").is_in(["runtime", "driver"])),
        "dataloader": host.filter(pl.col("is_op") & pl.col("name").str.contains(DATALOADER_RANGE)),
        "cpu_exec": host.filter(pl.col("is_op") & ~pl.col("name").str.contains(STEP_NAME)),
    }
    intervals = {c: (f["ts"].to_numpy(), f["end"].to_numpy()) for c, f in selections.items()}
    cpu_starts, cpu_ends = host_collective_intervals(host)
    gpu_starts, gpu_ends = intervals["communication"]
    intervals["communication"] = (np.concatenate([gpu_starts, cpu_starts]), np.concatenate([gpu_ends, cpu_ends]))
    return intervals


def step_table(model: TraceModel, comm_pattern: str | None = None) -> pl.DataFrame:
    """One row per step: ``duration_us`` and the exclusive time of each category (they add up)."""
    windows = step_windows(model)
    starts, ends = windows["start"].to_numpy(), windows["end"].to_numpy()
    intervals = category_intervals(model, comm_pattern)
    points = np.unique(np.concatenate([starts, ends, *(a for pair in intervals.values() for a in pair)]))
    segments = len(points) - 1
    winner = np.full(max(segments, 0), len(CATEGORIES) - 1, dtype=np.int64)
    for priority in reversed(range(len(CATEGORIES) - 1)):
        lo, hi = intervals[CATEGORIES[priority]]
        if not len(lo):
            continue
        opened = np.bincount(np.searchsorted(points, lo), minlength=len(points) + 1)
        closed = np.bincount(np.searchsorted(points, hi), minlength=len(points) + 1)
        active = np.cumsum(opened - closed)[:segments] > 0
        winner[active] = priority
    lengths = np.diff(points)
    seg_step = np.searchsorted(starts, points[:-1], side="right") - 1
    in_step = (seg_step >= 0) & (points[:-1] < ends[np.clip(seg_step, 0, None)])
    cell = seg_step[in_step] * len(CATEGORIES) + winner[in_step]  # (step, category) as one index
    totals = np.bincount(cell, weights=lengths[in_step], minlength=len(starts) * len(CATEGORIES))
    totals = totals.reshape(len(starts), len(CATEGORIES))
    table = windows.select("step", "name").with_columns(
        # Rounded to the nanosecond: the trace's own resolution.
        pl.Series("start_us", np.round(starts - model.span_start, 3)),
        pl.Series("duration_us", np.round(ends - starts, 3)),
        *(pl.Series(f"{c}_us", np.round(totals[:, i], 3)) for i, c in enumerate(CATEGORIES)),
    )
    return table.select(STEP_COLUMNS)
