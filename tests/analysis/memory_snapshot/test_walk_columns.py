"""The backward walk to one event in columns against the walk one event at a time: the same
live set (addresses, sizes, stacks, whose stack) and the same count of unmatched events, on every
shared snapshot at events spread over its trace and at -1 (before the first); each free's alloc
found in each address's order against the as-of joins."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from support import SAMPLES, SHARED

from profview.analysis.memory_snapshot.replay import (
    _paired_by_joins,
    _paired_in_order,
    _walk_columns,
    _walk_rows,
    live_blocks,
    of_device,
    with_alloc_stacks,
)
from profview.parsers.snapshot.reader import read_snapshot

SNAPSHOTS = [
    *sorted((SHARED / "formats" / "memory-snapshots").glob("*.pickle")), SAMPLES / "magma27_memory_snapshot.pickle"
]


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.name)
def test_walk_in_columns_is_the_walk(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared not checked out)")
    frames = read_snapshot(path)
    checked = 0
    for device in frames.events["device"].unique().to_list():
        events = of_device(frames.events, device)
        live = live_blocks(frames.blocks).filter(pl.col("device") == device)
        current = {int(a): (int(r), s, False) for a, r, s in
                   zip(live["address"].to_list(), live["requested"].to_list(), live["stack"].to_list(), strict=True)}
        forward = with_alloc_stacks(events).select(
            "index", "action", "addr", "size", "stack", "alloc_stack", "alloc_recorded")
        own = forward.sort("index", descending=True)
        for target in sorted({-1, *events["index"].gather_every(max(1, events.height // 7)).to_list()}):
            by_rows = _walk_rows(own, dict(current), [target])[target]
            by_columns = _walk_columns(forward, dict(current), target)
            assert by_columns.unmatched == by_rows.unmatched
            assert by_columns.allocations == by_rows.allocations
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.name)
def test_alloc_stacks_in_order_are_the_joins(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared not checked out)")
    events = read_snapshot(path).events
    own = events.select("device", "index", "action", "addr", "size", "stack").filter(
        pl.col("action").is_in(["alloc", "free_completed"])
    )
    by_order = _paired_in_order(own).sort("device", "index")
    by_joins = _paired_by_joins(own).sort("device", "index")
    assert by_order.height == own.height and by_order["alloc_recorded"].sum() > 0
    assert_frame_equal(by_order, by_joins)


@pytest.mark.parametrize("path", SNAPSHOTS[-1:], ids=lambda p: p.name)
def test_timeline_in_order_is_the_sorted_timeline(path: Path) -> None:
    """The timeline of events in order (NumPy, per device) against the one of the same events
    out of order (sorted, then Polars windows): equal, with two devices and segment events (the
    reserved timeline) made from a real trace."""
    from profview.analysis.memory_snapshot.replay import timeline

    frames = read_snapshot(path)
    one = frames.events
    actions = pl.Series(["segment_alloc", "segment_free", "alloc"] * (one.height // 3 + 1)).head(one.height)
    two = one.with_columns(device=pl.lit(1, pl.Int64()), action=actions)
    events = pl.concat([one, two])
    segments = pl.concat([frames.segments, frames.segments.with_columns(device=pl.lit(1, pl.Int64()))])
    in_order = timeline(events, segments, frames.blocks)
    shuffled = timeline(events.sample(fraction=1.0, shuffle=True, seed=7), segments, frames.blocks)
    assert in_order["reserved_bytes"].null_count() == one.height  # device 0 records no segment event
    assert in_order.filter(pl.col("is_peak")).height == 2
    assert_frame_equal(in_order, shuffled)
