"""Per step: how much communication overlaps compute on the GPU, and the GPU's idle gaps with
their likely cause.

GPU busy time is the union of all GPU work (kernels, memcpy, memset) inside the step's window
(:func:`~profview.analysis.trace.model.step_windows`); an idle gap is a stretch of the window with none.
Each gap gets the first cause that applies:

1. ``data``: a DataLoader range (``enumerate(DataLoader)…``) overlaps it: the step waits on input;
2. ``sync``: a synchronising call overlaps it (``cuda*Synchronize``, ``cudaStreamWaitEvent``,
   ``aten::item`` / ``aten::_local_scalar_dense``): the host waited for the GPU, then had to
   launch the next work;
3. ``host``: the GPU work after the gap was launched after the gap began (or the gap ends the
   window): the GPU waited for the host to launch it — launch overhead, Python, CPU operators;
4. ``other``: the next work was already launched and still did not run (a wait on another stream
   or an event).

Communication is the kernels :func:`~profview.analysis.trace.communication.classify_communication`
marks; compute is all other GPU work; ``overlap_us`` is the time both run at once.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..trace.communication import merge_intervals
from ..trace.model import TraceModel, step_windows

CAUSES = ("data", "sync", "host", "other")
SYNC_CALL = r"Synchronize|^cudaStreamWaitEvent$|^hipStreamWaitEvent$|^aten::item$|^aten::_local_scalar_dense$"
DATA_RANGE = r"^enumerate\(DataLoader\)"
GAP_COLUMNS = ("step", "start_us", "end_us", "idle_us", "cause")
STEP_GPU_COLUMNS = (
    "step",
    "name",
    "start_us",
    "duration_us",
    "gpu_busy_us",
    "compute_us",
    "comm_us",
    "overlap_us",
    "overlap_pct",
    "idle_us",
    "gaps",
    *(f"idle_{cause}_us" for cause in CAUSES),
)


def _length(starts: np.ndarray, ends: np.ndarray) -> float:
    return float((ends - starts).sum()) if len(starts) else 0.0


def _clip(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    keep = (ends > lo) & (starts < hi)
    return np.clip(starts[keep], lo, hi), np.clip(ends[keep], lo, hi)


def _intersection(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Length of the intersection of two sorted disjoint interval sets."""
    total, i, j = 0.0, 0, 0
    (sa, ea), (sb, eb) = a, b
    while i < len(sa) and j < len(sb):
        lo, hi = max(sa[i], sb[j]), min(ea[i], eb[j])
        if hi > lo:
            total += hi - lo
        if ea[i] < eb[j]:
            i += 1
        else:
            j += 1
    return total


def _overlaps(starts: np.ndarray, ends: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per query interval [lo, hi), whether any of the (merged, sorted) intervals overlaps it."""
    if not len(starts):
        return np.zeros(len(lo), dtype=bool)
    last = np.searchsorted(starts, hi, side="left") - 1
    return (last >= 0) & (ends[np.clip(last, 0, None)] > lo)


def idle_gaps(model: TraceModel, comm_backend: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per-step GPU figures :data:`STEP_GPU_COLUMNS`, one row per gap :data:`GAP_COLUMNS`).

    ``comm_backend``: per ``model.gpu`` row, the communication backend (null: not communication).
    Times in the result count from the trace's start (``start_us``), as the Steps view does.
    """
    gpu = model.gpu.with_columns(comm_backend.is_not_null().alias("is_comm"))
    busy = merge_intervals(gpu["ts"].to_numpy(), gpu["end"].to_numpy())
    comm_frame = gpu.filter(pl.col("is_comm"))
    comm = merge_intervals(comm_frame["ts"].to_numpy(), comm_frame["end"].to_numpy())
    work = gpu.filter(~pl.col("is_comm"))
    compute = merge_intervals(work["ts"].to_numpy(), work["end"].to_numpy())
    host = model.host.filter(~pl.col("is_python"))
    sync_calls = host.filter(pl.col("name").str.contains(SYNC_CALL))
    syncs = merge_intervals(sync_calls["ts"].to_numpy(), sync_calls["end"].to_numpy())
    data_ranges = host.filter(pl.col("name").str.contains(DATA_RANGE))
    data = merge_intervals(data_ranges["ts"].to_numpy(), data_ranges["end"].to_numpy())
    # The launch time of each GPU event, in start order, to ask "launched after the gap began?".
    launched = gpu.join(
        model.host.select(pl.col("row").alias("launch_row"), pl.col("ts").alias("launch_ts")),
        on="launch_row",
        how="left",
    ).sort("ts")
    gpu_starts = launched["ts"].to_numpy()
    launch_ts = launched["launch_ts"].fill_null(np.inf).to_numpy()
    origin = model.span_start
    rows, gap_rows = [], []
    for step, name, lo, hi in step_windows(model).iter_rows():
        s_busy = _clip(*busy, lo, hi)
        gap_lo = np.concatenate([[lo], s_busy[1]])
        gap_hi = np.concatenate([s_busy[0], [hi]])
        real = gap_hi > gap_lo
        gap_lo, gap_hi = gap_lo[real], gap_hi[real]
        following = np.searchsorted(gpu_starts, gap_hi, side="left")
        next_launch = launch_ts[np.clip(following, 0, max(len(launch_ts) - 1, 0))] if len(launch_ts) else gap_hi
        host_wait = (following >= len(gpu_starts)) | (next_launch >= gap_lo)
        cause = np.where(
            _overlaps(*data, gap_lo, gap_hi),
            "data",
            np.where(_overlaps(*syncs, gap_lo, gap_hi), "sync", np.where(host_wait, "host", "other")),
        )
        lengths = gap_hi - gap_lo
        s_comm, s_compute = _clip(*comm, lo, hi), _clip(*compute, lo, hi)
        comm_us, overlap = _length(*s_comm), _intersection(s_comm, s_compute)
        row = {
            "step": step,
            "name": name,
            "start_us": lo - origin,
            "duration_us": hi - lo,
            "gpu_busy_us": _length(*s_busy),
            "compute_us": _length(*s_compute),
            "comm_us": comm_us,
            "overlap_us": overlap,
            "overlap_pct": overlap / comm_us * 100.0 if comm_us > 0 else None,
            "idle_us": float(lengths.sum()),
            "gaps": len(lengths),
        }
        for kind in CAUSES:
            row[f"idle_{kind}_us"] = float(lengths[cause == kind].sum())
        rows.append(row)
        gap_rows += [
            (step, a - origin, b - origin, b - a, str(c)) for a, b, c in zip(gap_lo, gap_hi, cause, strict=True)
        ]
    schema = {c: pl.Float64 for c in STEP_GPU_COLUMNS} | {"step": pl.Int64, "name": pl.String, "gaps": pl.Int64}
    steps = pl.DataFrame(rows, schema=schema).select(STEP_GPU_COLUMNS)
    gaps = pl.DataFrame(
        gap_rows,
        schema={
            "step": pl.Int64,
            "start_us": pl.Float64,
            "end_us": pl.Float64,
            "idle_us": pl.Float64,
            "cause": pl.String,
        },
        orient="row",
    )
    return steps, gaps
