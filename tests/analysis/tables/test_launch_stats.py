"""Launch statistics and queue length recomputed from the raw JSON events (a witness without HTA):
each launch call joined to its GPU event by correlation id, the delay, the short-kernel and
long-delay counts, and each stream's queue swept event by event."""

from __future__ import annotations

from collections import defaultdict

import polars as pl
from support import SAMPLES
from witness import GPU_CATS, raw

from profview.analysis.tables.launch_stats import (
    LAUNCH_CALLS,
    launch_stats,
    launch_stats_by_name,
    launch_totals,
    queue_length_series,
    queue_length_summary,
)
from profview.profiles.loading import load

TRACE = SAMPLES / "ddp_nccl_streams.pt.trace.json.gz"


def raw_launches() -> dict[int, tuple[float, float, float, float, int, str]]:
    """correlation → (call ts, call dur, GPU ts, GPU dur, stream, GPU name), from the raw events."""
    calls: dict[int, tuple[float, float]] = {}
    work: dict[int, list[tuple[float, float, int, str]]] = defaultdict(list)
    for e in raw(TRACE):
        if e.get("ph") != "X":
            continue
        corr = (e.get("args") or {}).get("correlation")
        if corr is None:
            continue
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e["name"] in LAUNCH_CALLS:
            calls[corr] = (float(e["ts"]), float(e["dur"]))
        elif e.get("cat") in GPU_CATS:
            work[corr].append((float(e["ts"]), float(e["dur"]), int(e["args"]["stream"]), e["name"]))
    return {c: (*calls[c], *work[c][0]) for c in calls if len(work.get(c, [])) == 1}


def test_launch_delays_equal_the_raw_events() -> None:
    profile = load(TRACE, use_cache=False)
    stats = launch_stats(profile.model.host, profile.model.gpu, profile.span_start)
    witness = raw_launches()
    assert stats.height == len(witness) > 200
    for row in stats.iter_rows(named=True):
        call_ts, call_dur, gpu_ts, gpu_dur, stream, name = witness[row["correlation"]]
        assert row["name"] == name and row["stream"] == stream
        assert abs(row["cpu_duration_us"] - call_dur) < 1e-6
        assert abs(row["gpu_duration_us"] - gpu_dur) < 1e-6
        assert abs(row["launch_delay_us"] - max(0.0, gpu_ts - call_ts - call_dur)) < 1e-6
    short = sum(1 for c, d, g, gd, *_ in witness.values() if gd < d <= 50)
    long = sum(1 for c, d, g, gd, *_ in witness.values() if g - c - d > 100)
    totals = launch_totals(stats)
    assert (totals["short_kernels"], totals["long_delays"]) == (short, long)
    assert 0 < short < stats.height


def test_per_name_distribution_sums_to_the_launches() -> None:
    profile = load(TRACE, use_cache=False)
    stats = launch_stats(profile.model.host, profile.model.gpu, profile.span_start)
    names = launch_stats_by_name(stats)
    assert int(names["launches"].sum()) == stats.height
    assert int(names["short_kernels"].sum()) == int(stats["short_kernel"].sum())
    witness = raw_launches()
    by_name: dict[str, list[float]] = defaultdict(list)
    for c, d, g, _gd, _s, name in witness.values():
        by_name[name].append(max(0.0, g - c - d))
    for row in names.iter_rows(named=True):
        delays = sorted(by_name[row["name"]])
        assert row["launches"] == len(delays)
        assert abs(row["delay_max_us"] - delays[-1]) < 1e-6 and abs(row["delay_min_us"] - delays[0]) < 1e-6
    assert (names["delay_min_us"] <= names["delay_median_us"]).all()
    assert (names["delay_median_us"] <= names["delay_p90_us"]).all() and (
        names["delay_p90_us"] <= names["delay_max_us"]
    ).all()


def test_queue_length_is_the_sweep_of_launches_and_starts() -> None:
    profile = load(TRACE, use_cache=False)
    stats = launch_stats(profile.model.host, profile.model.gpu, profile.span_start)
    summary = queue_length_summary(queue_length_series(stats))
    points: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for call_ts, _d, gpu_ts, _gd, stream, _n in raw_launches().values():
        points[stream] += [(call_ts, -1), (gpu_ts, 1)]  # at one instant the launch first
    for row in summary.iter_rows(named=True):
        depth, most, values = 0, 0, []
        for _ts, order in sorted(points[row["stream"]]):
            depth += 1 if order == -1 else -1
            most = max(most, depth)
            values.append(depth)
        assert row["max"] == most and row["changes"] == len(values) and row["min"] == min(values)
        assert abs(row["mean"] - sum(values) / len(values)) < 1e-9
    assert summary.height == 2 and int(summary["max"].max()) > 10  # type: ignore[arg-type]
    assert pl.Series(summary["min"]).min() == 0
