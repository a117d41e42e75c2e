"""Whole-trace figures for the overview: rank, devices, span, GPU busy and communication time,
average step breakdown."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ...frames import CATEGORIES, Overview
from ..trace.communication import host_collective_intervals
from ..trace.model import TraceModel, external_overrides
from ..trace.runtime_calls import RuntimeFacts, runtime_facts
from ..trace.scalars import mean_or_zero


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length of the union of intervals."""
    if not len(starts):
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    # A new run starts wherever an interval begins after everything before it has ended.
    new_run = np.concatenate([[True], s[1:] > e[:-1]])
    run_id = np.cumsum(new_run) - 1
    run_start = s[new_run]
    run_end = np.zeros(run_id[-1] + 1)
    np.maximum.at(run_end, run_id, e)
    return float((run_end - run_start).sum())


def device_names(metadata: dict[str, Any], used: set[int] | None = None) -> list[str]:
    """``deviceProperties`` as one line per device (only those in ``used``, when given)."""
    names = []
    for dev in metadata.get("deviceProperties") or []:
        if isinstance(dev, dict) and (used is None or dev.get("id") in used):
            mem = dev.get("totalGlobalMem")
            size = f", {mem / 2**30:.0f} GiB" if isinstance(mem, (int, float)) else ""
            sms = f", {dev['numSms']} SMs" if "numSms" in dev else ""
            names.append(f"{dev.get('id', '?')}: {dev.get('name') or '(no name in the trace)'}{size}{sms}")
    return names


def used_devices(gpu: pl.DataFrame) -> set[int] | None:
    """Device indices named by the GPU events, or None when none names one."""
    found = gpu["device"].drop_nulls().unique().to_list() if "device" in gpu.columns else []
    return {int(d) for d in found} or None


#: Ranks (and world sizes) at or above this are implausible: unknown in a trace's summary, refused
#: in a job (``profview.jobs.inputs.MAX_RANKS``, the same bound): no job has a million ranks.
MAX_RANKS = 1 << 20


def distributed_rank(metadata: dict[str, Any]) -> tuple[int | None, int | None, str | None]:
    """(rank, world size, backend) from ``distributedInfo``; None for what it does not say, or
    says implausibly (a rank of 2^63, a fraction, :data:`MAX_RANKS` or more)."""
    info = metadata.get("distributedInfo")
    if not isinstance(info, dict):
        return None, None, None

    def number(key: str) -> int | None:
        value = info.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < MAX_RANKS:
            return None
        return int(value) if value == int(value) else None

    backend = info.get("backend")
    rank, world = number("rank"), number("world_size")
    if world is not None and world < 1:  # a world of no process is no size: unknown, not taken literally
        world = None
    return rank, world, backend if isinstance(backend, str) else None


def collective_lines(communication: pl.DataFrame) -> list[tuple[str, str, int, float]]:
    """(backend, collective type or ``?``, calls, total µs) of the communication kernels, longest first."""
    comm = communication.filter(pl.col("backend").is_not_null())
    rows = (
        comm.group_by("backend", "collective_name")
        .agg(pl.len().cast(pl.Int64).alias("calls"), pl.col("dur").sum().alias("total"))
        .sort(["total", "backend"], descending=[True, False])
    )
    return [(b, c or "?", n, t) for b, c, n, t in rows.iter_rows()]


def build_overview(
    model: TraceModel,
    steps: pl.DataFrame,
    kernels: pl.DataFrame,
    metadata: dict[str, Any],
    communication: pl.DataFrame | None = None,
) -> Overview:
    """Compute the overview and plain-language hints.

    ``communication``: the GPU frame classified by
    :func:`~profview.analysis.trace.communication.classify_communication` (with the user's pattern);
    without it, no communication figures.
    """
    timed = model.host.height > 0 or model.gpu.height > 0
    span = max(model.span_end - model.span_start, 0.0) if timed else None
    busy = union_length(model.gpu["ts"].to_numpy(), model.gpu["end"].to_numpy())
    real_steps = steps.filter(pl.col("step") >= 0)
    average = {c: mean_or_zero(steps, f"{c}_us") for c in CATEGORIES}
    average["duration"] = mean_or_zero(steps, "duration_us")
    rank, world, backend = distributed_rank(metadata)
    comm = communication.filter(pl.col("backend").is_not_null()) if communication is not None else None
    comm_us = union_length(comm["ts"].to_numpy(), comm["end"].to_numpy()) if comm is not None else 0.0
    view = Overview(
        devices=device_names(metadata, used_devices(model.gpu)),
        devices_listed=len([d for d in metadata.get("deviceProperties") or [] if isinstance(d, dict)]),
        rank=rank,
        world_size=world,
        backend=backend,
        communication_us=comm_us,
        communication_pct=comm_us / busy * 100.0 if busy else 0.0,
        collectives=collective_lines(communication) if communication is not None else [],
        host_collective_us=union_length(*host_collective_intervals(model.host)),
        span_us=span,
        steps=real_steps.height,
        gpu_busy_us=busy,
        gpu_busy_pct=(busy / span * 100.0 if span else 0.0) if span is not None else None,
        gpu_events=model.gpu.height,
        kernel_us=float(kernels["total_us"].sum() or 0.0),
        average_step=average,
    )
    view.hints = hints(view, kernels, runtime_facts(model.host))
    view.notes = attribution_notes(model)
    return view


def attribution_notes(model: TraceModel) -> list[str]:
    """One line where GPU events' ``External id`` names an operator that does not enclose their
    launch call (they were attributed to the launch call's operator instead)."""
    overridden = external_overrides(model)
    if not overridden:
        return []
    events = "GPU event's" if overridden == 1 else "GPU events'"
    return [
        f"{overridden:,} {events} External id names an operator that does not enclose the launch call: "
        "attributed to the operator around the launch call instead"
    ]


def hints(view: Overview, kernels: pl.DataFrame, runtime: RuntimeFacts | None = None) -> list[str]:
    """Recommendations in the spirit of the TensorBoard plugin's, where the data warrants them.

    ``runtime`` (issue 40): the trace's runtime calls.  Their time is called launch overhead only
    where blocking copies and syncs do not hold most of it (there the host waits for the GPU, and
    the hint names the call); graphs are suggested only where none replays; the runtime is named
    as the trace's own (``HIP`` on ROCm)."""
    runtime = runtime or RuntimeFacts()
    out = []
    step = view.average_step.get("duration", 0.0)
    each, the = ("each step", "the step") if view.steps else ("the trace", "the trace")  # issue 13: no steps
    if step:
        loader = view.average_step.get("dataloader", 0.0) / step * 100
        if loader > 5:
            out.append(f"DataLoader takes {loader:.1f}% of {each}: raise num_workers, use pin_memory, or prefetch.")
        runtime_share = view.average_step.get("runtime", 0.0) / step * 100
        if runtime_share > 10:
            out.append(runtime_hint(runtime, f"{runtime_share:.1f}% of {'step time' if view.steps else the}"))
        comm = view.average_step.get("communication", 0.0) / step * 100
        if comm > 30:
            out.append(
                f"Communication takes {comm:.1f}% of {each} (collectives, and waiting in them for the "
                "other ranks): overlap it with compute, or look for a slow rank."
            )
        cpu = view.average_step.get("cpu_exec", 0.0) / step * 100
        if cpu > 30 and runtime.captures:
            out.append(
                f"The host is busy {cpu:.1f}% of {the} with the GPU idle, inside {runtime.captures:,} graph "
                f"capture(s) ({runtime.api} StreamBeginCapture): captured launches are recorded, not run, "
                "so this is no sign of a CPU-bound run."
            )
        elif cpu > 30 and not (view.gpu_events == 0 and runtime.launches):
            out.append(f"The host is busy {cpu:.1f}% of {the} with the GPU idle: {the} is CPU-bound.")
    if view.gpu_events and view.gpu_busy_pct is not None and view.gpu_busy_pct < 50:
        out.append(f"The GPU is idle {100 - view.gpu_busy_pct:.0f}% of the profiled span.")
    if view.gpu_events == 0 and runtime.launches:
        # launches without their GPU records: the GPU did work the trace does not show, so nothing
        # here says where its time went (not CPU-bound: the GPU side is unknown)
        out.append(
            f"The GPU records are missing: {runtime.launches:,} {runtime.api} launch calls and no GPU event "
            "(GPU activities off, or the profiler's GPU buffers were lost): GPU time and idleness are unknown."
        )
    elif view.gpu_events == 0:
        out.append("No GPU work was recorded in this trace (CPU-only profile, or activities off).")
    if kernels.height:
        top = kernels.row(0, named=True)
        if top["pct"] is not None and top["pct"] > 40:  # unknown (no kernel time at all): no hint
            out.append(f"One kernel takes {top['pct']:.0f}% of kernel time: {top['name'][:80]}")
    return out


#: From this share of the runtime calls' time in blocking copies and syncs, the hint names them.
BLOCKING_HINT_PCT = 50.0


def runtime_hint(runtime: RuntimeFacts, share: str) -> str:
    """The hint for runtime calls taking ``share`` of the time (see :func:`hints`)."""
    api = runtime.api
    if runtime.top_blocking is not None and runtime.blocking_pct >= BLOCKING_HINT_PCT:
        top = runtime.top_blocking_us / runtime.runtime_us * 100.0
        return (
            f"{api} runtime calls take {share}, {runtime.blocking_pct:.0f}% of it in blocking copies and syncs "
            f"({runtime.top_blocking} {top:.0f}%): the host waits for the GPU there, not launch overhead."
        )
    if runtime.graph_launches:
        return (
            f"{api} runtime calls take {share}: launch overhead around the trace's {runtime.graph_launches} "
            "graph replays (graphs are in use: capture more of the step into them)."
        )
    return f"{api} runtime calls take {share}: launch overhead; try {api} graphs."
