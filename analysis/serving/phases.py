"""The iterations of a serving run summed per phase (prefill, decode, mixed, unknown).

Per phase, from :func:`profview.analysis.serving.iterations.iteration_table`'s rows:

* ``iterations``; ``tokens`` (the sum over its iterations that know theirs, ``tokens_known`` of them)
  and ``tokens_per_iteration`` (their median), ``tokens_min`` and ``tokens_max`` (their range: a
  phase line shows it where it varies);
* ``gpu_us`` (summed), ``median_host_us`` and ``median_gpu_us`` per iteration;
* ``gpu_us_per_token`` = the GPU µs of the iterations that know their tokens ÷ those tokens;
* ``median_gpu_busy_pct``: the median of its iterations' ``gpu_busy_pct`` (a median, so that one
  slow warm-up iteration does not speak for the others); ``bound``: ``host-bound`` below
  :data:`HOST_BOUND_PCT` (the GPU idles most of each iteration, waiting for the host to launch
  work), ``GPU-bound`` from :data:`GPU_BOUND_PCT`, else empty;
* the KV-growth line (decode only, where the annotations give the context: vLLM's detailed
  ``sk``, SGLang's ``g_sk``, ATOM's ``sk``): the least-squares line ``gpu_us = kv_base_us +
  kv_us_per_1k_context × context_tokens / 1000`` over the decode iterations, with ``kv_r2`` and
  ``kv_points``; null with fewer than :data:`KV_MIN_POINTS` iterations or a single context length.

Witness: tests/analysis/serving/test_iterations.py sums the raw events' iterations per phase with
the standard library and :mod:`statistics` (tests/serving_witness.py), and checks the KV-growth
line against the closed form (``statistics.linear_regression``).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ...frames import checked_total
from .names import PHASES

PHASE_COLUMNS = (
    "phase",
    "iterations",
    "tokens",
    "tokens_known",
    "tokens_per_iteration",
    "tokens_min",
    "tokens_max",
    "gpu_us",
    "median_host_us",
    "median_gpu_us",
    "gpu_us_per_token",
    "median_gpu_busy_pct",
    "bound",
    "kv_us_per_1k_context",
    "kv_base_us",
    "kv_r2",
    "kv_points",
)
#: Below this median GPU busy share of the iterations' wall time, a phase is host-bound.
HOST_BOUND_PCT = 50.0
#: From this share on, GPU-bound.
GPU_BOUND_PCT = 90.0
#: Decode iterations with a context length a KV-growth line needs.
KV_MIN_POINTS = 3


def phase_table(iterations: pl.DataFrame) -> pl.DataFrame:
    """One row per phase present, in :data:`PHASES` order (the rules are the module's docstring)."""
    frame = iterations
    known = pl.col("tokens").is_not_null()
    table = (
        frame.group_by("phase")
        .agg(
            pl.len().cast(pl.Int64).alias("iterations"),
            checked_total("tokens").alias("_tokens"),  # null where the total would not fit Int64
            known.sum().cast(pl.Int64).alias("tokens_known"),
            pl.col("tokens").median().alias("tokens_per_iteration"),
            pl.col("tokens").min().cast(pl.Int64).alias("tokens_min"),
            pl.col("tokens").max().cast(pl.Int64).alias("tokens_max"),
            pl.col("gpu_us").sum().alias("gpu_us"),
            pl.col("host_us").median().alias("median_host_us"),
            pl.col("gpu_us").median().alias("median_gpu_us"),
            pl.col("gpu_us").filter(known).sum().alias("_gpu_known"),
            pl.col("gpu_busy_pct").median().round(2).alias("median_gpu_busy_pct"),
        )
        .with_columns(
            pl.when(pl.col("tokens_known") > 0).then(pl.col("_tokens")).cast(pl.Int64).alias("tokens"),
        )
        .with_columns(
            pl.when(pl.col("tokens") > 0)
            .then((pl.col("_gpu_known") / pl.col("tokens")).round(3))
            .alias("gpu_us_per_token"),
            pl.when(pl.col("median_gpu_busy_pct") < HOST_BOUND_PCT)
            .then(pl.lit("host-bound"))
            .when(pl.col("median_gpu_busy_pct") >= GPU_BOUND_PCT)
            .then(pl.lit("GPU-bound"))
            .otherwise(pl.lit(""))
            .alias("bound"),
            pl.col("phase").replace_strict({p: i for i, p in enumerate(PHASES)}, default=len(PHASES)).alias("_order"),
        )
        .sort("_order")
    )
    fit = kv_growth(iterations)
    return table.with_columns(
        *(
            pl.when(pl.col("phase") == "decode").then(pl.lit(value, dtype=dtype)).alias(name)
            for name, value, dtype in (
                ("kv_us_per_1k_context", fit[0] if fit else None, pl.Float64),
                ("kv_base_us", fit[1] if fit else None, pl.Float64),
                ("kv_r2", fit[2] if fit else None, pl.Float64),
                ("kv_points", fit[3] if fit else None, pl.Int64),
            )
        ),
        pl.col("gpu_us").round(3),
        pl.col("median_host_us").round(3),
        pl.col("median_gpu_us").round(3),
    ).select(PHASE_COLUMNS)


def kv_growth(iterations: pl.DataFrame) -> tuple[float, float, float, int] | None:
    """(µs per 1000 context tokens, µs at no context, r², points) of the least-squares line of the
    decode iterations' ``gpu_us`` against their ``context_tokens``; None where it is undefined."""
    points = iterations.filter((pl.col("phase") == "decode") & pl.col("context_tokens").is_not_null())
    if points.height < KV_MIN_POINTS or points["context_tokens"].n_unique() < 2:
        return None
    x = points["context_tokens"].to_numpy().astype(float)
    y = points["gpu_us"].to_numpy().astype(float)
    slope, base = np.polyfit(x, y, 1)
    residual = float(np.sum((y - (base + slope * x)) ** 2))
    spread = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - residual / spread if spread > 0 else 1.0
    return round(float(slope) * 1000, 3), round(float(base), 3), round(r2, 4), points.height
