"""Hostile input, fourth round (issue 45): each test re-makes its input, names the item it checks
(``test_45_<item>_``; ``medium``/``low`` for the others) and fails on the code before its fix.

Linearity is shown by ratios (the work at two sizes, :mod:`scaling`; peak memory by ``tracemalloc``),
never by a time limit."""

from __future__ import annotations

import json
import math
import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from graph_witness import GPU_CATS, read, replays, write
from scaling import assert_linear
from support import KERNEL, SAMPLES, run_cli

import profview
from profview.analysis.graphs import align, attribution
from profview.analysis.graphs.align import ALIGNED, EXTRA, NOT_CAPTURED, Lane, Template
from profview.analysis.graphs.capture import LAUNCH_SCHEMA, Capture
from profview.analysis.graphs.replays import EVENT_SCHEMA, Replays

#: The most a peak may grow over the input's growth before the work counts as worse than linear.
MEMORY_SLACK = 2.5


def peak_bytes(run: Callable[[], object]) -> int:
    """The peak of memory Python and NumPy allocate while ``run`` runs."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_linear_memory(run: Callable[[int], object], small: int, factor: int = 4) -> None:
    little = peak_bytes(lambda: run(small))
    big = peak_bytes(lambda: run(factor * small))
    assert big <= MEMORY_SLACK * factor * little, f"{factor}x the input peaked at {big / little:.1f}x the memory"


def named_template(names: list[str]) -> Template:
    """A capture whose launches name their kernels (ROCm), each under its own operator."""
    return Template(["kernel"] * len(names), list(names), [None] * len(names), [(f"op{i}",) for i in range(len(names))])


def layer_names(count: int) -> list[str]:
    return [f"kernel_{i % 50}" for i in range(count)]


def missing_one(count: int) -> tuple[Template, Lane]:
    """A replay of ``count`` nodes whose capture misses the launch of the middle one."""
    names = layer_names(count)
    captured = names[: count // 2] + names[count // 2 + 1 :]
    return named_template(captured), Lane(["kernel"] * count, names)


def test_45_1_a_replay_whose_capture_misses_one_launch_aligns_in_linear_memory() -> None:
    """20,000 nodes against 19,999 launches: the n x m tables peaked at 5.6 GB; now a band as wide
    as the difference, and the answer is the same: every node but the missing one aligned (the
    missing one and the equal kernels around it cannot be told apart: refused)."""
    template, lane = missing_one(20_000)
    peak = peak_bytes(lambda: align.align_lane(template, lane))
    assert peak < 200 * 2**20, f"peaked at {peak / 2**20:.0f} MiB"
    found = align.align_lane(template, lane)
    assert found.matched == 19_999
    assert found.how.count(ALIGNED) >= 19_900
    assert all(launch < 0 or template.names[launch] == lane.names[j] for j, launch in enumerate(found.launch))
    assert_linear_memory(lambda n: align.align_lane(*missing_one(n)), 1_000)
    assert_linear(lambda n: align.align_lane(*missing_one(n)), 1_000)


def streams_of_one_kernel(streams: int) -> tuple[Template, list[Lane]]:
    """``streams`` streams each running one kernel 13 times, captured launch by launch in turn."""
    per = 13
    names = ["gemm"] * (per * streams)
    return named_template(names), [Lane(["kernel"] * per, ["gemm"] * per) for _ in range(streams)]


def test_45_2_streams_running_the_same_kernel_are_aligned_a_bounded_number_of_times() -> None:
    """Lanes that take a launch from each other in turn were aligned again 4 x streams times (80
    streams ran past 120 s); now at most REALIGN_ROUNDS more times, and the launches no lane holds
    for certain are refused, not handed to whichever lane was aligned last."""
    calls = 0
    real = align._align

    def counted(*args: object, **kwargs: object) -> align.Alignment:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    template, lanes = streams_of_one_kernel(80)
    spent: list[int] = []
    budget = align._Budget

    class Counted(budget):  # type: ignore[misc, valid-type]
        def __init__(self, cells: int) -> None:
            super().__init__(cells)
            spent.append(cells)

    align._align = counted  # type: ignore[assignment]
    align._Budget = Counted  # type: ignore[misc]
    try:
        found = align.align_graph(template, lanes)
    finally:
        align._align = real  # type: ignore[assignment]
        align._Budget = budget  # type: ignore[misc]
    assert calls <= (align.REALIGN_ROUNDS + 1) * len(lanes)
    # The cells of alignment tables filled: a constant plus a multiple of the input, whatever the streams.
    assert spent == [align.graph_budget(len(template.kinds), sum(len(lane.kinds) for lane in lanes))]
    assert all(launch < 0 for a in found for launch in a.launch)  # any stream may have run any launch


def many_streams(streams: int) -> tuple[Template, list[Lane]]:
    """``streams`` streams of one node each, every one its own kernel, all captured."""
    names = [f"kernel_{s}" for s in range(streams)]
    return named_template(names), [Lane(["kernel"], [name]) for name in names]


def test_45_3_many_streams_cost_linear_work() -> None:
    """2,000 streams took 38 s: each lane was compared with every launch; now with the launches of
    its own kernels only (an index by kind and name), and each is attributed."""
    template, lanes = many_streams(2_000)
    found = align.align_graph(template, lanes)
    assert [a.launch for a in found] == [[s] for s in range(2_000)]
    assert_linear(lambda n: align.align_graph(*many_streams(n)), 250)


def test_45_1_a_banded_alignment_is_the_full_one() -> None:
    """The band gives what the whole table gave: a replay that differs from its capture in a few
    places (a node missing, one extra, one other kernel) keeps each node's answer."""
    names = layer_names(300)
    captured = [*names[:100], "other", *names[100:200], *names[201:]]
    template = named_template(captured)
    lane = Lane(["kernel"] * 301, [*names, "stray"])
    found = align.align_lane(template, lane)
    assert found.how[-1] == NOT_CAPTURED
    assert found.matched == 299
    for j, launch in enumerate(found.launch):
        assert launch < 0 or captured[launch] == names[j], j
    assert EXTRA not in found.how[:100]


def piecewise(count: int) -> tuple[Replays, list[Capture]]:
    """vLLM's piecewise shape: ``count`` graphs of 3 named kernels each and a capture of each."""
    import polars as pl

    names = [[f"piece{g}_{k}" for k in range(3)] for g in range(count)]
    nodes = pl.DataFrame(
        {
            "graph": [g for g in range(count) for _ in range(3)],
            "node": [k for _ in range(count) for k in range(3)],
            "name": [n for group in names for n in group],
            "kind": ["kernel"] * (3 * count),
            "stream": [7] * (3 * count),
            "lane": [0] * (3 * count),
            "position": [k for _ in range(count) for k in range(3)],
        }
    )
    empty = pl.DataFrame(schema=EVENT_SCHEMA)
    replays = Replays(empty, pl.DataFrame({"replay": [], "graph": []}), nodes)
    captures = []
    for g, group in enumerate(names):
        launches = pl.DataFrame(
            {
                "index": [0, 1, 2],
                "row": [0, 1, 2],
                "call": ["hipLaunchKernel"] * 3,
                "kind": ["kernel"] * 3,
                "name": group,
                "anchor": [None] * 3,
                "op": [f"op{g}"] * 3,
                "op_row": [g] * 3,
                "op_chain": [f"op{g}"] * 3,
                "python_stack": [""] * 3,
                "module": ["m"] * 3,
                "source": ["s"] * 3,
                "sources": [["s"]] * 3,
            },
            schema=LAUNCH_SCHEMA,
        )
        captures.append(Capture(launches, f"capture {g}", None, "t.json"))
    return replays, captures


def test_45_4_each_graph_is_aligned_only_with_the_captures_that_can_be_its() -> None:
    """500 graphs x 500 captures took 72 s: every graph was aligned with every capture.  Now the
    captures are indexed by their launches' kinds and names and a graph is aligned only with those
    sharing the most nodes with it (here one); each graph still gets its own capture, and the share
    the index counts is the one counted capture by capture (``_shared_nodes``)."""
    replays, captures = piecewise(60)
    aligned = 0
    real = attribution.CaptureIndex.align

    def counted(self: attribution.CaptureIndex, number: int, lanes: list[Lane]) -> list[align.Alignment]:
        nonlocal aligned
        aligned += 1
        return real(self, number, lanes)

    attribution.CaptureIndex.align = counted  # type: ignore[method-assign]
    try:
        frames = attribution.attribute(replays, captures)
    finally:
        attribution.CaptureIndex.align = real  # type: ignore[method-assign]
    assert aligned == 60
    assert frames.graphs["capture"].to_list() == [f"capture {g}" for g in range(60)]
    index = attribution.CaptureIndex(captures)
    for graph in (0, 17, 59):
        nodes = replays.node_sequence(graph)
        expected = [attribution._shared_nodes(nodes, c.launches) for c in captures]
        assert index.shared(nodes).tolist() == expected
    assert_linear(lambda n: attribution.attribute(*piecewise(n)), 50)


def test_45_medium_a_gpu_only_copy_of_a_real_trace_has_one_graph_replayed_12_times(tmp_path: Path, reader: str) -> None:
    """Without the host events every replay lacks its launch: each was taken for one cut by the
    window ("12 graphs, 0 replays + 12 cut").  Only a stream's first replay can have been cut; the
    witness: the graph launches of the original trace and their GPU events, counted from the JSON."""
    events = read(SAMPLES / "h100_decode_cuda_graph.json.gz")
    launched = replays(events)
    gpu_only = write(tmp_path / "gpu_only.json", [e for e in events if e.get("cat") in GPU_CATS])
    table = profview.load(gpu_only, use_cache=False).graphs()
    assert table.select("nodes", "replays", "partial_replays").rows() == [(len(launched[0]), len(launched), 0)]


def gpu_only_replays(count: int, path: Path) -> Path:
    """A GPU-only profile of ``count`` replays of ``count // 2`` graphs (3 kernels each, no launches)."""
    events = []
    for r in range(count):
        for k in range(3):
            name = f"graph{r % max(count // 2, 1)}_kernel{k}"
            events.append({**KERNEL, "name": name, "ts": 10 * (3 * r + k), "args": {"stream": 7, "correlation": r + 1}})
    return write(path, events)


def test_45_5_a_gpu_only_profile_of_many_replays_is_linear(tmp_path: Path) -> None:
    """Every replay of a GPU-only profile was a cut one, each fitted against every graph (4,000
    replays: 41 s in ``summary``); now only each stream's first replay can be cut."""
    profile = profview.load(gpu_only_replays(40, tmp_path / "g.json"), use_cache=False)
    table = profile.graphs()
    assert table.height == 20 and table["replays"].to_list() == [2] * 20
    assert table["partial_replays"].sum() == 0
    paths = {n: gpu_only_replays(n, tmp_path / f"g{n}.json") for n in (250, 2000)}
    assert_linear(lambda n: profview.load(paths[n], use_cache=False).graphs(), 250)


def annotated_replays(annotations: list[str], path: Path, kernels: int = 2) -> Path:
    """One graph launch inside each annotation (host thread 1), replaying ``kernels`` kernels."""
    events: list[dict] = []
    for i, text in enumerate(annotations):
        t = 1000 * i
        events.append({"name": text, "ph": "X", "cat": "user_annotation", "ts": t, "dur": 500, "pid": 1, "tid": 1})
        events.append(
            {
                "name": "cudaGraphLaunch",
                "ph": "X",
                "cat": "cuda_runtime",
                "ts": t + 10,
                "dur": 5,
                "pid": 1,
                "tid": 1,
                "args": {"correlation": i + 1},
            }
        )
        for k in range(kernels):
            events.append(
                {**KERNEL, "name": f"kernel{k}", "ts": t + 50 + 10 * k, "args": {"stream": 7, "correlation": i + 1}}
            )
    return write(path, events)


def summary_of(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = run_cli(["summary", str(path), "--no-cache", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "internal error" not in err
    return out


@pytest.mark.parametrize("digits", [19, 4_301])
def test_45_8_9_a_batch_size_of_many_digits_is_no_batch_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], digits: int, reader: str
) -> None:
    """``bs=`` with 4,301 digits (int() refuses past 4,300) or 2^63 and more (Int64 against Int128)
    around a graph launch made ``summary`` an internal error; a count is 1 to 18 ASCII digits."""
    huge = "9" * digits
    path = annotated_replays([f"step[DECODE bs={huge}]", f"capture_{huge}_FULL"], tmp_path / "t.json")
    summary_of(path, capsys)
    profile = profview.load(path, use_cache=False)
    if digits < 4096:  # a longer name is no iteration name at all
        assert profile.iterations()["requests"].to_list() == [None]
    assert profile.graphs()["replays"].to_list() == [2]


def test_45_low_digits_of_other_scripts_are_not_counts() -> None:
    """``bs=٣٢`` (Arabic-Indic digits) was read as 32 by ``\\d`` and ``int()``."""
    from profview.analysis.serving.names import parse_iteration_name
    from profview.frames import count_of

    assert (
        parse_iteration_name("step[DECODE bs=٣٢]") is None
        or parse_iteration_name("step[DECODE bs=٣٢]").requests is None
    )
    assert count_of("٣٢") is None and count_of("32") == 32
    assert attribution._batch_in("step[DECODE bs=٣٢]") is None


def test_45_10_token_totals_never_wrap(tmp_path: Path, reader: str) -> None:
    """Eleven decode iterations of 9e17 tokens each: the phase total (9.9e18) is past Int64; Polars'
    sum wrapped it to a negative count.  Now the total is unknown, and each iteration keeps its own."""
    each = 900_000_000_000_000_000
    path = annotated_replays([f"step[DECODE bs={each}]"] * 11, tmp_path / "t.json")
    profile = profview.load(path, use_cache=False)
    assert profile.iterations()["tokens"].to_list() == [each] * 11  # the witness: the names themselves
    decode = profile.phases().filter(pl.col("phase") == "decode")
    assert decode["tokens"].to_list() == [None]
    assert sum([each] * 11) > 2**63 - 1


@pytest.mark.parametrize(
    ("shape", "expected"),
    [([2**32, 2**32 + 1], None), ([2**32, 2**32], None), ([2**31, 3], 3 * 2**31), ([4, 2**62], None)],
)
def test_45_11_embedding_token_counts_never_wrap(shape: list[int], expected: int | None) -> None:
    """NumPy's product of the index shape wrapped (2^64 + 2^32 read as 2^32, 2^64 as 0); now the
    exact product where it fits Int64, else unknown."""
    from profview.analysis.serving.iterations import _index_tokens

    found = _index_tokens(json.dumps([[1000, 64], shape]), json.dumps(["float", "long int"]))
    assert (found[0] if found is not None else None) == expected  # (elements, batch)
    if found is not None:
        assert found[1] == shape[0]
    if expected is not None:
        assert found is not None and found[0] == math.prod(shape)


@pytest.mark.parametrize("op", ["aten::mm", "aten::bmm", "aten::_scaled_mm", "aten::_grouped_mm", "aten::addmm"])
def test_45_13_14_dimensions_that_are_texts_or_too_many_are_no_shape(op: str) -> None:
    """A dimension written as a text made a model repeat the text (``"4" * 2**62``: GBs or out of
    memory); 80,000 dimensions of 2^62 made big-number products quadratic.  Both are no shape now:
    no figure (and no time spent)."""
    from profview.analysis.efficiency.op_models import operator_work

    types = json.dumps(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])
    as_text = json.dumps([["4", 2**62], [2**62, "8"], [4]])
    many = json.dumps([[2**62] * 80_000, [2**62] * 80_000, [4]])
    for dims in (as_text, many):
        tracemalloc.start()
        try:
            work = operator_work(op, dims, types, None)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert work is None or work.flops is None
        assert peak < 64 * 2**20


SGLANG_REPLAY = SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
SGLANG_CAPTURES = SAMPLES / "sglang_decode_capture_traces"


def two_equal_captures(folder: Path) -> None:
    """A capture folder of two captures of the same kernels (the second with its operators renamed),
    their batch sizes said only by ``execution_details.json`` (the annotations name none)."""
    folder.mkdir()
    capture = read(SGLANG_CAPTURES / "bs_32_rank0.json.gz")
    plain = [dict(e, name="capture_DECODE") if e.get("name") == "capture_32_DECODE" else e for e in capture]
    renamed = [dict(e, name="renamed::" + e["name"]) if e.get("cat") == "cpu_op" else e for e in plain]
    write(folder / "a.json", plain)
    write(folder / "b.json", renamed)


def details(folder: Path, sizes: dict[str, int]) -> None:
    entries = [{"file": name, "batch_size": size, "mode": "FULL"} for name, size in sizes.items()]
    (folder / "execution_details.json").write_text(json.dumps(entries))


def renamed_share(out: Path) -> bool:
    """Whether the exported graph_ops name the renamed operators (capture b) rather than a's."""
    text = out.read_text()
    return "renamed::" in text


def test_45_6_execution_details_is_in_the_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its batch sizes decide between equal captures; after it changed, the cache still gave the old
    capture's attribution (``--no-cache`` the other).  The witness: a fresh read without the cache."""
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "captures"
    two_equal_captures(folder)
    out = tmp_path / "ops.csv"

    def export(*extra: str) -> bool:
        args = ["export", str(SGLANG_REPLAY), "--view", "graph_ops", "-o", str(out), "--force", "--capture"]
        assert run_cli([*args, str(folder), *extra]) == 0, capsys.readouterr().err
        return renamed_share(out)

    details(folder, {"a.json": 32, "b.json": 16})
    assert export() is False  # the replay says bs=32: a
    details(folder, {"a.json": 16, "b.json": 32})
    assert export("--no-cache") is True
    assert export() is True  # was False: the old entry


def test_45_7_an_entry_repeated_in_execution_details_is_read_once(tmp_path: Path) -> None:
    """300 copies of one entry were each opened (73 s, 1.5 GB); now the file is read once."""
    folder = tmp_path / "captures"
    folder.mkdir()
    (folder / "bs_32.json.gz").write_bytes((SGLANG_CAPTURES / "bs_32_rank0.json.gz").read_bytes())
    (folder / "execution_details.json").write_text(json.dumps([{"file": "bs_32.json.gz", "batch_size": 32}] * 300))
    profile = profview.load(SGLANG_REPLAY, use_cache=False)
    opened: list[str] = []
    real = profile.open_capture

    def counted(path: str, **kwargs: object) -> object:
        opened.append(path)
        return real(path, **kwargs)

    profile.open_capture = counted  # type: ignore[method-assign]
    profile.use_capture([str(folder)], use_cache=False)
    assert profile.graphs()["attributed_pct"].to_list() == [100.0]
    assert len(opened) == 1


@pytest.mark.parametrize("name", ["bs_32.json", "execution_details.json"])
def test_45_d_no_file_a_capture_is_read_from_is_written_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """``export -o CAPTURE --force`` overwrote the capture trace or execution_details.json (only the
    replay was protected); every file a command reads is an input now."""
    folder = tmp_path / "captures"
    folder.mkdir()
    write(folder / "bs_32.json", read(SGLANG_CAPTURES / "bs_32_rank0.json.gz"))
    details(folder, {"bs_32.json": 32})
    before = (folder / name).read_bytes()
    args = ["export", str(SGLANG_REPLAY), "--view", "graphs", "--capture", str(folder), "--no-cache"]
    code = run_cli([*args, "-o", str(folder / name), "--force"])
    err = capsys.readouterr().err
    assert code == 2 and "refusing to overwrite the input profile" in err
    assert (folder / name).read_bytes() == before
    capture_file = folder / "bs_32.json"
    code = run_cli([*args[:-3], "--capture", str(capture_file), "-o", str(capture_file), "--force"])
    assert code == 2 and "refusing to overwrite" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "problem"),
    [("[" * 200_000 + "]" * 200_000, "nested deeper"), (" " * (17 * 2**20) + "[]", "larger than 16 MiB")],
)
def test_45_medium_execution_details_nested_or_huge_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    """A deeply nested execution_details.json was an internal error; a huge one was read whole (an
    out-of-memory line named another file)."""
    folder = tmp_path / "captures"
    folder.mkdir()
    (folder / "execution_details.json").write_text(text)
    code = run_cli(["summary", str(SGLANG_REPLAY), "--no-cache", "--capture", str(folder)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "execution_details.json" in err and problem in err and "internal error" not in err


def test_45_medium_a_capture_folder_with_a_stray_file_and_the_replay_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder without execution_details.json failed whole on a stray ``config.json`` or on the
    replay trace beside its captures; they are passed over, the captures attribute (all of the
    replay's GPU time: the raw events of its one graph launch, summed)."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "bs_32_rank0.json.gz").write_bytes((SGLANG_CAPTURES / "bs_32_rank0.json.gz").read_bytes())
    (folder / "config.json").write_text(json.dumps({"model": "qwen3", "tp": 1}))
    replay = folder / "replay.json.gz"
    replay.write_bytes(SGLANG_REPLAY.read_bytes())
    profile = profview.load(replay, use_cache=False)
    profile.use_capture([str(folder)], use_cache=False)
    table = profile.graphs()
    launched = replays(read(SGLANG_REPLAY))
    assert table["attributed_pct"].to_list() == [100.0]
    assert table["device_us"][0] == pytest.approx(sum(e["dur"] for e in launched[0]))


def test_45_medium_captures_given_that_fit_nothing_do_not_ask_for_captures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--capture`` given and fitting nothing made ``summary`` say "give it with --capture PATH";
    now the capture is named with its score (the best of what was given fits this many nodes)."""
    out = summary_of(SGLANG_REPLAY, capsys, "--capture", str(SAMPLES / "h100_compile_reduce_overhead.json.gz"))
    assert "give it with --capture" not in out
    assert re.search(r"not attributed to operators: .* fits \d+ of 544 nodes", " ".join(out.split()))


def triton_name(tokens: int) -> str:
    """A compiled kernel's name of ``tokens`` fused operators (words and empty ones, as ``__`` makes)."""
    words = ["add", "", "unsafe", "view", "mul", "", "to", "copy", "softmax"]
    return "triton_poi_fused_" + "_".join(words[i % len(words)] for i in range(tokens)) + "_5"


def test_45_12_splitting_a_triton_name_into_fused_ops_is_linear() -> None:
    """Every start was tried for every end (and each piece joined): a 12 KB trace took 42 s in
    ``export --view kernels``; a piece of several words is an operator's name, so no longer than the
    longest.  The split itself is unchanged: Inductor's own name for a GELU's fused ops."""
    from profview.analysis.efficiency.work.triton import fused_ops

    assert fused_ops("triton_poi_fused_add_addmm_mul_pow_tanh_view_5") == [
        "add", "addmm", "mul", "pow", "tanh", "view"
    ]  # fmt: skip
    assert fused_ops("triton_poi_fused__to_copy__unsafe_view_mul_0") == ["_to_copy", "_unsafe_view", "mul"]
    assert_linear(lambda n: fused_ops(triton_name(n)), 500)


@pytest.mark.parametrize("pattern", ["(" * 500 + "decode" + ")" * 500, "(?=decode)", "decode(", "\\1(a)"])
def test_45_e_iteration_and_filter_share_one_pattern_validator(
    pattern: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--iteration`` with 500 nested groups was an internal error where ``--filter`` gave a clear
    line, and the two accepted and refused different patterns: both go through ``pattern_problem``."""
    trace = str(SAMPLES / "h100_decode_cuda_graph.json.gz")
    iteration = run_cli(["export", trace, "--view", "iterations", "-o", "-", "--iteration", pattern, "--no-cache"])
    said = capsys.readouterr().err
    filtered = run_cli(["export", trace, "--view", "kernels", "-o", "-", "--filter", pattern, "--no-cache"])
    other = capsys.readouterr().err
    assert (iteration, filtered) == (2, 2), (said, other)
    assert "internal error" not in said + other
    # The same reason (the place may differ by the (?i) a case-blind filter puts first).
    reason = said.split("regex")[-1].split(":", 1)[1].split(" at position")[0]
    assert reason == other.split("regex")[-1].split(":", 1)[1].split(" at position")[0]


def test_45_medium_a_subnormal_peak_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``--peak-tflops 5e-324`` passed "above 0" and divided figures into ``inf``."""
    trace = str(SAMPLES / "h100_decode_cuda_graph.json.gz")
    code = run_cli(["export", trace, "--view", "efficiency", "-o", "-", "--peak-tflops", "5e-324", "--no-cache"])
    assert code == 2 and "a peak is a number above 0, from 0.001" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["missing", "repeated"])
def test_45_medium_damaged_graph_node_ids_lose_no_time(tmp_path: Path, damage: str, reader: str) -> None:
    """Kineto's ``graph node id`` missing on one event dropped its time from ``graph_nodes``; one
    repeated merged two kernels under one node.  Such ids are not used (the node sequences are): the
    nodes' time is every replayed event's, summed from the JSON."""
    events = read(SAMPLES / "h100_decode_cuda_graph.json.gz")
    launched = replays(events)
    for replay in launched:
        for position, event in enumerate(replay):
            event["args"]["graph id"] = 1
            event["args"]["graph node id"] = position + 1
    if damage == "missing":
        del launched[3][5]["args"]["graph node id"]
    else:
        launched[3][5]["args"]["graph node id"] = 5  # the id of the node before it
    nodes = profview.load(write(tmp_path / "t.json", events), use_cache=False).graph_nodes()
    assert nodes["device_us"].sum() == pytest.approx(sum(e["dur"] for r in launched for e in r))
    names = {(e["name"]) for e in launched[0]}
    assert set(nodes["name"].to_list()) == names
    assert nodes.height == len(launched[0])


def test_45_medium_graph_nodes_blocks_are_linear_in_the_graph() -> None:
    """Every block length up to a third of the graph was tried (200,000 nodes: 26 s in
    ``graph_nodes``); blocks are looked for up to MAX_BLOCK nodes.  A layer of 7 kernels repeated
    is still found: the witness is the names' own period."""
    names = [f"k{i % 7}" for i in range(70)]
    labels = attribution.repeated_blocks(names)
    assert labels[0] == "1/10 (inferred)" and labels[-1] == "10/10 (inferred)"
    assert_linear(lambda n: attribution.repeated_blocks([f"k{i}" for i in range(n)]), 20_000, factor=4)


def foreign_capture(launches: int, path: Path) -> Path:
    """Another model's capture: ``launches`` nameless kernel launches under ``foreign::forward``."""
    host = {"ph": "X", "pid": 1, "tid": 1}
    events = [
        {**host, "name": "foreign::forward", "cat": "cpu_op", "ts": 0, "dur": 10 * launches + 100},
        {
            **host,
            "name": "cudaStreamBeginCapture",
            "cat": "cuda_runtime",
            "ts": 1,
            "dur": 1,
            "args": {"correlation": 1},
        },
    ]
    for i in range(launches):
        call = {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": 10 + 10 * i, "dur": 2}
        events.append({**host, **call, "args": {"correlation": i + 2}})
    end = {"name": "cudaStreamEndCapture", "cat": "cuda_runtime", "ts": 10 * launches + 50, "dur": 1}
    events.append({**host, **end, "args": {"correlation": launches + 2}})
    return write(path, events)


def test_45_low_a_foreign_nameless_capture_is_not_attributed_by_count_alone(tmp_path: Path) -> None:
    """A capture of another model with as many launches as the graph has nodes, naming none of its
    kernels, was taken as the graph's (100%, ``position``); counts alone prove nothing across traces."""
    events = read(SAMPLES / "h100_decode_cuda_graph.json.gz")
    launched = replays(events)
    replay = write(tmp_path / "gpu_only.json", [e for e in events if e.get("cat") in GPU_CATS])
    profile = profview.load(replay, use_cache=False)
    profile.use_capture([str(foreign_capture(len(launched[0]), tmp_path / "foreign.json"))], use_cache=False)
    table = profile.graphs()
    assert table["attributed_pct"].to_list() == [0.0]
    assert attribution.FOREIGN_BY_COUNT in table["note"][0]


def test_45_low_a_phase_line_prints_a_huge_figure_in_scientific_notation() -> None:
    """A phase line printed a duration of 1e300 µs as 300 digits; like every summary figure from
    10^12 on (``frames.fmt_fixed``), it is scientific now."""
    from profview.profiles.iteration_views import short_us

    assert short_us(1e300) == "1.000e+294 s"
    assert short_us(2.5e6) == "2.50 s"


def test_45_low_a_home_that_does_not_exist_is_not_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``HOME`` naming no folder (a service account's), opening a trace made it to cache into;
    now nothing is cached and the command answers as usual."""
    home = tmp_path / "nonexistent"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PROFVIEW_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    out = summary_of(SAMPLES / "h100_decode_cuda_graph.json.gz", capsys)
    assert "graph replays" in out
    assert run_cli(["summary", str(SAMPLES / "h100_decode_cuda_graph.json.gz")]) == 0
    assert not home.exists()


def test_45_low_the_capture_messages_say_what_is_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A capture trace whose capture the window cut (a begin, no end) was said to have no
    ``cudaStreamBeginCapture``; an entry listed with a folder was said "not there" without the name
    it was listed under (only the capture folder is read)."""
    events = read(SAMPLES / "h100_decode_cuda_graph.json.gz")
    cut = write(tmp_path / "cut.json", [e for e in events if "StreamEndCapture" not in str(e.get("name"))])
    replay = str(SAMPLES / "h100_decode_cuda_graph.json.gz")
    assert run_cli(["summary", replay, "--no-cache", "--capture", str(cut)]) == 2
    err = capsys.readouterr().err
    begins = sum(1 for e in events if "StreamBeginCapture" in str(e.get("name")))
    assert f"no complete graph capture in this trace ({begins} *StreamBeginCapture" in err
    folder = tmp_path / "captures"
    folder.mkdir()
    (folder / "execution_details.json").write_text(json.dumps([{"file": "elsewhere/bs_8.json", "batch_size": 8}]))
    assert run_cli(["summary", replay, "--no-cache", "--capture", str(folder)]) == 2
    assert "listed as 'elsewhere/bs_8.json'" in capsys.readouterr().err
