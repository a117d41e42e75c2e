"""Which step and which iteration each parsed event belongs to, by the rules the step- and
iteration-narrowed views use, so that SQL over the events table groups as the views do.

GPU work (kernel, memcpy, memset) belongs to step N when the runtime call that launched it
started inside the host range of ``ProfilerStep#N`` (:mod:`.step_scope`), and, with no launching
call in the trace, to the step whose window holds its start; to an iteration when its launching
call started inside the iteration's host range.  Every other event belongs to the step (the
iteration) whose host range holds its start.  An event outside every range has none (null);
in a trace without ProfilerStep ranges every event is step -1, the steps table's one row.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ...errors import ProfviewError
from ...frames import GPU_KINDS, STEP_NAME, STEP_NUMBER
from ..trace.events import COMPLETE
from ..trace.model import TraceModel, step_windows


def step_host_ranges(model: TraceModel) -> pl.DataFrame:
    """Per step: ``step``, ``start`` and ``end`` (µs), its ``ProfilerStep#N`` host range (first
    start to last end), in order of start."""
    steps = model.host.filter(pl.col("is_op") & pl.col("name").str.contains(STEP_NAME))
    return (
        steps.group_by("name")
        .agg(pl.col("ts").min().alias("start"), pl.col("end").max().alias("end"))
        .select(pl.col("name").str.extract(STEP_NUMBER).cast(pl.Int64).alias("step"), "start", "end")
        .sort("start", "step")
    )


def _in_ranges(at: np.ndarray, starts: np.ndarray, ends: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per instant, the label of the last range (sorted by start) that holds it, or -2**63 for none."""
    none = np.iinfo(np.int64).min
    out = np.full(len(at), none, dtype=np.int64)
    if len(starts) == 0:
        return out
    which = np.searchsorted(starts, at, side="right") - 1
    safe = np.clip(which, 0, None)
    inside = (which >= 0) & (at <= ends[safe]) & ~np.isnan(at)
    out[inside] = labels[safe[inside]]
    return out


def _as_column(values: np.ndarray, name: str) -> pl.Series:
    none = np.iinfo(np.int64).min
    series = pl.Series(name, values, dtype=pl.Int64)
    return series.set(pl.Series(values == none), None)  # type: ignore[arg-type]


def _launch_instants(events: pl.DataFrame, model: TraceModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(which event rows are the model's GPU work, each one's launching call's start or NaN, its start)."""
    gpu_rows = events.select((pl.col("kind").is_in(GPU_KINDS) & COMPLETE).fill_null(False).alias("g"))["g"]
    mask = gpu_rows.to_numpy()
    launch_row = model.gpu["launch_row"]
    launch_ts = model.host["ts"].gather(launch_row.fill_null(0)).to_numpy().astype(np.float64)
    launch_ts[launch_row.is_null().to_numpy()] = np.nan
    return mask, launch_ts, model.gpu["ts"].to_numpy().astype(np.float64)


def _check_same(events: pl.DataFrame, mask: np.ndarray, gpu_ts: np.ndarray) -> None:
    """The model's GPU rows are the events' GPU rows, in order; else refuse (never a guess)."""
    ts = events["ts"].cast(pl.Float64).to_numpy()[mask]
    if len(ts) != len(gpu_ts) or not np.array_equal(ts, gpu_ts, equal_nan=True):
        raise ProfviewError(None, "the events are not the frame the linked model was built from")


def event_steps(events: pl.DataFrame, model: TraceModel) -> pl.Series:
    """``step`` per row of ``events`` (the frame ``model`` was built from), by the module's rules."""
    ranges = step_host_ranges(model)
    if ranges.height == 0:
        return pl.Series("step", [-1] * events.height, dtype=pl.Int64)
    starts, ends = ranges["start"].to_numpy(), ranges["end"].to_numpy()
    labels = ranges["step"].to_numpy()
    ts = events["ts"].cast(pl.Float64).to_numpy().astype(np.float64)
    out = _in_ranges(ts, starts, ends, labels)
    mask, launch_ts, gpu_ts = _launch_instants(events, model)
    _check_same(events, mask, gpu_ts)
    gpu = _in_ranges(launch_ts, starts, ends, labels)
    unlaunched = np.isnan(launch_ts)
    if unlaunched.any():
        windows = step_windows(model).sort("start")
        w_starts, w_ends = windows["start"].to_numpy(), windows["end"].to_numpy()
        # a window holds [start, end): the end is the next step's start
        by_window = _in_ranges(gpu_ts[unlaunched], w_starts, np.nextafter(w_ends, -np.inf), windows["step"].to_numpy())
        gpu[unlaunched] = by_window
    out[mask] = gpu
    return _as_column(out, "step")


def event_iterations(
    events: pl.DataFrame, model: TraceModel, iterations: pl.DataFrame, rounding_us: float
) -> pl.Series:
    """``iteration`` per row of ``events``: ``iterations`` is the iterations view (``iteration``,
    ``start_us`` and ``host_us`` from the trace's origin, kept to the nanosecond: each range is
    widened by ``rounding_us``)."""
    if iterations.height == 0 or "start_us" not in iterations.columns:
        return pl.Series("iteration", [None] * events.height, dtype=pl.Int64)
    table = iterations.select("iteration", "start_us", "host_us").drop_nulls().sort("start_us")
    starts = table["start_us"].to_numpy().astype(np.float64) + model.span_start - rounding_us
    ends = starts + table["host_us"].to_numpy().astype(np.float64) + 2 * rounding_us
    labels = table["iteration"].to_numpy().astype(np.int64)
    ts = events["ts"].cast(pl.Float64).to_numpy().astype(np.float64)
    out = _in_ranges(ts, starts, ends, labels)
    mask, launch_ts, gpu_ts = _launch_instants(events, model)
    _check_same(events, mask, gpu_ts)
    out[mask] = _in_ranges(launch_ts, starts, ends, labels)  # GPU work: by its launching call only
    return _as_column(out, "iteration")
