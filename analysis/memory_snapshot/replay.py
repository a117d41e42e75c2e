"""Active memory over time, walked backwards from the snapshot's end state.

The ring buffer of events (``device_traces``) may have lost its first entries, so a forward sum
from zero would be a delta, not memory. The end state is complete: every block not yet freed.
Active memory after the last event is the requested size of those blocks; before each event it
is found by undoing the event: an ``alloc`` added its size, a ``free_completed`` took it away (a
``free_requested`` block is still held until its stream's work completes). Reserved memory the
same way from the segments: ``segment_alloc``/``segment_map`` added, ``segment_free``/
``segment_unmap`` took away; a device whose trace recorded no segment event has no reserved
timeline (null: torch versions that do not record them say nothing of when segments came). Every
figure is in the events' own unit, the requested size (what torch records for an alloc or a
free; a live block's ``requested_size``).

Which allocations were live after an event is found the same way, by address: starting from the
live blocks, an ``alloc`` met going back was not yet made before it (it leaves the set), a
``free_completed`` was still live (it joins with that event's size and stack). So the live set
at the peak sums to the peak exactly, unless the events and the end state disagree, which
:func:`replay` counts and :attr:`Replay.problems` says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from .totals import live_blocks

ADD_ACTIVE = "alloc"
TAKE_ACTIVE = "free_completed"
ADD_RESERVED = ("segment_alloc", "segment_map")
TAKE_RESERVED = ("segment_free", "segment_unmap")
#: The actions the backward walk reads, as :func:`with_alloc_stacks` gives them.
WALKED_ACTIONS = pl.Enum([ADD_ACTIVE, TAKE_ACTIVE])
#: Events turned into Python values at a time by the backward walk.
WALK_SLICE = 262_144
TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "device": pl.Int64(), "index": pl.Int64(), "time_us": pl.Int64(), "action": pl.String(),
    "addr": pl.Int64(), "size": pl.Int64(), "active_bytes": pl.Int64(), "reserved_bytes": pl.Int64(),
    "stack": pl.Int64(), "is_peak": pl.Boolean(),
}


@dataclass(frozen=True)
class DevicePeak:
    """One device's peak of active memory: its bytes, the event after which it was reached
    (``index`` -1: before the first recorded event) and that event's time; the active memory
    before the first and after the last event; how many events the device recorded."""

    device: int
    peak_active_bytes: int
    index: int
    time_us: int | None
    start_active_bytes: int
    end_active_bytes: int
    events: int
    peak_reserved_bytes: int | None


@dataclass
class Replay:
    """Every device's timeline (:data:`TIMELINE_SCHEMA`, one row per event, the state after it)
    and peak, with the disagreements between the events and the end state (empty when none)."""

    timeline: pl.DataFrame
    peaks: list[DevicePeak]
    problems: list[str] = field(default_factory=list)


def of_device(frame: pl.DataFrame, device: int) -> pl.DataFrame:
    """The rows of ``device``: the frame itself (no copy) where every row is that device's."""
    column = frame["device"]
    if column.null_count() == 0 and column.min() == device and column.max() == device:
        return frame
    return frame.filter(pl.col("device") == device)


def _in_order(events: pl.DataFrame) -> bool:
    """Whether the events are already in (device, index) order, as the reader writes them: then
    the timeline shares their columns instead of a sorted copy of them all."""
    if events.height < 2:
        return True
    device, index = events["device"], events["index"]
    if device.null_count() or index.null_count():
        return False
    step = device.diff().slice(1)
    ahead = index.diff().slice(1)
    return bool(((step > 0) | ((step == 0) & (ahead > 0))).all())


#: The bound under which every running sum of the timeline is exact in int64 (with room).
EXACT_BYTES = 2.0**62


def _check_sums(events: pl.DataFrame, segments: pl.DataFrame, blocks: pl.DataFrame) -> None:
    """Refuse, in one line, sizes whose sums int64 arithmetic would wrap (a hostile or damaged
    file): each running total is at most the sum of every size's magnitude, counted in floats."""
    total = 0.0
    for frame, column in ((events, "size"), (segments, "total_size"), (blocks, "size"), (blocks, "requested_size")):
        if column in frame.columns and frame.height:
            total += float(frame[column].cast(pl.Float64).abs().sum() or 0.0)
    if total >= EXACT_BYTES:
        from ...errors import ProfviewError

        raise ProfviewError(None, f"its sizes sum to {total:.3g} bytes, past what 64-bit sums hold exactly: "
                                  "no timeline or peak can be given")


def timeline(events: pl.DataFrame, segments: pl.DataFrame, blocks: pl.DataFrame) -> pl.DataFrame:
    """Each event with the device's active and reserved bytes after it (:data:`TIMELINE_SCHEMA`);
    sizes whose sums would pass int64 are refused (:func:`_check_sums`), never wrapped."""
    _check_sums(events, segments, blocks)
    live = live_blocks(blocks)
    end_active = dict(live.group_by("device").agg(pl.col("requested").sum()).iter_rows())
    end_reserved = dict(segments.group_by("device").agg(pl.col("total_size").sum()).iter_rows())
    if _in_order(events):
        return _timeline_in_order(events, end_active, end_reserved)
    size = pl.col("size").fill_null(0)
    action = pl.col("action")
    frame = events.sort("device", "index").with_columns(
        _active=pl.when(action == ADD_ACTIVE).then(size).when(action == TAKE_ACTIVE).then(-size).otherwise(0),
        _reserved=pl.when(action.is_in(ADD_RESERVED)).then(size).when(action.is_in(TAKE_RESERVED)).then(-size)
        .otherwise(0),
    )
    frame = frame.with_columns(
        _end_active=pl.col("device").replace_strict(end_active, default=0, return_dtype=pl.Int64()),
        _end_reserved=pl.col("device").replace_strict(end_reserved, default=0, return_dtype=pl.Int64()),
    )
    # per device, not a join: a join would copy every column of the events
    frame = frame.with_columns(_segments=pl.col("action").is_in([*ADD_RESERVED, *TAKE_RESERVED]).any().over("device"))
    after = frame.with_columns(
        active_bytes=pl.col("_end_active") - pl.col("_active").sum().over("device") + pl.col("_active").cum_sum()
        .over("device"),
        reserved_bytes=pl.col("_end_reserved") - pl.col("_reserved").sum().over("device")
        + pl.col("_reserved").cum_sum().over("device"),
    )
    after = after.with_columns(
        reserved_bytes=pl.when(pl.col("_segments")).then(pl.col("reserved_bytes")).otherwise(None)
    )
    first_peak = (pl.col("active_bytes") == pl.col("active_bytes").max().over("device")) & (
        pl.int_range(pl.len()).over("device")
        == pl.when(pl.col("active_bytes") == pl.col("active_bytes").max().over("device"))
        .then(pl.int_range(pl.len()).over("device"))
        .min()
        .over("device")
    )
    return after.with_columns(is_peak=first_peak).select(list(TIMELINE_SCHEMA))


def _timeline_in_order(events: pl.DataFrame, end_active: dict[int, int], end_reserved: dict[int, int]) -> pl.DataFrame:
    """:func:`timeline` of events already in (device, index) order, each device's run summed in
    NumPy: the same figures (int64 arithmetic, as Polars'), with no per-event delta kept as a
    column and the events' own columns shared, not copied."""
    import numpy as np

    count = events.height
    device = events["device"].to_numpy()
    action = events["action"]
    size = events["size"].fill_null(0).to_numpy()
    zero = np.zeros(count, dtype=np.int64)
    active = np.where((action == ADD_ACTIVE).fill_null(False).to_numpy(), size, zero)
    active = np.where((action == TAKE_ACTIVE).fill_null(False).to_numpy(), -size, active)
    adds = action.is_in(ADD_RESERVED).fill_null(False).to_numpy()
    takes = action.is_in(TAKE_RESERVED).fill_null(False).to_numpy()
    recorded = bool(adds.any() or takes.any())  # no segment event on any device: no reserved timeline at all
    reserved = np.where(adds, size, np.where(takes, -size, zero)) if recorded else zero
    del size, zero
    active_bytes = np.empty(count, dtype=np.int64)
    reserved_bytes = np.empty(count, dtype=np.int64)
    has_reserved = np.zeros(count, dtype=bool)
    is_peak = np.zeros(count, dtype=bool)
    starts = np.flatnonzero(np.r_[True, device[1:] != device[:-1]]) if count else np.zeros(0, dtype=np.int64)
    ends = [*starts[1:].tolist(), count] if count else []
    for start, end in zip(starts.tolist(), ends, strict=True):
        own = int(device[start])
        # no sum can overflow: sizes past what int64 sums hold are refused first (_check_sums)
        running = np.cumsum(active[start:end])
        active_bytes[start:end] = (np.int64(end_active.get(own, 0)) - running[-1]) + running
        if recorded:
            running = np.cumsum(reserved[start:end])
            reserved_bytes[start:end] = (np.int64(end_reserved.get(own, 0)) - running[-1]) + running
        has_reserved[start:end] = recorded and bool(adds[start:end].any() or takes[start:end].any())
        is_peak[start + int(np.argmax(active_bytes[start:end]))] = True
    del active, reserved
    if not recorded:  # all null: a column of nulls holds no values (the empty array's pages are never touched)
        reserved_column = pl.repeat(None, count, dtype=pl.Int64(), eager=True).alias("reserved_bytes")
    else:
        reserved_column = pl.Series("reserved_bytes", reserved_bytes, dtype=pl.Int64())
    if recorded and not has_reserved.all():
        reserved_column = reserved_column.set(pl.Series(~has_reserved), None)  # type: ignore[arg-type]
    return events.select("device", "index", "time_us", "action", "addr", "size").with_columns(
        active_bytes=pl.Series(active_bytes, dtype=pl.Int64()),
        reserved_bytes=reserved_column,
        stack=events["stack"],
        is_peak=pl.Series(is_peak),
    ).select(list(TIMELINE_SCHEMA))


def replay(events: pl.DataFrame, segments: pl.DataFrame, blocks: pl.DataFrame) -> Replay:
    """The timeline and each device's peak (a device with segments but no events: its end state)."""
    line = timeline(events, segments, blocks)
    live = live_blocks(blocks)
    end_active = dict(live.group_by("device").agg(pl.col("requested").sum()).iter_rows())
    end_reserved = dict(segments.group_by("device").agg(pl.col("total_size").sum()).iter_rows())
    devices = sorted({*end_active, *end_reserved, *line["device"].unique().to_list()})
    peaks: list[DevicePeak] = []
    problems: list[str] = []
    for device in devices:
        own = of_device(line, device)
        end = int(end_active.get(device, 0))
        reserved_end = int(end_reserved.get(device, 0))
        if own.is_empty():
            peaks.append(DevicePeak(device, end, -1, None, end, end, 0, reserved_end))
            continue
        first = own.row(0, named=True)
        delta = first["size"] or 0
        start = first["active_bytes"] - (
            delta if first["action"] == ADD_ACTIVE else -delta if first["action"] == TAKE_ACTIVE else 0
        )
        peak_row = own.filter(pl.col("is_peak")).row(0, named=True)
        peak_bytes, index, time_us = int(peak_row["active_bytes"]), int(peak_row["index"]), peak_row["time_us"]
        if start > peak_bytes:
            peak_bytes, index, time_us = int(start), -1, first["time_us"]
        lowest = min(int(own["active_bytes"].min() or 0), int(start))  # type: ignore[arg-type]
        if lowest < 0:
            problems.append(
                f"device {device}: walking the events back from the end state gives {lowest:,} active bytes: "
                "the events and the snapshot's blocks disagree"
            )
        recorded = own["reserved_bytes"].drop_nulls()
        peak_reserved = max(int(recorded.max()), reserved_end) if recorded.len() else None  # type: ignore[arg-type]
        peaks.append(DevicePeak(device, peak_bytes, index, time_us, int(start), end, own.height, peak_reserved))
    return Replay(line, peaks, problems)


@dataclass
class LiveSet:
    """The allocations live after one event: address -> (requested bytes, stack, whether that
    stack is the free's: the allocation happened before the recorded events), and the events met
    on the way back that the set could not match (an alloc of an address not live, a free of one
    already live)."""

    allocations: dict[int, tuple[int, int | None, bool]]
    unmatched: int = 0


def with_alloc_stacks(events: pl.DataFrame) -> pl.DataFrame:
    """The alloc and free_completed events with ``alloc_stack``: for a free, the stack of the
    alloc of its address before it (torch records a free with the stack that freed it), null where
    that alloc is before the recorded events; for an alloc, its own. ``action`` is
    :data:`WALKED_ACTIONS` (compares with the action's text as a string column does)."""
    own = events.select("device", "index", "action", "addr", "size", "stack").filter(
        pl.col("action").is_in([ADD_ACTIVE, TAKE_ACTIVE])
    )  # the columns chosen before the rows: the others are never copied
    # the two actions as a one-byte enum, not text: the walk holds these columns at its peak of memory
    own = own.with_columns(pl.col("action").cast(WALKED_ACTIONS))
    if own["addr"].null_count() == 0:
        return _paired_in_order(own)
    return _paired_by_joins(own)


def _paired_in_order(own: pl.DataFrame) -> pl.DataFrame:
    """:func:`with_alloc_stacks` by each address's events in index order: a free's alloc is its
    address's event just before it when that is an alloc (an earlier alloc with a free between is
    not its alloc, and no event before it: before the recorded events); an alloc is its own.
    Found through one permutation (NumPy), so no column but the keys is copied."""
    import numpy as np
    import pyarrow as pa

    count = own.height
    is_alloc = (own["action"] == ADD_ACTIVE).fill_null(False).to_numpy()
    stack = own["stack"]
    has_stack = stack.is_not_null().to_numpy()
    stacks = stack.fill_null(0).to_numpy()
    addr = own["addr"].to_numpy()
    one_device = own["device"].n_unique() <= 1
    index_sorted = own["index"].is_sorted()
    if one_device and index_sorted:  # already in index order: a stable sort by address is the (address, index) order
        order = np.argsort(addr, kind="stable")
    else:
        order = np.lexsort((own["index"].to_numpy(), addr, own["device"].to_numpy()))
    before_alloc = np.zeros(count, dtype=bool)
    alloc_stack = np.zeros(count, dtype=np.int64)  # the stack of the event before (then each alloc's own)
    before_has = np.zeros(count, dtype=bool)
    if count > 1:
        in_order = addr[order]
        same = in_order[1:] == in_order[:-1]  # the row above is the same address's
        del in_order
        if not one_device:
            device = own["device"].to_numpy()[order]
            same &= device[1:] == device[:-1]
            del device
        previous, following = order[:-1], order[1:]
        before_alloc[following] = same & is_alloc[previous]
        del same
        alloc_stack[following] = stacks[previous]
        before_has[following] = has_stack[previous]
    del order, addr
    np.copyto(alloc_stack, stacks, where=is_alloc)  # an alloc's stack is its own
    del stacks
    alloc_has = np.where(is_alloc, has_stack, before_alloc & before_has)
    del has_stack, before_has
    # the nulls as a validity bitmap over the values themselves: no masked copy of the column
    validity = None if alloc_has.all() else pa.py_buffer(np.packbits(alloc_has, bitorder="little"))
    del alloc_has
    alloc_column = pl.Series(
        "alloc_stack", pl.from_arrow(pa.Array.from_buffers(pa.int64(), count, [validity, pa.py_buffer(alloc_stack)]))
    )
    paired = own.with_columns(alloc_stack=alloc_column, alloc_recorded=pl.Series(is_alloc | before_alloc))
    del alloc_column, alloc_stack
    if not (one_device and index_sorted):
        paired = paired.with_row_index("_row").sort("index", "_row").drop("_row")
    return paired.select("device", "index", "action", "addr", "size", "stack", "alloc_stack", "alloc_recorded")


def _paired_by_joins(own: pl.DataFrame) -> pl.DataFrame:
    """:func:`with_alloc_stacks` by as-of joins (where an address is null, which a join never matches)."""
    allocs = (
        own.filter(pl.col("action") == ADD_ACTIVE)
        .select("device", "addr", "index", alloc_stack="stack", _alloc_index="index")
        .sort("index")
    )
    paired = own.sort("index").join_asof(
        allocs, on="index", by=["device", "addr"], strategy="backward", check_sortedness=False
    )
    # An earlier alloc of the address whose own free came first is not this free's alloc.
    frees = own.filter(pl.col("action") == TAKE_ACTIVE).select("device", "addr", "index").sort("index")
    paired = paired.join_asof(
        frees.rename({"index": "_free_index"}).with_columns(_probe=pl.col("_free_index")),
        left_on="index", right_on="_probe", by=["device", "addr"], strategy="backward", check_sortedness=False,
        allow_exact_matches=False,
    )
    stale = pl.col("_free_index").is_not_null() & (pl.col("_free_index") > pl.col("_alloc_index"))
    return paired.with_columns(
        alloc_stack=pl.when(stale).then(None).otherwise(pl.col("alloc_stack")),
        alloc_recorded=pl.col("_alloc_index").is_not_null() & ~stale.fill_null(False),
    ).select("device", "index", "action", "addr", "size", "stack", "alloc_stack", "alloc_recorded")


def live_after(
    events: pl.DataFrame, blocks: pl.DataFrame, device: int, indices: Iterable[int]
) -> dict[int, LiveSet]:
    """For each event ``index`` of ``device`` (-1: before the first event), the allocations live
    after it, walking back from the end state (the module docstring says how)."""
    wanted = sorted(set(indices), reverse=True)
    live = live_blocks(blocks).filter(pl.col("device") == device)
    current: dict[int, tuple[int, int | None, bool]] = {
        int(addr): (int(requested), stack, False)
        for addr, requested, stack in zip(
            live["address"].to_list(), live["requested"].to_list(), live["stack"].to_list(), strict=True
        )
    }
    own = with_alloc_stacks(of_device(events.select("device", "index", "action", "addr", "size", "stack"), device))
    if len(wanted) == 1 and own["addr"].null_count() == 0:  # in index order: the walk reads a slice of it, no copy
        columns = own.select("index", "action", "addr", "size", "stack", "alloc_stack", "alloc_recorded")
        del own
        return {wanted[0]: _walk_columns(columns, current, wanted[0])}
    earliest = wanted[-1] if wanted else None
    if earliest is not None:  # the walk stops at the earliest index asked for: the events before it are not read
        own = own.filter(pl.col("index") > earliest)
    own = own.sort("index", descending=True).select(
        "index", "action", "addr", "size", "stack", "alloc_stack", "alloc_recorded"
    )
    return _walk_rows(own, current, wanted)


def _walk_rows(
    own: pl.DataFrame, current: dict[int, tuple[int, int | None, bool]], wanted: list[int]
) -> dict[int, LiveSet]:
    """The backward walk one event at a time (``own``: the alloc and free events, latest first;
    ``wanted``: the indices asked for, latest first)."""
    unmatched = 0
    out: dict[int, LiveSet] = {}
    pending = iter(wanted)
    target = next(pending, None)
    rows = (row for part in own.iter_slices(WALK_SLICE) for row in zip(
        *(part[name].to_list() for name in part.columns), strict=True))  # a slice at a time: never all as objects
    for index, action, addr, size, stack, alloc_stack, recorded in rows:
        while target is not None and index <= target:
            out[target] = LiveSet(dict(current), unmatched)
            target = next(pending, None)
        if target is None:
            break
        if action == ADD_ACTIVE:
            if current.pop(addr, None) is None:
                unmatched += 1
        elif addr in current:
            unmatched += 1
        elif recorded:
            current[addr] = (int(size or 0), alloc_stack, False)
        else:
            current[addr] = (int(size or 0), stack, True)
    while target is not None:
        out[target] = LiveSet(dict(current), unmatched)
        target = next(pending, None)
    return out


def _walk_columns(own: pl.DataFrame, current: dict[int, tuple[int, int | None, bool]], target: int) -> LiveSet:
    """The backward walk to one index, in columns (``own``: the alloc and free events in index
    order, earliest first): the same live set and count as :func:`_walk_rows`.  Per address the
    walk's state after an event is the event's own kind (an alloc met going back leaves the
    address not yet allocated, a free leaves it live), so the state before each event is the one
    after the address's next event in index order (or the end state); an event that does not
    match that state is unmatched, and a live address keeps the size and stack of the free that
    made it live (its earliest such event after the target), or its block's.  Read as a slice of
    ``own`` in index order, never a reversed copy, and walked in NumPy through one stable sort by
    address (no per-address window or group-by of Polars, whose hash tables weigh more)."""
    # ``own`` earliest first (sorted if it is not): the events after the target are a slice of it, not a copy
    if not own["index"].is_sorted():
        own = own.sort("index", maintain_order=True)
    rows = own.slice(own["index"].search_sorted(target, side="right"))
    if rows.is_empty():
        return LiveSet(dict(current), 0)
    if rows["addr"].null_count():  # an event without an address: the walk one event at a time
        return _walk_rows(rows.reverse(), dict(current), [target])[target]
    import numpy as np

    count = rows.height
    addr = rows["addr"].to_numpy()
    free = (rows["action"] != ADD_ACTIVE).fill_null(True).to_numpy()
    known = np.fromiter(current, dtype=np.int64, count=len(current))
    # each address's events together, in index order (a stable sort of a slice already in index order)
    order = np.argsort(addr, kind="stable")
    in_order = addr[order]
    first = np.empty(count, dtype=bool)  # an address's earliest event
    first[0] = True
    np.not_equal(in_order[1:], in_order[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    addresses = in_order[starts]
    del in_order
    free_sorted = free[order]
    del free
    # the state before an event, as the walk meets it going back, is the one after the address's next event
    # (after an address's latest event: the end state)
    before = np.empty(count, dtype=bool)
    before[:-1] = free_sorted[1:]
    ends = np.r_[starts[1:], count] - 1  # an address's latest event
    before[ends] = np.isin(addresses, known)
    unmatched = int(np.count_nonzero(free_sorted == before))
    made = free_sorted & ~before
    del before
    last_free = free_sorted[starts]  # the address's earliest event's kind
    del free_sorted
    # the earliest event of each address that made it live (the last the walk meets)
    made_at = np.flatnonzero(made)
    del made
    group = np.cumsum(first, dtype=np.int64) - 1
    del first
    made_groups, first_made = np.unique(group[made_at], return_index=True)
    del group
    made_rows = order[made_at[first_made]]
    met = order[ends]  # the latest event of each address: the walk meets the addresses latest first
    del order, made_at
    chosen = pl.Series(made_rows, dtype=pl.Int64())
    values = zip(*(rows[name].gather(chosen).to_list() for name in ("size", "stack", "alloc_stack", "alloc_recorded")),
                 strict=True)
    made_live = dict(zip(made_groups.tolist(), values, strict=True))
    del rows
    allocations = dict(current)
    for number in np.argsort(-met, kind="stable").tolist():
        address = int(addresses[number])
        if not last_free[number]:
            allocations.pop(address, None)
        elif number in made_live:
            size, stack, alloc_stack, recorded = made_live[number]
            allocations.pop(address, None)  # made live again: after the others, as the walk adds it
            allocations[address] = (int(size or 0), alloc_stack, False) if recorded else (int(size or 0), stack, True)
    return LiveSet(allocations, unmatched)


def live_frame(live: LiveSet) -> pl.DataFrame:
    """A live set as a frame: ``addr``, ``bytes`` (requested), ``stack``, ``free_stack`` (the stack
    is the free's: the alloc was not recorded)."""
    rows = live.allocations
    return pl.DataFrame(
        {
            "addr": list(rows),
            "bytes": [size for size, _, _ in rows.values()],
            "stack": [stack for _, stack, _ in rows.values()],
            "free_stack": [freed for _, _, freed in rows.values()],
        },
        schema={"addr": pl.Int64(), "bytes": pl.Int64(), "stack": pl.Int64(), "free_stack": pl.Boolean()},
    )
