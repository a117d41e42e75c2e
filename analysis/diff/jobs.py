"""Two distributed jobs compared: the per-rank medians, the straggler tables, kernels across ranks.

Pure functions over each job's own views (:mod:`~profview.analysis.distributed.ranks` and the job kernels view); every
figure is one of those views' figures, and every ``delta`` is ``after - before``.

* **ranks**: one row per figure of the ranks view (``step_us``, each category, exposed
  communication, wait): the median across the side's ranks (a rank with a null figure is left
  out of its median), ``delta_us``, ``delta_pct`` and ``status`` (as :func:`.compare.status_expr`:
  ``unchanged`` within ``tolerance_pct`` percent of the before median).
* **stragglers**: one row per rank found on either side: its total wait at matched collectives
  and its last arrivals before and after, whether it is the straggler on each side, and the
  status of its wait (``added``/``removed``: the rank is in one job only).
* **kernels**: the job kernels views (totals across ranks) compared as
  :func:`.compare.diff_kernels` compares two traces' kernels.
"""

from __future__ import annotations

import polars as pl

from ...frames import CATEGORIES, CATEGORY_LABELS
from .compare import DEFAULT_TOLERANCE_PCT, _pct, diff_kernels, status_expr

#: The ranks view's figures compared by median: (column, label).
RANK_FIGURES: tuple[tuple[str, str], ...] = (
    ("step_us", "Step"),
    *((f"{c}_us", CATEGORY_LABELS[c]) for c in CATEGORIES),
    ("step_communication_us", "Communication (Steps category)"),
    ("exposed_communication_us", "Exposed communication"),
    ("wait_us", "Wait at collectives (total)"),
)
RANK_DIFF_COLUMNS: tuple[str, ...] = (
    "name", "figure", "ranks_before", "ranks_after", "median_us_before", "median_us_after",
    "delta_us", "delta_pct", "status",
)
STRAGGLER_DIFF_COLUMNS: tuple[str, ...] = (
    "name", "rank", "wait_us_before", "wait_us_after", "delta_us", "delta_pct",
    "last_arrivals_before", "last_arrivals_after", "straggler_before", "straggler_after", "status",
)


def _median(view: pl.DataFrame, column: str) -> tuple[float | None, int]:
    """The median of ``column`` over the ranks that have it, and how many ranks that is."""
    if column not in view.columns:
        return None, 0
    values = view[column].drop_nulls()
    return (float(values.median()) if values.len() else None), values.len()  # type: ignore[arg-type]


def diff_rank_medians(
    before: pl.DataFrame, after: pl.DataFrame, *, tolerance_pct: float = DEFAULT_TOLERANCE_PCT
) -> pl.DataFrame:
    """Two ranks views compared by the median across ranks of each figure (:data:`RANK_FIGURES`).

    A figure no rank of a side has (no steps, no matched collective) is null there; its delta
    and status are then null and ``n/a``.
    """
    rows = []
    for column, label in RANK_FIGURES:
        median_b, count_b = _median(before, column)
        median_a, count_a = _median(after, column)
        rows.append((label, column, count_b, count_a, median_b, median_a))
    frame = pl.DataFrame(
        rows,
        schema={
            "name": pl.String, "figure": pl.String, "ranks_before": pl.Int64, "ranks_after": pl.Int64,
            "median_us_before": pl.Float64, "median_us_after": pl.Float64,
        },
        orient="row",
    ).with_columns(
        (pl.col("median_us_after") - pl.col("median_us_before")).alias("delta_us"),
        pl.col("name").alias("name_before"),
        pl.col("name").alias("name_after"),
    )
    frame = frame.with_columns(
        _pct("delta_us", "median_us_before"),
        pl.when(pl.col("delta_us").is_null())
        .then(pl.lit("n/a"))
        .otherwise(status_expr("median_us_before", "median_us_after", "delta_us", tolerance_pct))
        .alias("status"),
    )
    return frame.select(RANK_DIFF_COLUMNS)


def diff_stragglers(
    before: pl.DataFrame, after: pl.DataFrame, *, tolerance_pct: float = DEFAULT_TOLERANCE_PCT
) -> pl.DataFrame:
    """Two ranks views' straggler tables compared, one row per rank (sorted by rank).

    ``name`` is ``rank N``; waits are the ranks view's ``wait_us``, 0 on the side the rank is not
    in (as a removed kernel's time is, so a removed rank's change is its whole wait), but null
    (unknown) where the rank is there and matched no collective across ranks: its change is then
    null and its status ``n/a`` (a wait that cannot be measured is not a wait of 0);
    ``straggler_*`` is null on the side the rank is not in.
    """
    keep = ("rank", "wait_us", "last_arrivals", "straggler")

    def side(view: pl.DataFrame, suffix: str) -> pl.DataFrame:
        return view.select(
            pl.col("rank").cast(pl.Int64),
            pl.col("rank").cast(pl.Int64).alias(f"in_{suffix}"),
            *(pl.col(c).alias(f"{c}_{suffix}") for c in keep[1:]),
        )

    joined = side(before, "before").join(side(after, "after"), on="rank", how="full", coalesce=True)
    frame = joined.with_columns(
        pl.format("rank {}", pl.col("rank")).alias("name"),
        pl.when(pl.col("in_before").is_not_null()).then(pl.format("rank {}", pl.col("rank"))).alias("name_before"),
        pl.when(pl.col("in_after").is_not_null()).then(pl.format("rank {}", pl.col("rank"))).alias("name_after"),
        *(
            pl.when(pl.col(f"in_{s}").is_null()).then(0).otherwise(pl.col(f"{c}_{s}")).alias(f"{c}_{s}")
            for c in ("wait_us", "last_arrivals")
            for s in ("before", "after")
        ),
    ).with_columns((pl.col("wait_us_after") - pl.col("wait_us_before")).alias("delta_us"))
    both = pl.col("name_before").is_not_null() & pl.col("name_after").is_not_null()
    frame = frame.with_columns(
        _pct("delta_us", "wait_us_before"),
        pl.when(both & pl.col("delta_us").is_null())
        .then(pl.lit("n/a"))
        .otherwise(status_expr("wait_us_before", "wait_us_after", "delta_us", tolerance_pct))
        .alias("status"),
    )
    return frame.sort("rank").select(STRAGGLER_DIFF_COLUMNS)


def diff_job_kernels(
    before: pl.DataFrame,
    after: pl.DataFrame,
    *,
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
    match: str = "exact",
) -> pl.DataFrame:
    """Two job kernels views (totals across ranks) compared, as :func:`.compare.diff_kernels`, with
    ``ranks_before``/``ranks_after`` (how many ranks ran the kernel; 0 on a side without it)."""
    frame = diff_kernels(before, after, tolerance_pct=tolerance_pct, match=match)
    ranks_b = before.select(pl.col("name"), pl.col("ranks").alias("ranks_before"))
    name_after = "name_after" if "name_after" in frame.columns else "name"
    ranks_a = after.select(pl.col("name").alias(name_after), pl.col("ranks").alias("ranks_after"))
    frame = frame.join(ranks_b, on="name", how="left", maintain_order="left")
    frame = frame.join(ranks_a, on=name_after, how="left", maintain_order="left")
    frame = frame.with_columns(pl.col("ranks_before").fill_null(0), pl.col("ranks_after").fill_null(0))
    first = ["name", "ranks_before", "ranks_after"]
    return frame.select(*first, *(c for c in frame.columns if c not in first))


def diff_per_rank(
    before: pl.DataFrame,
    after: pl.DataFrame,
    values: tuple[str, ...],
    *,
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
) -> pl.DataFrame:
    """Per-rank figures of two jobs side by side (each frame: ``rank`` and ``values``), one row per
    rank found on either side, sorted by rank: ``name`` (``rank N``), ``rank``, ``<value>_before``,
    ``<value>_after`` for each value (0 on a side without the rank), ``delta_us`` and ``delta_pct``
    of the last value, ``status`` (``added``/``removed``: the rank, or its figure, is on one side only)."""

    def side(frame: pl.DataFrame, suffix: str) -> pl.DataFrame:
        return frame.select(
            pl.col("rank").cast(pl.Int64),
            pl.format("rank {}", pl.col("rank")).alias(f"name_{suffix}"),  # null: not on this side
            *(pl.col(v).alias(f"{v}_{suffix}") for v in values),
        )

    joined = side(before, "before").join(side(after, "after"), on="rank", how="full", coalesce=True)
    filled = joined.with_columns(*(pl.col(f"{v}_{s}").fill_null(0) for v in values for s in ("before", "after")))
    last = values[-1]
    frame = filled.with_columns(
        pl.format("rank {}", pl.col("rank")).alias("name"),
        (pl.col(f"{last}_after") - pl.col(f"{last}_before")).alias("delta_us"),
    )
    frame = frame.with_columns(
        _pct("delta_us", f"{last}_before"), status_expr(f"{last}_before", f"{last}_after", "delta_us", tolerance_pct)
    )
    columns = ["name", "rank", *(f"{v}_{s}" for v in values for s in ("before", "after"))]
    return frame.sort("rank").select(*columns, "delta_us", "delta_pct", "status")
