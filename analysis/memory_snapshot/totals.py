"""A snapshot's totals, as torch's ``_memory_viz segsum`` names them, one definition each.

- ``reserved_bytes``: Σ segment ``total_size``: what the caching allocator holds from CUDA.
- ``allocated_bytes``: Σ ``size`` of the blocks not yet freed: ``active_allocated`` plus
  ``active_awaiting_free`` (state ``active_pending_free``: freed by Python, its stream's work not done).
- ``requested_bytes``: Σ ``requested_size`` of those blocks (what the program asked for); None
  (unknown) where a live block records no ``requested_size`` (a snapshot from a torch that did not
  write it): its size is not what was asked.
- ``free_internal_bytes``: ``allocated_bytes - requested_bytes``: rounding inside live blocks (None
  where ``requested_bytes`` is).
- ``free_external_bytes``: Σ ``size`` of the inactive blocks: gaps between live blocks, which a
  larger request cannot use unless one gap is large enough (fragmentation).

- ``untracked_bytes``: ``reserved_bytes`` less every block's size: reserved memory in no block
  (0 where the blocks tile their segments, as torch writes them; an expandable segment's
  unmapped tail, or a hand-made snapshot, leaves some).

So ``reserved = allocated + free_external + untracked``.  torch's
``segsum`` counts only ``active_allocated`` as allocated, and its allocated is the requested size:
the difference is said in docs/memory_snapshots.md.
"""

from __future__ import annotations

from typing import Any

import polars as pl

LIVE = ("active_allocated", "active_pending_free")


def live_blocks(blocks: pl.DataFrame) -> pl.DataFrame:
    """The blocks not yet freed (:data:`LIVE` states), each with ``requested``: its requested size
    (its size where none is written)."""
    return blocks.filter(pl.col("state").is_in(LIVE)).with_columns(
        requested=pl.when(pl.col("requested_size").fill_null(0) > 0)
        .then(pl.col("requested_size"))
        .otherwise(pl.col("size"))
    )


def totals(segments: pl.DataFrame, blocks: pl.DataFrame) -> dict[str, Any]:
    """The snapshot's totals (the module docstring defines each), for all devices."""
    return _totals_of(segments, blocks)


def device_totals(segments: pl.DataFrame, blocks: pl.DataFrame, device: int) -> dict[str, Any]:
    """The totals of one device's segments and blocks."""
    return _totals_of(segments.filter(pl.col("device") == device), blocks.filter(pl.col("device") == device))


def _sum(frame: pl.DataFrame, column: str) -> int:
    return int(frame[column].sum() or 0) if frame.height else 0


def _totals_of(segments: pl.DataFrame, blocks: pl.DataFrame) -> dict[str, Any]:
    live = live_blocks(blocks)
    pending = live.filter(pl.col("state") == "active_pending_free")
    active = live.filter(pl.col("state") == "active_allocated")
    inactive = blocks.filter(~pl.col("state").is_in(LIVE))
    allocated = _sum(live, "size")
    unasked = live["requested_size"].null_count() if live.height else 0
    requested = None if unasked else _sum(live, "requested")
    reserved = _sum(segments, "total_size")
    largest_free = int(inactive["size"].max() or 0) if inactive.height else 0  # type: ignore[arg-type]
    return {
        "segments": segments.height,
        "blocks": blocks.height,
        "live_blocks": live.height,
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "active_allocated_bytes": _sum(active, "size"),
        "active_awaiting_free_bytes": _sum(pending, "size"),
        "requested_bytes": requested,
        "free_internal_bytes": None if requested is None else allocated - requested,
        "live_blocks_without_requested_size": unasked,
        "free_external_bytes": _sum(inactive, "size"),
        "largest_free_block_bytes": largest_free,
        "untracked_bytes": reserved - _sum(blocks, "size"),
        "free_external_pct": None if reserved == 0 else 100.0 * _sum(inactive, "size") / reserved,
    }


def segsum_totals(segments: pl.DataFrame, blocks: pl.DataFrame) -> dict[str, int]:
    """The figures torch's ``_memory_viz segsum`` prints, as it computes them: allocated is the
    requested size of ``active_allocated`` blocks only, free internal their rounding, free external
    every other block (an ``active_pending_free`` block too)."""
    active = blocks.filter(pl.col("state") == "active_allocated").with_columns(
        requested=pl.when(pl.col("requested_size").is_not_null()).then(pl.col("requested_size")).otherwise("size")
    )
    other = blocks.filter(pl.col("state") != "active_allocated")
    return {
        "total_reserved": _sum(segments, "total_size"),
        "total_allocated": _sum(active, "requested"),
        "free_internal": _sum(active, "size") - _sum(active, "requested"),
        "free_external": _sum(other, "size"),
    }
