"""Chrome traces from tools other than Kineto (JAX/XLA, TensorFlow): find the GPU lanes.

These traces carry no ``cat``; processes are named by ``process_name`` metadata events, a GPU
one like ``/device:GPU:0``, and its threads (streams) by ``thread_name``.  Complete events on a
GPU process are GPU work (kernels; memcpy/memset by name), other complete events are host
operations.  What such a trace cannot give — links from host operations to the kernels they
launched — is reported as missing, not invented.
"""

from __future__ import annotations

import polars as pl
from profview.parsers.schema import KIND

GPU_PROCESS = r"(?i)/device:GPU|/device:gpu|\bGPU\b|/gpu:\d"
STREAM_NUMBER = r"(\d+)"


def needs_lane_labels(events: pl.DataFrame) -> bool:
    """True for a trace whose complete events carry no Kineto categories at all."""
    complete = events.filter(pl.col("ph") == "X")
    return complete.height > 0 and complete["cat"].null_count() == complete.height


def label_device_lanes(events: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """Kinds from process names; (events, missing views with the reason)."""
    meta = events.filter(pl.col("ph") == "M")
    processes = meta.filter(pl.col("name") == "process_name").select("pid", pl.col("label").alias("process"))
    gpu_pids = processes.filter(pl.col("process").str.contains(GPU_PROCESS))
    threads = meta.filter(pl.col("name") == "thread_name").select("pid", "tid", pl.col("label").alias("thread"))
    missing = {"launches": "this trace does not link host operations to the GPU kernels they launched"}
    if gpu_pids.height == 0:
        missing["kernels"] = "no process of this trace is named as a GPU (/device:GPU:N)"
    on_gpu = pl.col("pid").is_in(gpu_pids["pid"].implode())
    name = pl.col("name").str.to_lowercase()
    kind = (
        pl.when((pl.col("ph") == "X") & on_gpu & name.str.contains("memcpy"))
        .then(pl.lit("memcpy"))
        .when((pl.col("ph") == "X") & on_gpu & name.str.contains("memset"))
        .then(pl.lit("memset"))
        .when((pl.col("ph") == "X") & on_gpu)
        .then(pl.lit("kernel"))
        .when(pl.col("ph") == "X")
        .then(pl.lit("cpu_op"))
        .otherwise(pl.col("kind").cast(pl.String))
        .cast(KIND)
    )
    device_number = gpu_pids.select(
        "pid", pl.col("process").str.extract(r"(\d+)\s*$").cast(pl.Int64, strict=False).alias("gpu_device")
    )
    labelled = (
        events.join(device_number, on="pid", how="left")
        .join(threads, on=["pid", "tid"], how="left")
        .with_columns(
            kind.alias("kind"),
            pl.coalesce("device", "gpu_device").alias("device"),
            pl.coalesce(
                "stream",
                pl.when(on_gpu)
                .then(
                    pl.coalesce(pl.col("thread").str.extract(STREAM_NUMBER), pl.col("tid").str.extract(STREAM_NUMBER))
                )
                .cast(pl.Int64, strict=False),
            ).alias("stream"),
        )
    )
    return labelled.select(events.columns), missing
