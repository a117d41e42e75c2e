"""Issue 40, item 6: hints written for the trace at hand, and ``--capture`` said right.

Witnesses are the raw events read with the standard library: whose runtime the calls are (``hip*``
or ``cuda*``), whether graphs replay (``*GraphLaunch`` calls), how much of the runtime calls' time
the blocking copies take, and which kernels a graph replays against those a capture launches.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from graph_witness import captured_launches, read, replays
from support import SAMPLES, SHARED, loaded, run_cli

import profview
from profview.diff.comparison import load_comparison

ROCM = "hta_mi250_rocm_minitoy.json.gz"
SGLANG = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
VLLM = SAMPLES / "tracelens_mi300_vllm_decode_graph_replay.json.gz"
SGLANG_CAPTURE = SAMPLES / "sglang_decode_capture_traces"
VLLM_CAPTURE = SHARED / "traces" / "public" / "vllm_decode_capture_traces"
CUDA_GRAPH_LOOP = "h100_decode_cuda_graph.json.gz"
CALL_CATS = ("cuda_runtime", "cuda_driver")


def runtime_hint(name: str) -> str:
    (hint,) = [h for h in loaded(name).overview().hints if "runtime calls take" in h]
    return hint


def calls(path: Path) -> list[dict]:
    return [e for e in read(path) if e.get("ph") == "X" and e.get("cat") in CALL_CATS]


def test_rocm_trace_says_hip_not_cuda() -> None:
    """The MI250 trace's runtime calls are all ``hip*``: its hint names HIP and HIP graphs."""
    names = Counter(e["name"][:3] for e in calls(SAMPLES / ROCM))
    assert names["hip"] == sum(names.values()) > 0
    hint = runtime_hint(ROCM)
    assert hint.startswith("HIP runtime calls take ") and hint.endswith("try HIP graphs.") and "CUDA" not in hint


def test_a_trace_that_replays_graphs_is_not_told_to_try_them() -> None:
    """The H100 decode loop replays its captured graph 12 times: no "try CUDA graphs"."""
    launches = [e for e in calls(SAMPLES / CUDA_GRAPH_LOOP) if e["name"] == "cudaGraphLaunch"]
    assert len(launches) == 12
    hint = runtime_hint(CUDA_GRAPH_LOOP)
    assert "try" not in hint and "12 graph replays" in hint


def test_blocking_copies_are_named_not_called_launch_overhead() -> None:
    """SGLang's replay: its runtime time is one blocking ``hipMemcpyWithStream`` (raw: its share of
    all runtime calls' time); the hint names it and says the host waits, not launch overhead."""
    runtime = calls(SGLANG)
    total = sum(e["dur"] for e in runtime)
    copy = sum(e["dur"] for e in runtime if e["name"] == "hipMemcpyWithStream")
    hint = runtime_hint(SGLANG.name)
    assert hint.startswith("HIP runtime calls take ")
    assert f"(hipMemcpyWithStream {copy / total * 100:.0f}%)" in hint and "not launch overhead" in hint
    assert "try" not in hint


def test_a_capture_that_does_not_fit_is_named_with_its_score() -> None:
    """SGLang's capture given to vLLM's replay: its 421 replayed kernels (raw) share no kernel name
    with the capture's launches (raw), and the summary, Overview and Graphs caption (one source,
    ``graph_lines``) and the graphs view say so with the score, never "no capture"."""
    (replayed,) = replays(read(VLLM))
    captured = {e["args"].get("kernel") for e in captured_launches(read(SGLANG_CAPTURE / "bs_32_rank0.json.gz"))}
    shared = sum(1 for e in replayed if e["name"] in captured)
    assert len(replayed) == 421 and shared == 0
    profile = profview.load(VLLM, use_cache=False)
    profile.use_capture([str(SGLANG_CAPTURE)], use_cache=False)
    profile.check_captures()
    score = f"capture_32_DECODE fits 0 of {len(replayed)} nodes"
    lines = profile.graph_lines()
    assert lines[1] == f"graph replays not attributed to operators: {score}"
    assert not any("no capture" in line for line in lines)
    assert profile.graphs()["note"][0].endswith(score)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["summary", str(VLLM), "--capture", "no/such/capture"], "--capture: no/such/capture: no such file"),
        (["summary", str(VLLM), "--capture", str(SAMPLES / "README.md")], "--capture: "),
        (["summary", str(VLLM), "--capture", str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz")], "no graph capture"),
        (["summary", str(SAMPLES / "resnet50_train_amp.tables.txt"), "--capture", str(SGLANG_CAPTURE)], "is a "),
        (["export", str(SAMPLES / "resnet50_train_amp.tables.txt"), "-v", "kernels", "--capture", str(SGLANG_CAPTURE),
          "-o", "-"], "graph captures attribute a trace's replays"),
        (["diff", str(VLLM), str(SGLANG), "--summary", "--capture", "no/such/capture"], "--capture: no/such/capture"),
    ],
)
def test_capture_errors_come_first_and_start_with_the_option(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    """A bad ``--capture`` is one line starting ``profview: error: --capture:``, before anything is
    printed (nothing on stdout; a text table's reader warnings aside), exit 2; on a text table (no
    replays to attribute) it is refused."""
    if not Path(args[1]).exists():
        pytest.skip(f"{args[1]} not in samples/")
    assert run_cli([*args, "--no-cache"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (error,) = [line for line in err.splitlines() if line.startswith("profview: error:")]
    assert error.startswith("profview: error: --capture: ") and says in error
    assert all(line.startswith("profview: warning: ") for line in err.splitlines() if line != error)  # the reader's


def test_diff_uses_each_capture_on_the_side_it_fits() -> None:
    """``diff --capture`` with both frameworks' captures: each side attributes its replay through its
    own (vLLM's graph through the vLLM capture, SGLang's through capture_32_DECODE), all of its
    replayed GPU time (raw: the graph launch's events)."""
    if not VLLM_CAPTURE.exists():
        pytest.skip(f"{VLLM_CAPTURE} absent (the shared corpus)")
    both = [str(VLLM_CAPTURE), str(SGLANG_CAPTURE)]
    comparison = load_comparison(str(VLLM), str(SGLANG), use_cache=False, capture=both)
    for side, path in ((comparison.before, VLLM), (comparison.after, SGLANG)):
        figures = side.graph_summary()
        assert figures is not None and len(figures["captures"]) == 1
        replayed = sum(e["dur"] for r in replays(read(path)) for e in r)
        assert figures["attributed_us"] == pytest.approx(replayed, abs=0.01)
    assert comparison.after.graph_summary()["captures"] == ["capture_32_DECODE"]  # type: ignore[index]
    assert comparison.before.graph_summary()["captures"] != ["capture_32_DECODE"]  # type: ignore[index]
