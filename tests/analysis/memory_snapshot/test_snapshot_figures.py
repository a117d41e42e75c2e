"""Each real memory snapshot's figures against a second witness: the pickle loaded again by a
minimal no-globals unpickler written here, its totals summed in plain Python, and its events
replayed FORWARD (from the allocations the trace shows were live before it, as torch's
MemoryViz.js does), where profview walks them backwards from the end state."""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import SAMPLES, SHARED

from profview.profiles.snapshot_profile import load_snapshot

SHARED_SNAPSHOTS = sorted((SHARED / "formats" / "memory-snapshots").glob("*.pickle")) if SHARED.is_dir() else []
SAMPLE = SAMPLES / "magma27_memory_snapshot.pickle"
LIVE = ("active_allocated", "active_pending_free")


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"no globals here ({module}.{name})")


def witness_load(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        return _PlainData(fh).load()


def witness_totals(snap: dict[str, Any]) -> dict[str, int]:
    reserved = allocated = requested = external = in_blocks = 0
    for seg in snap["segments"]:
        reserved += seg["total_size"]
        for block in seg["blocks"]:
            in_blocks += block["size"]
            if block["state"] in LIVE:
                allocated += block["size"]
                requested += block["requested_size"] or block["size"]
            else:
                external += block["size"]
    return {"reserved_bytes": reserved, "allocated_bytes": allocated, "requested_bytes": requested,
            "free_internal_bytes": allocated - requested, "free_external_bytes": external,
            "untracked_bytes": reserved - in_blocks}


def forward_replay(snap: dict[str, Any], device: int) -> tuple[list[int], dict[int, set[int]], int]:
    """Active bytes after each event, walking FORWARD from what was live before the trace (a free
    with no alloc before it; a live block with no alloc in the trace), with the addresses live at
    the (first) peak, and the active bytes before the first event."""
    trace = snap["device_traces"][device]
    initially: dict[int, int] = {}
    allocated: set[int] = set()
    ever_allocated: set[int] = set()
    for e in trace:
        if e["action"] == "alloc":
            allocated.add(e["addr"])
            ever_allocated.add(e["addr"])
        elif e["action"] == "free_completed":
            if e["addr"] not in allocated:
                initially[e["addr"]] = e["size"]
            allocated.discard(e["addr"])
    for seg in snap["segments"]:
        for block in seg["blocks"] if seg["device"] == device else []:
            if block["state"] in LIVE and block["address"] not in ever_allocated:
                initially[block["address"]] = block["requested_size"] or block["size"]
    live = dict(initially)
    start = sum(live.values())
    series: list[int] = []
    at_peak: tuple[int, set[int]] = (-1, set(live))
    best = start
    total = start
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            total += e["size"]
        elif e["action"] == "free_completed":
            total -= live.pop(e["addr"])
        series.append(total)
        if series[-1] > best:
            best, at_peak = series[-1], (i, set(live))
    return series, {at_peak[0]: at_peak[1]}, start


def _check(path: Path) -> None:
    snap = witness_load(path)
    profile = load_snapshot(path)
    summary = profile.summary()
    for key, value in witness_totals(snap).items():
        assert summary[key] == value, key
    assert summary["segments"] == len(snap["segments"])
    assert summary["events"] == sum(len(t) for t in snap["device_traces"])
    assert summary["reserved_bytes"] == (
        summary["allocated_bytes"] + summary["free_external_bytes"] + summary["untracked_bytes"]
    )
    sites = profile.view("sites")
    assert int(sites["bytes"].sum()) == summary["allocated_bytes"]
    assert int(sites["count"].sum()) == sum(b["state"] in LIVE for s in snap["segments"] for b in s["blocks"])
    timeline = profile.view("timeline")
    for device in summary["devices"]:
        number = device["device"]
        series, live_at_peak, start = forward_replay(snap, number)
        ours = timeline.filter(timeline["device"] == number)["active_bytes"].to_list()
        assert ours == series
        assert device["start_active_bytes"] == start
        assert device["peak_active_bytes"] == max([start, *series])
        assert device["events"] == len(snap["device_traces"][number])
        peak = profile.view("peak").filter(profile.view("peak")["device"] == number)
        assert int(peak["bytes"].sum()) == device["peak_active_bytes"]
        (addresses,) = live_at_peak.values()
        assert int(peak["count"].sum()) == len(addresses)
        (index,) = live_at_peak
        assert device["peak_event_index"] == index
        assert device["peak_time_us"] == snap["device_traces"][number][index]["time_us"]
    actions = Counter(e["action"] for t in snap["device_traces"] for e in t)
    assert summary["event_actions"] == dict(sorted(actions.items()))
    assert profile.warnings == ([] if not summary["untracked_bytes"] else profile.warnings[:1])
    assert ("SYNTHETIC" in path.name) or summary["untracked_bytes"] == 0  # torch's own files tile their segments


def test_sample_snapshot_figures() -> None:
    """The sample in samples/ (a real Windows training step), so this runs without ../shared."""
    _check(SAMPLE)


@pytest.mark.parametrize("path", SHARED_SNAPSHOTS, ids=[p.name for p in SHARED_SNAPSHOTS])
def test_shared_snapshot_figures(path: Path, shared_dir: Path) -> None:
    """Every shared snapshot: totals, the timeline, the peak and what was live at it."""
    _check(path)


def test_shared_snapshots_are_there(shared_dir: Path) -> None:
    """The parametrised test above is not silently empty."""
    assert len(SHARED_SNAPSHOTS) >= 7
