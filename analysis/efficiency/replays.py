"""Replayed calls sized from their capture: a CUDA/HIP graph replays the calls it captured, with the
shapes they were captured with, so each replay of a captured operator call is one call of the perf
model, sized by the same model as an eager call of that operator and those shapes.

The two inputs are plain frames, so this module needs nothing of the graph family (``profiles/``
composes them): the captured calls (per launch of a capture, the modelled call around it, sized by
:func:`~.perf_model.call_work`) and the replayed GPU events (per event, its replay, its capture and
launch, or why it has none).  No I/O.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

#: Why a replayed event's call has no figure, by what is known of it.
NO_MODEL = "replayed; its captured operator has no perf model"
UNSIZED = "replayed; its captured operator's recorded arguments cannot be sized"
NOT_ATTRIBUTED = "(graph replay, not attributed)"
#: The call columns a replayed call takes from its captured call.
CALL_COLUMNS: tuple[str, ...] = (
    "name",
    "input_dims",
    "input_type",
    "concrete_inputs",
    "model_flops",
    "model_bytes",
    "precision",
    "family",
    "params",
    "note",
)
#: Their types where no capture holds a call (``input_*``: text as the events frame keeps it).
CALL_SCHEMA: dict[str, pl.DataType] = {
    **dict.fromkeys(CALL_COLUMNS, pl.String()),
    "model_flops": pl.Float64(),
    "model_bytes": pl.Float64(),
}


def enclosing_calls(call_rows: Any, call_ends: Any, launch_rows: Any) -> np.ndarray:
    """Per launch row, the index (into ``call_rows``) of the call whose subtree holds it, or -1.

    ``call_rows`` (host rows in the call tree's order, sorted) and ``call_ends`` (their subtree
    ends) are calls that do not nest (the perf model's kept calls: no wrappers, no inner calls),
    so at most one holds a launch: the last call starting at or before it, if it ends after it."""
    rows = np.asarray(call_rows, dtype=np.int64)
    ends = np.asarray(call_ends, dtype=np.int64)
    launches = np.asarray(launch_rows, dtype=np.int64)
    if len(rows) == 0 or len(launches) == 0:
        return np.full(len(launches), -1, dtype=np.int64)
    at = np.searchsorted(rows, launches, side="right") - 1
    inside = (at >= 0) & (launches < ends[np.clip(at, 0, None)])
    return np.where(inside, at, -1)


def replay_calls(events: pl.DataFrame, captured: pl.DataFrame) -> pl.DataFrame:
    """One perf-model call per (replay, captured call): the replayed GPU events ``events``
    (``replay``, ``capture``, ``launch``, ``dur``, ``kernel``, ``ts_gpu``, ``op``, ``op_row``: its
    captured call's row, ``modelled``: whether the perf model knows ``op``, ``how``, ``ts``: the
    replay's launch time on the host) joined to ``captured`` (``capture``, ``launch``, ``call``: the
    captured call's host row in its trace, and :data:`CALL_COLUMNS`).

    A replay of a captured call is a call of it: ``device_total_us`` its events' summed time,
    ``kernel``: its first event's kernel (a GEMM's layout is read from it), ``tf32``: a kernel
    names tf32/xf32.  An event no captured call holds is a call named by its captured operator
    (``op``; one per replay and captured call), or :data:`NOT_ATTRIBUTED` where the capture does
    not attribute it, with null figures and the reason in ``note``: its time stays in a row."""
    joined = events.join(captured, on=["capture", "launch"], how="left")
    tf32 = pl.col("kernel").cast(pl.String).str.contains(r"(?i)tf32|xf32").any().alias("tf32")
    first = pl.col("kernel").cast(pl.String).sort_by("ts_gpu").first().alias("kernel")
    sized = (
        joined.filter(pl.col("call").is_not_null())
        .group_by("replay", "capture", "call")
        .agg(
            pl.col("dur").sum().alias("device_total_us"),
            pl.col("ts").first(),
            first,
            tf32,
            *(pl.col(c).first() for c in CALL_COLUMNS),
        )
    )
    why = (
        pl.when(pl.col("op").is_null())
        .then(pl.concat_str(pl.lit("replayed; not attributed: "), pl.col("how").fill_null("no capture")))
        .when(pl.col("modelled"))
        .then(pl.lit(UNSIZED))
        .otherwise(pl.lit(NO_MODEL))
    )
    rest = (
        joined.filter(pl.col("call").is_null())
        .with_columns(pl.col("op").fill_null(NOT_ATTRIBUTED).alias("name"), why.alias("note"))
        .group_by("replay", "capture", "op_row", "name", "note")
        .agg(pl.col("dur").sum().alias("device_total_us"), pl.col("ts").first(), first, tf32)
    )
    schema = {c: captured.schema[c] for c in CALL_COLUMNS}
    unsized = rest.with_columns(
        *(pl.lit(None, dtype=schema[c]).alias(c) for c in CALL_COLUMNS if c not in ("name", "note"))
    )
    columns = ["ts", "device_total_us", "kernel", "tf32", *CALL_COLUMNS]
    return pl.concat([sized.select(columns), unsized.select(columns)], how="vertical_relaxed").sort(
        "ts", "name", nulls_last=True
    )
