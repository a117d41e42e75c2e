"""The snapshot's tables by allocation site: what is live at the snapshot (``sites``), at each
device's peak (``peak``) and at each OOM (``ooms``); the annotations on the timeline.

Every byte figure of ``sites`` is a block's ``size`` (what it takes in its segment: the sites sum
to ``allocated_bytes``), with its ``requested_bytes`` beside it (null where a block records no
requested size); ``peak`` and ``ooms`` are in the
events' unit, the requested size (they sum to the peak of :mod:`.replay`'s timeline).
"""

from __future__ import annotations

import polars as pl

from .replay import LiveSet, Replay, live_after, live_frame
from .sites import with_sites
from .totals import live_blocks

SITES_SCHEMA: dict[str, pl.DataType] = {
    "site": pl.String(), "bytes": pl.Int64(), "requested_bytes": pl.Int64(), "count": pl.Int64(),
    "share_pct": pl.Float64(), "largest_bytes": pl.Int64(), "devices": pl.String(), "stack": pl.Int64(),
}
PEAK_SCHEMA: dict[str, pl.DataType] = {
    "device": pl.Int64(), "site": pl.String(), "bytes": pl.Int64(), "count": pl.Int64(), "share_pct": pl.Float64(),
    "largest_bytes": pl.Int64(), "stack": pl.Int64(), "peak_time_us": pl.Int64(),
}
OOM_SCHEMA: dict[str, pl.DataType] = {
    "oom": pl.Int64(), "device": pl.Int64(), "index": pl.Int64(), "time_us": pl.Int64(),
    "requested_bytes": pl.Int64(), "device_free_bytes": pl.Int64(), "active_bytes": pl.Int64(),
    "reserved_bytes": pl.Int64(), "site": pl.String(), "bytes": pl.Int64(), "count": pl.Int64(),
    "stack": pl.Int64(),
}
#: How a live allocation whose alloc was not recorded is named: by where it was freed, said so.
FREED_AT = "(allocated before the recorded events; freed at "
ANNOTATION_VIEW_SCHEMA: dict[str, pl.DataType] = {
    "device": pl.Int64(), "time_us": pl.Int64(), "stage": pl.String(), "name": pl.String(),
    "active_bytes": pl.Int64(), "reserved_bytes": pl.Int64(), "index": pl.Int64(),
}


def sites_view(blocks: pl.DataFrame, sites: pl.DataFrame) -> pl.DataFrame:
    """One row per allocation site of the blocks live at the snapshot (:data:`SITES_SCHEMA`),
    largest first; ``stack``: the largest block's, ``share_pct`` of ``allocated_bytes``."""
    live = with_sites(live_blocks(blocks), sites)
    if live.is_empty():
        return pl.DataFrame(schema=SITES_SCHEMA)
    total = int(live["size"].sum())
    grouped = live.sort("size", "address", descending=[True, False]).group_by("site", maintain_order=True).agg(
        bytes=pl.col("size").sum(),
        requested_bytes=pl.when(pl.col("requested_size").null_count() == 0).then(pl.col("requested").sum()),
        count=pl.len().cast(pl.Int64()),
        largest_bytes=pl.col("size").first(),
        devices=pl.col("device").unique().sort().cast(pl.String()).str.join(","),
        stack=pl.col("stack").first(),
    )
    return (
        grouped.with_columns(share_pct=100.0 * pl.col("bytes") / total if total else pl.lit(None, pl.Float64()))
        .sort("bytes", "site", descending=[True, False])
        .select(list(SITES_SCHEMA))
    )


def live_by_site(live: LiveSet, sites: pl.DataFrame) -> pl.DataFrame:
    """A live set summed by site: ``site``, ``bytes``, ``count``, ``largest_bytes``, ``stack`` (the
    largest's), largest first.  An allocation made before the recorded events and freed after the
    moment asked about has only its free's stack: its site says so (:data:`FREED_AT`)."""
    frame = with_sites(live_frame(live), sites).with_columns(
        site=pl.when(pl.col("free_stack"))
        .then(pl.concat_str(pl.lit(FREED_AT), pl.col("site"), pl.lit(")")))
        .otherwise(pl.col("site"))
    )
    return (
        frame.sort("bytes", "addr", descending=[True, False])
        .group_by("site", maintain_order=True)
        .agg(
            bytes=pl.col("bytes").sum(), count=pl.len().cast(pl.Int64()), largest_bytes=pl.col("bytes").first(),
            stack=pl.col("stack").first(),
        )
        .sort("bytes", "site", descending=[True, False])
    )


def peak_view(replayed: Replay, events: pl.DataFrame, blocks: pl.DataFrame, sites: pl.DataFrame) -> pl.DataFrame:
    """What was live at each device's peak, by site (:data:`PEAK_SCHEMA`): per device the bytes sum
    to ``peak_active_bytes``; ``share_pct`` of the peak.  A device with no recorded event has no
    peak (only its end state is known), so no rows."""
    parts = []
    for peak in replayed.peaks:
        if not peak.events:
            continue
        live = live_after(events, blocks, peak.device, [peak.index])[peak.index]
        by_site = live_by_site(live, sites)
        parts.append(
            by_site.with_columns(
                device=pl.lit(peak.device, pl.Int64()),
                share_pct=100.0 * pl.col("bytes") / peak.peak_active_bytes if peak.peak_active_bytes else None,
                peak_time_us=pl.lit(peak.time_us, pl.Int64()),
            ).select(list(PEAK_SCHEMA))
        )
    if not parts:
        return pl.DataFrame(schema=PEAK_SCHEMA)
    return pl.concat(parts)


def ooms_view(replayed: Replay, events: pl.DataFrame, blocks: pl.DataFrame, sites: pl.DataFrame) -> pl.DataFrame:
    """One row per OOM event and site live at it (:data:`OOM_SCHEMA`): the size asked, the device's
    free memory as CUDA said, active and reserved bytes then, and what was live by site."""
    ooms = replayed.timeline.filter(pl.col("action") == "oom")
    if ooms.is_empty():
        return pl.DataFrame(schema=OOM_SCHEMA)
    free = events.filter(pl.col("action") == "oom").select("device", "index", "device_free")
    ooms = ooms.join(free, on=["device", "index"], how="left").sort("time_us", "device", "index")
    parts = []
    for number, row in enumerate(ooms.iter_rows(named=True), start=1):
        live = live_after(events, blocks, row["device"], [row["index"]])[row["index"]]
        by_site = live_by_site(live, sites)
        if by_site.is_empty():
            by_site = pl.DataFrame(
                {"site": [None], "bytes": [None], "count": [0], "largest_bytes": [None], "stack": [None]},
                schema={"site": pl.String(), "bytes": pl.Int64(), "count": pl.Int64(), "largest_bytes": pl.Int64(),
                        "stack": pl.Int64()},
            )
        parts.append(
            by_site.with_columns(
                oom=pl.lit(number, pl.Int64()), device=pl.lit(row["device"], pl.Int64()),
                index=pl.lit(row["index"], pl.Int64()), time_us=pl.lit(row["time_us"], pl.Int64()),
                requested_bytes=pl.lit(row["size"], pl.Int64()),
                device_free_bytes=pl.lit(row["device_free"], pl.Int64()),
                active_bytes=pl.lit(row["active_bytes"], pl.Int64()),
                reserved_bytes=pl.lit(row["reserved_bytes"], pl.Int64()),
            ).select(list(OOM_SCHEMA))
        )
    return pl.concat(parts)


def annotations_view(annotations: pl.DataFrame, timeline: pl.DataFrame) -> pl.DataFrame:
    """Each annotation with its device's active and reserved bytes at its time (the state after the
    last event at or before it; null before the first) and that event's ``index``."""
    if annotations.is_empty():
        return pl.DataFrame(schema=ANNOTATION_VIEW_SCHEMA)
    points = (
        timeline.filter(pl.col("time_us").is_not_null())
        .select("device", "time_us", "index", "active_bytes", "reserved_bytes")
        .sort("time_us", "index")
    )
    ordered = annotations.with_row_index("_row").with_columns(pl.col("time_us").fill_null(-1)).sort("time_us")
    joined = ordered.join_asof(points, on="time_us", by="device", strategy="backward", check_sortedness=False)
    return (
        joined.sort("_row")
        .with_columns(time_us=pl.when(pl.col("time_us") < 0).then(None).otherwise(pl.col("time_us")))
        .select(list(ANNOTATION_VIEW_SCHEMA))
    )
