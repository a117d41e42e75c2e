"""A module a graph replay runs counts the replayed calls: each replay runs again every module
frame of the capture that launched its nodes.  Witnesses: the replays and the capture's module
frames counted in the raw events (tests/graph_witness.py), and the same view without the capture."""

from __future__ import annotations

from collections import Counter

from graph_witness import captured_launches, launch_attributions, read, replays
from support import SAMPLES, replay_profile

from profview.frames import NO_MODULE

SGLANG_REPLAY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
SGLANG_CAPTURE = SAMPLES / "sglang_decode_capture_traces" / "bs_32_rank0.json.gz"


def module_frames(events: list[dict]) -> Counter[str]:
    """The ``nn.Module`` frames per module path, the path built by nesting on each thread."""
    found: Counter[str] = Counter()
    frames = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("nn.Module: ")]
    for thread in {(e["pid"], e["tid"]) for e in frames}:
        stack: list[tuple[float, str]] = []
        for e in sorted((e for e in frames if (e["pid"], e["tid"]) == thread), key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1][0] <= e["ts"]:
                stack.pop()
            leaf = e["name"].removeprefix("nn.Module: ")
            path = f"{stack[-1][1]} > {leaf}" if stack else leaf
            found[path] += 1
            stack.append((e["ts"] + e["dur"], path))
    return found


def test_replayed_modules_count_the_replayed_calls() -> None:
    capture_events = read(SGLANG_CAPTURE)
    modules = {m for _op, m in launch_attributions(capture_events, captured_launches(capture_events))}
    paths = {" > ".join(m.split(" > ")[:d]) for m in modules - {NO_MODULE} for d in range(1, m.count(" > ") + 2)}
    frames = module_frames(capture_events)
    replayed = len(replays(read(SGLANG_REPLAY)))
    assert replayed >= 1 and paths
    calls = dict(replay_profile(SGLANG_REPLAY, SGLANG_CAPTURE).modules().select("path", "calls").iter_rows())
    before = dict(replay_profile(SGLANG_REPLAY, None).modules().select("path", "calls").iter_rows())
    for path in paths:
        own = before.get(path, 0)  # frames the replay trace itself holds (none: the model ran in the graph)
        assert calls[path] == own + replayed * frames[path], path
    assert all(calls[p] > 0 for p in paths)
