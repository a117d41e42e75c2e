"""One memory snapshot, opened: its frames and views, each computed once, on first use.

A :class:`SnapshotProfile` is the snapshot's counterpart of the trace's ``Profile``: the CLI,
the query tables and the viewer ask it for a view by its export name (:data:`SNAPSHOT_VIEWS`)
and for its summary figures (:meth:`SnapshotProfile.summary`), and never read the pickle.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

import polars as pl

from ..analysis.memory_snapshot.replay import Replay, replay
from ..analysis.memory_snapshot.sites import stack_sites, with_sites
from ..analysis.memory_snapshot.totals import device_totals, segsum_totals, totals
from ..analysis.memory_snapshot.views import annotations_view, ooms_view, peak_view, sites_view
from ..errors import ProfviewError
from ..parsers.snapshot.frames import SnapshotFrames
from ..parsers.snapshot.reader import FORMAT, read_snapshot

#: The snapshot's views by export name, and what one row is.
SNAPSHOT_VIEWS: dict[str, str] = {
    "segments": "one per segment the caching allocator holds",
    "blocks": "one per block of a segment (live or free), with its allocation site",
    "events": "one per recorded allocator event (the ring buffer of device_traces)",
    "sites": "one per allocation site of the memory live at the snapshot",
    "peak": "one per device and allocation site of the memory live at the device's peak",
    "timeline": "one per event: the device's active and reserved bytes after it",
    "ooms": "one per OOM event and allocation site live at it",
    "annotations": "one per annotation START/END, with the active bytes then",
    "stacks": "one per frame of each distinct stack, innermost first",
}
#: Schema name of ``summary --format json`` for a snapshot.
SUMMARY_SCHEMA = "profview.memory-snapshot/1"


class SnapshotProfile:
    """A memory snapshot's frames (:mod:`profview.parsers.snapshot.frames`) and views."""

    kind = "snapshot"
    format = FORMAT

    def __init__(self, path: str, frames: SnapshotFrames) -> None:
        self.path = path
        self.frames = frames
        self.warnings: list[str] = list(frames.warnings)

    @cached_property
    def sites(self) -> pl.DataFrame:
        """Each stack's allocation site (:func:`~profview.analysis.memory_snapshot.sites.stack_sites`)."""
        return stack_sites(self.frames.stacks)

    @cached_property
    def replayed(self) -> Replay:
        """The backward walk: timeline and per-device peaks; its disagreements become warnings."""
        try:
            result = replay(self.frames.events, self.frames.segments, self.frames.blocks)
        except ProfviewError as exc:  # the analysis names no file: this snapshot is the one
            raise ProfviewError(exc.path or self.path, exc.problem) from None
        self.warnings.extend(result.problems)
        return result

    @cached_property
    def totals(self) -> dict[str, Any]:
        """The end-state totals (:func:`~profview.analysis.memory_snapshot.totals.totals`); reserved
        memory in no block is said as a warning."""
        figures = totals(self.frames.segments, self.frames.blocks)
        if figures["live_blocks_without_requested_size"]:
            self.warnings.append(
                f"{figures['live_blocks_without_requested_size']:,} of {figures['live_blocks']:,} live blocks record "
                "no requested_size: requested bytes and rounding (free internal) are unknown"
            )
        if figures["untracked_bytes"]:
            self.warnings.append(
                f"{figures['untracked_bytes']:,} bytes of the segments are in no block (reserved = allocated + "
                "free + these): an expandable segment's unmapped part, or a snapshot not written by torch"
            )
        return figures

    def view(self, name: str) -> pl.DataFrame:
        """The view ``name`` of :data:`SNAPSHOT_VIEWS`, computed once."""
        if name not in SNAPSHOT_VIEWS:
            choose = ", ".join(SNAPSHOT_VIEWS)
            raise ProfviewError(None, f"a memory snapshot has no {name!r} view: choose one of {choose}")
        cache = self.__dict__.setdefault("_views", {})
        if name not in cache:
            cache[name] = self._make(name)
        frame: pl.DataFrame = cache[name]
        return frame

    def _make(self, name: str) -> pl.DataFrame:
        frames = self.frames
        if name == "segments":
            return frames.segments
        if name == "blocks":
            return with_sites(frames.blocks, self.sites)
        if name == "events":
            return with_sites(frames.events, self.sites)
        if name == "stacks":
            return frames.stacks
        if name == "sites":
            return sites_view(frames.blocks, self.sites)
        if name == "peak":
            return peak_view(self.replayed, frames.events, frames.blocks, self.sites)
        if name == "timeline":
            return with_sites(self.replayed.timeline, self.sites)
        if name == "ooms":
            return ooms_view(self.replayed, frames.events, frames.blocks, self.sites)
        return annotations_view(frames.annotations, self.replayed.timeline)

    def stack_text(self, stack: int | None) -> list[str]:
        """A stack's frames, innermost first, as ``file:line name`` lines (empty without one)."""
        if stack is None:
            return []
        rows = self.frames.stacks.filter(pl.col("stack") == stack).sort("depth")
        return [f"{f or '??'}:{ln if ln is not None else '?'} {n or '?'}" for f, ln, n in
                rows.select("filename", "line", "name").iter_rows()]

    def summary(self, top: int = 10) -> dict[str, Any]:
        """The figures of ``summary --format json`` (:data:`SUMMARY_SCHEMA`)."""
        frames = self.frames
        base = self.totals
        replayed = self.replayed
        devices = []
        for peak in replayed.peaks:
            own = device_totals(frames.segments, frames.blocks, peak.device)
            recorded = peak.events > 0  # no event recorded: only the end state is known, not a peak
            devices.append({
                "device": peak.device,
                "events": peak.events,
                "peak_active_bytes": peak.peak_active_bytes if recorded else None,
                "peak_time_us": peak.time_us,
                "peak_event_index": peak.index,
                "start_active_bytes": peak.start_active_bytes,
                "end_active_bytes": peak.end_active_bytes,
                "peak_reserved_bytes": peak.peak_reserved_bytes if recorded else None,
                "reserved_bytes": own["reserved_bytes"],
                "allocated_bytes": own["allocated_bytes"],
            })
        events = frames.events
        ooms = self.view("ooms")
        at_peak = self.view("peak")
        sites = self.view("sites")
        live = self.view("blocks").filter(pl.col("state").is_in(["active_allocated", "active_pending_free"]))
        largest = live.sort("size", "address", descending=[True, False]).head(top)
        oom_events = []
        for (number,), rows in ooms.group_by("oom", maintain_order=True):
            first = rows.row(0, named=True)
            oom_events.append({
                "oom": number, "device": first["device"], "index": first["index"], "time_us": first["time_us"],
                "requested_bytes": first["requested_bytes"], "device_free_bytes": first["device_free_bytes"],
                "active_bytes": first["active_bytes"], "reserved_bytes": first["reserved_bytes"],
                "top_sites": rows.filter(pl.col("site").is_not_null()).head(top)
                .select("site", "bytes", "count").to_dicts(),
            })
        return {
            "schema": SUMMARY_SCHEMA,
            "path": self.path,
            "format": self.format,
            **{k: base[k] for k in (
                "segments", "blocks", "live_blocks", "reserved_bytes", "allocated_bytes", "active_allocated_bytes",
                "active_awaiting_free_bytes", "requested_bytes", "free_internal_bytes", "free_external_bytes",
                "largest_free_block_bytes", "untracked_bytes", "free_external_pct",
            )},
            "events": events.height,
            "event_actions": dict(sorted(events.group_by("action").len().iter_rows())) if events.height else {},
            "ooms": len(oom_events),
            "oom_events": oom_events,
            "annotations": frames.annotations.height,
            "devices": devices,
            "torch_segsum": segsum_totals(frames.segments, frames.blocks),
            # the devices as numbers (the sites view joins them into one text, "0,1", for its table)
            "top_sites": sites.head(top)
            .with_columns(pl.col("devices").str.split(",").list.eval(pl.element().cast(pl.Int64)))
            .to_dicts(),
            "top_sites_at_peak": [row for d in devices for row in
                                  at_peak.filter(pl.col("device") == d["device"]).head(top).to_dicts()],
            "largest_allocations": largest.select("device", "address", "size", "requested_size", "state", "site")
            .to_dicts(),
            "allocator_settings": {k: v for k, v in frames.settings.items() if isinstance(v, str | int | float | bool)},
            "warnings": list(self.warnings),
        }


def load_snapshot(path: str | os.PathLike[str]) -> SnapshotProfile:
    """Open a memory snapshot (a one-line :class:`ProfviewError` for anything else)."""
    name = os.fspath(path)
    return SnapshotProfile(name, read_snapshot(name))
