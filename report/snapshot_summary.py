"""A memory snapshot's summary: the text that answers "why did it run out of memory", and the
same figures as JSON (``summary --format json``, schema ``profview.memory-snapshot/1``).

Both come from :meth:`SnapshotProfile.summary <profview.profiles.snapshot_profile.SnapshotProfile.summary>`,
so the text and the document never disagree; docs/memory_snapshots.md defines each figure.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from typing import TYPE_CHECKING, Any, TextIO

import polars as pl

from ..frames import fmt_bytes
from ..sanitize import clean
from .frame_text import frame_lines
from .profile_summary import dump_json

if TYPE_CHECKING:
    from ..profiles.snapshot_profile import SnapshotProfile



def _known_bytes(value: int | None) -> str:
    """Bytes, or ``unknown`` where the snapshot cannot give them (never a dash read as nothing)."""
    return "unknown" if value is None else fmt_bytes(value)

def print_snapshot_summary_json(profile: SnapshotProfile, top: int, stream: TextIO | None = None) -> None:
    """The summary as one JSON document."""
    (stream or sys.stdout).write(dump_json(profile.summary(top)))


def _pct(part: float, whole: float) -> str:
    return "-" if not whole else f"{100.0 * part / whole:.1f}%"


def _room(wide: bool) -> int | None:
    return None if wide else max(80, shutil.get_terminal_size((100, 24)).columns)


def summary_lines(profile: SnapshotProfile, top: int = 10, wide: bool = False, width: int | None = None) -> list[str]:
    """The text summary, line by line (sanitised: sites and paths come from the file), folded to
    ``width`` columns where given (a pane's), else to the terminal's (``wide``: not folded)."""
    figures = profile.summary(top)
    room = width if width is not None else _room(wide)
    reserved, allocated = figures["reserved_bytes"], figures["allocated_bytes"]
    lines = [
        f"{clean(profile.path)}: {figures['format']}",
        f"reserved   {fmt_bytes(reserved):>11}  {figures['segments']:,} segments held from CUDA",
        f"allocated  {fmt_bytes(allocated):>11}  {figures['live_blocks']:,} live blocks, {_pct(allocated, reserved)} "
        f"of reserved (awaiting free {fmt_bytes(figures['active_awaiting_free_bytes'])})",
        f"requested  {_known_bytes(figures['requested_bytes']):>11}  rounding (free internal) "
        f"{_known_bytes(figures['free_internal_bytes'])}",
        f"free       {fmt_bytes(figures['free_external_bytes']):>11}  in free blocks, "
        f"{_pct(figures['free_external_bytes'], reserved)} of reserved (largest "
        f"{fmt_bytes(figures['largest_free_block_bytes'])})",
    ]
    actions = ", ".join(f"{clean(k)} {v:,}" for k, v in figures["event_actions"].items())
    lines.append(f"events     {figures['events']:>11,}  " + (actions or "none recorded"))
    lines.append("")
    lines.extend(_verdict(figures))
    for device in figures["devices"]:
        lines.append("")
        if device["peak_active_bytes"] is None:
            lines.append(
                f"device {device['device']}: no event recorded, so no peak; active at the snapshot "
                f"{fmt_bytes(device['end_active_bytes'])}"
            )
            continue
        when = (
            "before the first recorded event"
            if device["peak_event_index"] < 0
            else (f"after event {device['peak_event_index']:,} of {device['events']:,}")
        )
        lines.append(f"device {device['device']}: peak active {fmt_bytes(device['peak_active_bytes'])} {when}")
        lines.append(
            f"  time_us {device['peak_time_us'] if device['peak_time_us'] is not None else 'unknown'}; active "
            f"before the first event {fmt_bytes(device['start_active_bytes'])}, at the snapshot "
            f"{fmt_bytes(device['end_active_bytes'])} (requested bytes)"
        )
        at_peak = [row for row in figures["top_sites_at_peak"] if row["device"] == device["device"]]
        if at_peak:
            lines.append(f"top sites live at the peak (sum to {fmt_bytes(device['peak_active_bytes'])}):")
            lines.extend("  " + line for line in frame_lines(_site_rows(at_peak), _inside(room)))
    if figures["top_sites"]:
        lines.append("")
        lines.append(f"top sites live at the snapshot (sum to {fmt_bytes(allocated)} allocated):")
        lines.extend("  " + line for line in frame_lines(_site_rows(figures["top_sites"]), _inside(room)))
    if figures["largest_allocations"]:
        lines.append("")
        lines.append("largest live allocations:")
        largest = pl.DataFrame(figures["largest_allocations"]).select(
            "device",
            pl.col("size").map_elements(fmt_bytes, return_dtype=pl.String).alias("size"),
            pl.col("requested_size").map_elements(fmt_bytes, return_dtype=pl.String).alias("requested"),
            "state",
            "site",
        )
        lines.extend("  " + line for line in frame_lines(largest, _inside(room)))
    for warning in figures["warnings"]:
        lines.append(f"warning: {clean(warning)}")
    return _folded(lines, room)


def _inside(room: int | None) -> int | None:
    """The width of a table printed two spaces in."""
    return None if room is None else room - 2


def _folded(lines: list[str], room: int | None) -> list[str]:
    """Each line longer than ``room`` folded at spaces, the rest indented two more than its start
    (``room`` None: the lines whole)."""
    if room is None:
        return lines
    out: list[str] = []
    for line in lines:
        if len(line) <= room:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out.extend(textwrap.wrap(line, room, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False))
    return out


def _site_rows(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Site rows as a small table: bytes (binary units), share, count, site."""
    return pl.DataFrame(
        {
            "bytes": [fmt_bytes(r["bytes"]) for r in rows],
            "share": [f"{r['share_pct']:.1f}%" if r.get("share_pct") is not None else "-" for r in rows],
            "count": [r["count"] for r in rows],
            "site": [r["site"] for r in rows],
        }
    )


def _verdict(figures: dict[str, Any]) -> list[str]:
    """Why the memory ran out (or would): the OOMs recorded, fragmentation, the peak against
    what was reserved."""
    lines = []
    reserved = figures["reserved_bytes"]
    external, largest = figures["free_external_bytes"], figures["largest_free_block_bytes"]
    for oom in figures["oom_events"]:
        asked = oom["requested_bytes"]
        lines.append(
            f"OOM {oom['oom']}: device {oom['device']} asked for {fmt_bytes(asked)} with "
            f"{fmt_bytes(oom['device_free_bytes'])} free on the device (CUDA's figure), "
            f"{fmt_bytes(oom['active_bytes'])} active (event {oom['index']:,}, time_us {oom['time_us']})"
        )
        if asked is not None and asked <= external and asked > largest:
            lines.append(
                f"  fragmentation: the cache held {fmt_bytes(external)} free, but no free block as large as the "
                f"request (largest {fmt_bytes(largest)} at the snapshot)"
            )
        for site in oom["top_sites"][:3]:
            lines.append(f"  live then: {fmt_bytes(site['bytes']):>10}  x{site['count']:<5} {clean(site['site'])}")
    if not figures["oom_events"]:
        lines.append("OOM: no out-of-memory event in the recorded events")
    if reserved and external:
        lines.append(
            f"cached free: {fmt_bytes(external)} ({_pct(external, reserved)} of reserved); a request above the "
            f"largest free block ({fmt_bytes(largest)}) needs a new segment"
        )
    for device in figures["devices"]:
        peak, held = device["peak_active_bytes"], device["reserved_bytes"]
        if reserved and peak and peak <= held:
            lines.append(
                f"device {device['device']}: peak {fmt_bytes(peak)} active = {_pct(peak, held)} of the "
                f"{fmt_bytes(held)} reserved at the snapshot"
            )
        elif reserved and peak:  # a share of what was reserved later would read above 100%
            lines.append(
                f"device {device['device']}: peak {fmt_bytes(peak)} active, above the {fmt_bytes(held)} "
                "reserved at the snapshot: segments were released after the peak"
            )
    return lines


def print_snapshot_summary(
    profile: SnapshotProfile, top: int, wide: bool = False, stream: TextIO | None = None
) -> None:
    """The text summary on stdout."""
    (stream or sys.stdout).write("\n".join(summary_lines(profile, top, wide)) + "\n")
