"""Communication (issue #16): collective kernels by arguments, names and user patterns; host time
in CPU (gloo) collectives; the rank and the devices a one-rank trace used.

Every figure is checked against the raw events read with gzip + json and plain-Python interval
arithmetic (no profview code)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from support import SAMPLES, raw_events, run_cli, sample

import profview
from profview.analysis.trace.communication import classify_communication, collective_type

B200 = "tracelens_b200_nccl_eager_no_steps.json.gz"
GLOO = ("gloo_2rank/rank0.pt.trace.json.gz", "gloo_2rank/rank1.pt.trace.json.gz")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, disjoint union of (start, end) intervals."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def length(intervals: list[tuple[float, float]]) -> float:
    return sum(e - s for s, e in union(intervals))


def minus(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of union(a) outside union(b)."""
    total = 0.0
    cut = union(b)
    for s, e in union(a):
        covered = sum(max(0.0, min(e, ce) - max(s, cs)) for cs, ce in cut)
        total += e - s - covered
    return total


def clip(intervals: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    return [(max(s, lo), min(e, hi)) for s, e in intervals if min(e, hi) > max(s, lo)]


@cache
def document(name: str) -> dict:
    with gzip.open(sample(name), "rt") as fh:
        return json.load(fh)


# -- GPU collectives ---------------------------------------------------------------------------


def test_b200_nccl_and_multimem_kernels_are_communication() -> None:
    """One rank of an 8-B200 job: 73 symmetric-memory all-reduces and one NCCL all-gather, 2.14 ms.

    profview counted 22 µs before (only the name containing ``nccl``)."""
    events = [e for e in raw_events(B200) if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    comm = [e for e in events if e["cat"] == "kernel" and ("nccl" in e["name"] or "multimem_all_reduce" in e["name"])]
    assert len(comm) == 74
    comm_iv = [(e["ts"], e["ts"] + e["dur"]) for e in comm]
    other_iv = [(e["ts"], e["ts"] + e["dur"]) for e in events if e not in comm]
    assert length(comm_iv) == pytest.approx(2141.501, abs=1e-3)  # 2119.548 + 21.953: no overlap

    profile = profview.load(sample(B200), use_cache=False)
    classified = profile.communication().filter(pl.col("backend").is_not_null())
    assert classified.height == 74
    summary = dict(
        classified.group_by("backend", "collective_name")
        .agg(pl.len())
        .select(pl.concat_str("backend", "collective_name", separator=" "), "len")
        .iter_rows()
    )
    assert summary == {"symmetric_memory AllReduce": 73, "nccl AllGather": 1}
    view = profile.overview()
    assert view.communication_us == pytest.approx(length(comm_iv), abs=1e-6)
    busy = length([(e["ts"], e["ts"] + e["dur"]) for e in events])
    assert view.communication_pct == pytest.approx(length(comm_iv) / busy * 100)
    # The step (the whole trace, no ProfilerStep) counts it where no other GPU work runs at once.
    (steps_comm,) = profile.steps()["communication_us"].to_list()
    assert steps_comm == pytest.approx(minus(comm_iv, other_iv), abs=2e-3)
    assert steps_comm > 2000


@pytest.mark.parametrize(
    ("name", "backend", "kind"),
    [
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "nccl", "AllGather"),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "nccl", "SendRecv"),
        ("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "nccl", None),
        ("ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32(ncclSymkDevWorkArgs4K)", "nccl", "AllReduce"),
        ("ncclSymkDevKernel_ReduceScatter_LL_sum_f32(ncclSymkDevWorkArgs4K)", "nccl", "ReduceScatter"),
        ("ncclAllReduceRingLLKernel_sum_f32(ncclColl)", "nccl", "AllReduce"),
        (
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, "
            "unsigned long, unsigned int**, unsigned long, unsigned long)",
            "symmetric_memory",
            "AllReduce",
        ),
        ("void c10d::symmetric_memory::multimem_all_gather_kernel<16>(char*, char*)", "symmetric_memory", "AllGather"),
        (
            "void c10d::symmetric_memory::two_shot_all_reduce_kernel<float, 16, 8>(float**)",
            "symmetric_memory",
            "AllReduce",
        ),
        (
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, int)",
            "vllm_custom_allreduce",
            "AllReduce",
        ),
        ("void vllm::cross_device_reduce_2stage<float, 4>(vllm::RankData*, int)", "vllm_custom_allreduce", "AllReduce"),
        ("rcclKernel_AllToAll(int)", "rccl", "AllToAll"),
        # Not communication, though the names say reduce or gather:
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(float)", None, None),
        ("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int)", None, None),
        ("void my_all_reduce_kernel_not_known(float*)", None, None),
    ],
)
def test_kernel_names(name: str, backend: str | None, kind: str | None) -> None:
    gpu = pl.DataFrame(
        {"kind": ["kernel"], "name": [name], "collective": [None]}, schema_overrides={"collective": pl.String}
    )
    row = classify_communication(gpu).row(0, named=True)
    assert (row["backend"], row["collective_name"]) == (backend, kind)


def test_collective_arguments_come_first_then_names_then_the_user_pattern() -> None:
    names = ["nvshmem_put_in_my_gemm", "ncclDevKernel_Generic_1(x)", "plain_gemm", "weird_kernel", "x"]
    gpu = pl.DataFrame(
        {
            "kind": ["kernel", "kernel", "kernel", "kernel", "memcpy"],
            "name": names,
            "collective": [None, "_reduce_scatter_base", None, "all_to_allv", "allreduce"],
        }
    )
    rows = classify_communication(gpu, pattern=r"^nvshmem_", default_backend="nccl").select(
        "backend", "collective_name"
    )
    assert rows.rows() == [
        ("user", None),
        ("nccl", "ReduceScatter"),  # the argument says what the Generic name does not
        (None, None),
        ("nccl", "AllToAll"),  # arguments without a telling name: the trace's backend
        (None, None),  # memcpy is never communication
    ]
    assert classify_communication(gpu)["backend"].to_list()[3] == "unknown"
    assert [collective_type(a) for a in ("allreduce", "_allgather_base", "recvAnySource", "barrier", "gemm")] == [
        "AllReduce",
        "AllGather",
        "Recv",
        "Barrier",
        None,
    ]


def test_comm_pattern_reaches_every_view_and_is_not_cached_away(tmp_path: Path) -> None:
    """A user pattern naming one real kernel: its time moves from Kernel to Communication, alike in
    the API, in a cached re-open, in the CLI export and in the summary."""
    name = "gpt2_train_bf16.pt.trace.json.gz"
    kernel = "unrolled_elementwise_kernel"  # a regex; plain text here
    events = [e for e in raw_events(name) if e.get("ph") == "X" and e.get("cat") == "kernel"]
    matched = [e for e in events if kernel in e["name"]]
    assert len(matched) == 689  # several kernel names contain it
    # Those launched before the profiling window (no runtime call shares their correlation id)
    # count as Before window in the steps, not as communication (docs/figures.md).
    calls = {e["args"].get("correlation") for e in raw_events(name) if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    in_window = [e for e in matched if e["args"].get("correlation") in calls]
    plain = profview.load(sample(name))  # fills the cache
    steps = plain.steps()
    assert steps["communication_us"].sum() == 0
    patterned = profview.load(sample(name), comm_pattern=kernel)  # from the cache
    with_pattern = patterned.steps()
    assert patterned.communication().filter(pl.col("backend") == "user").height == len(matched)
    # GPU work launched before the profiling window (no launching runtime call in the trace, and
    # earlier than the first GPU work whose launch it holds) is its own category, not communication.
    everything = raw_events(name)
    launched = {e["args"]["correlation"] for e in everything if e.get("cat") == "cuda_runtime" and "args" in e}
    gpu = [e for e in everything if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    first_linked = min(e["ts"] for e in gpu if e["args"].get("correlation") in launched)
    in_window = [e for e in matched if e["args"].get("correlation") in launched or e["ts"] >= first_linked]
    assert 0 < len(in_window) < len(matched)  # the first step carries some from before the window
    for step, start, end in patterned.steps().select("step", "start_us", "duration_us").iter_rows():
        lo = start + patterned.model.span_start
        hi = lo + end
        expected = length(clip([(e["ts"], e["ts"] + e["dur"]) for e in in_window], lo, hi))
        got = with_pattern.filter(pl.col("step") == step)["communication_us"][0]
        # GPU kernels run one at a time on this single-stream trace, so nothing outranks them.
        assert got == pytest.approx(expected, abs=2e-3)
    assert (with_pattern["kernel_us"] + with_pattern["communication_us"]).to_list() == pytest.approx(
        (steps["kernel_us"] + steps["communication_us"]).to_list(), abs=2e-3
    )
    # The same Profile with the pattern dropped gives the first figures back (views are per pattern).
    patterned.comm_pattern = None
    assert patterned.steps().equals(steps)
    out = tmp_path / "steps.csv"
    assert run_cli(["export", str(sample(name)), "--view", "steps", "--comm-pattern", kernel, "-o", str(out)]) == 0
    assert pl.read_csv(out)["communication_us"].to_list() == pytest.approx(
        with_pattern["communication_us"].to_list(), abs=1e-6
    )


def test_a_bad_comm_pattern_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(sample(B200)), "--comm-pattern", "(unclosed"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("profview: error:") and "--comm-pattern" in err and err.count("\n") == 1


# -- CPU collectives (gloo) --------------------------------------------------------------------


def gloo_expectation(name: str) -> dict[int, float]:
    """Per step: the union of ``gloo:*`` ranges and of the ``c10d::*`` calls overlapping one, inside
    the step's window (a CPU-only trace: a step runs from its annotation's start to its end, never
    before the previous step ended)."""
    ops = [
        e for e in document(name)["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
    ]
    work = [(e["ts"], e["ts"] + e["dur"]) for e in ops if e["name"].startswith("gloo:")]
    calls = [(e["ts"], e["ts"] + e["dur"]) for e in ops if e["name"].startswith("c10d::")]
    waiting = [c for c in calls if any(c[0] < w[1] and w[0] < c[1] for w in work)]
    steps = sorted(
        (e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1]))
        for e in ops
        if e["name"].startswith("ProfilerStep#")
    )
    out, previous_end = {}, float("-inf")
    for start, end, number in steps:
        start = max(start, previous_end)
        out[number] = length(clip(work + waiting, start, end))
        previous_end = end
    return out


@pytest.mark.parametrize("name", GLOO)
def test_gloo_host_time_is_communication(name: str) -> None:
    profile = profview.load(sample(name), use_cache=False)
    steps = profile.steps()
    expected = gloo_expectation(name)
    assert steps["step"].to_list() == sorted(expected) == [2, 3, 4]
    assert steps["communication_us"].to_list() == pytest.approx([expected[s] for s in sorted(expected)], abs=2e-3)
    assert min(expected.values()) > 5000  # milliseconds of each step are spent in the collectives
    # The categories still add up to the step.
    columns = [c for c in steps.columns if c.endswith("_us") and c not in ("start_us", "duration_us")]
    assert steps.select(pl.sum_horizontal(columns).alias("sum"))["sum"].to_list() == pytest.approx(
        steps["duration_us"].to_list(), abs=1e-2
    )


def test_the_waiting_rank_is_communication_bound_not_cpu_bound() -> None:
    """Rank 0 waits for the slow rank 1 in the gradient all-reduces: no longer called CPU-bound."""
    view = profview.load(sample(GLOO[0]), use_cache=False).overview()
    assert view.rank == 0 and view.world_size == 2 and view.backend == "gloo"
    assert view.average_step["communication"] > view.average_step["cpu_exec"]
    assert any(h.startswith("Communication takes") for h in view.hints)
    assert not any("CPU-bound" in h for h in view.hints)
    ops = [e for e in document(GLOO[0])["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("gloo:")]
    calls = [e for e in document(GLOO[0])["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("c10d::")]
    work = [(e["ts"], e["ts"] + e["dur"]) for e in ops]
    waiting = [
        (e["ts"], e["ts"] + e["dur"]) for e in calls if any(e["ts"] < w[1] and w[0] < e["ts"] + e["dur"] for w in work)
    ]
    assert view.host_collective_us == pytest.approx(length(work + waiting), abs=1e-6)


# -- one rank of a multi-rank job ------------------------------------------------------------------


def test_one_rank_says_its_rank_and_only_the_devices_it_used(capsys: pytest.CaptureFixture[str]) -> None:
    doc = document(B200)
    used = {
        e["args"]["device"] for e in doc["traceEvents"] if e.get("cat") in GPU_CATS and "device" in e.get("args", {})
    }
    assert used == {0} and len(doc["deviceProperties"]) == 8
    assert run_cli(["summary", str(sample(B200)), "--top", "1"]) == 0
    out = capsys.readouterr().out
    info = doc["distributedInfo"]
    assert f"rank {info['rank']} of {info['world_size']} (nccl)" in out
    devices = [line.strip() for line in out.splitlines() if line.strip().startswith("device ")]
    assert devices == ["device 0: NVIDIA B200, 178 GiB, 148 SMs"]
    assert "1 of the 8 devices" in out
    assert "communication 2.142 ms" in out


def test_the_viewer_overview_says_rank_devices_and_communication() -> None:
    from rich.console import Console

    from profview.tui.main.overview import overview_renderable

    profile = profview.load(sample(B200), use_cache=False)
    console = Console(width=160, record=True, color_system=None)
    console.print(overview_renderable(profile, 160))
    text = console.export_text()
    assert "rank 0 of 8 (nccl)" in text
    assert [line for line in text.splitlines() if line.startswith("device ")] == [
        "device 0: NVIDIA B200, 178 GiB, 148 SMs"
    ]
    assert "communication 2.142 ms, 18.5% of GPU busy time" in text


def test_gloo_samples_are_small_real_traces() -> None:
    for name in GLOO:
        path = SAMPLES / name
        assert path.stat().st_size < 2 * 2**20
        assert document(name)["distributedInfo"]["backend"] == "gloo"


@pytest.mark.tui
@pytest.mark.asyncio
async def test_the_viewer_takes_the_comm_pattern() -> None:
    """``profview TRACE --comm-pattern REGEX``: the viewer's Overview and Steps use the pattern."""
    from profview.tui.app import ProfviewApp
    from profview.tui.main.screen import MainScreen

    name = "gpt2_train_bf16.pt.trace.json.gz"
    app = ProfviewApp(str(sample(name)), no_cache=True, comm_pattern="unrolled_elementwise_kernel")
    async with app.run_test(size=(160, 40)) as pilot:
        for _ in range(200):
            if isinstance(app.screen, MainScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, MainScreen)
        await pilot.pause()  # let the screen mount before the test blocks the loop below
        profile = app.profile
        assert profile is not None and profile.comm_pattern == "unrolled_elementwise_kernel"
        reference = profview.load(sample(name), use_cache=False, comm_pattern="unrolled_elementwise_kernel")
        assert profile.steps().equals(reference.steps())
        assert profile.overview().communication_us == reference.overview().communication_us > 0
        matched = [
            e for e in raw_events(name) if e.get("cat") == "kernel" and "unrolled_elementwise_kernel" in e["name"]
        ]
        assert profile.overview().communication_us == pytest.approx(
            length([(e["ts"], e["ts"] + e["dur"]) for e in matched]), abs=1e-6
        )


def test_collective_arguments_on_a100_nccl_kernels(shared_dir: Path) -> None:
    """HTA's A100 NCCL trace: every kernel carrying ``Collective name`` is communication, of the
    type its argument says (counted from the raw events)."""
    path = shared_dir / "traces" / "public" / "hta_a100_nccl_data.json.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    raw: dict[str, int] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and "Collective name" in e.get("args", {}):
            raw[e["args"]["Collective name"]] = raw.get(e["args"]["Collective name"], 0) + 1
    assert raw == {"allreduce": 15, "broadcast": 6}
    comm = profview.load(path, use_cache=False).communication().filter(pl.col("backend").is_not_null())
    got = dict(comm.group_by("collective_name").agg(pl.len()).iter_rows())
    assert got == {"AllReduce": 15, "Broadcast": 6}
    assert set(comm["backend"].to_list()) == {"nccl"}
