"""The ranks view: one row per rank of a job, and which rank the others wait for.

Columns (:data:`RANK_COLUMNS`): ``rank``; ``steps`` and ``step_us`` (mean step time); the steps
view's categories as a mean per step, under the same names (``kernel_us`` ... ``other_us``)
except its Communication category, which is ``step_communication_us`` here (communication
with no kernel, copy or set under it, as the steps view ranks what runs at an instant);
``communication_us`` (mean per step: the union of the rank's communication in its steps — its
communication kernels, as HTA's comm/comp overlap counts them, and its CPU collectives);
``exposed_communication_us`` (mean per step: that union minus its part under the union of
compute kernels, so never above ``communication_us``); ``overlap_pct`` (|GPU communication ∩ compute| / |GPU
communication| over the steps, as HTA's ``get_comm_comp_overlap`` defines it; null without GPU
communication); ``wait_us`` (the sum of the rank's waits at matched collectives, see
:mod:`.collectives`); ``last_arrivals`` (instances it arrived at last); ``clock_offset_us`` (what
was subtracted from its timestamps); ``straggler``: true for the rank(s) with the lowest total
wait — the one the others wait for (TraceLens' rule) — when collectives were matched across
at least two ranks; ``wait_us``, ``last_arrivals`` and the straggler come from the matched
instances alone (:func:`~.collectives.match_counts` says how many calls were matched on what).

The rank paths view (:func:`rank_path_table`, issue 32: computed when asked for, not when the job
opens): ``rank``, ``critical_path_us`` (mean per step) and ``path_<bound>_pct`` for each kind of
:data:`~profview.frames.PATH_BOUNDS` (its share of the rank's critical paths, see
docs/critical_path.md; null when the rank has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ...frames import CATEGORIES, PATH_BOUNDS
from ..trace.scalars import as_float

RANK_COLUMNS: tuple[str, ...] = (
    "rank",
    "steps",
    "step_us",
    *(f"{c}_us" for c in CATEGORIES if c != "communication"),
    "step_communication_us",
    "communication_us",
    "exposed_communication_us",
    "overlap_pct",
    "wait_us",
    "last_arrivals",
    "clock_offset_us",
    "straggler",
)
#: The rank paths view (issue 26's per-rank critical paths, computed when asked for: issue 32).
RANK_PATH_COLUMNS: tuple[str, ...] = ("rank", "critical_path_us", *(f"path_{b}_pct" for b in PATH_BOUNDS))


#: The steps view's columns the ranks view takes a mean per step of.
STEP_MEANS: tuple[str, ...] = ("duration_us", *(f"{c}_us" for c in CATEGORIES))


def rank_table(
    ranks: Sequence[tuple[int, pl.DataFrame, dict[str, Any]]],
    collectives: pl.DataFrame,
    offsets: dict[int, float],
) -> pl.DataFrame:
    """The ranks view from each rank's (rank, steps view, facts) and the collectives view."""
    stats = [(rank, steps.height, {c: _mean(steps, c) for c in STEP_MEANS}, facts) for rank, steps, facts in ranks]
    return _rank_table(stats, collectives, offsets)


def stacked_rank_table(
    steps: pl.DataFrame,
    facts: Sequence[tuple[int, dict[str, Any]]],
    collectives: pl.DataFrame,
    offsets: dict[int, float],
) -> pl.DataFrame:
    """:func:`rank_table` from every rank's steps in one frame (``steps``: the steps views of
    every rank with a ``rank`` column; a rank without steps has no rows) and each rank's (rank,
    facts): the same table, without a frame per rank."""
    present = [c for c in STEP_MEANS if c in steps.columns]
    grouped = steps.group_by("rank").agg(pl.len().alias("_steps"), *(pl.col(c).mean() for c in present))
    found = {row["rank"]: row for row in grouped.iter_rows(named=True)}
    stats = []
    for rank, rank_facts in facts:
        row = found.get(rank)
        count = int(row["_steps"]) if row else 0
        means = {c: _rounded(row.get(c)) if row else None for c in STEP_MEANS}
        stats.append((rank, count, means, rank_facts))
    return _rank_table(stats, collectives, offsets)


def _rank_table(
    ranks: Sequence[tuple[int, int, dict[str, float | None], dict[str, Any]]],
    collectives: pl.DataFrame,
    offsets: dict[int, float],
) -> pl.DataFrame:
    """The ranks view from each rank's (rank, step count, the means of :data:`STEP_MEANS`, facts)."""
    rows = []
    for rank, count, means, facts in ranks:
        row: dict[str, Any] = {"rank": rank, "steps": count}
        row["step_us"] = means["duration_us"]
        for category in CATEGORIES:
            name = "step_communication_us" if category == "communication" else f"{category}_us"
            row[name] = means[f"{category}_us"]
        comm = facts.get("comm_us")
        row["communication_us"] = round(comm / count, 3) if count and comm is not None else None
        exposed = round(facts.get("exposed_us", 0.0) / count, 3) if count else None
        if exposed is not None and row["communication_us"] is not None:
            exposed = min(exposed, row["communication_us"])  # rounding alone may not lift it above
        row["exposed_communication_us"] = exposed
        gpu_comm = facts.get("gpu_comm_us", 0.0)
        row["overlap_pct"] = round(100.0 * facts.get("overlap_us", 0.0) / gpu_comm, 2) if gpu_comm else None
        rows.append(row)
    table = pl.DataFrame(rows, schema_overrides={"rank": pl.Int64, "steps": pl.Int64}, infer_schema_length=None)
    matched = collectives.filter(pl.col("ranks") > 1) if collectives.height else collectives
    if matched.height:
        waits = matched.group_by("rank").agg(
            pl.col("wait_us").sum().round(3).alias("wait_us"),
            pl.col("last").sum().cast(pl.Int64).alias("last_arrivals"),
        )
    else:
        waits = pl.DataFrame(schema={"rank": pl.Int64, "wait_us": pl.Float64, "last_arrivals": pl.Int64})
    table = table.join(waits, on="rank", how="left").with_columns(
        pl.col("rank").replace_strict(offsets, default=0.0, return_dtype=pl.Float64).alias("clock_offset_us")
    )
    lowest = as_float(table["wait_us"].min()) if matched.height else None
    straggler = (pl.col("wait_us") <= lowest + 1e-6).fill_null(False) if lowest is not None else pl.lit(False)
    return table.with_columns(straggler.alias("straggler")).select(RANK_COLUMNS).sort("rank")


def rank_path_table(ranks: Sequence[tuple[int, dict[str, Any]]]) -> pl.DataFrame:
    """The rank paths view from each rank's (rank, critical-path facts: ``cp_steps``,
    ``cp_path_us``, ``cp_<bound>_us``; empty for a rank without a path)."""
    rows = []
    for rank, facts in ranks:
        path, path_steps = facts.get("cp_path_us"), facts.get("cp_steps")
        row: dict[str, Any] = {"rank": rank}
        row["critical_path_us"] = round(path / path_steps, 3) if path and path_steps else None
        for bound in PATH_BOUNDS:
            row[f"path_{bound}_pct"] = round(100.0 * facts.get(f"cp_{bound}_us", 0.0) / path, 2) if path else None
        rows.append(row)
    schema = {c: (pl.Int64 if c == "rank" else pl.Float64) for c in RANK_PATH_COLUMNS}
    return pl.DataFrame(rows, schema=schema).sort("rank")


def _mean(steps: pl.DataFrame, column: str) -> float | None:
    return _rounded(steps[column].mean()) if steps.height and column in steps.columns else None  # type: ignore[arg-type]


def _rounded(mean: float | None) -> float | None:
    """A mean of the steps view as the ranks view shows it (to the ns; None: no value)."""
    return round(float(mean), 3) if mean is not None else None


def step_waits(windows: pl.DataFrame, collectives: pl.DataFrame) -> pl.DataFrame:
    """Each rank's wait at matched collectives step by step: ``rank``, ``step``, ``wait_us`` (the sum
    of the waits of its calls that start in the step; 0 for a step with none, but null for every
    step of a rank with no collective matched across ranks at all: its wait is not measured, which
    is not a wait of 0).

    ``windows``: ``rank``, ``step``, ``start_us``, ``end_us`` on the collectives view's timeline
    (each rank's own clock, corrected as :mod:`.collectives` corrects it)."""
    calls = collectives.filter(pl.col("ranks") > 1).select("rank", "start_us", "wait_us")
    inside = windows.join(calls, on="rank", how="inner").filter(
        (pl.col("start_us_right") >= pl.col("start_us")) & (pl.col("start_us_right") < pl.col("end_us"))
    )
    waits = inside.group_by("rank", "step").agg(pl.col("wait_us").sum().round(3))
    return (
        windows.select("rank", "step")
        .join(waits, on=["rank", "step"], how="left")
        .with_columns(
            pl.when(pl.col("rank").is_in(calls["rank"].unique().implode()))
            .then(pl.col("wait_us").fill_null(0.0))
            .otherwise(None)
            .alias("wait_us")
        )
        .sort("rank", "step")
    )
