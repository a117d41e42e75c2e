"""Chrome traces from tools other than Kineto (JAX/XLA, TensorFlow): find the GPU lanes.

These traces carry no ``cat``.  Processes are named by ``process_name`` metadata events (a GPU
one like ``/device:GPU:0``, the host ``/host:CPU``) and their threads by ``thread_name``: on a GPU
process the stream lanes (``Stream #14(Compute)``) hold the kernels, memcpys and memsets, while
the derived lines the profiler adds beside them (``Steps``, ``XLA Modules``, ``XLA Ops``,
``TensorFlow Ops``, ...) are ranges over that same GPU work, kept as GPU annotations so no GPU time
is counted twice.  A kernel's launch shape is one args string, ``kernel_details``:
``regs:N static_shared:N dynamic_shared:N grid:X,Y,Z block:X,Y,Z occ_pct:F``.  Complete events
on other processes are host operations.  What such a trace cannot give, links from host
operations to the kernels they launched, is reported as missing, not invented.
"""

from __future__ import annotations

import polars as pl

from ..frames import KIND

GPU_PROCESS = r"(?i)/device:GPU|\bGPU\b|/gpu:\d"
#: Names of copies and sets as CUPTI-based tools write them (``[MEMCPY] HtoD``, ``Memcpy DtoH``).
COPY_NAME = r"(?i)^\s*\[?\s*memcpy\b|\[memcpy\]|^\s*memcpy[a-z0-9]*\s+[hdp]to[hdp]"
SET_NAME = r"(?i)^\s*\[?\s*memset\b|\[memset\]"
#: A kernel's name as compilers and libraries write it (``void f<...>(...)``, ``sm80_xmma_…``,
#: ``ampere_sgemm_…``, ``ncclKernel_…``, ``triton_…``, ``cutlass::Kernel<…>``).
KERNEL_NAME = (
    r"^void |(?i:kernel)|^(?:sm\d{2,3}|ampere|volta|turing|hopper|maxwell|pascal)_|^triton_|cutlass|(?i:gemm)|^nccl"
)
#: Runtime and driver calls by their API names (``cudaLaunchKernel``, ``hipMemcpyAsync``, ``cuLaunchKernel``).
RUNTIME_NAME = r"^(?:cuda|hip)[A-Z]"
DRIVER_NAME = r"^cu[A-Z]"
STREAM_LANE = r"(?i)stream"
STREAM_NUMBER = r"(\d+)"


def needs_lane_labels(events: pl.DataFrame) -> bool:
    """True for a trace whose complete events carry no Kineto categories at all."""
    complete = pl.col("ph") == "X"
    with_cat = complete & pl.col("cat").is_not_null()
    counts = events.select(complete.sum().alias("complete"), with_cat.sum().alias("cat"))
    complete_count: int = counts["complete"][0]
    with_cat_count: int = counts["cat"][0]
    return complete_count > 0 and with_cat_count == 0


def _shape(details: pl.Expr, key: str) -> pl.Expr:
    """``grid:X,Y,Z`` in a kernel_details string → ``[X, Y, Z]``, as Kineto's grid reads."""
    found = details.str.extract(rf"{key}:(\d+,\d+,\d+)")
    return pl.lit("[") + found.str.replace_all(",", ", ") + pl.lit("]")


def _launch_shape_columns() -> list[pl.Expr]:
    """grid, block, registers, shared_mem, occupancy from ``kernel_details`` where Kineto's are absent."""
    details = pl.col("kernel_details")

    def number(key: str) -> pl.Expr:
        return details.str.extract(rf"{key}:(\d+)").cast(pl.Int64, strict=False)

    return [
        pl.coalesce(pl.col("grid").cast(pl.String), _shape(details, "grid")).alias("grid"),
        pl.coalesce(pl.col("block").cast(pl.String), _shape(details, "block")).alias("block"),
        pl.coalesce("registers", number("regs")).alias("registers"),
        pl.coalesce("shared_mem", number("static_shared") + number("dynamic_shared")).alias("shared_mem"),
        pl.coalesce("occupancy", details.str.extract(r"occ_pct:([\d.]+)").cast(pl.Float64, strict=False)).alias(
            "occupancy"
        ),
    ]


def label_device_lanes(events: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """Kinds from process and thread names; (events, missing views with the reason)."""
    meta = events.filter(pl.col("ph") == "M")
    processes = meta.filter(pl.col("name") == "process_name").select(
        "pid", pl.col("label").cast(pl.String).alias("process")
    )
    gpu_pids = processes.filter(pl.col("process").str.contains(GPU_PROCESS)).unique("pid")
    threads = (
        meta.filter(pl.col("name") == "thread_name")
        .select("pid", "tid", pl.col("label").cast(pl.String).alias("thread"))
        .unique(["pid", "tid"], keep="last")
    )
    # A GPU process whose threads include named streams: only those are lanes of GPU work.
    with_streams = threads.filter(pl.col("thread").str.contains(STREAM_LANE))["pid"].unique().implode()
    missing = {"launches": "this trace does not link host operations to the GPU kernels they launched"}
    if gpu_pids.height == 0:
        return _by_content(events, missing)
    on_gpu = pl.col("pid").is_in(gpu_pids["pid"].implode())
    lane = ~pl.col("pid").is_in(with_streams) | pl.col("thread").str.contains(STREAM_LANE).fill_null(False)
    name = pl.col("name").str.to_lowercase()
    complete = pl.col("ph") == "X"
    kind = (
        pl.when(complete & on_gpu & ~lane)
        .then(pl.lit("gpu_annotation"))
        .when(complete & on_gpu & name.str.contains("memcpy"))
        .then(pl.lit("memcpy"))
        .when(complete & on_gpu & name.str.contains("memset"))
        .then(pl.lit("memset"))
        .when(complete & on_gpu)
        .then(pl.lit("kernel"))
        .when(complete)
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
                pl.when(on_gpu & lane)
                .then(
                    pl.coalesce(
                        pl.col("thread").str.extract(STREAM_NUMBER),
                        pl.col("tid").cast(pl.String).str.extract(STREAM_NUMBER),
                    )
                )
                .cast(pl.Int64, strict=False),
            ).alias("stream"),
            *_launch_shape_columns(),
        )
    )
    return labelled.select(pl.col(column).cast(dtype) for column, dtype in events.schema.items()), missing


def _by_content(events: pl.DataFrame, missing: dict[str, str]) -> tuple[pl.DataFrame, dict[str, str]]:
    """Kinds of a trace that names no GPU process, from each event's own content: a copy or set
    by its name (``[MEMCPY] HtoD``), a kernel by a device or stream argument, or a correlation id
    with a kernel-shaped name; runtime and driver calls by their API names; any other complete
    event is a host operation.  A trace with no GPU event at all says so in ``missing``."""
    name = pl.col("name")
    complete = pl.col("ph") == "X"
    placed = pl.col("stream").is_not_null() | pl.col("device").is_not_null()
    shaped = pl.col("correlation").is_not_null() & name.str.contains(KERNEL_NAME)
    api = name.str.contains(RUNTIME_NAME) | name.str.contains(DRIVER_NAME)
    kind = (
        pl.when(complete & name.str.contains(COPY_NAME))
        .then(pl.lit("memcpy"))
        .when(complete & name.str.contains(SET_NAME))
        .then(pl.lit("memset"))
        .when(complete & name.str.contains(RUNTIME_NAME))
        .then(pl.lit("runtime"))
        .when(complete & name.str.contains(DRIVER_NAME))
        .then(pl.lit("driver"))
        .when(complete & ~api & (placed | shaped))
        .then(pl.lit("kernel"))
        .when(complete)
        .then(pl.lit("cpu_op"))
        .otherwise(pl.col("kind").cast(pl.String))
        .cast(KIND)
    )
    labelled = events.with_columns(kind.alias("kind"), *_launch_shape_columns())
    gpu = labelled.filter(pl.col("kind").is_in(["kernel", "memcpy", "memset"])).height
    if gpu == 0:
        missing["kernels"] = (
            "no GPU event in this trace: no process of this trace is named as a GPU (/device:GPU:N), and no event "
            "has a device, a stream, or a correlation id with a kernel's name"
        )
    else:
        missing["launches"] = "this trace does not link host operations to the GPU work they launched"
    return labelled.select(pl.col(column).cast(dtype) for column, dtype in events.schema.items()), missing


#: Categories only PaddlePaddle's trace writer uses (lower-cased).
PADDLE_CATEGORIES = ("operatorinner", "cudaruntime", "profilestep", "pythonuserdefined", "pythonop", "mluruntime")
#: Paddle appends each event's duration to its name: ``conv2d dygraph[1.234 ms]``.
PADDLE_DURATION_SUFFIX = r"\[-?\d+(?:\.\d+)? (?:ms|us|ns|s)\]$"


def is_paddle_trace(events: pl.DataFrame) -> bool:
    """True for a trace written by PaddlePaddle's profiler (its own categories)."""
    cats = events.select(pl.col("cat").filter(pl.col("ph") == "X").drop_nulls().unique())["cat"]
    return bool(cats.cast(pl.String).str.to_lowercase().is_in(PADDLE_CATEGORIES).any())


def normalise_paddle_names(events: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """Names as Paddle's summary prints them: the ``[1.234 ms]`` duration suffix removed (else
    every event would be a row of its own), and ``ProfileStep#N`` read as ``ProfilerStep#N`` so
    steps are found as in a PyTorch trace.  (events, missing views: none)"""
    name = pl.col("name").str.replace(PADDLE_DURATION_SUFFIX, "")
    name = pl.when(pl.col("ph") == "X").then(name.str.replace(r"^ProfileStep#(\d+)$", "ProfilerStep#$1"))
    return events.with_columns(name.otherwise(pl.col("name")).alias("name")), {}
