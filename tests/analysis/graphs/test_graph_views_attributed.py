"""The operator, module, source and launch views see replayed kernels through their capture.

Witnesses: the raw events paired in order (tests/graph_witness.py), TraceLens' ops_summary.csv of
the same replay (its ``total_subtree_kernel_time_sum``: an operator's kernels and those of the
operators under it), and the same views without the capture (torch's figures stay as they were).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from graph_witness import captured_launches, launch_attributions, read, replays
from support import SAMPLES, SHARED, replay_profile

from profview.analysis.graphs.attribution import CAPTURED
from profview.frames import NO_MODULE
from profview.profiles.views import view_frame

PUBLIC = SHARED / "traces" / "public"
VLLM_REPLAY = PUBLIC / "tracelens_mi300_vllm_decode_graph_replay.json.gz"
VLLM_CAPTURE = PUBLIC / "tracelens_mi300_vllm_decode_graph_capture.pt.trace.json.gz"
VLLM_SUMMARY = PUBLIC / "tracelens_mi300_vllm_decode_graph_replay.ops_summary.csv"
SGLANG_REPLAY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
SGLANG_CAPTURE = SAMPLES / "sglang_decode_capture_traces" / "bs_32_rank0.json.gz"

needs_vllm = pytest.mark.skipif(not VLLM_REPLAY.exists(), reason="../shared absent: the vLLM pair is not in samples/")


def replayed_pairs(replay: Path, capture: Path) -> list[tuple[dict, tuple[str, str]]]:
    """(GPU event, (operator, module) of its launch) for every replayed event, from the raw events."""
    capture_events = read(capture)
    attributed = launch_attributions(capture_events, captured_launches(capture_events))
    return [(e, key) for r in replays(read(replay)) for e, key in zip(r, attributed, strict=True)]


@pytest.mark.parametrize("replay,capture", [(SGLANG_REPLAY, SGLANG_CAPTURE)])
def test_ops_keep_torchs_figures_and_gain_the_replayed_time(replay: Path, capture: Path) -> None:
    without = view_frame(replay_profile(replay, None), "ops")
    with_capture = view_frame(replay_profile(replay, capture), "ops")
    torch_rows = with_capture.filter(pl.col("kind") != "captured").drop("graph_device_us")
    assert torch_rows.sort("name", "kind").equals(without.select(torch_rows.columns).sort("name", "kind"))
    assert with_capture.columns.index("graph_device_us") == with_capture.columns.index("calls") + 1
    expected: dict[str, float] = defaultdict(float)
    for event, (op, _module) in replayed_pairs(replay, capture):
        expected[op] += event["dur"]
    found = dict(with_capture.filter(pl.col("graph_device_us") > 0).select("name", "graph_device_us").iter_rows())
    assert found == pytest.approx(dict(expected), abs=1e-6)
    assert found["aten::mm"] == pytest.approx(5782.25, abs=0.02)


@needs_vllm
def test_operators_show_moe_forward_with_its_replayed_time_and_its_kernels() -> None:
    ops = view_frame(replay_profile(VLLM_REPLAY, VLLM_CAPTURE), "ops")
    moe = ops.filter(pl.col("name") == "vllm::moe_forward").row(0, named=True)
    with VLLM_SUMMARY.open() as fh:
        tracelens = {r["name"]: r for r in csv.DictReader(fh)}["vllm::moe_forward"]
    assert (moe["kind"], moe["calls"]) == ("captured", int(tracelens["Count"]))
    assert moe["graph_device_us"] == pytest.approx(float(tracelens["total_direct_kernel_time_sum"]), abs=0.02)
    # its drill-down: the kernels of its calls and of the operators under it, as TraceLens' subtree sum
    kernels = replay_profile(VLLM_REPLAY, VLLM_CAPTURE).launches("vllm::moe_forward")
    assert kernels["total_us"].sum() == pytest.approx(float(tracelens["total_subtree_kernel_time_sum"]), abs=0.02)
    direct = kernels.select((pl.col("total_us") * pl.col("direct_calls") / pl.col("calls")).sum()).item()
    assert direct == pytest.approx(moe["graph_device_us"], abs=0.02)


@pytest.mark.parametrize("replay,capture", [(SGLANG_REPLAY, SGLANG_CAPTURE)])
def test_modules_take_a_replayed_kernels_module_from_its_capture(replay: Path, capture: Path) -> None:
    modules = replay_profile(replay, capture).modules()
    per_path = dict(modules.select("path", "total_us").iter_rows())
    expected: dict[str, float] = defaultdict(float)
    for event, (_op, module) in replayed_pairs(replay, capture):
        parts = module.split(" > ") if module != NO_MODULE else []
        for depth in range(1, len(parts) + 1):
            expected[" > ".join(parts[:depth])] += event["dur"]
    before = dict(replay_profile(replay, None).modules().select("path", "total_us").iter_rows())
    for path, us in expected.items():
        assert per_path[path] == pytest.approx(us + before.get(path, 0.0), abs=1e-6), path
    replayed_us = sum(e["dur"] for e, _key in replayed_pairs(replay, capture))
    assert per_path[NO_MODULE] == pytest.approx(before[NO_MODULE] - replayed_us, abs=1e-6)


@pytest.mark.parametrize("replay,capture", [(SGLANG_REPLAY, SGLANG_CAPTURE)])
def test_a_replayed_kernel_drills_to_its_captured_operator(replay: Path, capture: Path) -> None:
    loaded = replay_profile(replay, capture)
    pairs = replayed_pairs(replay, capture)
    kernel = max({e["name"] for e, _key in pairs}, key=lambda n: sum(e["dur"] for e, _k in pairs if e["name"] == n))
    launchers = loaded.kernel_launches(kernel)
    expected: dict[str, float] = defaultdict(float)
    for event, (op, _module) in pairs:
        if event["name"] == kernel:
            expected[op] += event["dur"]
    captured = launchers.filter(pl.col("op_chain").str.starts_with(CAPTURED))
    found: dict[str, float] = defaultdict(float)
    for op, us in captured.select("op", "total_us").iter_rows():
        found[op] += us
    assert dict(found) == pytest.approx(dict(expected), abs=1e-6)
    raw_calls = sum(1 for e in read(replay) if e.get("cat") == "kernel" and e["name"] == kernel)
    assert launchers["calls"].sum() == raw_calls


@pytest.mark.parametrize("replay,capture", [(SGLANG_REPLAY, SGLANG_CAPTURE)])
def test_sources_take_a_replayed_kernels_lines_from_its_capture(replay: Path, capture: Path) -> None:
    sources = replay_profile(replay, capture).sources()
    before = replay_profile(replay, None).sources()
    all_gpu = sum(e["dur"] for e in read(replay) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    # self time adds up to all GPU time either way; the replay's own frames (torch/cuda/graphs.py: replay)
    # give up the replayed time to the captured lines
    assert sources["self_us"].sum() == pytest.approx(all_gpu, abs=1e-6)
    replay_line = before.filter(pl.col("name").str.contains(r"graphs\.py\(\d+\): replay"))
    assert replay_line.height == 1
    replayed_us = sum(e["dur"] for e, _key in replayed_pairs(replay, capture))
    assert replay_line["total_us"][0] >= replayed_us
    after = sources.filter(pl.col("name") == replay_line["name"][0])
    assert after["total_us"].sum() == pytest.approx(replay_line["total_us"][0] - replayed_us, abs=1e-6)
