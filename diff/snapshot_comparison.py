"""Two memory snapshots compared: what grew by allocation site and by segment pool, and the
totals on each side (``profview diff A B --summary``, ``--view sites|segments -o OUT``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from ..analysis.memory_snapshot.compare import segments_diff, sites_diff
from ..errors import ProfviewError
from ..profiles.snapshot_profile import SnapshotProfile, load_snapshot

#: The views of two snapshots compared.
SNAPSHOT_DIFF_VIEWS = ("sites", "peak", "segments")
#: The totals compared side by side.
COMPARED_TOTALS = (
    "reserved_bytes", "allocated_bytes", "requested_bytes", "free_internal_bytes", "free_external_bytes", "segments",
    "live_blocks", "events",
)


@dataclass
class SnapshotComparison:
    """A snapshot before and after."""

    before: SnapshotProfile
    after: SnapshotProfile

    def view(self, name: str) -> pl.DataFrame:
        """``sites`` (growth by allocation site: its deltas sum to the change in allocated bytes) or
        ``peak`` (what was live at each side's peak, by site, devices summed: the deltas sum to
        the change in the peaks) or ``segments`` (by device and pool)."""
        if name == "sites":
            return sites_diff(self.before.view("sites"), self.after.view("sites"))
        if name == "peak":
            return sites_diff(_peak_sites(self.before), _peak_sites(self.after))
        if name == "segments":
            a, b = self.before.frames, self.after.frames
            return segments_diff(a.segments, a.blocks, b.segments, b.blocks)
        raise ProfviewError(None, f"two memory snapshots compare by {' or '.join(SNAPSHOT_DIFF_VIEWS)}, not {name!r}")

    def totals(self) -> list[dict[str, Any]]:
        """Each compared total: before, after and the change (the peak per device too)."""
        a, b = self.before.summary(0), self.after.summary(0)
        rows = [{"figure": key, "before": a[key], "after": b[key], "delta": _change(a[key], b[key])}
                for key in COMPARED_TOTALS]
        peaks_a = {d["device"]: d["peak_active_bytes"] for d in a["devices"]}
        peaks_b = {d["device"]: d["peak_active_bytes"] for d in b["devices"]}
        for device in sorted({*peaks_a, *peaks_b}):
            before, after = peaks_a.get(device), peaks_b.get(device)
            rows.append({"figure": f"device {device} peak_active_bytes", "before": before, "after": after,
                         "delta": _change(before, after)})
        return rows


def _change(before: int | None, after: int | None) -> int | None:
    """After less before; unknown where either side is."""
    return None if before is None or after is None else after - before


def _peak_sites(profile: SnapshotProfile) -> pl.DataFrame:
    """A snapshot's live-at-peak bytes and count by site, its devices summed."""
    return profile.view("peak").group_by("site").agg(pl.col("bytes").sum(), pl.col("count").sum())


def load_snapshot_comparison(before: str, after: str) -> SnapshotComparison:
    """Both snapshots opened."""
    return SnapshotComparison(load_snapshot(before), load_snapshot(after))
