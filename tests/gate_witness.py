"""Helpers of the gate's tests: per-step kernel figures recomputed from the raw JSON with the
standard library, and a real trace copied with one kernel slowed down."""

from __future__ import annotations

import collections
import gzip
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import orjson


@cache
def load_raw(path: Path) -> dict:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


#: The step of work outside every step (the gate's OUTSIDE), in the witness's keys.
OUTSIDE = -2


def raw_step_kernels(path: Path) -> dict[tuple[str, int], tuple[float, int]]:
    """(kernel name, step) → (total µs, calls): a kernel belongs to the step whose host
    ``ProfilerStep#N`` range holds the start of the runtime call that launched it (same
    ``correlation``); one no call launched, to the step whose window holds its start (docs/steps.md's
    rule), unless it was launched before the profiling window (it starts before the first GPU event
    of its stream that a call in the trace launched).  Work in no step, and work launched before the
    window, is step :data:`OUTSIDE`.  Computed from the raw events alone."""
    events = load_raw(path)["traceEvents"]
    steps = collections.defaultdict(list)
    for e in events:
        name = str(e.get("name", ""))
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and name.startswith("ProfilerStep#"):
            steps[int(name.split("#")[1])].append((e["ts"], e["ts"] + e["dur"]))
    ranges = {n: (min(s for s, _ in r), max(e for _, e in r)) for n, r in steps.items()}
    launches = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    first_linked: dict[tuple, float] = {}
    for e in gpu:
        if e.get("args", {}).get("correlation") in launches:
            key = (e.get("pid"), e.get("tid"))
            first_linked[key] = min(first_linked.get(key, e["ts"]), e["ts"])
    first_any = min(first_linked.values()) if first_linked else None
    out: dict[tuple[str, int], list[float]] = collections.defaultdict(lambda: [0.0, 0])
    unlaunched = []
    gpu_end = {n: float("-inf") for n in ranges}

    def add(e: dict, step: int) -> None:
        out[(e["name"], step)][0] += e["dur"]
        out[(e["name"], step)][1] += 1

    for e in gpu:
        ts = launches.get(e.get("args", {}).get("correlation"))
        if ts is None:
            if e.get("cat") == "kernel":
                first = first_linked.get((e.get("pid"), e.get("tid")), first_any)
                if first is not None and e["ts"] < first:
                    add(e, OUTSIDE)  # launched before the profiling window
                else:
                    unlaunched.append(e)
            continue
        for n, (lo, hi) in ranges.items():
            if lo <= ts <= hi:
                gpu_end[n] = max(gpu_end[n], e["ts"] + e["dur"])
                if e.get("cat") == "kernel":
                    add(e, n)
                break
        else:
            if e.get("cat") == "kernel":
                add(e, OUTSIDE)
    # Work no call in the trace launched: the step whose window (its host start to the end of the
    # GPU work launched inside it, never into the next step) holds its start.
    order = sorted(ranges, key=lambda n: ranges[n][0])
    windows = []
    for i, n in enumerate(order):
        end = max(ranges[n][1], gpu_end[n])
        if i + 1 < len(order):
            end = min(end, ranges[order[i + 1]][0])
        windows.append((n, ranges[n][0], end))
    for e in unlaunched:
        for n, lo, hi in windows:
            if lo <= e["ts"] < hi:
                add(e, n)
                break
        else:
            add(e, OUTSIDE)
    return {k: (v[0], int(v[1])) for k, v in out.items()}


def raw_kernel_share(path: Path) -> dict[str, float]:
    """Kernel name → % of all kernel µs, from the raw events."""
    total: collections.Counter[str] = collections.Counter()
    for e in load_raw(path)["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            total[e["name"]] += e["dur"]
    whole = sum(total.values())
    return {n: t / whole * 100 for n, t in total.items()}


def slowed_copy(src: Path, dst: Path, kernel: str, factor: float) -> int:
    """Copy ``src`` to ``dst`` with every ``kernel`` event's duration × ``factor`` and the GPU events
    after it on the same stream shifted by the time added so far (the stream runs later, as it
    would); returns the number of kernel events scaled."""
    with gzip.open(src, "rb") as fh:  # a fresh copy: the cached one of load_raw is never changed
        doc = orjson.loads(fh.read())
    events = doc["traceEvents"]
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    by_stream = collections.defaultdict(list)
    for e in gpu:
        by_stream[(e.get("pid"), e.get("tid"))].append(e)
    scaled = 0
    for stream in by_stream.values():
        stream.sort(key=lambda e: e["ts"])
        added = 0.0
        for e in stream:
            e["ts"] += added
            if e["name"] == kernel:
                extra = e["dur"] * (factor - 1.0)
                e["dur"] += extra
                added += extra
                scaled += 1
    with gzip.open(dst, "wb", compresslevel=1) as fh:
        fh.write(orjson.dumps(doc))
    return scaled


def raw_op_names(path: Path, top: int) -> list[str]:
    """The ``top`` most called ``cpu_op`` names, from the raw events."""
    calls: collections.Counter[str] = collections.Counter(
        e["name"] for e in load_raw(path)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"
    )
    return [n for n, _ in calls.most_common(top)]


GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def _step_ranges(events: list[dict]) -> dict[int, tuple[float, float]]:
    """ProfilerStep number → (first start, last end) of its host ranges, from the raw events."""
    found: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    for e in events:
        name = str(e.get("name", ""))
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and name.startswith("ProfilerStep#"):
            found[int(name.split("#")[1])].append((e["ts"], e["ts"] + e["dur"]))
    return {n: (min(s for s, _ in r), max(e for _, e in r)) for n, r in found.items()}


def kernel_steps(events: list[dict]) -> dict[int, int]:
    """``id()`` of each kernel event → the ProfilerStep whose host range holds the start of the
    runtime call that launched it (same ``correlation``), from the raw events alone."""
    ranges = _step_ranges(events)
    launches = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    out = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            ts = launches.get(e.get("args", {}).get("correlation"))
            if ts is None:
                continue
            for n, (lo, hi) in ranges.items():
                if lo <= ts <= hi:
                    out[id(e)] = n
                    break
    return out


def edited_copy(src: Path, dst: Path, factor: Callable[[dict, int | None], float | None]) -> int:
    """Copy ``src`` to ``dst`` with each kernel's duration times ``factor(event, step)`` (its
    launching step, or None), dropped where that is None, and the GPU events after it on the same
    stream shifted by the time added so far; returns the number of kernels changed or dropped."""
    with gzip.open(src, "rb") as fh:
        doc = orjson.loads(fh.read())
    events = doc["traceEvents"]
    steps = kernel_steps(events)
    by_stream = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES:
            by_stream[(e.get("pid"), e.get("tid"))].append(e)
    dropped: set[int] = set()
    changed = 0
    for stream in by_stream.values():
        stream.sort(key=lambda e: e["ts"])
        added = 0.0
        for e in stream:
            e["ts"] += added
            if e.get("cat") != "kernel":
                continue
            scale = factor(e, steps.get(id(e)))
            if scale is None:
                dropped.add(id(e))
                changed += 1
            elif scale != 1.0:
                extra = e["dur"] * (scale - 1.0)
                e["dur"] += extra
                added += extra
                changed += 1
    doc["traceEvents"] = [e for e in events if id(e) not in dropped]
    with gzip.open(dst, "wb", compresslevel=1) as fh:
        fh.write(orjson.dumps(doc))
    return changed


def cropped_copy(src: Path, dst: Path, first: int, count: int) -> list[int]:
    """Copy ``src`` to ``dst`` keeping ``count`` ProfilerSteps from the ``first``-th (by number): the
    host events that start in their window (the first one's start to the next step's), the GPU
    work those launched, metadata; returns the step numbers kept."""
    with gzip.open(src, "rb") as fh:
        doc = orjson.loads(fh.read())
    events = doc["traceEvents"]
    ranges = _step_ranges(events)
    order = sorted(ranges)
    kept = order[first : first + count]
    start = ranges[kept[0]][0]
    after = order[first + count] if first + count < len(order) else None
    end = ranges[after][0] if after is not None else float("inf")
    inside = lambda e: "ts" in e and start <= e["ts"] < end  # noqa: E731
    correlations = {
        e["args"]["correlation"] for e in events
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and inside(e)
        and "correlation" in e.get("args", {})
    }
    out = []
    for e in events:
        if e.get("ph") == "M" or "ts" not in e:
            out.append(e)
        elif e.get("cat") in GPU_CATEGORIES:
            if e.get("args", {}).get("correlation") in correlations:
                out.append(e)
        elif e.get("cat") == "ac2g":
            if e.get("id") in correlations:
                out.append(e)
        elif inside(e) and (e.get("ph") != "X" or e["ts"] + e.get("dur", 0) <= end or e.get("cat") == "gpu_user_annotation"):  # noqa: E501
            out.append(e)
    doc["traceEvents"] = out
    with gzip.open(dst, "wb", compresslevel=1) as fh:
        fh.write(orjson.dumps(doc))
    return kept
