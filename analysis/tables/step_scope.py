"""Which GPU work belongs to one step: the single rule every step-narrowed view uses.

GPU work belongs to step N when the runtime call that launched it (linked by correlation id)
started inside the host range of ``ProfilerStep#N`` (its first start to its last end) — the
work a step *asked for*, wherever the GPU ran it.  GPU work with no launching call in the trace
belongs to the step whose window (:func:`profview.analysis.trace.model.step_windows`) holds its start.
Kernels, operator → kernel and kernel → operator drill-downs, modules and the Overview under a
step all read :func:`step_gpu_mask` (through ``Profile.step_model``), and the operator table
under a step takes the operator calls that started in the same host range
(:func:`step_host_range`), so a row and its drill-down agree.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..trace.model import TraceModel, step_windows


def step_host_range(model: TraceModel, step: int) -> tuple[float, float] | None:
    """(first start, last end) in µs of the host ``ProfilerStep#step`` annotation, or None."""
    host = model.host.filter(pl.col("is_op") & (pl.col("name") == f"ProfilerStep#{step}"))
    if host.height == 0:
        return None
    return float(host["ts"].min()), float(host["end"].max())  # type: ignore[arg-type]


def step_gpu_mask(model: TraceModel, step: int, window: tuple[float, float] | None = None) -> pl.Series:
    """Per ``model.gpu`` row: whether it belongs to ``ProfilerStep#step`` (see the module doc).

    ``window``: the step's (start, end) in µs when the caller has it (the steps table), else it
    is computed with :func:`step_windows`."""
    host_range = step_host_range(model, step)
    if window is None:
        windows = step_windows(model).filter(pl.col("step") == step)
        window = (float(windows["start"][0]), float(windows["end"][0])) if windows.height else None
    if host_range is None or window is None:
        return pl.Series("in_step", [False] * model.gpu.height, dtype=pl.Boolean)
    start, end = host_range
    w_start, w_end = window
    launch_ts = model.host["ts"]
    rows = model.gpu["launch_row"]
    launched_at = pl.Series("launch_ts", launch_ts.gather(rows.fill_null(0)), dtype=pl.Float64)
    frame = pl.DataFrame({"launch_row": rows, "launch_ts": launched_at, "ts": model.gpu["ts"]})
    in_step = (
        pl.when(pl.col("launch_row").is_not_null())
        .then((pl.col("launch_ts") >= start) & (pl.col("launch_ts") <= end))
        .otherwise((pl.col("ts") >= w_start) & (pl.col("ts") < w_end))
    )
    return frame.select(in_step.fill_null(False).alias("in_step"))["in_step"]


def gpu_busy_in(gpu: pl.DataFrame, start: float, end: float) -> float:
    """µs of ``[start, end)`` during which some GPU work (any device, any stream) ran."""
    from .overview import union_length

    clipped = gpu.select(pl.col("ts").clip(start, end).alias("s"), pl.col("end").clip(start, end).alias("e"))
    clipped = clipped.filter(pl.col("e") > pl.col("s"))
    return union_length(clipped["s"].to_numpy(), clipped["e"].to_numpy())


def step_gpu_busy(model: TraceModel) -> pl.DataFrame:
    """Per step: ``step`` and ``gpu_busy_us``, the union of all GPU work (any kind, stream or
    device, launched before the profiling window included) inside the step's window — the one
    GPU-busy rule (docs/efficiency.md), computed as :func:`profview.analysis.tables.gaps.idle_gaps` does."""
    from ..trace.communication import merge_intervals

    starts, ends = merge_intervals(model.gpu["ts"].to_numpy(), model.gpu["end"].to_numpy())
    steps, busy = [], []
    for step, _name, lo, hi in step_windows(model).iter_rows():
        keep = (ends > lo) & (starts < hi)
        clipped_starts, clipped_ends = np.clip(starts[keep], lo, hi), np.clip(ends[keep], lo, hi)
        steps.append(step)
        busy.append(float((clipped_ends - clipped_starts).sum()) if len(clipped_starts) else 0.0)
    return pl.DataFrame({"step": steps, "gpu_busy_us": busy}, schema={"step": pl.Int64, "gpu_busy_us": pl.Float64})
