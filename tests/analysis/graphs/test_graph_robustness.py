"""Graph alignment is right or refused, never guessed, on real pairs made harder.

Each case rewrites a real replay (or capture) the way a profiler or a model can make it: nodes
missing from the replay or from the capture, two captures to choose from, a graph on two streams, a
``while`` node running its body again.  The truth for every replayed event is its own launch in the
untouched pair (the raw events paired in order: tests/graph_witness.py); an attributed event must
carry its launch's operator and module, and a refused one says why.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import polars as pl
import pytest
from graph_witness import captured_launches, launch_attributions, read, replays, write
from support import SAMPLES

import profview
from profview.analysis.graphs.align import ACROSS_STREAMS, AMBIGUOUS, EXTRA, NOT_CAPTURED
from profview.analysis.graphs.attribution import replayed

SGLANG_REPLAY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
SGLANG_CAPTURE = SAMPLES / "sglang_decode_capture_traces" / "bs_32_rank0.json.gz"
COMPILED = SAMPLES / "h100_compile_reduce_overhead.json.gz"


def truth(replay_events: list[dict], capture_events: list[dict]) -> dict[float, tuple[str, str]]:
    """Per replayed GPU event (by its start), the (operator, module) of its own launch."""
    launches = captured_launches(capture_events)
    attributed = launch_attributions(capture_events, launches)
    return {e["ts"]: key for replay in replays(replay_events) for e, key in zip(replay, attributed, strict=True)}


def outcome(replay: Path, *captures: Path) -> pl.DataFrame:
    """Per replayed event: ``ts``, ``op``, ``module``, ``how`` (as profview attributes it)."""
    profile = profview.load(replay, use_cache=False)
    profile.use_capture([str(c) for c in captures], use_cache=False)
    events = replayed(profile._graph_frames, profile.gpu)
    starts = profile.gpu.select(pl.col("ts")).with_row_index("gpu_row").with_columns(pl.col("gpu_row").cast(pl.Int64))
    return events.join(starts, on="gpu_row").select("ts", "op", "module", "how", "graph", "node")


def score(
    found: pl.DataFrame, expected: dict[float, tuple[str, str]], with_modules: bool = True
) -> tuple[int, int, int]:
    """(right, wrong, refused) over the replayed events (``with_modules``: the module must be right
    too; not on the torch.compile sample, whose Python frames cross: see test_graphs.py)."""
    right = wrong = refused = 0
    for ts, op, module in found.select("ts", "op", "module").iter_rows():
        if op is None:
            refused += 1
        elif (op, module if with_modules else None) == (expected[ts][0], expected[ts][1] if with_modules else None):
            right += 1
        else:
            wrong += 1
    return right, wrong, refused


def graph_events(events: list[dict]) -> list[dict]:
    return replays(events)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_named_template_stays_right_with_a_tenth_of_the_replay_missing(tmp_path: Path, seed: int) -> None:
    events = read(SGLANG_REPLAY)
    expected = truth(events, read(SGLANG_CAPTURE))
    nodes = graph_events(events)
    dropped = {id(e) for e in random.Random(seed).sample(nodes, len(nodes) // 10)}
    trace = write(tmp_path / "replay.json", [e for e in events if id(e) not in dropped])
    right, wrong, refused = score(outcome(trace, SGLANG_CAPTURE), expected)
    assert wrong == 0
    assert right + refused == len(nodes) - len(dropped)
    assert right >= 0.99 * (len(nodes) - len(dropped))


def test_nodes_missing_from_the_capture_are_refused_and_the_rest_right(tmp_path: Path) -> None:
    capture = read(SGLANG_CAPTURE)
    launches = captured_launches(capture)
    gone = {id(launches[i]) for i in (5, 100, 101, 300, 543)}
    capture_file = write(tmp_path / "capture.json", [e for e in capture if id(e) not in gone])
    events = read(SGLANG_REPLAY)
    expected = truth(events, capture)
    found = outcome(SGLANG_REPLAY, capture_file)
    right, wrong, refused = score(found, expected)
    assert wrong == 0
    assert refused >= len(gone)
    assert right + refused == len(graph_events(events))
    assert set(found.filter(pl.col("op").is_null())["how"].to_list()) <= {NOT_CAPTURED, EXTRA, AMBIGUOUS}


def test_of_two_captures_the_graphs_own_is_chosen() -> None:
    events = read(SGLANG_REPLAY)
    found = outcome(SGLANG_REPLAY, COMPILED, SGLANG_CAPTURE)  # a CUDA compile capture first: it fits no node
    assert score(found, truth(events, read(SGLANG_CAPTURE))) == (len(graph_events(events)), 0, 0)


def test_of_two_equal_captures_the_batch_size_the_replay_names_is_chosen(tmp_path: Path) -> None:
    """Two captures of the same kernels, one at batch size 16 with its operators renamed: the replay's
    annotation (``step[DECODE bs=32]``) picks the batch-32 one; without a batch size to go by, two
    captures that attribute differently attribute nothing."""
    capture = read(SGLANG_CAPTURE)
    other = copy.deepcopy(capture)
    for e in other:
        if e.get("cat") == "user_annotation" and e["name"] == "capture_32_DECODE":
            e["name"] = "capture_16_DECODE"
        elif e.get("cat") == "cpu_op":
            e["name"] = "renamed::" + e["name"]
    renamed = write(tmp_path / "bs16.json", other)
    events = read(SGLANG_REPLAY)
    found = outcome(SGLANG_REPLAY, renamed, SGLANG_CAPTURE)
    assert score(found, truth(events, capture)) == (len(graph_events(events)), 0, 0)
    unnamed = [dict(e, name="iteration") if e.get("name") == "step[DECODE bs=32]" else e for e in events]
    unnamed = [dict(e, name="iteration 2") if str(e.get("name", "")).startswith("execute_32") else e for e in unnamed]
    replay = write(tmp_path / "replay.json", unnamed)
    found = outcome(replay, renamed, SGLANG_CAPTURE)
    assert found["op"].null_count() == found.height
    assert "fit this graph equally" in found["how"][0]


def two_streams(events: list[dict], moved: set[int]) -> list[dict]:
    """The replay with the graph nodes at positions ``moved`` run on another stream."""
    nodes = graph_events(events)
    ids = {id(nodes[i]) for i in moved}
    out = []
    for e in events:
        if id(e) in ids:
            e = copy.deepcopy(e)
            e["args"]["stream"] = e["args"]["stream"] + 100
            e["tid"] = e["args"]["stream"]
        out.append(e)
    return out


def test_a_named_graph_on_two_streams_is_attributed_stream_by_stream(tmp_path: Path) -> None:
    events = read(SGLANG_REPLAY)
    moved = set(range(0, len(graph_events(events)), 3))
    trace = write(tmp_path / "replay.json", two_streams(events, moved))
    found = outcome(trace, SGLANG_CAPTURE)
    right, wrong, _refused = score(found, truth(events, read(SGLANG_CAPTURE)))
    assert wrong == 0
    assert right >= 0.99 * len(graph_events(events))


def test_a_nameless_capture_refuses_a_two_stream_replay(tmp_path: Path) -> None:
    """On CUDA the capture names no kernel: with the attention's memset and kernel on a second stream,
    the order across streams is not the capture's, so every node is refused but the Triton kernels
    named after a host op whose launches are alike (their name decides, not the order)."""
    events = read(COMPILED)
    nodes = graph_events(events)
    moved = {i for i, e in enumerate(nodes) if e.get("cat") == "gpu_memset" or e["name"].startswith("cudnn")}
    moved_events = []
    for replay in replays(events):
        moved_events += [replay[i] for i in moved]
    ids = {id(e) for e in moved_events}
    rewritten = []
    for e in events:
        if id(e) in ids:
            e = copy.deepcopy(e)
            e["args"]["stream"] = 8
        rewritten.append(e)
    found = outcome(write(tmp_path / "replay.json", rewritten), COMPILED)
    _right, wrong, refused = score(found, truth(events, events), with_modules=False)
    assert wrong == 0
    assert refused > 0
    attributed = found.filter(pl.col("op").is_not_null())
    names = {e["ts"]: e["name"] for replay in replays(events) for e in replay}
    for ts, op in attributed.select("ts", "op").iter_rows():
        assert names[ts] == op and op.startswith("triton_"), (names[ts], op)
    assert set(found.filter(pl.col("op").is_null())["how"].to_list()) == {ACROSS_STREAMS}


def test_a_while_node_repeating_its_body_is_refused_and_the_rest_right(tmp_path: Path) -> None:
    """A conditional ``while`` node runs its body (here one kernel) three times in one replay, though
    it was captured once: which run is the captured launch is not the replay's to say, so the body's
    runs are refused, and every other node is attributed as before."""
    events = read(SGLANG_REPLAY)
    nodes = graph_events(events)
    body = nodes[200]
    gap = nodes[201]["ts"] - body["ts"]
    again = [dict(body, ts=body["ts"] + gap * k / 3, args=dict(body["args"])) for k in (1, 2)]
    trace = write(tmp_path / "replay.json", [*events, *again])
    found = outcome(trace, SGLANG_CAPTURE)
    expected = truth(events, read(SGLANG_CAPTURE))
    for extra in again:
        expected[extra["ts"]] = expected[body["ts"]]
    right, wrong, refused = score(found, expected)
    assert wrong == 0
    assert refused == 3
    assert right == len(nodes) - 1
    assert set(found.filter(pl.col("op").is_null())["how"].to_list()) == {EXTRA}
