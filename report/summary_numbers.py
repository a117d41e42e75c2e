"""The figures of ``summary --format json`` as typed numbers, each unit in its key (``mfu_pct``,
``peak_memory_bytes``, ``gpu_us_per_token``): what the text summary says in words, for a script.

Each block is read from the same object the text's lines are rendered from (the efficiency
figures, the graph summary, the phases view, the memory peaks, the overview), so the two cannot
disagree.  A figure the trace cannot give is ``null`` (with the reason beside it where there is
one), never 0; a block the trace has no data for is ``null``.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from ..errors import ProfviewError
from ..frames import Overview
from ..profiles.trace_profile import Profile


def finite(value: object) -> object:
    """``value``, with NaN and the infinities as None (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def communication_block(view: Overview) -> dict[str, Any]:
    """GPU communication time (the union of communication kernels) and its share of GPU busy
    time, by backend and collective; host time inside CPU collectives."""
    return {
        "communication_us": finite(view.communication_us),
        "communication_pct_of_gpu_busy": finite(view.communication_pct),
        "host_collective_us": finite(view.host_collective_us),
        "collectives": [
            {"backend": b, "collective": k, "calls": int(c), "total_us": finite(float(t))}
            for b, k, c, t in view.collectives
        ],
    }


def efficiency_block(figures: dict[str, Any] | None) -> dict[str, Any] | None:
    """The perf model's figures of the average step (or the whole trace, ``scope``):
    ``model_tflops_per_step`` (TFLOP), ``model_tflops_per_s``, ``mfu_pct`` against
    ``peak_tflops_per_s`` of ``precision``; None where the trace has no GPU work."""
    if figures is None:
        return None
    model = figures.get("model")
    if model is None:
        return {"scope": None, "model_unknown": figures.get("model_unknown"), **dict.fromkeys(MODEL_KEYS)}
    block = {key: finite(model.get(key)) for key in MODEL_KEYS}
    block["precision_mix"] = [
        {"precision": m["precision"], "flop_pct": finite(m["flop_pct"])} for m in model.get("precision_mix", [])
    ]
    return {"scope": model["scope"], "model_unknown": None, **block}


#: The perf model's keys, in the order the document lists them.
MODEL_KEYS = (
    "steps", "model_tflops_per_step", "model_tflops_per_s", "mfu_pct", "mfu_unknown", "device", "peak_name",
    "precision", "peak_tflops_per_s", "device_inferred", "sized_pct", "unsized_pct", "unmodelled_pct",
    "gpu_busy_us_per_step",
)


def categories_block(figures: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """GPU time by kernel category (µs and % of all GPU events' summed time), largest first."""
    if figures is None:
        return None
    return [
        {"category": c["category"], "total_us": finite(c["total_us"]), "pct": finite(c["pct"])}
        for c in figures["categories"]
    ]


def graphs_block(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """Graph replays: their GPU time, its share of all GPU time (``graph_replay_pct``), the share
    of it attributed to operators through a capture (``graph_attributed_pct``: null where no graph
    has a capture, so nothing could be attributed)."""
    if not summary:
        return None
    every, replayed = float(summary["all_gpu_us"]), float(summary["replayed_us"])
    attributed = float(summary["attributed_us"])
    with_capture = int(summary["graphs"]) - int(summary["without_capture"])
    return {
        "replayed_us": replayed,
        "all_gpu_us": every,
        "graph_replay_pct": replayed / every * 100.0 if every else None,
        "attributed_us": attributed if with_capture else None,
        "graph_attributed_pct": attributed / replayed * 100.0 if with_capture and replayed else None,
        "graphs": int(summary["graphs"]),
        "replays": int(summary["replays"]),
        "partial_replays": int(summary["partial_replays"]),
        "graphs_without_capture": int(summary["without_capture"]),
        "captures": list(summary["captures"]),
        "not_attributed": list(summary.get("misfits") or []),
    }


#: The phases view's columns the document carries, per serving phase.
PHASE_COLUMNS = (
    "phase", "iterations", "tokens", "tokens_per_iteration", "tokens_min", "tokens_max", "gpu_us", "median_host_us",
    "median_gpu_us", "gpu_us_per_token", "median_gpu_busy_pct", "bound", "kv_us_per_1k_context", "kv_base_us",
    "kv_r2", "kv_points",
)


def phases_block(profile: Profile) -> list[dict[str, Any]] | None:
    """One object per serving phase the text prints a line for (prefill, decode, mixed), from the
    phases view; None for a trace without a serving or decode loop."""
    from ..profiles.iteration_views import LINE_PHASES

    if not profile.is_trace or not profile.has_serving_iterations():
        return None
    try:
        phases = profile.phases()
    except ProfviewError:
        return None
    rows = phases.filter(pl.col("phase").is_in(list(LINE_PHASES)))
    return [{c: finite(row.get(c)) for c in PHASE_COLUMNS} for row in rows.iter_rows(named=True)]


def processes_block(metadata: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The per-process lines of an Nsight Systems export that holds several processes (one per GPU
    of a job), as numbers: each process's ``pid`` (null for the kernels that name no process),
    ``name`` (``PROCESSES``; null where not named), the ``gpus`` its kernels ran on, its ``kernels``
    and their summed ``kernel_us``. None for any other profile (one process, or another format)."""
    nsys = metadata.get("nsys")
    processes = nsys.get("processes") if isinstance(nsys, dict) else None
    if not isinstance(processes, list) or len(processes) < 2:
        return None
    return [
        {
            "pid": process.get("pid"),
            "name": process.get("name"),
            "gpus": [int(device) for device in process.get("devices") or []],
            "kernels": int(process.get("kernels") or 0),
            "kernel_us": finite(float(process.get("kernel_us") or 0.0)),
        }
        for process in processes
    ]


def memory_block(profile: Profile) -> list[dict[str, Any]] | None:
    """The peak memory per device (``peak_memory_bytes`` allocated, ``peak_reserved_bytes``, when
    ``ts_us`` and in which operator); None for a trace recorded without profile_memory."""
    if not profile.metadata.get("profile_memory"):
        return None
    try:
        peaks = profile.memory_peaks()
    except ProfviewError:
        return None
    return [
        {
            "device": row["device"],
            "peak_memory_bytes": row["peak_allocated_bytes"],
            "peak_reserved_bytes": row["peak_reserved_bytes"],
            "ts_us": finite(row["ts_us"]),
            "op": row["op"],
        }
        for row in peaks.iter_rows(named=True)
    ]


def critical_path_block(profile: Profile) -> dict[str, Any] | None:
    """Each step's critical path: ``path_us``, ``step_us`` and per bound kind its µs and % of the
    path (the ``critical_path`` view; docs/critical_path.md), or why there is none (``unknown``).
    None for a text format, which has no events."""
    if not profile.is_trace:
        return None
    try:
        frame = profile.critical_path()
    except ProfviewError as exc:
        return {"steps": None, "unknown": exc.problem}
    steps: list[dict[str, Any]] = []
    for (step,), rows in frame.group_by("step", maintain_order=True):
        first = rows.row(0, named=True)
        steps.append({
            "step": int(step),  # type: ignore[call-overload]
            "path_us": finite(first["path_us"]),
            "step_us": finite(first["step_us"]),
            "bounds": [
                {"bound_by": b, "duration_us": finite(d), "pct": finite(p)}
                for b, d, p in rows.select("bound_by", "duration_us", "pct").iter_rows()
            ],
        })
    return {"steps": steps, "unknown": None}


def launches_block(profile: Profile) -> dict[str, Any] | None:
    """The launch statistics (HTA's definitions; the ``launch_stats`` and ``queue_length`` views):
    launches, short kernels, slow launches, long delays, the delay's median / p90 / max and each
    stream's largest queue, or why there are none (``unknown``).  None for a text format."""
    if not profile.is_trace:
        return None
    try:
        profile.launch_stats()
    except ProfviewError as exc:
        return {"launches": None, "unknown": exc.problem}
    figures = profile.launch_figures() or {}
    return {**{k: finite(v) if isinstance(v, float) else v for k, v in figures.items()}, "unknown": None}


def tensor_cores_block(profile: Profile) -> dict[str, Any] | None:
    """Per GEMM and convolution kernel its Tensor Core use (the ``tensor_cores`` view) and the share
    of kernel time in FP32 ones without (``fp32_simt_pct``), or why there is none (``unknown``)."""
    if not profile.is_trace:
        return None
    from ..analysis.efficiency.tensor_cores import fp32_simt_share

    try:
        table = profile.tensor_cores()
    except ProfviewError as exc:
        return {"kernels": None, "fp32_simt_pct": None, "unknown": exc.problem}
    share, _count, _top = fp32_simt_share(table)
    kernels = [
        {"name": n, "tensor_cores": t, "precision": p, "calls": int(c), "total_us": finite(u), "pct": finite(s)}
        for n, t, p, c, u, s in table.select(
            "name", "tensor_cores", "precision", "calls", "total_us", "pct"
        ).iter_rows()
    ]
    return {"kernels": kernels, "fp32_simt_pct": finite(share), "unknown": None}
