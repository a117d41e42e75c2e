"""Efficiency for graph replays (issue 40, item 3): with its capture, each replayed call is sized
from its captured operator's recorded shapes by the model of an eager call, one row per (name,
shapes); replayed work no model sizes keeps a row with its time and the reason.

Second witness: the raw JSON read with the standard library (``graph_witness``): the replay's GPU
events by the graph launch's correlation, paired in order with the capture's launch calls, each
launch's enclosing operators found by time on its thread, and the captured calls' ``Input Dims``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from graph_witness import captured_launches, open_at, read, replays
from support import SAMPLES, SHARED

import profview

PUBLIC = SHARED / "traces" / "public"
VLLM_REPLAY = PUBLIC / "tracelens_mi300_vllm_decode_graph_replay.json.gz"
VLLM_FOLDER = PUBLIC / "vllm_decode_capture_traces"
SGLANG_REPLAY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
SGLANG_FOLDER = SAMPLES / "sglang_decode_capture_traces"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")

needs_vllm = pytest.mark.skipif(not VLLM_REPLAY.exists(), reason="../shared absent: the vLLM pair is not in samples/")


@cache
def attributed(replay: Path, folder: Path) -> profview.Profile:
    profile = profview.load(replay, use_cache=False)
    profile.use_capture([str(folder)], use_cache=False)
    return profile


def capture_file(folder: Path) -> Path:
    details = json.loads((folder / "execution_details.json").read_text())
    return folder / Path(details[0]["file"]).name


def raw_gpu(events: list[dict]) -> float:
    return sum(e["dur"] for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS)


def enclosing(capture_events: list[dict], launches: list[dict]) -> list[list[dict]]:
    """Per captured launch, the cpu_ops on its thread that contain it (outermost first), by time."""
    pid, tid = launches[0]["pid"], launches[0]["tid"]
    mine = [e for e in capture_events if e.get("ph") == "X" and (e["pid"], e["tid"]) == (pid, tid)]
    ops = [e for e in mine if e.get("cat") == "cpu_op"]
    return open_at(ops, [c["ts"] for c in launches])


@needs_vllm
def test_vllm_replayed_calls_are_rows_sized_from_the_capture() -> None:
    replay_events = read(VLLM_REPLAY)
    capture_events = read(capture_file(VLLM_FOLDER))
    launches = captured_launches(capture_events)
    stacks = enclosing(capture_events, launches)
    graph = replays(replay_events)
    replayed_us = sum(e["dur"] for r in graph for e in r)
    table = attributed(VLLM_REPLAY, VLLM_FOLDER).efficiency()

    # Every replayed microsecond is in a row (sized or not): at least 95% of the replay's GPU time.
    total = float(table["kernel_us"].sum())
    assert total >= 0.95 * replayed_us
    assert total <= raw_gpu(replay_events) + 0.01

    # vllm::moe_forward (two thirds of the GPU time): one row, 24 calls (one per captured call,
    # per replay), its replayed time every event whose captured launch lies inside a moe_forward
    # call, its shapes the captured call's Input Dims; the model refuses it and says why.
    moe = table.filter(pl.col("name") == "vllm::moe_forward")
    assert moe.height == 1
    inside = [any(op["name"] == "vllm::moe_forward" for op in stack) for stack in stacks]
    moe_us = sum(e["dur"] for r in graph for e, hit in zip(r, inside, strict=True) if hit)
    assert moe["kernel_us"][0] == pytest.approx(moe_us, abs=0.01)
    captured = {
        json.dumps(op["args"]["Input Dims"]).replace(" ", "")
        for stack in stacks
        for op in stack
        if op["name"] == "vllm::moe_forward"
    }
    calls = {id(op) for stack in stacks for op in stack if op["name"] == "vllm::moe_forward"}
    assert moe["calls"][0] == len(calls) * len(graph) == 24
    assert {moe["input_dims"][0].replace(" ", "")} == captured
    assert moe["gflops"][0] is None and moe["note"][0]

    # A replayed GEMM sized as an eager one: 2·M·N·K + M·N (bias), its shapes from the capture.
    addmm = table.filter((pl.col("name") == "aten::addmm") & pl.col("params").str.starts_with("M=32 N=5120 K=2880"))
    assert addmm.height == 1
    dims = json.loads(addmm["input_dims"][0])
    (n,), (m, k), (_k, n2) = dims[0], dims[1], dims[2]
    assert n == n2
    assert addmm["gflops"][0] == pytest.approx((2 * m * n * k + m * n) / 1e9)
    addmm_calls = [
        op for stack in stacks for op in stack[-1:] if op["name"] == "aten::addmm" and op["args"]["Input Dims"] == dims
    ]
    assert addmm["calls"][0] == len({(o["ts"], o["tid"]) for o in addmm_calls}) * len(graph)


@needs_vllm
def test_vllm_the_summary_says_what_share_of_gpu_time_the_rows_size() -> None:
    profile = attributed(VLLM_REPLAY, VLLM_FOLDER)
    table = profile.efficiency()
    all_gpu = raw_gpu(read(VLLM_REPLAY))
    sized = float(table.filter(pl.col("gflops").is_not_null())["kernel_us"].sum())
    unsized = float(table.filter(pl.col("gflops").is_null())["kernel_us"].sum())
    line = next(line for line in profile.efficiency_lines() if line.startswith("efficiency rows"))
    assert f"rows size {sized / all_gpu * 100:.1f}% of GPU time" in line
    assert f"{unsized / all_gpu * 100:.1f}% in rows without figures" in line
    assert sized + unsized >= 0.95 * all_gpu


def test_sglang_replayed_calls_are_rows() -> None:
    replay_events = read(SGLANG_REPLAY)
    replayed_us = sum(e["dur"] for r in replays(replay_events) for e in r)
    table = attributed(SGLANG_REPLAY, SGLANG_FOLDER).efficiency()
    assert float(table["kernel_us"].sum()) >= 0.95 * replayed_us
    # Rows without figures say why, and hold their time.
    unsized = table.filter(pl.col("gflops").is_null())
    assert unsized["note"].null_count() == 0


@needs_vllm
def test_vllm_summary_ranks_operators_by_their_attributed_time() -> None:
    """``summary --capture``: the top operators rank by the replayed time attributed through the
    capture too, so ``vllm::moe_forward`` (two thirds of the GPU time, raw: the replay's events whose
    captured launch's innermost operator is it) is in the top 10 with that time."""
    from io import StringIO

    from graph_witness import replayed_by_operator
    from rich.console import Console

    from profview.report.profile_summary import print_summary

    replay_events = read(VLLM_REPLAY)
    by_op = replayed_by_operator(replay_events, read(capture_file(VLLM_FOLDER)))
    moe_us = sum(us for (op, _module), us in by_op.items() if op == "vllm::moe_forward")
    assert moe_us / raw_gpu(replay_events) > 0.66
    out = StringIO()
    print_summary(attributed(VLLM_REPLAY, VLLM_FOLDER), 10, Console(file=out, width=200, no_color=True))
    text = out.getvalue()
    top = text[text.index("Top 10 operators") :].splitlines()
    moe = next(line for line in top if "vllm::moe_forward" in line)
    assert f"{moe_us / 1000:.3f} ms" in moe
