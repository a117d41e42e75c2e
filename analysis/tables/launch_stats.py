"""Kernel-launch statistics and per-stream queue length, as Holistic Trace Analysis defines them.

**Per launch** (:func:`launch_stats`; HTA's ``get_cuda_kernel_launch_stats``): every GPU event
(kernel, memcpy, memset) joined to the runtime call that launched it (the model's ``launch_row``,
the call sharing its correlation id), where that call is a launch of one GPU event
(:data:`LAUNCH_CALLS`: ``cudaLaunchKernel``, ``cudaLaunchKernelExC``, ``cuLaunchKernel``,
``cudaMemcpyAsync``, ``cudaMemsetAsync`` and their HIP twins; a graph launch runs many GPU events
behind one call, so it has no per-kernel delay and is left out):

* ``cpu_duration_us``: the launch call's own duration;
* ``gpu_duration_us``: the GPU event's duration;
* ``launch_delay_us``: GPU event start − launch call end (``ts_gpu − ts_cpu − dur_cpu``), 0 where
  that is negative (the two clocks disagree by less than the call: HTA clips the same way);
* ``short_kernel``: ``gpu_duration_us < cpu_duration_us`` and ``cpu_duration_us <= 50`` (HTA's
  "short GPU kernels": the GPU finished before the host had finished asking for it);
* ``slow_launch``: ``cpu_duration_us > 50`` (HTA's runtime outliers, ``runtime_cutoff``);
* ``long_delay``: ``launch_delay_us > 100`` (HTA's ``launch_delay_cutoff``).

HTA 0.5 counts only ``cudaLaunchKernel``, ``cudaLaunchKernelExC`` and the two async memory calls
here (:data:`HTA_LAUNCH_STATS_CALLS`); the ``launch_call`` column says which call each row has, so
its rows are the ones with those names (``cuLaunchKernel`` and ``cuLaunchKernelEx`` launches, which
PyTorch 2.x makes for Triton and some cuBLAS kernels, are not in HTA's figures).

**Per name** (:func:`launch_stats_by_name`): the distribution of each name's launch delays
(min, median, p90, mean, max), its short kernels and long delays.

**Queue length** (:func:`queue_length_series`, :func:`queue_length_summary`; HTA's
``get_queue_length_time_series`` and ``get_queue_length_summary``): on each stream, the number of
launches outstanding: +1 at the start of each launch call (every call of
:data:`LAUNCH_CALLS` with a GPU event: a graph launch is not one of them), −1 at the start of
each GPU event it launched.  The series has one row per change; the summary describes the values at
those changes (count, mean, std, min, quartiles, max), as HTA's ``describe()`` does, unweighted by
how long each value lasted; ``time_mean`` weighs them by time (from the stream's first change to its
last).  Changes at one instant are taken launches first, in time order of the trace.  No I/O.
"""

from __future__ import annotations

import polars as pl

from ...frames import GPU_KINDS

#: Launch calls that put one GPU event on a stream (the per-launch statistics' calls).
LAUNCH_CALLS: tuple[str, ...] = (
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipModuleLaunchKernel",
    "hipMemcpyAsync",
    "hipMemsetAsync",
    "hipMemcpyWithStream",
)
#: The calls HTA 0.5's launch statistics join (``cuda_kernel_launch_stats``).
HTA_LAUNCH_STATS_CALLS: tuple[str, ...] = (
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
)
#: The calls HTA 0.5's queue length counts (``get_runtime_launch_events_query``): profview's, less
#: ``cuLaunchKernelEx`` and ``hipModuleLaunchKernel`` (which HTA does not count).
HTA_QUEUE_CALLS: tuple[str, ...] = tuple(
    c for c in LAUNCH_CALLS if c not in ("cuLaunchKernelEx", "hipModuleLaunchKernel")
)
#: HTA's cutoffs (µs): a launch call longer than this is slow (``runtime_cutoff``) ...
RUNTIME_CUTOFF_US = 50.0
#: ... and a launch delay longer than this is long (``launch_delay_cutoff``).
LAUNCH_DELAY_CUTOFF_US = 100.0

LAUNCH_STATS_SCHEMA: dict[str, pl.DataType] = {  # figures first: they show at 80 columns
    "launch_delay_us": pl.Float64(),
    "cpu_duration_us": pl.Float64(),
    "gpu_duration_us": pl.Float64(),
    "short_kernel": pl.Boolean(),
    "long_delay": pl.Boolean(),
    "slow_launch": pl.Boolean(),
    "start_us": pl.Float64(),
    "launch_us": pl.Float64(),
    "stream": pl.Int64(),
    "launch_call": pl.String(),
    "kind": pl.String(),
    "correlation": pl.Int64(),
    "name": pl.String(),
}


def launch_stats(host: pl.DataFrame, gpu: pl.DataFrame, origin: float) -> pl.DataFrame:
    """One row per GPU event launched by one of :data:`LAUNCH_CALLS` (see the module's rules), in
    the order the GPU ran them; ``start_us`` is the GPU event's start and ``launch_us`` its launch
    call's, from ``origin`` (the trace's origin).  ``host``/``gpu``: a model's frames (``gpu`` with ``launch_row``)."""
    if gpu.height == 0 or "launch_row" not in gpu.columns:
        return pl.DataFrame(schema=LAUNCH_STATS_SCHEMA)
    calls = (
        host.lazy()
        .with_row_index("launch_row")
        .filter(pl.col("name").cast(pl.String).is_in(LAUNCH_CALLS))
        .select(
            pl.col("launch_row").cast(pl.Int64),
            pl.col("name").cast(pl.String).alias("launch_call"),
            pl.col("ts").alias("cpu_ts"),
            pl.col("dur").alias("cpu_duration_us"),
        )
    )
    joined = (
        gpu.lazy()
        .filter(pl.col("kind").is_in(GPU_KINDS) & pl.col("launch_row").is_not_null())
        .select(
            pl.col("name").cast(pl.String),
            pl.col("kind").cast(pl.String),
            pl.col("stream").cast(pl.Int64),
            pl.col("ts"),
            pl.col("dur").alias("gpu_duration_us"),
            pl.col("correlation").cast(pl.Int64),
            pl.col("launch_row").cast(pl.Int64),
        )
        .join(calls, on="launch_row", how="inner")
        .sort(["ts", "correlation"], maintain_order=True)
    )
    delay = (pl.col("ts") - pl.col("cpu_ts") - pl.col("cpu_duration_us")).clip(lower_bound=0.0)
    return (
        joined.with_columns(
            (pl.col("ts") - origin).alias("start_us"),
            (pl.col("cpu_ts") - origin).alias("launch_us"),
            delay.alias("launch_delay_us"),
        )
        .with_columns(
            (
                (pl.col("gpu_duration_us") < pl.col("cpu_duration_us"))
                & (pl.col("cpu_duration_us") <= RUNTIME_CUTOFF_US)
            ).alias("short_kernel"),
            (pl.col("cpu_duration_us") > RUNTIME_CUTOFF_US).alias("slow_launch"),
            (pl.col("launch_delay_us") > LAUNCH_DELAY_CUTOFF_US).alias("long_delay"),
        )
        .select(list(LAUNCH_STATS_SCHEMA))
        .collect()
    )


def launch_stats_by_name(stats: pl.DataFrame) -> pl.DataFrame:
    """Per GPU event name (and kind): its launches, the distribution of their launch delays, its
    short kernels and long delays, and its median launch call and GPU durations; the names with
    the most time in launch delay first."""
    delay = pl.col("launch_delay_us")
    table = stats.group_by("name", "kind").agg(
        pl.len().cast(pl.Int64).alias("launches"),
        delay.sum().alias("delay_total_us"),
        delay.min().alias("delay_min_us"),
        delay.median().alias("delay_median_us"),
        delay.quantile(0.9, interpolation="linear").alias("delay_p90_us"),
        delay.mean().alias("delay_mean_us"),
        delay.max().alias("delay_max_us"),
        pl.col("short_kernel").sum().cast(pl.Int64).alias("short_kernels"),
        pl.col("long_delay").sum().cast(pl.Int64).alias("long_delays"),
        pl.col("slow_launch").sum().cast(pl.Int64).alias("slow_launches"),
        pl.col("cpu_duration_us").median().alias("cpu_median_us"),
        pl.col("gpu_duration_us").median().alias("gpu_median_us"),
    )
    columns = [
        "launches", "delay_median_us", "delay_p90_us", "delay_max_us", "short_kernels", "long_delays",
        "delay_mean_us", "delay_min_us", "delay_total_us", "slow_launches", "cpu_median_us", "gpu_median_us",
        "kind", "name",
    ]  # fmt: skip
    return table.select(columns).sort(["delay_total_us", "name"], descending=[True, False])


def launch_totals(stats: pl.DataFrame) -> dict[str, float | int | None]:
    """The whole trace's launch figures (a summary's): launches, short kernels, slow launches, long
    delays, and the launch delay's median, p90 and max (None where there is no launch)."""
    delay = stats["launch_delay_us"]
    some = stats.height > 0
    return {
        "launches": stats.height,
        "short_kernels": int(stats["short_kernel"].sum()),
        "slow_launches": int(stats["slow_launch"].sum()),
        "long_delays": int(stats["long_delay"].sum()),
        "delay_median_us": float(delay.median()) if some else None,  # type: ignore[arg-type]
        "delay_p90_us": float(delay.quantile(0.9, "linear")) if some else None,  # type: ignore[arg-type]
        "delay_max_us": float(delay.max()) if some else None,  # type: ignore[arg-type]
    }


QUEUE_SERIES_SCHEMA: dict[str, pl.DataType] = {
    "stream": pl.Int64(),
    "start_us": pl.Float64(),
    "change": pl.Int64(),
    "queue_length": pl.Int64(),
}


def queue_length_series(stats: pl.DataFrame) -> pl.DataFrame:
    """Per stream, the queue length after each change (see the module), from :func:`launch_stats`'
    rows: +1 at each row's ``launch_us`` (its call's start), −1 at its ``start_us`` (the GPU
    event's).  At one instant a launch counts before a GPU event's start, so the queue never
    reads below 0 where a kernel starts at the very microsecond its call did."""
    if stats.height == 0:
        return pl.DataFrame(schema=QUEUE_SERIES_SCHEMA)
    ups = stats.select("stream", pl.col("launch_us").alias("start_us"), pl.lit(1, pl.Int64).alias("change"))
    downs = stats.select("stream", "start_us", pl.lit(-1, pl.Int64).alias("change"))
    return (
        pl.concat([ups, downs])
        .sort(["stream", "start_us", "change"], descending=[False, False, True], maintain_order=True)
        .with_columns(pl.col("change").cum_sum().over("stream").alias("queue_length"))
        .select(list(QUEUE_SERIES_SCHEMA))
    )


def queue_length_summary(series: pl.DataFrame) -> pl.DataFrame:
    """Per stream: the queue length's values at its changes described as HTA describes them
    (``changes``, ``mean``, ``std``, ``min``, ``p25``, ``median``, ``p75``, ``max``), with
    ``time_mean``, the mean weighted by how long each value lasted (the last change lasts 0)."""
    length = pl.col("queue_length").cast(pl.Float64)
    lasted = (pl.col("start_us").shift(-1).over("stream") - pl.col("start_us")).fill_null(0.0)
    weighted = series.with_columns(lasted.alias("_lasted"))
    span = pl.col("_lasted").sum()
    return (
        weighted.group_by("stream")
        .agg(
            pl.len().cast(pl.Int64).alias("changes"),
            pl.col("queue_length").max().alias("max"),
            length.mean().alias("mean"),
            pl.when(span > 0).then((length * pl.col("_lasted")).sum() / span).alias("time_mean"),
            length.std(ddof=1).alias("std"),
            pl.col("queue_length").min().alias("min"),
            length.quantile(0.25, "linear").alias("p25"),
            length.quantile(0.5, "linear").alias("median"),
            length.quantile(0.75, "linear").alias("p75"),
        )
        .sort("stream")
    )
