"""Whole-trace figures for the overview: devices, span, GPU busy time, average step breakdown."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ..frames import CATEGORIES, Overview
from .model import TraceModel


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


def device_names(metadata: dict[str, Any]) -> list[str]:
    """``deviceProperties`` as one line per device."""
    names = []
    for dev in metadata.get("deviceProperties") or []:
        if isinstance(dev, dict):
            mem = dev.get("totalGlobalMem")
            size = f", {mem / 2**30:.0f} GiB" if isinstance(mem, (int, float)) else ""
            sms = f", {dev['numSms']} SMs" if "numSms" in dev else ""
            names.append(f"{dev.get('id', '?')}: {dev.get('name', 'unknown')}{size}{sms}")
    return names


def build_overview(model: TraceModel, steps: pl.DataFrame, kernels: pl.DataFrame, metadata: dict) -> Overview:
    """Compute the overview and plain-language hints."""
    span = max(model.span_end - model.span_start, 0.0)
    busy = union_length(model.gpu["ts"].to_numpy(), model.gpu["end"].to_numpy())
    real_steps = steps.filter(pl.col("step") >= 0)
    average = {c: float(steps[f"{c}_us"].mean() or 0.0) for c in CATEGORIES}
    average["duration"] = float(steps["duration_us"].mean() or 0.0)
    view = Overview(
        devices=device_names(metadata),
        span_us=span,
        steps=real_steps.height,
        gpu_busy_us=busy,
        gpu_busy_pct=busy / span * 100.0 if span else 0.0,
        gpu_events=model.gpu.height,
        kernel_us=float(kernels["total_us"].sum() or 0.0),
        average_step=average,
    )
    view.hints = hints(view, kernels)
    return view


def hints(view: Overview, kernels: pl.DataFrame) -> list[str]:
    """Recommendations in the spirit of the TensorBoard plugin's, where the data warrants them."""
    out = []
    step = view.average_step.get("duration", 0.0)
    if step:
        loader = view.average_step.get("dataloader", 0.0) / step * 100
        if loader > 5:
            out.append(f"DataLoader takes {loader:.1f}% of each step: raise num_workers, use pin_memory, or prefetch.")
        runtime = view.average_step.get("runtime", 0.0) / step * 100
        if runtime > 10:
            out.append(f"CUDA runtime calls take {runtime:.1f}% of step time: launch overhead; try CUDA graphs.")
        cpu = view.average_step.get("cpu_exec", 0.0) / step * 100
        if cpu > 30:
            out.append(f"The host is busy {cpu:.1f}% of the step with the GPU idle: the step is CPU-bound.")
    if view.gpu_events and view.gpu_busy_pct < 50:
        out.append(f"The GPU is idle {100 - view.gpu_busy_pct:.0f}% of the profiled span.")
    if view.gpu_events == 0:
        out.append("No GPU work was recorded in this trace (CPU-only profile, or activities off).")
    if kernels.height:
        top = kernels.row(0, named=True)
        if top["pct"] > 40:
            out.append(f"One kernel takes {top['pct']:.0f}% of kernel time: {top['name'][:80]}")
    return out
