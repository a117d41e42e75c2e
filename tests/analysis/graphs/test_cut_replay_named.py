"""A replay the window cut (its graph launch before the trace) is named by its graph and node where
no launching call is recorded: the Timeline inspector says ``graph 0 node 9 (replay …, cut: …)``,
not "launched before the trace window?".  The window is cut out of a real replay trace (Kineto kept
none for us), the witness the raw events' replays in order (tests/graph_witness.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from graph_witness import read, replays, write
from support import SAMPLES

import profview
from profview.analysis.tables.instance import kernel_instance
from profview.tui.main.timeline.inspector import kernel_lines

COMPILED = SAMPLES / "h100_compile_reduce_overhead.json.gz"


def cut(events: list[dict], at: float) -> list[dict]:
    """Kineto's trim at the window's start: every event that starts before ``at`` dropped."""
    return [e for e in events if e.get("ph") == "M" or ("ts" in e and e["ts"] >= at)]


def test_the_inspector_names_a_cut_replays_graph_node(tmp_path: Path) -> None:
    events = read(COMPILED)
    second = replays(events)[1]
    trace = write(tmp_path / "cut.json", cut(events, second[9]["ts"]))
    profile = profview.load(trace, use_cache=False)
    first_kept = second[9]  # node 9 of graph 0: the replay's first 9 kernels and its launch are cut
    gpu = profile.gpu.with_row_index("row")
    row = int(gpu.filter((pl.col("ts") == first_kept["ts"]) & (pl.col("name") == first_kept["name"]))["row"][0])
    event = kernel_instance(profile.model, row)
    assert event.launch is None and event.op is None
    place = profile.replay_place(row)
    assert place is not None and place.startswith("graph 0 node 9 (replay ")
    assert "cut: its launch is before the trace window" in place
    text = "\n".join(line.plain for line in kernel_lines(event, 0.0, 200, place))
    assert "replayed: graph 0 node 9" in text and "launched before the trace window?" not in text
    # a whole replay's event has its graph launch: nothing to name in its place
    whole = replays(events)[2][0]
    full_row = int(gpu.filter((pl.col("ts") == whole["ts"]) & (pl.col("name") == whole["name"]))["row"][0])
    assert kernel_instance(profile.model, full_row).launch is not None
    assert "cut" not in (profile.replay_place(full_row) or "cut")


def test_operators_name_a_cut_replay_by_its_graph(tmp_path: Path) -> None:
    events = read(COMPILED)
    second = replays(events)[1]
    trace = write(tmp_path / "cut.json", cut(events, second[9]["ts"]))
    profile = profview.load(trace, use_cache=False)
    kept = [e for e in events if "ts" in e and e["ts"] >= second[9]["ts"]]
    correlations = {e["args"]["correlation"] for e in kept if e.get("cat") == "cuda_runtime"}
    gpu = [e for e in kept if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    unlaunched = [e for e in gpu if e["args"].get("correlation") not in correlations]
    tail = second[9:]
    assert {id(e) for e in tail} <= {id(e) for e in unlaunched}  # the witness: its launch is cut, nothing else
    ops = profile.ops()
    row = ops.filter(pl.col("name") == "(graph 0 launched before the window)").row(0, named=True)
    assert row["calls"] == 1  # one replay, not its 29 events
    assert row["device_self_us"] == pytest.approx(sum(e["dur"] for e in tail), abs=1e-3)
    rest = sum(e["dur"] for e in unlaunched) - sum(e["dur"] for e in tail)
    other = ops.filter(pl.col("name") == "(unattributed)")["device_self_us"].sum()
    assert other == pytest.approx(rest, abs=1e-3)
    # its drill-down holds the cut replay's kernels, the (unattributed) one the rest
    drill = profile.launches("(graph 0 launched before the window)")
    assert drill["total_us"].sum() == pytest.approx(row["device_self_us"], abs=1e-3)
    assert int(drill["calls"].sum()) == len(tail)


def test_replays_queued_before_the_window_are_their_graphs_row() -> None:
    """H200 torch.compile: 10 replays queued before the window ran inside it (the sample's facts);
    their kernels are the 38-node graph's, and no launch call of theirs is in the trace."""
    name = SAMPLES / "h200_compile_queued_replays.json.gz"
    events = read(name)
    launched = replays(events)
    nodes = len(launched[0])
    correlations = {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    by_launch: dict[int, list[dict]] = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") not in correlations:
            by_launch.setdefault(e["args"]["correlation"], []).append(e)
    whole = [group for group in by_launch.values() if len(group) == nodes]  # one graph launch's events each
    kernels = [e for group in whole for e in group]
    queued = len(whole)
    assert queued == 10  # the witness: whole replays whose launch call is not in the trace
    row = profview.load(name, use_cache=False).ops().filter(pl.col("name") == "(graph 0 launched before the window)")
    assert row["calls"].to_list() == [queued]
    assert row["device_self_us"][0] == pytest.approx(sum(e["dur"] for e in kernels), abs=1e-3)
