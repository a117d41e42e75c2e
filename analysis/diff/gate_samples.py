"""Per-step samples for the gate: each view's figures one step (or one iteration) at a time.

Every frame here is long: ``name`` (what a rule's selector matches: a kernel, an operator, a phase,
a device), ``step`` (the sample: a ProfilerStep number, or a serving iteration) and one column per
metric.  The step a piece of GPU work belongs to is :mod:`profview.analysis.tables.step_scope`'s
rule, so a kernel's per-step µs add up to the step-narrowed kernel table: the runtime call that
launched it started inside the host range of ``ProfilerStep#N``; work with no launching call
belongs to the step whose window holds its start.  GPU work outside every step (launched before
the profiling window, the steps table's Before window, or by a call outside every step's range) is
its own sample, step :data:`OUTSIDE`: counted and said, never compared.  A trace without
ProfilerSteps is one sample, step -1 (the whole trace).

The per-call frames (:func:`kernel_calls`, :func:`op_calls`) are the evidence where a side has too
few steps for the step bootstrap: one row per call, with its step.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ...frames import STEP_NAME, STEP_NUMBER
from ..tables.steps import before_window
from ..trace.model import TraceModel, step_windows

#: The step number of the one sample of a trace without ProfilerSteps (as the steps table numbers it).
WHOLE_TRACE = -1
#: The step of GPU work outside every step: launched before the profiling window or outside every
#: step's host range (its own sample, never compared).
OUTSIDE = -2
#: The metrics of each view, in the units the rule's threshold is read in.
KERNEL_METRICS = ("total_us", "calls")
OP_METRICS = ("calls", "total_us", "host_total_us", "host_self_us", "device_total_us", "device_self_us")
PHASE_METRICS = ("gpu_us_per_token", "gpu_us", "wall_us", "host_us", "gpu_busy_pct")
EFFICIENCY_METRICS = ("mfu", "tflops_s", "gpu_busy_us", "model_tflop")


def host_step_ranges(model: TraceModel) -> pl.DataFrame:
    """``step``, ``start``, ``end``: each ``ProfilerStep#N``'s host range (first start, last end), by start."""
    host = model.host.filter(pl.col("is_op") & pl.col("name").str.contains(STEP_NAME))
    return (
        host.group_by("name")
        .agg(pl.col("ts").min().alias("start"), pl.col("end").max().alias("end"))
        .select(pl.col("name").str.extract(STEP_NUMBER).cast(pl.Int64).alias("step"), "start", "end")
        .sort("start", "step")
    )


def _which_range(times: np.ndarray, ranges: pl.DataFrame) -> np.ndarray:
    """Per time: the step whose range holds it (ranges by start; the latest-starting one), or -1."""
    if ranges.height == 0 or len(times) == 0:
        return np.full(len(times), -1, dtype=np.int64)
    starts, ends, steps = ranges["start"].to_numpy(), ranges["end"].to_numpy(), ranges["step"].to_numpy()
    which = np.searchsorted(starts, times, side="right") - 1
    safe = np.clip(which, 0, None)
    inside = (which >= 0) & (times <= ends[safe])
    result: np.ndarray = np.where(inside, steps[safe], -1)
    return result


def gpu_steps(model: TraceModel) -> pl.Series:
    """Per ``model.gpu`` row: the ProfilerStep it belongs to, or :data:`OUTSIDE` (see the module doc)."""
    ranges = host_step_ranges(model)
    gpu = model.gpu
    if ranges.height == 0:  # no steps: the whole trace is one sample, step -1 (the steps table's)
        return pl.Series("step", [WHOLE_TRACE] * gpu.height, dtype=pl.Int64)
    launched = gpu["launch_row"]
    launch_ts = model.host["ts"].gather(launched.fill_null(0)).to_numpy()
    by_launch = _which_range(launch_ts, ranges)
    windows = step_windows(model).sort("start", "step")
    by_window = _which_range(gpu["ts"].to_numpy(), windows.select("step", "start", pl.col("end") - 1e-9))
    step = np.where(launched.is_null().to_numpy(), by_window, by_launch)
    step = np.where(before_window(gpu).to_numpy(), -1, step)
    result: pl.Series = pl.Series("step", step, dtype=pl.Int64).replace(-1, OUTSIDE)
    return result


def kernel_samples(gpu: pl.DataFrame, steps: pl.Series) -> pl.DataFrame:
    """Per kernel name and step: ``total_us`` and ``calls`` of the kernels (``kind == "kernel"``)."""
    frame = gpu.select("kind", "name", "dur").with_columns(steps.alias("step"))
    return (
        frame.filter((pl.col("kind") == "kernel") & pl.col("step").is_not_null())
        .group_by("name", "step")
        .agg(pl.col("dur").sum().cast(pl.Float64).alias("total_us"), pl.len().cast(pl.Float64).alias("calls"))
        .with_columns(pl.col("name").cast(pl.String))
        .sort("name", "step")
    )


def kernel_calls(gpu: pl.DataFrame, steps: pl.Series) -> pl.DataFrame:
    """One row per kernel call, by start: ``name``, ``step``, ``position`` (its place among the
    calls of its name in its step: the k-th call of a step runs the same work as the k-th of the
    next), ``total_us`` (its duration)."""
    return (
        gpu.select("kind", "name", "ts", pl.col("dur").cast(pl.Float64).alias("total_us"))
        .with_columns(steps.alias("step"))
        .filter((pl.col("kind") == "kernel") & pl.col("step").is_not_null())
        .sort("ts")
        .select(
            pl.col("name").cast(pl.String), "step", pl.int_range(pl.len()).over("name", "step").alias("position"),
            "total_us",
        )
    )


def op_calls(operator_rows: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """One row per operator call that started in a step's host range, by start: ``name``,
    ``step``, ``position`` (as :func:`kernel_calls`') and its µs (``total_us`` the device total, as
    :func:`op_samples`)."""
    rows = operator_rows.filter(~pl.col("name").str.contains(STEP_NAME))
    step = np.full(rows.height, WHOLE_TRACE, dtype=np.int64) if ranges.height == 0 else _which_range(
        rows["ts"].to_numpy(), ranges
    )
    columns = [c for c in OP_METRICS if c not in ("calls", "total_us")]
    return (
        rows.select(pl.col("name").cast(pl.String), "ts", *(pl.col(c).cast(pl.Float64) for c in columns))
        .with_columns(pl.Series("step", step, dtype=pl.Int64), pl.col("device_total_us").alias("total_us"))
        .filter((pl.col("step") >= 0) | pl.lit(ranges.height == 0))
        .sort("ts")
        .with_columns(pl.int_range(pl.len()).over("name", "step").alias("position"))
        .drop("ts")
    )


def category_samples(kernels: pl.DataFrame, categories: pl.DataFrame) -> pl.DataFrame:
    """Per kernel category (the kernel table's rule by name: ``categories`` maps ``name`` to
    ``category``) and step: ``total_us`` and ``calls`` of its kernels."""
    return (
        kernels.join(categories.select(pl.col("name").cast(pl.String), "category"), on="name", how="left")
        .group_by(pl.col("category").fill_null("other").alias("name"), "step")
        .agg(pl.col("total_us").sum(), pl.col("calls").sum())
        .sort("name", "step")
    )


def collective_samples(communication: pl.DataFrame, steps: pl.Series) -> pl.DataFrame:
    """Per collective (``AllReduce``…; ``unknown`` where neither its arguments nor its name say)
    and step: ``total_us`` and ``calls`` of the communication kernels (``communication``: the GPU
    work with ``backend``/``collective_name``, row for row with ``steps``)."""
    frame = communication.select("backend", "collective_name", "dur").with_columns(steps.alias("step"))
    # (work outside every step keeps its step, OUTSIDE: the rule counts it and says so)
    return (
        frame.filter(pl.col("backend").is_not_null() & pl.col("step").is_not_null())
        .group_by(pl.col("collective_name").cast(pl.String).fill_null("unknown").alias("name"), "step")
        .agg(pl.col("dur").sum().cast(pl.Float64).alias("total_us"), pl.len().cast(pl.Float64).alias("calls"))
        .sort("name", "step")
    )


def op_samples(operator_rows: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Per operator name and step: the calls that started in the step's host range and their µs
    (``total_us`` is the device total, what an operator cost the GPU; the host figures beside it)."""
    rows = operator_rows.filter(~pl.col("name").str.contains(STEP_NAME))
    if ranges.height == 0:  # no steps: the whole trace is one sample
        step = np.full(rows.height, WHOLE_TRACE, dtype=np.int64)
        ranges_given = False
    else:
        step = _which_range(rows["ts"].to_numpy(), ranges)
        ranges_given = True
    columns = [c for c in OP_METRICS if c not in ("calls", "total_us")]
    return (
        rows.select("name", *columns)
        .with_columns(pl.Series("step", step, dtype=pl.Int64))
        .filter((pl.col("step") >= 0) | pl.lit(not ranges_given))
        .group_by("name", "step")
        .agg(
            pl.len().cast(pl.Float64).alias("calls"),
            *(pl.col(c).sum().cast(pl.Float64) for c in columns),
        )
        .with_columns(pl.col("device_total_us").alias("total_us"), pl.col("name").cast(pl.String))
        .sort("name", "step")
    )


def step_samples(steps: pl.DataFrame) -> pl.DataFrame:
    """One name, ``steps``: each step's row of the step table (its ``*_us`` columns as metrics)."""
    numbered = steps.filter(pl.col("step").is_not_null())
    numeric = [c for c in numbered.columns if c.endswith("_us") and c != "start_us"]
    return numbered.select(pl.lit("steps").alias("name"), "step", *(pl.col(c).cast(pl.Float64) for c in numeric))


def phase_samples(iterations: pl.DataFrame) -> pl.DataFrame:
    """Per phase and iteration (a serving loop's samples): the iteration's figures."""
    present = [c for c in PHASE_METRICS if c in iterations.columns]
    return iterations.select(
        pl.col("phase").cast(pl.String).alias("name"),
        pl.col("iteration").cast(pl.Int64).alias("step"),
        *(pl.col(c).cast(pl.Float64) for c in present),
    )


def memory_samples(memory: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Per device and step: ``peak_bytes``, the most allocated at any event in the step's window
    (``memory``'s ``ts_us`` and the steps' ``start_us`` count from the same origin)."""
    windows = steps.filter(pl.col("step").is_not_null()).select(
        "step", pl.col("start_us").alias("start"), (pl.col("start_us") + pl.col("duration_us")).alias("end")
    )
    if memory.height == 0 or windows.height == 0:
        return pl.DataFrame(schema={"name": pl.String, "step": pl.Int64, "peak_bytes": pl.Float64})
    events = memory.filter(~pl.col("device").cast(pl.String).str.starts_with("cpu")).sort("ts_us")
    step = _which_range(events["ts_us"].to_numpy(), windows.sort("start"))
    return (
        events.select(pl.col("device").cast(pl.String).alias("name"), "allocated_bytes")
        .with_columns(pl.Series("step", step, dtype=pl.Int64))
        .filter(pl.col("step") >= 0)
        .group_by("name", "step")
        .agg(pl.col("allocated_bytes").max().cast(pl.Float64).alias("peak_bytes"))
        .sort("name", "step")
    )


def efficiency_samples(step_efficiency: pl.DataFrame) -> pl.DataFrame:
    """One name, ``trace``: each step's MFU (%), TFLOP/s, GPU busy µs and model TFLOP."""
    return step_efficiency.filter(pl.col("step").is_not_null()).select(
        pl.lit("trace").alias("name"),
        "step",
        pl.col("mfu_pct").cast(pl.Float64).alias("mfu"),
        pl.col("tflops_s").cast(pl.Float64),
        pl.col("gpu_busy_us").cast(pl.Float64),
        pl.col("model_tflop").cast(pl.Float64),
    )


def new_kernel_samples(after: pl.DataFrame, before_names: set[str]) -> pl.DataFrame:
    """One name, ``new kernels``: per step of the after side, the share (%) of its kernel µs in
    names the before side never ran."""
    after = after.filter(pl.col("step") != OUTSIDE)
    if after.height == 0:
        return pl.DataFrame(schema={"name": pl.String, "step": pl.Int64, "share": pl.Float64})
    new = pl.col("name").is_in(sorted(before_names)).not_()
    return (
        after.group_by("step")
        .agg((pl.col("total_us").filter(new).sum() / pl.col("total_us").sum() * 100).alias("share"))
        .select(pl.lit("new kernels").alias("name"), "step", pl.col("share").fill_nan(0.0).cast(pl.Float64))
        .sort("step")
    )
