"""Events of a trace selected for the tables: GPU work (complete kernel, memcpy, memset events).

Kept apart from :mod:`.model` (the call tree and links, which need NumPy) so that a kernel table
from a cached trace imports only Polars.
"""

from __future__ import annotations

import polars as pl
from profview.parsers.schema import GPU_KINDS

#: Columns that only host events carry, left out of the GPU frame.
HOST_ONLY_COLUMNS = (
    "input_dims",
    "input_type",
    "python_id",
    "python_parent_id",
    "call_stack",
    "sequence_number",
    "fwd_thread_id",
    "label",
)
#: An ``X`` event with a start and a duration.
COMPLETE = (pl.col("ph") == "X") & pl.col("dur").is_not_null() & pl.col("ts").is_not_null()


def gpu_work(events: pl.DataFrame) -> pl.DataFrame:
    """GPU work (kernel, memcpy, memset events) with ``end``; enough for the kernel table."""
    gpu = events.filter(pl.col("kind").is_in(GPU_KINDS) & COMPLETE).drop(HOST_ONLY_COLUMNS, strict=False)
    return gpu.with_columns(pl.col("dur").clip(lower_bound=0.0)).with_columns(
        (pl.col("ts") + pl.col("dur")).alias("end")
    )
