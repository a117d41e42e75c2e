"""Two serving runs compared per phase (``profview diff --view phases``, the summary's table).

One row per phase found on either side (:func:`profview.analysis.serving.phases.phase_table`'s rows), each
side's own figures beside each other.  The figure compared (``compared``) is ``gpu_us_per_token``
where both sides count their tokens, else ``median_gpu_us`` (GPU µs per iteration, the median: a
side whose tokens are unknown, a CUDA-graph replay, is still compared per iteration); ``delta_us`` =
after − before of it, ``delta_pct`` its share of the before figure, ``status`` as every diff's
(:func:`profview.analysis.diff.compare.status_expr`: ``added``/``removed`` for a phase on one side only,
``unchanged`` within the tolerance).  The median host µs per iteration and the GPU busy share are
shown beside it, not compared.  Witness: tests/diff/test_phase_diff.py recomputes every figure
from the raw events (tests/serving_witness.py).
"""

from __future__ import annotations

import polars as pl

from ..serving.names import PHASES
from .compare import DEFAULT_TOLERANCE_PCT, status_expr

_SIDE_COLUMNS = (
    "iterations",
    "tokens_per_iteration",
    "gpu_us_per_token",
    "median_gpu_us",
    "median_host_us",
    "median_gpu_busy_pct",
)
PHASE_DIFF_COLUMNS = (
    "name",
    *(f"{column}_{side}" for column in _SIDE_COLUMNS for side in ("before", "after")),
    "compared",
    "delta_us",
    "delta_pct",
    "status",
)


def diff_phases(
    before: pl.DataFrame, after: pl.DataFrame, *, tolerance_pct: float = DEFAULT_TOLERANCE_PCT
) -> pl.DataFrame:
    """Per phase (``name``), both sides' figures and the change of the compared one (module doc)."""

    def side(frame: pl.DataFrame, suffix: str) -> pl.DataFrame:
        return frame.select(
            pl.col("phase").alias(f"name_{suffix}"),
            pl.col("phase").alias("name"),
            *(pl.col(c).alias(f"{c}_{suffix}") for c in _SIDE_COLUMNS),
        )

    both = side(before, "before").join(side(after, "after"), on="name", how="full", coalesce=True)
    per_token = pl.col("gpu_us_per_token_before").is_not_null() & pl.col("gpu_us_per_token_after").is_not_null()
    both = both.with_columns(
        pl.when(per_token).then(pl.lit("gpu_us_per_token")).otherwise(pl.lit("median_gpu_us")).alias("compared"),
        pl.when(per_token)
        .then(pl.col("gpu_us_per_token_before"))
        .otherwise(pl.col("median_gpu_us_before"))
        .fill_null(0.0)
        .alias("_before"),
        pl.when(per_token)
        .then(pl.col("gpu_us_per_token_after"))
        .otherwise(pl.col("median_gpu_us_after"))
        .fill_null(0.0)
        .alias("_after"),
    )
    both = both.with_columns((pl.col("_after") - pl.col("_before")).round(3).alias("delta_us"))
    both = both.with_columns(
        pl.when(pl.col("_before") != 0)
        .then((pl.col("delta_us") / pl.col("_before") * 100).round(2))
        .alias("delta_pct"),
        status_expr("_before", "_after", "delta_us", tolerance_pct),
        pl.col("name").replace_strict({p: i for i, p in enumerate(PHASES)}, default=len(PHASES)).alias("_order"),
    )
    return both.sort("_order").select(PHASE_DIFF_COLUMNS)
