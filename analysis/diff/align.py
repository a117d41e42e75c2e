"""One step of two traces aligned operator by operator, so that a renamed or fused kernel shows
where it moved.

The sequence of a step is its *launching operator calls*: every operator call that is the
innermost launcher of some GPU work inside the step window, in launch order, with the kernels it
launched.  The two sequences are aligned by edit distance on the operator names, with insertions and
deletions only (cost 1 each; a pair is made only of equal names: the alignment is a longest
common subsequence), so that no two unrelated calls are paired.  Each aligned pair of calls is
a row with both sides' kernels and device time: a kernel renamed, fused or split shows under the
lowest operator both traces share.

Rows: ``position`` (0-based, in the alignment), ``alignment`` (``same``: the call on both sides;
``only_before``; ``only_after``), ``op_before``,
``op_after``, ``kernels_before``, ``kernels_after`` (the distinct kernel names of the call, in
launch order, joined by `` + ``), ``calls_before``/``calls_after`` (GPU events of the call),
``device_us_before``, ``device_us_after``, ``delta_us`` (after − before), ``kernels_changed``
(whether the kernel names differ).
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np
import polars as pl

from ..trace.model import TraceModel

#: Above this many cells the edit-distance table is not built; difflib's matching blocks are used.
MAX_ALIGN_CELLS = 16_000_000
KERNEL_JOIN = " + "

ALIGN_COLUMNS: tuple[str, ...] = (
    "position",
    "alignment",
    "op_before",
    "op_after",
    "kernels_before",
    "kernels_after",
    "calls_before",
    "calls_after",
    "device_us_before",
    "device_us_after",
    "delta_us",
    "kernels_changed",
)


def launch_sequence(model: TraceModel, start: float, end: float) -> pl.DataFrame:
    """The launching operator calls whose call starts in ``[start, end)`` (µs, absolute), in order:
    ``op, kernels, calls, device_us``."""
    gpu = model.gpu.filter(pl.col("op_row").is_not_null())
    ops = model.host.select(pl.col("row").alias("op_row"), pl.col("name").alias("op"), pl.col("ts").alias("op_ts"))
    launched = gpu.join(ops, on="op_row").filter(pl.col("op_ts").is_between(start, end, closed="left"))
    return (
        launched.sort("ts")
        .group_by("op_row", maintain_order=True)
        .agg(
            pl.col("op").first(),
            pl.col("op_ts").first(),
            pl.col("name").unique(maintain_order=True).str.join(KERNEL_JOIN).alias("kernels"),
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("dur").sum().alias("device_us"),
        )
        .sort(["op_ts", "op_row"])
        .select("op", "kernels", "calls", "device_us")
    )


def edit_script(before: list[str], after: list[str]) -> list[tuple[int | None, int | None]]:
    """A minimal insert/delete alignment of two name sequences: (i, j) pairs (None: a gap).

    Each row of the table is computed at once: D[i][j] = min(D[i-1][j] + 1, D[i][j-1] + 1, and
    D[i-1][j-1] where the names are equal), the D[i][j-1] term as a running minimum.  Longer sequences than
    :data:`MAX_ALIGN_CELLS` allows use difflib's matching blocks (not always minimal).
    """
    n, m = len(before), len(after)
    if (n + 1) * (m + 1) > MAX_ALIGN_CELLS:
        return _difflib_script(before, after)
    codes: dict[str, int] = {}
    a = np.array([codes.setdefault(x, len(codes)) for x in before], dtype=np.int64)
    b = np.array([codes.setdefault(x, len(codes)) for x in after], dtype=np.int64)
    table = np.empty((n + 1, m + 1), dtype=np.int32)
    table[0] = np.arange(m + 1)
    steps = np.arange(m + 1)
    for i in range(1, n + 1):
        previous = table[i - 1]
        row = np.empty(m + 1, dtype=np.int64)
        row[0] = i
        row[1:] = np.minimum(previous[1:] + 1, np.where(b == a[i - 1], previous[:-1], n + m + 1))
        row = np.minimum.accumulate(row - steps) + steps  # D[i][j-1] + 1, carried along the row
        table[i] = row
    pairs: list[tuple[int | None, int | None]] = []
    i, j = n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0 and a[i - 1] == b[j - 1] and table[i, j] == table[i - 1, j - 1]:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and table[i, j] == table[i - 1, j] + 1:
            pairs.append((i - 1, None))
            i -= 1
        else:
            pairs.append((None, j - 1))
            j -= 1
    return pairs[::-1]


def _difflib_script(before: list[str], after: list[str]) -> list[tuple[int | None, int | None]]:
    pairs: list[tuple[int | None, int | None]] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [(i1 + k, j1 + k) for k in range(i2 - i1)]
        else:  # replace, delete, insert: gaps (only equal names pair)
            pairs += [(i, None) for i in range(i1, i2)]
            pairs += [(None, j) for j in range(j1, j2)]
    return pairs


def align_steps(before: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """Two launch sequences (:func:`launch_sequence`) aligned: one row per position (see the module)."""
    pairs = edit_script(before["op"].to_list(), after["op"].to_list())
    b_rows, a_rows = before.rows(named=True), after.rows(named=True)
    empty: dict[str, Any] = {"op": None, "kernels": None, "calls": 0, "device_us": 0.0}
    records = []
    for position, (i, j) in enumerate(pairs):
        b = b_rows[i] if i is not None else empty
        a = a_rows[j] if j is not None else empty
        if i is None:
            kind = "only_after"
        elif j is None:
            kind = "only_before"
        else:
            kind = "same"
        records.append(
            {
                "position": position,
                "alignment": kind,
                "op_before": b["op"],
                "op_after": a["op"],
                "kernels_before": b["kernels"],
                "kernels_after": a["kernels"],
                "calls_before": b["calls"],
                "calls_after": a["calls"],
                "device_us_before": float(b["device_us"]),
                "device_us_after": float(a["device_us"]),
                "delta_us": float(a["device_us"]) - float(b["device_us"]),
                "kernels_changed": b["kernels"] != a["kernels"],
            }
        )
    schema = {
        "position": pl.Int64,
        "alignment": pl.String,
        "op_before": pl.String,
        "op_after": pl.String,
        "kernels_before": pl.String,
        "kernels_after": pl.String,
        "calls_before": pl.Int64,
        "calls_after": pl.Int64,
        "device_us_before": pl.Float64,
        "device_us_after": pl.Float64,
        "delta_us": pl.Float64,
        "kernels_changed": pl.Boolean,
    }
    return pl.DataFrame(records, schema=schema).select(ALIGN_COLUMNS)


def moved_kernels(aligned: pl.DataFrame) -> pl.DataFrame:
    """Per operator (aligned on both sides), where its kernels changed: ``op, kernels_before,
    kernels_after, calls, device_us_before, device_us_after, delta_us``, largest change first.

    Only aligned calls whose kernel names differ: a kernel renamed, fused or split, attributed
    to the operator that launched it in both traces.
    """
    changed = aligned.filter((pl.col("alignment") == "same") & pl.col("kernels_changed"))
    return (
        changed.group_by("op_before", "kernels_before", "kernels_after", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("device_us_before").sum(),
            pl.col("device_us_after").sum(),
            pl.col("delta_us").sum(),
        )
        .rename({"op_before": "op"})
        .sort([pl.col("delta_us").abs(), pl.col("op")], descending=[True, False])
    )


def moved_calls(aligned: pl.DataFrame, op: str, kernels_before: str, kernels_after: str) -> pl.DataFrame:
    """The aligned calls that one row of :func:`moved_kernels` sums (issue 34: Enter on a Moved row):
    ``position, op, kernels_before, kernels_after, device_us_before, device_us_after, delta_us``, in
    step order; their ``delta_us`` adds up to the row's."""
    changed = aligned.filter(
        (pl.col("alignment") == "same")
        & pl.col("kernels_changed")
        & (pl.col("op_before") == op)
        & (pl.col("kernels_before") == kernels_before)
        & (pl.col("kernels_after") == kernels_after)
    )
    return changed.select(
        "position", pl.col("op_before").alias("op"), "kernels_before", "kernels_after",
        "device_us_before", "device_us_after", "delta_us",
    )

