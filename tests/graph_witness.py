"""Second witness for graph replays (issue 36): each replayed GPU event's captured operator and module,
recomputed from the raw events with the standard library, no profview code.

The rule written out plainly: the launch calls between a ``*StreamBeginCapture`` and the next
``*StreamEndCapture`` on its thread, by start time, pair in order with the GPU events of one graph
launch (its correlation), by start time; a launch's operator is the shortest ``cpu_op`` or
``user_annotation`` on its thread that contains it (by time, not by profview's call tree), its
module path the ``nn.Module`` Python frames on its thread that contain it, outermost first.
"""

from __future__ import annotations

import gzip
import re
from collections import defaultdict
from pathlib import Path

import orjson

LAUNCH = re.compile(r"^(cuda|hip|cu)((Ext)?(Module)?Launch(Cooperative)?Kernel|Memcpy\w*Async|Memset\w*Async)")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
CALL_CATS = ("cuda_runtime", "cuda_driver")


def read(path: Path) -> list[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        doc = orjson.loads(fh.read())
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def write(path: Path, events: list[dict]) -> Path:
    """A trace of ``events`` (plain JSON) at ``path``."""
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    return path


def captured_launches(events: list[dict]) -> list[dict]:
    """The launch calls of the first capture in ``events``, by start time."""
    calls = [e for e in events if e.get("ph") == "X" and e.get("cat") in CALL_CATS]
    begin = min((e for e in calls if "StreamBeginCapture" in e["name"]), key=lambda e: e["ts"])
    end = min(
        (e for e in calls if "StreamEndCapture" in e["name"] and e["tid"] == begin["tid"] and e["ts"] > begin["ts"]),
        key=lambda e: e["ts"],
    )
    inside = [
        e for e in calls if e["tid"] == begin["tid"] and begin["ts"] <= e["ts"] <= end["ts"] and LAUNCH.match(e["name"])
    ]
    return sorted(inside, key=lambda e: e["ts"])


def replays(events: list[dict]) -> list[list[dict]]:
    """Per graph launch call (by start), its GPU events by start."""
    launches = sorted(
        (e for e in events if e.get("cat") in CALL_CATS and "GraphLaunch" in e.get("name", "")), key=lambda e: e["ts"]
    )
    by_correlation: dict[int, list[dict]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            by_correlation[e["args"].get("correlation")].append(e)
    return [sorted(by_correlation[g["args"]["correlation"]], key=lambda e: e["ts"]) for g in launches]


def open_at(intervals: list[dict], times: list[float]) -> list[list[dict]]:
    """Per time (sorted), the intervals (properly nested, one thread's) that contain it, outermost
    first: one sweep with a stack, as a reader of the timeline would walk it."""
    ordered = sorted(intervals, key=lambda e: (e["ts"], -e["dur"]))
    stacks, stack, at = [], [], 0
    for t in times:
        while at < len(ordered) and ordered[at]["ts"] <= t:
            event = ordered[at]
            while stack and stack[-1]["ts"] + stack[-1]["dur"] < event["ts"]:
                stack.pop()
            stack.append(event)
            at += 1
        while stack and stack[-1]["ts"] + stack[-1]["dur"] < t:
            stack.pop()
        stacks.append([e for e in stack if e["ts"] + e["dur"] >= t])
    return stacks


def table_name(op: str) -> str:
    """An operator's name as tables show it: SGLang's ``sglang_profiler::…_<digits>`` without its
    volatile number (TraceLens' convention), so two runs of one model pair."""
    return re.sub(r"^(sglang_profiler::.+)_\d+$", r"\1", op)


def launch_attributions(events: list[dict], calls: list[dict]) -> list[tuple[str, str]]:
    """(innermost operator as tables name it, module path) of each launch call (all on one thread,
    by start)."""
    pid, tid = calls[0]["pid"], calls[0]["tid"]
    mine = [e for e in events if e.get("ph") == "X" and e["pid"] == pid and e["tid"] == tid]
    ops = [
        e for e in mine if e.get("cat") in ("cpu_op", "user_annotation") and not e["name"].startswith("ProfilerStep#")
    ]
    modules = [e for e in mine if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: ")]
    times = [c["ts"] for c in calls]
    found = []
    for op_stack, module_stack in zip(open_at(ops, times), open_at(modules, times), strict=True):
        path = " > ".join(m["name"][len("nn.Module: ") :] for m in module_stack)
        found.append((table_name(op_stack[-1]["name"]) if op_stack else "(unattributed)", path or "(no module)"))
    return found


def replayed_by_operator(replay_events: list[dict], capture_events: list[dict]) -> dict[tuple[str, str], float]:
    """GPU time of every replay, paired in order with the capture's launches, per (operator, module)."""
    launches = captured_launches(capture_events)
    attributed = launch_attributions(capture_events, launches)
    totals: dict[tuple[str, str], float] = defaultdict(float)
    for replay in replays(replay_events):
        assert len(replay) == len(launches), (len(replay), len(launches))
        for gpu, key in zip(replay, attributed, strict=True):
            totals[key] += gpu["dur"]
    return dict(totals)
