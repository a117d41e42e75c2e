"""Outlier steps: a step whose value lies beyond median + 3 × scaled MAD of all steps.

MAD is the median absolute deviation from the median, scaled by :data:`MAD_SCALE` (1.4826) so
that for normally distributed step times it estimates the standard deviation: the threshold
``median + 3 × 1.4826 × MAD`` then reads as "three sigma", robust to the outliers themselves.
Only the slow side counts (a step is an outlier for taking *longer*), and a step must also be
at least :data:`MIN_EXCESS` (5 %) above the median: a very steady series (kernel time varying by
0.05 %) has a tiny MAD, and flagging a step 0.1 % slower would be noise.  With fewer than
:data:`MIN_STEPS` steps, or a MAD of 0 (half the steps or more share one value), there is no
spread to measure and nothing is flagged.
"""

from __future__ import annotations

import polars as pl

#: Scales the MAD to a standard deviation for normal data (1 / Φ⁻¹(3/4)).
MAD_SCALE = 1.4826
#: How many scaled MADs above the median a step must be.
MAD_FACTOR = 3.0
#: A step must also be this much (a fraction of the median) above the median.
MIN_EXCESS = 0.05
#: Fewer steps than this: no outliers (a median of two says nothing about spread).
MIN_STEPS = 3


def outlier_threshold(values: pl.Series) -> float | None:
    """``max(median + 3 × 1.4826 × MAD, 1.05 × median)`` of ``values`` (nulls ignored), or None
    when undefined (fewer than 3 values, or a MAD of 0)."""
    values = values.drop_nulls().cast(pl.Float64)
    if values.len() < MIN_STEPS:
        return None
    median = float(values.median())  # type: ignore[arg-type]
    mad = float((values - median).abs().median())  # type: ignore[arg-type]
    if mad <= 0.0:
        return None
    return max(median + MAD_FACTOR * MAD_SCALE * mad, median * (1.0 + MIN_EXCESS))


def step_outliers(steps: pl.DataFrame, column: str = "duration_us") -> pl.DataFrame:
    """``steps`` with a boolean ``outlier`` column: ``column`` above :func:`outlier_threshold`.

    Steps numbered below 0 (a trace with no ProfilerStep: one "(whole trace)" row) are never
    outliers and do not count.
    """
    real = steps.filter(pl.col("step") >= 0) if "step" in steps.columns else steps
    threshold = outlier_threshold(real[column]) if column in steps.columns else None
    if threshold is None:
        flag = pl.lit(False)
    else:
        flag = (pl.col(column) > threshold).fill_null(False)
        if "step" in steps.columns:
            flag = flag & (pl.col("step") >= 0).fill_null(False)
    return steps.with_columns(flag.alias("outlier"))
