"""Events of a trace selected for the tables: GPU work (complete kernel, memcpy, memset events).

Kept apart from :mod:`.model` (the call tree and links, which need NumPy) so that a kernel table
from a cached trace imports only Polars.
"""

from __future__ import annotations

import polars as pl

from ...frames import GPU_KINDS

#: Columns of GPU work every view uses (``collective``: Kineto's ``Collective name``, which marks
#: communication kernels) (the rest of an event describes host work, or nothing a
#: view shows): fewer columns make the frame smaller and sorting a million events faster.
GPU_COLUMNS = (
    "kind",
    "name",
    "ts",
    "dur",
    "external_id",
    "correlation",
    "stream",
    "device",
    "grid",
    "block",
    "registers",
    "shared_mem",
    "occupancy",
    "bytes",
    "collective",
    "short_name",
)
#: An ``X`` event with a start and a duration.
COMPLETE = (pl.col("ph") == "X") & pl.col("dur").is_not_null() & pl.col("ts").is_not_null()


#: The columns linking the model adds to :func:`gpu_work`'s frame (:func:`.model.link_model`): the
#: launching runtime call's host row and the innermost launching operator's.
GPU_LINK_COLUMNS = ("launch_row", "op_row")


def gpu_work(events: pl.DataFrame) -> pl.DataFrame:
    """GPU work (kernel, memcpy, memset events) with ``end``; enough for the kernel table."""
    # Lazily, so that only these columns are filtered, and a run of selected rows is a slice of the
    # events' buffers, not a copy (an eager filter copied 330 MB of a 16 M-event frame's four columns).
    gpu = events.lazy().filter(pl.col("kind").is_in(GPU_KINDS) & COMPLETE).select(GPU_COLUMNS).collect()
    return gpu.with_columns(pl.col("dur").clip(lower_bound=0.0)).with_columns(
        (pl.col("ts") + pl.col("dur")).alias("end")
    )
