"""The critical path of a step (issue 26).

Witnesses: Holistic Trace Analysis 0.5.0 (``pip install HolisticTraceAnalysis==0.5.0 'pandas<3'``
in a throwaway venv; each trace copied alone into a directory as ``rank-0.json.gz``, then
``TraceAnalysis(trace_dir=D).critical_path_analysis(rank=0, annotation="ProfilerStep",
instance_id=I)`` and ``get_critical_path_breakdown().groupby("bound_by").duration.sum()``); its
instance 0 and 1 are ``ProfilerStep#2`` and ``#3`` of these traces.  The same traces are in
samples/.  Hand-built traces below have a longest path worked out by hand.
"""

from __future__ import annotations

import json
import re
import tarfile
from itertools import pairwise
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from support import loaded, raw_events

import profview
from profview.analysis.critical_path.frames import bound_line, events_frame, names_frame, path_frame, step_paths
from profview.analysis.critical_path.path import HTA_RULES, PROFVIEW_RULES, PathRules
from profview.analysis.critical_path.what_if import Scaling, parse_scaling, what_if

#: HTA 0.5.0's breakdown, µs: (trace, step) → path and the non-zero kinds.
HTA_FIGURES = {
    ("gpt2_train_bf16.pt.trace.json.gz", 3): (
        75_126,
        {
            "cpu_bound": 24_893,
            "gpu_compute_bound": 48_268,
            "gpu_kernel_kernel_overhead": 1_953,
            "gpu_kernel_launch_overhead": 12,
        },
    ),
    ("gpt2_train_bf16.pt.trace.json.gz", 2): (
        75_416,
        {
            "cpu_bound": 25_173,
            "gpu_compute_bound": 48_253,
            "gpu_kernel_kernel_overhead": 1_976,
            "gpu_kernel_launch_overhead": 14,
        },
    ),
    ("resnet50_train_amp.pt.trace.json.gz", 3): (45_664, {"cpu_bound": 45_664}),
    # Instance 0 of three more traces (DDP with NCCL, TraceLens' Qwen on H100, one rank of HTA's
    # 128-rank NCCL job).
    ("ddp_nccl_streams.pt.trace.json.gz", 2): (
        6_504,
        {"cpu_bound": 238, "gpu_compute_bound": 6_026, "gpu_kernel_kernel_overhead": 223,
         "gpu_kernel_launch_overhead": 17},
    ),
    ("tracelens_h100_qwen1.5-0.5b.json.gz", 6): (
        33_613,
        {"cpu_bound": 1_675, "gpu_compute_bound": 29_151, "gpu_kernel_kernel_overhead": 2_781,
         "gpu_kernel_launch_overhead": 6},
    ),
    ("hta_sampled_rank-0.json.gz", 551): (
        267_581,
        {"cpu_bound": 266_597, "gpu_compute_bound": 948, "gpu_kernel_kernel_overhead": 30,
         "gpu_kernel_launch_overhead": 6},
    ),
    ("resnet50_train_amp.pt.trace.json.gz", 2): (
        25_268,
        {
            "cpu_bound": 24_304,
            "gpu_compute_bound": 930,
            "gpu_kernel_kernel_overhead": 22,
            "gpu_kernel_launch_overhead": 12,
        },
    ),
}


def _breakdown(profile: profview.Profile, step: int, rules: PathRules) -> dict[str, float]:
    comm = profile.model_communication().is_not_null().to_numpy()
    frame = path_frame(step_paths(profile.model, rules, comm, step=step))
    return dict(zip(frame["bound_by"].to_list(), frame["duration_us"].to_list(), strict=True))


@pytest.mark.parametrize(("trace", "step"), list(HTA_FIGURES))
def test_hta_rules_give_htas_figures(trace: str, step: int) -> None:
    path, kinds = HTA_FIGURES[(trace, step)]
    ours = _breakdown(loaded(trace), step, HTA_RULES)
    assert abs(sum(ours.values()) - path) <= 0.01 * path
    for bound, value in ours.items():
        assert abs(value - kinds.get(bound, 0)) <= 0.01 * path, bound


def test_default_rules_on_exact_times() -> None:
    """Exact times (no rounding to whole µs) shrink the gaps HTA counts between kernels: on
    ProfilerStep#3 of gpt2 the path leaves the host through one launch and stays on stream 7
    to the end, so its GPU part is the stream's kernels from there on — their run times and
    the gaps between them, summed here from the raw events."""
    profile = loaded("gpt2_train_bf16.pt.trace.json.gz")
    paths = step_paths(profile.model, PROFVIEW_RULES, step=3)
    ours = dict(path_frame(paths).select("bound_by", "duration_us").iter_rows())
    events = events_frame(paths)
    launched = events.filter(pl.col("bound_by") == "gpu_kernel_launch_overhead")
    assert launched.height == 1
    entry = launched.row(0, named=True)
    origin = profile.model.span_start
    raw = raw_events("gpt2_train_bf16.pt.trace.json.gz")
    step3 = next(e for e in raw if e.get("name") == "ProfilerStep#3")
    runtime_ts = {
        e["args"]["correlation"]: e["ts"]
        for e in raw
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    kernels = sorted(
        (e for e in raw if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy") and e["args"].get("stream") == 7
         and step3["ts"] <= runtime_ts.get(e["args"].get("correlation"), -1) <= step3["ts"] + step3["dur"]),
        key=lambda e: e["ts"],
    )
    first = next(i for i, e in enumerate(kernels) if abs(e["ts"] - origin - entry["start_us"]) < 0.001)
    tail = kernels[first:]
    run = sum(e["dur"] for e in tail)
    gaps = sum(b["ts"] - (a["ts"] + a["dur"]) for a, b in pairwise(tail))
    assert ours["gpu_compute_bound"] == pytest.approx(run, abs=0.01)
    assert ours["gpu_kernel_kernel_overhead"] == pytest.approx(gaps, abs=0.01)
    assert ours["gpu_kernel_kernel_overhead"] < 0.7 * 1_953  # HTA's whole-µs gaps


def test_rows_add_up_and_the_line_names_the_largest_kinds() -> None:
    profile = loaded("gpt2_train_bf16.pt.trace.json.gz")
    frame = path_frame(step_paths(profile.model, HTA_RULES))
    assert frame["step"].unique().sort().to_list() == [2, 3, 4]
    for _, rows in frame.group_by("step"):
        assert rows["duration_us"].sum() == pytest.approx(rows["path_us"][0], abs=0.01)
        assert rows["pct"].sum() == pytest.approx(100.0, abs=0.05)
    assert bound_line(frame, 3) == "critical path: 64% GPU compute, 33% CPU, 3% kernel-kernel gaps"


def test_names_on_path_beside_their_total() -> None:
    """Each of the three big cutlass GEMMs of a step (the LM head, 6.6 ms) is wholly on gpt2's
    path; an operator's own time on the path is at most its calls' total."""
    profile = loaded("gpt2_train_bf16.pt.trace.json.gz")
    names = names_frame(step_paths(profile.model, HTA_RULES, step=3))
    kernels = names.filter(pl.col("kind") == "kernel")
    top = kernels.row(0, named=True)
    assert top["name"].startswith("void cutlass::Kernel2<")
    assert top["on_path_us"] == top["total_us"] and top["calls"] == 1
    assert (names["on_path_us"] <= names["total_us"] + 1e-6).all()
    assert names["on_path_us"].sum() <= 75_126 + 1e-6


# -- hand-built traces with a known longest path -----------------------------------------------
def _trace(tmp_path: Path, events: list[dict]) -> profview.Profile:
    """A Kineto-style trace of ``events`` (host thread 1, GPU streams as given), loaded."""
    doc = {"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, **e} for e in events]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    return profview.load(path, use_cache=False)


def _op(name: str, ts: float, dur: float) -> dict:
    return {"cat": "cpu_op", "name": name, "ts": ts, "dur": dur}


def _call(name: str, ts: float, dur: float, correlation: int | None = None) -> dict:
    args = {} if correlation is None else {"correlation": correlation}
    return {"cat": "cuda_runtime", "name": name, "ts": ts, "dur": dur, "args": args}


def _kernel(name: str, ts: float, dur: float, correlation: int, stream: int = 7) -> dict:
    return {
        "cat": "kernel", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": stream,
        "args": {"correlation": correlation, "stream": stream, "device": 0},
    }


def _step(events: list[dict]) -> list[dict]:
    return [{"cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 200}, *events]


def _path(profile: profview.Profile, rules: PathRules = PROFVIEW_RULES) -> dict[str, float]:
    frame = path_frame(step_paths(profile.model, rules))
    return {b: d for b, d in frame.select("bound_by", "duration_us").iter_rows() if d}


def test_host_only_gaps_between_top_level_operators_weigh_nothing(tmp_path: Path) -> None:
    profile = _trace(tmp_path, _step([_op("a", 1, 10), _op("b", 3, 4), _op("c", 30, 10)]))
    assert _path(profile) == {"cpu_bound": 20.0}


def test_launch_delay_and_kernel(tmp_path: Path) -> None:
    events = [_op("a", 1, 10), _call("cudaLaunchKernel", 3, 2, 1), _kernel("k", 50, 30, 1)]
    assert _path(_trace(tmp_path, _step(events))) == {
        "cpu_bound": 2.0, "gpu_kernel_launch_overhead": 47.0, "gpu_compute_bound": 30.0,
    }


def test_kernel_kernel_gap_when_the_stream_is_busy(tmp_path: Path) -> None:
    """Two kernels queued together: host 2, launch 47, 30 µs, a 5 µs gap, 15 µs."""
    events = [
        _op("a", 1, 10), _call("cudaLaunchKernel", 3, 2, 1), _call("cudaLaunchKernel", 6, 2, 2),
        _kernel("k1", 50, 30, 1), _kernel("k2", 85, 15, 2),
    ]
    profile = _trace(tmp_path, _step(events))
    assert _path(profile) == {
        "cpu_bound": 2.0, "gpu_kernel_launch_overhead": 47.0, "gpu_compute_bound": 45.0,
        "gpu_kernel_kernel_overhead": 5.0,
    }
    # HTA's rule: k1's launch is no delay on the path, as k2 was queued before k1 started.
    assert _path(profile, HTA_RULES) == {"gpu_compute_bound": 45.0, "gpu_kernel_kernel_overhead": 5.0}


def test_synchronize_brings_the_path_back_to_the_host(tmp_path: Path) -> None:
    """k runs 20-100 and the host waits for it in cudaDeviceSynchronize (12-105), then runs c
    (110-130).  profview: host 2, launch 17, k 80, the rest of b after the wait 1, c 20 = 120.
    HTA (no sync events in the trace, the wait weighs nothing): the GPU branch ends at k, 99."""
    events = [
        _op("a", 1, 10), _call("cudaLaunchKernel", 3, 2, 1), _kernel("k", 20, 80, 1),
        _op("b", 11, 95), _call("cudaDeviceSynchronize", 12, 93), _op("c", 110, 20),
    ]
    profile = _trace(tmp_path, _step(events))
    assert _path(profile) == {"cpu_bound": 23.0, "gpu_kernel_launch_overhead": 17.0, "gpu_compute_bound": 80.0}
    assert _path(profile, HTA_RULES) == {
        "cpu_bound": 2.0, "gpu_kernel_launch_overhead": 17.0, "gpu_compute_bound": 80.0,
    }


def test_stream_wait_event_links_two_streams(tmp_path: Path) -> None:
    """k1 on stream 7 (10-60); an event recorded after its launch; stream 9 waits on it and runs k2
    (62-70).  profview: host 2, launch 7, k1 50, k2 8 = 67.  HTA (no sync events): k2's stream
    was idle, so its launch delay from 9 to 62 is on the path: host 1-9, 53, 8 = 69."""
    events = [
        _op("a", 1, 12), _call("cudaLaunchKernel", 3, 1, 1), _call("cudaEventRecord", 5, 1),
        _call("cudaStreamWaitEvent", 7, 1), _call("cudaLaunchKernel", 9, 1, 2),
        _kernel("k1", 10, 50, 1), _kernel("k2", 62, 8, 2, stream=9),
    ]
    profile = _trace(tmp_path, _step(events))
    assert _path(profile) == {"cpu_bound": 2.0, "gpu_kernel_launch_overhead": 7.0, "gpu_compute_bound": 58.0}
    assert _path(profile, HTA_RULES) == {
        "cpu_bound": 8.0, "gpu_kernel_launch_overhead": 53.0, "gpu_compute_bound": 8.0,
    }


def test_what_if_scales_a_kernel_and_the_path_moves(tmp_path: Path) -> None:
    """Halving k (80 µs) in the synchronize trace takes 40 µs off the path; making c ten times
    longer (20 → 200 µs) adds 180; the GPU-only kernel of a host-bound step buys nothing."""
    events = [
        _op("a", 1, 10), _call("cudaLaunchKernel", 3, 2, 1), _kernel("k", 20, 80, 1),
        _op("b", 11, 95), _call("cudaDeviceSynchronize", 12, 93), _op("c", 110, 20),
    ]
    paths = step_paths(_trace(tmp_path, _step(events)).model)
    frame, _ = what_if(paths, [parse_scaling("^k$=0.5")])
    total = frame.filter(pl.col("bound_by") == "total").row(0, named=True)
    assert (total["before_us"], total["after_us"]) == (120.0, 80.0)
    step = frame.filter(pl.col("bound_by") == "step_time").row(0, named=True)
    assert (step["before_us"], step["after_us"]) == (200.0, 160.0)  # the step's host range, less 40
    frame, _ = what_if(paths, [Scaling("^c$", 10.0)])
    total = frame.filter(pl.col("bound_by") == "total").row(0, named=True)
    assert total["after_us"] == 300.0


def test_what_if_on_a_host_bound_step_buys_nothing_from_gpu_work() -> None:
    """resnet50's ProfilerStep#3 is wholly host-bound under HTA's rules: halving every kernel
    leaves its path unchanged."""
    profile = loaded("resnet50_train_amp.pt.trace.json.gz")
    paths = step_paths(profile.model, HTA_RULES, step=3)
    kernels = "|".join(re.escape(name) for name in profile.kernels(step=3)["name"].to_list())
    frame, _ = what_if(paths, [Scaling(f"^(?:{kernels})$", 0.5)])
    total = frame.filter(pl.col("bound_by") == "total").row(0, named=True)
    assert total["before_us"] == total["after_us"] == 45_664


@pytest.mark.parametrize("text", ["gemm", "=2", "gemm=x", "gemm=-1", "(=2", "(?!gemm)=2"])
def test_bad_what_if_is_one_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match="what-if"):
        parse_scaling(text)


def test_no_step_trace_is_one_window(tmp_path: Path) -> None:
    events = [_op("a", 1, 10), _call("cudaLaunchKernel", 3, 2, 1), _kernel("k", 50, 30, 1)]
    paths = step_paths(_trace(tmp_path, events).model)
    assert paths.steps["step"].to_list() == [-1]
    assert float(np.sum(paths.result.length)) == 79.0


def test_each_ranks_critical_path_in_the_rank_paths_view() -> None:
    """The rank paths view of a job carries each rank's critical path: the mean path per step and
    its shares, as the single trace's critical_path view gives them (the job's workers compute them
    when the view is asked for: opening the job computes none, issue 32)."""
    from support import SAMPLES

    from profview.analysis.critical_path.path import BOUNDS
    from profview.analysis.distributed.ranks import PATH_BOUNDS
    from profview.jobs.job import open_job

    assert PATH_BOUNDS == BOUNDS
    with open_job([str(SAMPLES / "gloo_2rank")], workers=1, use_cache=False) as job:
        assert all(s.critical_path is None for s in job.summaries)
        assert "critical_path_us" not in job.ranks_view().columns
        ranks = job.view("rank_paths")
    for row in ranks.iter_rows(named=True):
        single = profview.load(SAMPLES / "gloo_2rank" / f"rank{row['rank']}.pt.trace.json.gz", use_cache=False)
        frame = single.critical_path()
        paths = frame.unique("step")["path_us"]
        assert row["critical_path_us"] == pytest.approx(paths.mean(), abs=0.01)
        shares = [row[f"path_{bound}_pct"] for bound in BOUNDS]
        assert sum(shares) == pytest.approx(100.0, abs=0.05)
        cpu = frame.filter(pl.col("bound_by") == "cpu_bound")["duration_us"].sum()
        assert row["path_cpu_bound_pct"] == pytest.approx(100 * cpu / paths.sum(), abs=0.01)


# -- HTA's own critical-path test traces -------------------------------------------------------
#: facebookresearch/HolisticTraceAnalysis (MIT), tests/data/critical_path/{alexnet,simple_add}
#: (commit 66e3c54), copied as samples/hta_critical_path_*.json.gz.  HTA's tests window them by
#: the annotation below, instance 1 (its second occurrence, by start).
HTA_ANNOTATION = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"


def _annotation_breakdown(name: str, rules: PathRules) -> tuple[float, dict[str, float]]:
    from profview.analysis.critical_path.path import BOUNDS, breakdown, build_graph, longest_paths

    profile = loaded(name)
    events = profile.events
    assert events is not None
    window = events.filter(pl.col("name") == HTA_ANNOTATION).sort("ts").row(1, named=True)
    comm = profile.model_communication().is_not_null().to_numpy()
    graph = build_graph(profile.model, [(window["ts"], window["ts"] + window["dur"])], rules, comm)
    table = breakdown(longest_paths(graph))[0]
    return float(table.sum()), {b: float(v) for b, v in zip(BOUNDS, table, strict=True) if v}


def test_htas_simple_add_trace() -> None:
    """HTA 0.5.0 on simple_add: 241,724 µs — CPU 241,190, GPU 508, gaps 9, launch 17 (the same, to the µs)."""
    path, kinds = _annotation_breakdown("hta_critical_path_simple_add.json.gz", HTA_RULES)
    assert path == 241_724
    assert kinds == {
        "cpu_bound": 241_190,
        "gpu_compute_bound": 508,
        "gpu_kernel_kernel_overhead": 9,
        "gpu_kernel_launch_overhead": 17,
    }


def test_htas_alexnet_trace_with_sync_events() -> None:
    """alexnet holds Kineto's cuda_sync events, which HTA 0.5.0 reads: 35,834 µs — CPU 32,042,
    GPU 3,712, gaps 50, launch 30.  profview reads no cuda_sync event; its default rules infer
    the same waits from the runtime calls and land on HTA's GPU figures exactly; under HTA's rules
    without those events the path's length is the same but a stream wait becomes a 0.5 ms gap."""
    hta = {"cpu_bound": 32_042, "gpu_compute_bound": 3_712, "gpu_kernel_kernel_overhead": 50,
           "gpu_kernel_launch_overhead": 30}  # fmt: skip
    path, kinds = _annotation_breakdown("hta_critical_path_alexnet.json.gz", PROFVIEW_RULES)
    assert abs(path - 35_834) <= 0.01 * 35_834
    assert {b: round(v) for b, v in kinds.items() if b != "cpu_bound"} == {
        b: v for b, v in hta.items() if b != "cpu_bound"
    }
    assert abs(kinds["cpu_bound"] - hta["cpu_bound"]) <= 0.001 * 35_834
    path, kinds = _annotation_breakdown("hta_critical_path_alexnet.json.gz", HTA_RULES)
    assert abs(path - 35_834) <= 1
    assert kinds["gpu_kernel_kernel_overhead"] == 552


def test_straggler_collectives_on_its_critical_path(tmp_path: Path) -> None:
    """DLRM on 8 V100s (param's test traces): of its collectives only the 3 AllReduces are matched
    (its SendRecvs name no peer: tests/jobs/test_jobs.py), and rank 5 waits least at them (the
    straggler).  The straggler-path view lists the matched collectives whose kernel on rank 5 lies
    on rank 5's own critical path: the NCCL kernels on that path, read from its trace alone."""
    from support import SAMPLES

    from profview.jobs.job import open_job

    with open_job([str(SAMPLES / "param_dlrm_8rank_v100.tar.gz")], workers=1, use_cache=False) as job:
        assert job.stragglers() == [5]
        frame = job.straggler_path()
        collectives = job.collectives()
    with tarfile.open(SAMPLES / "param_dlrm_8rank_v100.tar.gz") as archive:
        member = next(m for m in archive.getmembers() if Path(m.name).name.startswith("worker5_"))
        (tmp_path / "rank5.json").write_bytes(archive.extractfile(member).read())  # type: ignore[union-attr]
    names = profview.load(tmp_path / "rank5.json", use_cache=False).critical_path_names()
    on_path = names.filter(pl.col("name").str.contains("(?i)nccl") & (pl.col("on_path_us") > 0))
    matched_on_path = on_path.filter(pl.col("name").str.contains("AllReduce")).height
    assert frame.height == matched_on_path
    assert set(frame["name"]) <= {"AllReduce"}
    for row in frame.iter_rows(named=True):
        others = collectives.filter((pl.col("collective") == row["collective"]) & (pl.col("rank") != 5))
        assert row["others_wait_us"] == pytest.approx(float(others["wait_us"].sum()))
