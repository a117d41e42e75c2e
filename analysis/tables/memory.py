"""Memory from the allocator's ``[memory]`` instant events (traces recorded with profile_memory).

Each event carries the bytes of one allocation (negative: a free), the device's allocated and
reserved totals right after it, the device and the block's address.  ``memory_events`` gives
one row per event with the operator open on its thread at that instant; ``memory_ops`` folds
them per operator and device; ``memory_peaks`` names the highest allocated total per device.
"""

from __future__ import annotations

import polars as pl

from ...frames import CHAIN_SEPARATOR, MEMORY_COLUMNS, MEMORY_OP_COLUMNS, MEMORY_PEAK_COLUMNS, display_name
from ..trace.at_time import chain, innermost_open
from ..trace.model import TraceModel

#: c10's DeviceType numbers, named as ``torch.device`` names them.
DEVICE_TYPES: dict[int, str] = {
    0: "cpu",
    1: "cuda",
    2: "mkldnn",
    3: "opengl",
    4: "opencl",
    5: "ideep",
    6: "hip",
    7: "fpga",
    8: "maia",
    9: "xla",
    10: "vulkan",
    11: "metal",
    12: "xpu",
    13: "mps",
    14: "meta",
    15: "hpu",
    16: "ve",
    17: "lazy",
    18: "ipu",
    19: "mtia",
    20: "privateuseone",
}
#: No operator was open on the thread when the allocator event happened.
NO_OP = "(no operator)"


def raw_memory_events(events: pl.DataFrame) -> pl.DataFrame:
    """The ``[memory]`` instant events with a timestamp and an allocated total, in time order."""
    return (
        events.filter(
            (pl.col("name") == "[memory]")
            & (pl.col("kind") == "instant")
            & pl.col("ts").is_not_null()
            & pl.col("mem_allocated").is_not_null()
        )
        .select(
            "pid",
            "tid",
            "ts",
            "mem_bytes",
            "mem_allocated",
            "mem_reserved",
            "mem_device_type",
            "mem_device_id",
            "mem_addr",
        )
        .with_row_index("seq")
        .sort("ts", "seq")
    )


def device_name() -> pl.Expr:
    """``cuda:0``, ``cpu``: a device as torch names it, from the event's type and index."""
    kind = pl.col("mem_device_type").replace_strict(DEVICE_TYPES, default=None, return_dtype=pl.String)
    kind = pl.coalesce(kind, pl.lit("device") + pl.col("mem_device_type").cast(pl.String), pl.lit("unknown"))
    index = pl.col("mem_device_id")
    return pl.when(index.is_not_null() & (index >= 0)).then(kind + ":" + index.cast(pl.String)).otherwise(kind)


def memory_events(model: TraceModel, events: pl.DataFrame) -> pl.DataFrame:
    """One row per allocator event (:data:`MEMORY_COLUMNS`), in time order.

    ``op`` is the innermost operator open on the event's thread at its instant (``(no
    operator)`` if none), ``python_stack`` the Python frames open there, outermost first (empty
    when the trace has none).
    """
    raw = raw_memory_events(events)
    ts = raw["ts"].to_numpy()
    op_rows = innermost_open(model, raw["pid"], raw["tid"], ts, python=False)
    py_rows = innermost_open(model, raw["pid"], raw["tid"], ts, python=True)
    names = model.host.select(display_name(pl.col("name")))["name"].to_list()
    stacks: dict[int, str] = {-1: ""}
    for row in set(py_rows.tolist()) - {-1}:
        stacks[row] = CHAIN_SEPARATOR.join(names[r] for r in chain(model, row))
    return raw.select(
        (pl.col("ts") - model.span_start).alias("ts_us"),
        device_name().alias("device"),
        pl.col("mem_bytes").alias("bytes"),
        pl.col("mem_allocated").alias("allocated_bytes"),
        pl.col("mem_reserved").alias("reserved_bytes"),
        pl.Series("op", [names[r] if r >= 0 else NO_OP for r in op_rows.tolist()], dtype=pl.String),
        pl.Series("python_stack", [stacks[r] for r in py_rows.tolist()], dtype=pl.String),
        pl.col("mem_addr").alias("addr"),
    ).select(MEMORY_COLUMNS)


def memory_ops(memory: pl.DataFrame) -> pl.DataFrame:
    """Allocations and frees per (operator, device) (:data:`MEMORY_OP_COLUMNS`), most bytes first.

    ``retained_bytes``: bytes the operator allocated at an address that no later event on the
    device frees before the trace ends — the growth that outlives the window.
    """
    ordered = memory.with_row_index("seq")
    following = (
        ordered.sort("device", "addr", "seq")
        .with_columns(
            pl.col("bytes").shift(-1).over("device", "addr").alias("next_bytes"),
        )
        .select("seq", "next_bytes")
    )
    marked = ordered.join(following, on="seq", how="left").with_columns(
        ((pl.col("bytes") > 0) & (pl.col("addr").is_null() | ~(pl.col("next_bytes").fill_null(0) < 0))).alias("kept")
    )
    alloc = pl.col("bytes") > 0
    table = marked.group_by("op", "device").agg(
        alloc.sum().cast(pl.Int64).alias("allocs"),
        pl.col("bytes").filter(alloc).sum().cast(pl.Int64).alias("allocated_bytes"),
        (pl.col("bytes") < 0).sum().cast(pl.Int64).alias("frees"),
        (-pl.col("bytes").filter(pl.col("bytes") < 0).sum()).cast(pl.Int64).alias("freed_bytes"),
        pl.col("bytes").sum().cast(pl.Int64).alias("net_bytes"),
        pl.col("bytes").filter(alloc & pl.col("kept")).sum().cast(pl.Int64).alias("retained_bytes"),
    )
    return table.select(MEMORY_OP_COLUMNS).sort(["allocated_bytes", "op", "device"], descending=[True, False, False])


def memory_peaks(memory: pl.DataFrame) -> pl.DataFrame:
    """Per device (:data:`MEMORY_PEAK_COLUMNS`), the highest allocated total and the first event
    that reached it (its time, operator and Python stack), the highest reserved total, the events."""
    first_peak = (
        memory.with_row_index("seq")
        .filter(pl.col("allocated_bytes") == pl.col("allocated_bytes").max().over("device"))
        .group_by("device")
        .agg(pl.all().sort_by("seq").first())
    )
    totals = memory.group_by("device").agg(
        pl.col("reserved_bytes").max().alias("peak_reserved_bytes"), pl.len().cast(pl.Int64).alias("events")
    )
    return (
        first_peak.join(totals, on="device")
        .rename({"allocated_bytes": "peak_allocated_bytes"})
        .select(MEMORY_PEAK_COLUMNS)
        .sort("device")
    )
