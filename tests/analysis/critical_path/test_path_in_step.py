"""Issue 40, item 2: a step's critical path stays in its step and knows queued graph replays.

``samples/h200_compile_queued_replays.json.gz`` (recorded by ``scripts/record_gpu_samples.py``,
``compile_queued_replays``, on an H200): each of 4 active steps puts a 12 ms GPU sleep and 10
``torch.compile`` reduce-overhead replays in the stream's queue without waiting, so every replay a
step launches runs behind GPU work of the step before.  The witness reads the raw JSON with the
standard library: the steps' spans (host start, no earlier than the previous step's GPU end, to
the end of the GPU work launched in the step: the steps view's rule), how busy the GPU was in each,
and which launches found their stream still busy with earlier work.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from support import loaded, raw_events, sample

QUEUED = "h200_compile_queued_replays.json.gz"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_spans(name: str) -> list[tuple[int, float, float]]:
    """(step, start, end) of each ProfilerStep as the steps view defines its span, from the raw events."""
    events = [e for e in raw_events(name) if e.get("ph") == "X"]
    steps = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    gpu = [e for e in events if e.get("cat") in GPU_CATS]
    spans, previous_end, previous_host_end = [], float("-inf"), float("-inf")
    for step in steps:
        lo, hi = step["ts"], step["ts"] + step["dur"]
        launched = [
            g["ts"] + g["dur"]
            for g in gpu
            if (c := calls.get(g["args"].get("correlation"))) is not None and lo <= c["ts"] <= hi
        ]
        start = max(lo, previous_end) if lo >= previous_host_end else lo  # overlapping host ranges: each its own
        end = max([hi, *launched, start])
        spans.append((int(step["name"].split("#")[1]), start, end))
        previous_end, previous_host_end = end, hi
    return spans


def busy_share(name: str, lo: float, hi: float) -> float:
    """Share of [lo, hi] during which some GPU work ran (the union of the GPU events)."""
    intervals = sorted((e["ts"], e["ts"] + e["dur"]) for e in raw_events(name) if e.get("cat") in GPU_CATS)
    busy, reach = 0.0, lo
    for start, end in intervals:
        start, end = max(start, reach), min(end, hi)
        if end > start:
            busy, reach = busy + end - start, end
    return busy / (hi - lo)


def queued_launches(name: str) -> tuple[int, int]:
    """(graph launches, those whose first replayed kernel's stream was still busy with earlier work
    when the launch call started), from the raw events."""
    events = [e for e in raw_events(name) if e.get("ph") == "X"]
    gpu = sorted((e for e in events if e.get("cat") in GPU_CATS), key=lambda e: e["ts"])
    launches = [e for e in events if e.get("cat") == "cuda_runtime" and e["name"] == "cudaGraphLaunch"]
    queued = 0
    for call in launches:
        mine = [g for g in gpu if g["args"].get("correlation") == call["args"]["correlation"]]
        first = mine[0]
        before = [g for g in gpu if g["args"]["stream"] == first["args"]["stream"] and g["ts"] < first["ts"]]
        queued += bool(before) and max(g["ts"] + g["dur"] for g in before) > call["ts"]
    return len(launches), queued


def test_queued_replays_are_gpu_bound_within_each_step() -> None:
    """Every replay waited behind earlier GPU work (raw: its stream busy at the launch), the GPU was
    busy ≥ 95% of each step: the path is the step's length, GPU-bound, with no launch overhead
    (before: 10.8 ms paths in 3.8 ms host ranges, 50% "launch overhead")."""
    recipe = json.loads(sample(QUEUED.replace(".json.gz", ".facts.json")).read_text())
    launches, queued = queued_launches(QUEUED)
    assert launches == recipe["graph_launch_calls"] == recipe["active_steps"] * recipe["replays_per_step"]
    assert queued == launches  # every replay queued behind the GPU's earlier work
    frame = loaded(QUEUED).critical_path()
    spans = {step: (lo, hi) for step, lo, hi in raw_spans(QUEUED)}
    for step, rows in frame.group_by("step", maintain_order=True):
        kinds = dict(zip(rows["bound_by"].to_list(), rows["pct"].to_list(), strict=True))
        lo, hi = spans[int(step[0])]
        assert rows["step_us"][0] == pytest.approx(hi - lo, abs=1e-3)  # the steps view's span
        assert rows["path_us"][0] <= rows["step_us"][0] + 1e-6
        if step[0] > 1:  # step 1's GPU first ran the warm-up step's work, which Kineto trimmed off
            assert busy_share(QUEUED, lo, hi) > 0.95
        assert kinds["gpu_compute_bound"] > 95 and kinds["gpu_kernel_launch_overhead"] == 0
        assert kinds["cpu_bound"] < 1
    steps = loaded(QUEUED).steps()
    assert frame.unique("step", maintain_order=True)["step_us"].to_list() == pytest.approx(
        steps["duration_us"].to_list(), abs=1e-3
    )


def test_profview_and_hta_rules_agree_on_queued_replays() -> None:
    """The same steps under ``--rules hta`` (whole µs, HTA's queue-length rule): every kind within 5
    points of profview's rules, both GPU-bound."""
    ours = loaded(QUEUED).critical_path()
    hta = loaded(QUEUED).critical_path(rules="hta")
    both = ours.join(hta, on=["step", "bound_by"], suffix="_hta")
    assert both.height == ours.height == hta.height
    assert (both["pct"] - both["pct_hta"]).abs().max() <= 5.0
    for frame in (ours, hta):
        compute = frame.filter(pl.col("bound_by") == "gpu_compute_bound")["pct"]
        assert compute.min() > 90


SPANNED = (
    QUEUED,
    "gpt2_train_bf16.pt.trace.json.gz",
    "hta_diff_test_v100.json.gz",
    "h100_compile_partial_window.json.gz",
)


@pytest.mark.parametrize("name", SPANNED)
def test_no_path_exceeds_its_steps_span(name: str) -> None:
    """Each step's path counts only time inside the step's span (the steps view's window, from the
    raw events): hta_diff_test_v100's step 1009 had a 156.2 ms path for a 100.3 ms host range.  (Its
    stream 7 records 31 pairs of kernels overlapping by 115 µs in all: a stream runs one at a time,
    so the later one counts from the earlier one's end.)"""
    frame = loaded(name).critical_path().unique("step", maintain_order=True)
    spans = {step: hi - lo for step, lo, hi in raw_spans(name)}
    for row in frame.iter_rows(named=True):
        assert row["step_us"] == pytest.approx(spans[row["step"]], abs=1e-3)
        assert row["path_us"] <= row["step_us"] + 1e-6
