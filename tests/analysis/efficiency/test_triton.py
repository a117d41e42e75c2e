"""TorchInductor's Triton kernels.  The host-op arguments read by both readers, the
kernel view's Triton columns, and the efficiency view's row per compiled kernel in TraceLens'
conventions (its own report of the same trace: samples/tracelens_live/*.triton.csv), each figure
recomputed from the raw JSON."""

from __future__ import annotations

import csv
import gzip
import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from support import loaded, raw_events, sample

import profview
from profview.analysis.efficiency.triton import AMBIGUOUS, BY_NAME
from profview.parsers import chrome_trace, fast_chrome
from profview.profiles.views import view_frame

COMPILE = "h100_compile_reduce_overhead.json.gz"  # reduce-overhead: 13 host ops captured, 65 replayed kernels
SMALL = "tracelens_mi300_compile_triton.json.gz"  # TraceLens' torch.compile trace: 4 kernels launched directly
ARGS = {
    "kernel_file": "kernel_file",
    "kernel_hash": "kernel_hash",
    "kernel_name": "kernel_name",
    "kernel_kwargs": "kernel_kwargs",
    "kernel_backend": "kernel_backend",
    "num_warps": "num_warps",
    "num_stages": "num_stages",
}


def host_ops(trace: str) -> list[dict]:
    return [e for e in raw_events(trace) if e.get("cat") == "cpu_op" and "kernel_hash" in e.get("args", {})]


@pytest.mark.parametrize("reader", ["general", "compiled"])
def test_both_readers_read_inductors_host_op_args(reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Triton host op's kernel_file, kernel_hash, kernel_name, kernel_kwargs, kernel_backend,
    num_warps and num_stages, as json reads them, from the general reader and the compiled one."""
    if reader == "compiled" and not fast_chrome.available():
        pytest.skip("the compiled scanner was not built")
    if reader == "general":
        monkeypatch.setattr(chrome_trace, "scan_fast", lambda *_args: None)
    data = gzip.decompress(sample(COMPILE).read_bytes())
    events = chrome_trace.parse_chrome_trace(bytearray(data), "t.json").events
    ops = events.filter(pl.col("kernel_hash").is_not_null()).sort("ts")
    raw = sorted(host_ops(COMPILE), key=lambda e: e["ts"])
    assert ops.height == len(raw) == 13
    for row, event in zip(ops.iter_rows(named=True), raw, strict=True):
        for column, key in ARGS.items():
            assert row[column] == event["args"][key], column
        assert row["kernel_flop"] is None and row["kernel_num_gb"] is None  # torch 2.11 wrote none here


def test_kernel_view_gains_triton_columns() -> None:
    """Per Triton kernel name: its fused operators (from the name) and its host op's file, hash,
    warps and stages; a trace without Triton kernels has none of these columns."""
    frame = view_frame(loaded(COMPILE), "kernels")
    gelu = frame.filter(pl.col("name") == "triton_poi_fused_gelu_view_2").row(0, named=True)
    ops = [e for e in host_ops(COMPILE) if e["name"] == "triton_poi_fused_gelu_view_2"]
    assert len(ops) == 4 and len({e["args"]["kernel_hash"] for e in ops}) == 1  # one kernel, four layers
    op = ops[0]
    assert gelu["fused_ops"] == "gelu, view"
    assert (gelu["kernel_file"], gelu["kernel_hash"]) == (op["args"]["kernel_file"], op["args"]["kernel_hash"])
    assert (gelu["num_warps"], gelu["num_stages"]) == (str(op["args"]["num_warps"]), str(op["args"]["num_stages"]))
    kernels = [e for e in raw_events(COMPILE) if e.get("cat") == "kernel" and e["name"].startswith("triton_")]
    assert int(frame.filter(pl.col("fused_ops").is_not_null())["calls"].sum()) == len(kernels) == 65
    assert "fused_ops" not in view_frame(loaded("gpt2_train_bf16.pt.trace.json.gz"), "kernels").columns


def test_triton_columns_link_nothing(tmp_path: Path) -> None:
    """The kernel view's Triton columns read the host ops from the events, not the linked model
    (a kernel export of a compiled trace needs no call tree for them)."""
    profile = profview.load(sample(COMPILE), use_cache=False)
    frame = profile.kernel_triton()
    assert frame.height == 10 and "model" not in vars(profile)


def _their_rows(trace: str) -> list[dict[str, str]]:
    with open(sample(f"tracelens_live/{trace.split('.')[0]}.triton.csv"), newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_row_per_compiled_kernel_in_tracelens_conventions() -> None:
    """TraceLens' torch.compile trace: four kernels, each launched by its host op.  FLOPs = Σ of
    the fused operators' FLOPs an element × xnumel × rnumel; bytes = the tensor arguments, plus the
    first once more for a pointwise kernel.  By hand for ``triton_poi_fused__unsafe_view_mul_silu_2``
    (xnumel 268,435,456; _unsafe_view 0 + mul 1 + silu 4; [8, 4096, 8192] and [32768, 8192] bf16):
    5·xnumel FLOPs, 512 + 512 + 512 MiB.  Every row equals TraceLens' (GFLOPs, MB, kernel time)."""
    frame = loaded(SMALL).efficiency().filter(pl.col("category") == "triton")
    silu = frame.filter(pl.col("name") == "triton_poi_fused__unsafe_view_mul_silu_2").row(0, named=True)
    assert silu["gflops"] * 1e9 == pytest.approx(5 * 268435456)
    assert silu["data_mb"] == 3 * 512
    assert silu["params"].startswith("_unsafe_view,mul,silu x=268435456 hash=")
    kernels: dict[str, float] = defaultdict(float)
    for e in raw_events(SMALL):
        if e.get("cat") == "kernel" and e["name"].startswith("triton_"):
            kernels[e["name"]] += e["dur"]
    theirs = _their_rows(SMALL)
    assert len(theirs) == frame.height == 4
    for their in theirs:
        row = frame.filter(pl.col("name") == their["name"]).row(0, named=True)
        assert row["gflops"] == pytest.approx(float(their["GFLOPS"]), rel=1e-12)
        assert row["data_mb"] == pytest.approx(float(their["Data Moved (MB)"]), rel=1e-12)
        assert row["kernel_us"] == pytest.approx(kernels[their["name"]], abs=1e-6)
        assert float(their["Kernel Time (µs)_sum"]) == pytest.approx(row["kernel_us"], abs=2e-3)
        assert row["calls"] == int(their["operation_count"]) == 1


def test_replayed_kernels_are_sized_by_their_captured_host_op() -> None:
    """reduce-overhead: the 13 host ops were recorded when the CUDA graph was captured, and every
    one of the 65 Triton kernels ran in one of 5 replays, with no host op.  The trace holds the
    capture, so each replayed kernel takes the host op captured for it (issue 40: no note, the
    capture attributes it); TraceLens' report has no row for them (it sizes host ops, and these
    launched nothing)."""
    frame = loaded(COMPILE).efficiency().filter(pl.col("category") == "triton")
    assert frame.height == 10
    assert set(frame["note"].to_list()) == {None}
    runs: dict[str, list[float]] = defaultdict(list)
    for e in raw_events(COMPILE):
        if e.get("cat") == "kernel" and e["name"].startswith("triton_"):
            runs[e["name"]].append(e["dur"])
    for row in frame.iter_rows(named=True):
        assert row["calls"] == len(runs[row["name"]])
        assert row["kernel_us"] == pytest.approx(sum(runs[row["name"]]), abs=1e-6)
    gelu = frame.filter(pl.col("name") == "triton_poi_fused_gelu_view_2").row(0, named=True)
    op = next(e for e in host_ops(COMPILE) if e["name"] == "triton_poi_fused_gelu_view_2")
    assert op["args"]["Concrete Inputs"][-1] == "131072"  # xnumel: [4, 32, 1024] fp16, in place
    assert gelu["calls"] == 20 and gelu["gflops"] * 1e9 == pytest.approx(8 * 131072)  # gelu 8, view 0
    assert gelu["data_mb"] * (1 << 20) == 131072 * 2 * 2
    assert not Path(sample("tracelens_live/h100_compile_reduce_overhead.triton.csv")).exists()


def test_two_compiled_variants_of_one_name_are_not_guessed(tmp_path: Path) -> None:
    """The same trace, without its capture, with a second host op of ``triton_poi_fused_gelu_view_2`` (another hash and
    shape, as a second compiled graph would record): its 20 replayed executions could be either,
    so the row keeps their time and says why it has no figure."""
    with gzip.open(sample(COMPILE), "rt") as fh:
        document = json.load(fh)
    # Without its capture (the begin call dropped), a replay's kernel has only its name to go by.
    document["traceEvents"] = [e for e in document["traceEvents"] if "StreamBeginCapture" not in e.get("name", "")]
    name = "triton_poi_fused_gelu_view_2"
    op = next(e for e in document["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == name)
    other = json.loads(json.dumps(op))
    other["ts"] += 1.0
    other["dur"] = 0.5
    other["args"].update({"kernel_hash": "another", "Input Dims": [[8, 32, 1024], []]})
    other["args"]["Concrete Inputs"] = ["", "262144"]
    other["args"]["External id"] += 100000
    document["traceEvents"].append(other)
    path = tmp_path / "two_variants.json"
    path.write_text(json.dumps(document))
    frame = profview.load(path, use_cache=False).efficiency().filter(pl.col("name") == "triton_poi_fused_gelu_view_2")
    (row,) = frame.to_dicts()
    assert row["gflops"] is None and row["note"] == AMBIGUOUS.replace("{n}", "2")
    assert row["calls"] == 20
    kernels = [e["dur"] for e in document["traceEvents"] if e.get("cat") == "kernel" and e["name"] == op["name"]]
    assert row["kernel_us"] == pytest.approx(sum(kernels), abs=1e-6)
    # The only variant of a name sizes its replays (the other names), and says so.
    notes = set(profview.load(path, use_cache=False).efficiency().filter(pl.col("category") == "triton")["note"])
    assert BY_NAME in notes


def test_inductors_own_counts_are_the_figures_where_recorded() -> None:
    """Where the host op carries ``kernel_flop``/``kernel_num_gb`` (Inductor's own count), those
    are the row's figures; without them, TraceLens' conventions."""
    from profview.analysis.efficiency.op_models import operator_work

    args = ("[[4, 32, 1024], []]", '["c10::Half", "Scalar"]', '["", "131072"]')
    counted = operator_work("triton_poi_fused_gelu_view_2", *args, (1048576.0, 0.000524288))
    assert counted is not None and (counted.flops, counted.bytes) == (1048576.0, 524288.0)
    assert counted.params.endswith("(inductor)")
    own = operator_work("triton_poi_fused_gelu_view_2", *args)
    assert own is not None and own.flops == 8 * 131072 and own.bytes == 131072 * 2 * 2


def test_a_reopened_trace_reads_the_triton_columns_from_the_cache(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import shutil

    from profview.profiles.loading import remember_views

    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    trace = tmp_path / COMPILE
    shutil.copy(sample(COMPILE), trace)
    first = profview.load(trace)
    before = view_frame(first, "kernels")
    remember_views(first)
    again = profview.load(trace)
    assert view_frame(again, "kernels").equals(before)
    assert "events" not in vars(again) and "model" not in vars(again)


@pytest.mark.parametrize(
    ("name", "ops"),
    [
        # Inductor's online softmax (prims.prepare_softmax_online) and aten::scalar_tensor are one
        # operator each, not "prepare", "softmax", "online" / "scalar", "tensor" (issue 40)
        ("triton_red_fused_prepare_softmax_online_0", ["prepare_softmax_online"]),
        ("triton_poi_fused_scalar_tensor_where_3", ["scalar_tensor", "where"]),
        (
            "triton_per_fused__safe_softmax_prepare_softmax_online_sub_1",
            ["_safe_softmax", "prepare_softmax_online", "sub"],
        ),
    ],
)
def test_known_multi_word_operators_stay_whole(name: str, ops: list[str]) -> None:
    from profview.analysis.efficiency.work.triton import fused_ops

    assert fused_ops(name) == ops


def test_with_the_capture_each_compiled_variant_is_its_own_row(tmp_path: Path) -> None:
    """Issue 40: the same two variants of ``triton_poi_fused_gelu_view_2``, the capture kept: each
    replayed execution takes the host op captured for it (its hash), so the replays are one sized
    row of that variant's hash, never a row that mixes or refuses both."""
    with gzip.open(sample(COMPILE), "rt") as fh:
        document = json.load(fh)
    name = "triton_poi_fused_gelu_view_2"
    op = next(e for e in document["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == name)
    other = json.loads(json.dumps(op))
    other["ts"] = min(e["ts"] for e in document["traceEvents"] if "ts" in e) - 10.0  # an eager call, before the capture
    other["dur"] = 0.5
    other["args"].update({"kernel_hash": "another", "Input Dims": [[8, 32, 1024], []]})
    other["args"]["Concrete Inputs"] = ["", "262144"]
    other["args"]["External id"] += 100000
    document["traceEvents"].append(other)
    path = tmp_path / "two_variants_captured.json"
    path.write_text(json.dumps(document))
    frame = profview.load(path, use_cache=False).efficiency().filter(pl.col("name") == name)
    replayed = frame.filter(pl.col("kernel_us") > 0)
    (row,) = replayed.to_dicts()
    assert row["params"].endswith(f"hash={op['args']['kernel_hash'][:8]}")
    assert row["note"] is None and row["gflops"] * 1e9 == pytest.approx(8 * int(op["args"]["Concrete Inputs"][-1]))
    kernels = [e["dur"] for e in document["traceEvents"] if e.get("cat") == "kernel" and e["name"] == name]
    assert row["calls"] == len(kernels) == 20
    assert row["kernel_us"] == pytest.approx(sum(kernels), abs=1e-6)
