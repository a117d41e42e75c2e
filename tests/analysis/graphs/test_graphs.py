"""Graph replays attributed through their capture, on real pairs.

Every figure is checked against a second witness: the raw events read with the standard library
(tests/graph_witness.py: launches paired in order with the replay's kernels, operators and modules
by time containment), and where TraceLens published its capture-merged ``ops_summary.csv`` of the
same replay, against that peer as well.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from graph_witness import captured_launches, read, replayed_by_operator, replays, write
from support import SAMPLES, SHARED

import profview
from profview.analysis.graphs.align import POSITION
from profview.analysis.graphs.attribution import NOT_ATTRIBUTED, replayed
from profview.frames import NO_MODULE, UNATTRIBUTED
from profview.profiles.graph_views import CAPTURE_REMEDY

PUBLIC = SHARED / "traces" / "public"
VLLM_REPLAY = PUBLIC / "tracelens_mi300_vllm_decode_graph_replay.json.gz"
VLLM_CAPTURE = PUBLIC / "tracelens_mi300_vllm_decode_graph_capture.pt.trace.json.gz"
VLLM_FOLDER = PUBLIC / "vllm_decode_capture_traces"
VLLM_SUMMARY = PUBLIC / "tracelens_mi300_vllm_decode_graph_replay.ops_summary.csv"
SGLANG_REPLAY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
SGLANG_FOLDER = SAMPLES / "sglang_decode_capture_traces"
SGLANG_CAPTURE = SGLANG_FOLDER / "bs_32_rank0.json.gz"
SGLANG_SUMMARY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.ops_summary.csv"
COMPILED = SAMPLES / "h100_compile_reduce_overhead.json.gz"
DECODE = SAMPLES / "h100_decode_cuda_graph.json.gz"
WINDOWED = SAMPLES / "h100_compile_partial_window.json.gz"

needs_vllm = pytest.mark.skipif(not VLLM_REPLAY.exists(), reason="../shared absent: the vLLM pair is not in samples/")


@cache
def attributed(replay: Path, *captures: Path) -> profview.Profile:
    """A replay trace with its captures (loaded once per session)."""
    profile = profview.load(replay, use_cache=False)
    profile.use_capture([str(c) for c in captures], use_cache=False)
    return profile


def per_operator(profile: profview.Profile) -> dict[tuple[str, str], float]:
    """graph_ops' replayed time per (operator, module)."""
    rows = profile.graph_ops().filter(pl.col("graph_us") > 0)
    return {(n, m): us for n, m, us in rows.select("name", "module", "graph_us").iter_rows()}


def tracelens_key(name: str, module: str) -> tuple[str, str]:
    """A graph_ops row as TraceLens' ops_summary names it: the innermost module's class
    (``nn.Module: Name``, instance number dropped; ``NA`` for none), SGLang's per-layer profiler ops
    without their layer number (docs/graphs.md)."""
    leaf = "NA" if module == NO_MODULE else "nn.Module: " + re.sub(r"_\d+$", "", module.rsplit(" > ", 1)[-1])
    if name.startswith("sglang_profiler::"):
        name = re.sub(r"_\d+$", "", name)
    return name, leaf


def assert_equals_tracelens(profile: profview.Profile, summary: Path) -> None:
    """Every row of TraceLens' ops_summary.csv within 0.02 µs and with its count of calls; the kernels
    that TraceLens files under a bare runtime call (no operator around it) are under the annotation
    around that call here (profview counts annotations as operators, as torch does)."""
    ours: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for name, module, calls, us in profile.graph_ops().select("name", "module", "calls", "device_us").iter_rows():
        key = tracelens_key(name, module)
        ours[key][0] += us
        ours[key][1] += calls
    with summary.open() as fh:
        theirs = list(csv.DictReader(fh))
    runtime_named = 0.0
    for row in theirs:
        key = (row["name"], row["parent_module"])
        expected = float(row["total_direct_kernel_time_sum"])
        if re.match(r"^hip\w*Launch", row["name"]):
            runtime_named += expected
            continue
        assert ours[key][0] == pytest.approx(expected, abs=0.02), key
        assert ours[key][1] == int(row["Count"]), key
    assert sum(us for us, _calls in ours.values()) == pytest.approx(
        sum(float(r["total_direct_kernel_time_sum"]) for r in theirs), abs=0.2
    )
    extra = {k: v[0] for k, v in ours.items() if k not in {(r["name"], r["parent_module"]) for r in theirs}}
    assert sum(extra.values()) == pytest.approx(runtime_named, abs=0.02)


# -- the vLLM pair (../shared) -------------------------------------------------------------------


@needs_vllm
def test_vllm_every_captured_node_has_its_operator_module_and_python_line() -> None:
    profile = attributed(VLLM_REPLAY, VLLM_FOLDER)
    nodes = profile.graph_nodes()
    launches = captured_launches(read(VLLM_CAPTURE))
    assert nodes.height == len(launches) == 421
    assert nodes["op"].null_count() == 0
    assert (nodes["module"] != NO_MODULE).all()
    assert nodes["python_stack"].str.contains(r"\.py\(\d+\)").all()  # a Python source line on every stack
    assert (nodes["how"] == POSITION).all()
    # each node's kernel is the one its launch named (ROCm args.kernel), in the capture's order
    assert nodes.sort("node")["name"].to_list() == [call["args"]["kernel"] for call in launches]


@needs_vllm
def test_vllm_a_node_s_source_is_the_innermost_line_of_the_model_s_code() -> None:
    """Issue 40: a node's ``source`` is the innermost Python frame in the model's code: the raw
    capture's python_function events open at each launch (standard library), launcher and
    framework frames skipped (Triton's runtime and generated ``<string>`` launcher, torch's
    dispatch, Inductor/AOTAutograd/Dynamo/FX, AITER's JIT wrapper, vLLM's compilation wrappers);
    before, 252 of 421 nodes named ``triton/backends/amd/driver.py(634)``."""
    from graph_witness import open_at

    launcher = (
        "<built-in", "<eval_with_key>", "<string>", "triton/", "torch/_ops.py", "torch/utils/_device.py",
        "torch/utils/_contextlib.py", "torch/_library/", "torch/autograd/function.py", "torch/_inductor/",
        "torch/_functorch/", "torch/_dynamo/", "torch/fx/", "torch/nn/modules/module.py", "torch/_compile.py",
        "torch_guard.py", "aiter/jit/", "vllm/compilation/", "contextlib.py", "functools.py",
    )  # fmt: skip
    profile = attributed(VLLM_REPLAY, VLLM_FOLDER)
    nodes = profile.graph_nodes().sort("node")
    events = read(VLLM_CAPTURE)
    launches = captured_launches(events)
    pid, tid = launches[0]["pid"], launches[0]["tid"]
    frames = [
        e for e in events
        if e.get("ph") == "X" and e.get("cat") == "python_function" and e["pid"] == pid and e["tid"] == tid
        and not e["name"].startswith("nn.Module: ")
    ]
    expected = []
    for stack in open_at(frames, [c["ts"] for c in launches]):
        names = [f["name"] for f in reversed(stack)]
        model = [n for n in names if not n.startswith(launcher) and "torchinductor_" not in n]
        expected.append(model[0])
    assert nodes["source"].to_list() == expected
    assert not nodes["source"].str.contains(r"^(triton/|torch/_ops\.py|aiter/jit/|<)").any()
    compiled = nodes.filter(pl.col("op").str.starts_with("triton_poi_"))
    assert compiled.height == 48
    assert set(compiled["source"]) == {"vllm/model_executor/models/gpt_oss.py(293): forward"}
    addmm = nodes.filter(pl.col("op") == "aten::addmm")["source"].unique().to_list()
    assert addmm == ["vllm/model_executor/layers/utils.py(122): rocm_unquantized_gemm_impl"]
    # the full stack stays in python_stack
    assert compiled["python_stack"].str.contains("triton_heuristics").all()


@needs_vllm
def test_vllm_graph_ops_equal_tracelens_and_the_raw_events() -> None:
    profile = attributed(VLLM_REPLAY, VLLM_FOLDER)
    assert_equals_tracelens(profile, VLLM_SUMMARY)
    moe = profile.graph_ops().filter(pl.col("name") == "vllm::moe_forward")
    assert moe["device_us"].sum() == pytest.approx(7171.53, abs=0.02)
    witness = replayed_by_operator(read(VLLM_REPLAY), read(VLLM_CAPTURE))
    assert per_operator(profile) == pytest.approx(witness, abs=1e-6)
    graphs = profile.graphs()
    assert graphs["attributed_pct"].to_list() == [pytest.approx(100.0)]  # >= 99.5% asked
    all_gpu = sum(e["dur"] for e in read(VLLM_REPLAY) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    replayed_us = sum(e["dur"] for replay in replays(read(VLLM_REPLAY)) for e in replay)
    assert graphs["pct_of_gpu"][0] == pytest.approx(replayed_us / all_gpu * 100.0)  # 96.93%


@needs_vllm
def test_a_capture_file_and_its_folder_attribute_alike() -> None:
    by_file = attributed(VLLM_REPLAY, VLLM_CAPTURE).graph_ops()
    by_folder = attributed(VLLM_REPLAY, VLLM_FOLDER).graph_ops()
    assert by_file.equals(by_folder)


# -- the SGLang pair (samples/) ------------------------------------------------------------------


def test_sglang_graph_ops_equal_tracelens_and_the_raw_events() -> None:
    profile = attributed(SGLANG_REPLAY, SGLANG_FOLDER)
    assert_equals_tracelens(profile, SGLANG_SUMMARY)
    mm = profile.graph_ops().filter(pl.col("name") == "aten::mm")
    assert mm["device_us"].sum() == pytest.approx(5782.25, abs=0.02)
    witness: dict[tuple[str, str], float] = defaultdict(float)
    for (op, module), us in replayed_by_operator(read(SGLANG_REPLAY), read(SGLANG_CAPTURE)).items():
        # issue 40: SGLang's volatile _<digits> is dropped, as TraceLens does (a range has one)
        witness[(re.sub(r"_\d+$", "", op) if op.startswith("sglang_profiler::") else op, module)] += us
    assert per_operator(profile) == pytest.approx(dict(witness), abs=1e-6)
    assert profile.graphs()["attributed_pct"][0] == pytest.approx(100.0)
    assert profile.graphs()["capture"][0] == "capture_32_DECODE"


# -- CUDA: a capture whose launches name no kernel -----------------------------------------------


def by_name(figures: dict[tuple[str, str], float]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for (name, _module), us in figures.items():
        totals[name] += us
    return dict(totals)


@pytest.mark.parametrize(("trace", "with_modules"), [(COMPILED, False), (DECODE, True)])
def test_a_nameless_cuda_capture_pairs_by_count_and_anchors(trace: Path, with_modules: bool) -> None:
    """torch.compile's cudagraph tree launches from a generator whose Python frame outlives the module
    frames around it (they cross): profview's module rule (frames nested as a tree, issue 15) puts
    those launches outside the modules that containment by time puts them in, so the compiled
    sample is compared per operator only."""
    profile = attributed(trace)
    events = read(trace)
    nodes = profile.graph_nodes()
    assert nodes.height == len(captured_launches(events)) == len(replays(events)[0])
    assert (nodes["how"] == POSITION).all()
    ours, witness = per_operator(profile), replayed_by_operator(events, events)
    if not with_modules:
        ours, witness = by_name(ours), by_name(witness)  # type: ignore[assignment]
    assert ours == pytest.approx(witness, abs=1e-6)
    assert profile.graphs()["replays"][0] == len(replays(events))


def test_a_graph_without_capture_is_found_and_the_remedy_named() -> None:
    profile = attributed(WINDOWED)
    events = read(WINDOWED)
    graphs = profile.graphs()
    assert graphs.select("graph", "nodes", "replays", "partial_replays").row(0) == (0, 38, len(replays(events)), 0)
    assert graphs["attributed_pct"][0] == 0.0
    assert CAPTURE_REMEDY in graphs["note"][0]
    # graph_ops keeps every GPU microsecond: the replays under their own row, saying they are not attributed
    ops = profile.graph_ops()
    replayed_us = sum(e["dur"] for replay in replays(events) for e in replay)
    assert ops.filter(pl.col("name") == NOT_ATTRIBUTED)["device_us"].sum() == pytest.approx(replayed_us)


def test_the_same_compiled_graph_in_another_run_is_attributed_through_its_capture() -> None:
    profile = attributed(WINDOWED, COMPILED)
    assert profile.graphs()["attributed_pct"][0] == pytest.approx(100.0)
    launches = captured_launches(read(COMPILED))
    assert profile.graph_nodes()["op"].to_list() == [_op(read(COMPILED), c) for c in launches]


def _op(events: list[dict], call: dict) -> str:
    from graph_witness import launch_attributions

    return launch_attributions(events, [call])[0][0]


# -- the window cut a replay ---------------------------------------------------------------------


def cut(events: list[dict], at: float, keep_after: bool) -> list[dict]:
    """Kineto's trim: every event that starts before (or, at the end, after) ``at`` dropped."""
    return [e for e in events if e.get("ph") == "M" or ("ts" in e and (e["ts"] >= at) == keep_after)]


def test_a_partial_replay_at_the_windows_start_is_joined_to_its_graph(tmp_path: Path) -> None:
    """Kineto kept none for us (h100_gpu_samples.md): the window is cut out of a real trace, in the
    middle of its second replay, so that replay's first 9 kernels and its launch call are gone."""
    events = read(COMPILED)
    second = replays(events)[1]
    trace = write(tmp_path / "cut.json", cut(events, second[9]["ts"], keep_after=True))
    profile = profview.load(trace, use_cache=False)
    profile.use_capture([str(COMPILED)], use_cache=False)
    graphs = profile.graphs()
    assert graphs.select("nodes", "replays", "partial_replays").row(0) == (38, 3, 1)
    frames = profile._graph_frames
    partial = frames.replays.filter(pl.col("partial") == "suffix")
    tail = replayed(frames, profile.gpu).filter(pl.col("replay") == partial["replay"][0]).sort("node")
    assert tail["node"].to_list() == list(range(9, 38))
    assert tail["name"].to_list() == [e["name"] for e in second[9:]]
    assert tail["attributed"].all()
    # nothing a graph explains is left (unattributed)
    ops = profile.graph_ops()
    assert UNATTRIBUTED not in ops["name"].to_list()
    assert ops["graph_us"].sum() == pytest.approx(
        sum(e["dur"] for r in replays(events)[2:] for e in r) + sum(e["dur"] for e in second[9:])
    )


def test_the_last_replay_cut_at_the_windows_end_is_a_prefix_of_its_graph(tmp_path: Path) -> None:
    events = read(COMPILED)
    last = replays(events)[-1]
    trace = write(tmp_path / "cut.json", cut(events, last[20]["ts"], keep_after=False))
    profile = profview.load(trace, use_cache=False)
    graphs = profile.graphs()
    assert graphs.select("nodes", "replays", "partial_replays").row(0) == (38, len(replays(events)) - 1, 1)
    assert graphs["attributed_pct"][0] == pytest.approx(100.0)
    frames = profile._graph_frames
    partial = frames.replays.filter(pl.col("partial") == "prefix")
    head = replayed(frames, profile.gpu).filter(pl.col("replay") == partial["replay"][0]).sort("node")
    assert head["node"].to_list() == list(range(20))


def test_repeated_layers_are_labelled_as_inferred_blocks() -> None:
    """Qwen3-8B's graph repeats one decoder layer's kernels: the blocks found from the kernel names
    alone are as many as the capture's distinct Qwen3DecoderLayer module frames (the raw events)."""
    nodes = attributed(SGLANG_REPLAY, SGLANG_FOLDER).graph_nodes()
    labels = nodes["block"].drop_nulls()
    counts = {label.split("/")[1].split(" ")[0] for label in labels.to_list()}
    layers = {
        e["name"]
        for e in read(SGLANG_CAPTURE)
        if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: Qwen3DecoderLayer_")
    }
    assert counts == {str(len(layers))}  # 36
    assert labels.str.ends_with("(inferred)").all()
    per_block = nodes.drop_nulls("block").group_by("block").len()["len"].unique().to_list()
    assert len(per_block) == 1 and per_block[0] * len(layers) == labels.len()


def test_the_efficiency_line_says_replays_without_their_capture_are_not_sized() -> None:
    """Issue 40: without its capture a replayed call has no shapes, so the replayed time is a row
    that says why ("not attributed: no capture"), and the Overview's efficiency line says what share
    of GPU time the rows size (raw: the GPU events of the graph launch's correlation over all GPU
    events, none of which is sized)."""
    events = read(SGLANG_REPLAY)
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    launched = {e["args"]["correlation"] for e in events if "GraphLaunch" in e.get("name", "")}
    replayed_us = sum(e["dur"] for e in gpu if e["args"].get("correlation") in launched)
    all_us = sum(e["dur"] for e in gpu)
    profile = profview.load(SGLANG_REPLAY, use_cache=False)
    row = profile.efficiency().filter(pl.col("name") == NOT_ATTRIBUTED)
    assert row["kernel_us"][0] == pytest.approx(replayed_us, abs=0.01)
    assert row["gflops"][0] is None and "no capture" in row["note"][0]
    line = next(line for line in profile.efficiency_lines() if line.startswith("efficiency rows size"))
    sized = float(profile.efficiency().filter(pl.col("gflops").is_not_null())["kernel_us"].sum())
    assert f"rows size {sized / all_us * 100:.1f}% of GPU time" in line
    assert sized <= all_us - replayed_us + 0.01
    resnet = profview.load(SAMPLES / "resnet50_train_amp.pt.trace.json.gz", use_cache=False)
    assert not any("graph replays" in line for line in resnet.efficiency_lines())
