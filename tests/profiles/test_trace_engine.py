"""The trace engine on real traces: every figure is checked against the raw events, read with the
standard json module and aggregated by hand in the test (a second, independent method)."""

from __future__ import annotations

from collections import defaultdict

import polars as pl
import pytest
from support import loaded, raw_events, sample

RESNET = "resnet50_train_amp.pt.trace.json.gz"
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
LEGACY = "tbplugin_v100_resnet50_legacy_torch1.9.pt.trace.json.gz"
ROCM = "hta_mi250_rocm_minitoy.json.gz"
TRACELENS = "tracelens_h100_qwen1.5-0.5b.json.gz"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}


def gpu_events(name: str) -> list[dict]:
    return [e for e in raw_events(name) if e.get("ph") == "X" and str(e.get("cat", "")).lower() in GPU_CATS]


def ext_id(event: dict) -> int | None:
    args = event.get("args", {})
    value = args.get("External id", args.get("external id"))
    return value or None


def op_ext_ids(name: str, op: str) -> set[int]:
    return {
        ext_id(e)
        for e in raw_events(name)
        if e.get("cat") in ("cpu_op", "Operator", "user_annotation") and e.get("name") == op and ext_id(e)
    }


def test_kernel_calls_and_total_match_raw_events() -> None:
    kernels = loaded(RESNET).kernels()
    top = kernels.row(0, named=True)
    raw = [e for e in raw_events(RESNET) if e.get("cat") == "kernel" and e["name"] == top["name"]]
    assert top["calls"] == len(raw) == 123
    assert top["total_us"] == pytest.approx(sum(e["dur"] for e in raw)) == pytest.approx(4238.109)
    assert top["max_us"] == pytest.approx(max(e["dur"] for e in raw))
    all_kernel_time = sum(e["dur"] for e in raw_events(RESNET) if e.get("cat") == "kernel")
    assert kernels["total_us"].sum() == pytest.approx(all_kernel_time)
    assert kernels["pct"].sum() == pytest.approx(100.0)
    assert (top["grid"], top["block"]) == ("[66, 4, 1]", "[512, 1, 1]")


def test_kernels_grouped_by_shape_split_rows_but_keep_totals() -> None:
    profile = loaded(RESNET)
    by_name, by_shape = profile.kernels(), profile.kernels(by_shape=True)
    assert by_shape.height > by_name.height
    assert by_shape["total_us"].sum() == pytest.approx(by_name["total_us"].sum())
    top = by_name.row(0, named=True)
    assert by_shape.filter(pl.col("name") == top["name"]).height == top["shapes"] == 4


def test_operator_self_device_time_is_the_gpu_work_it_launched() -> None:
    ops = loaded(RESNET).ops()
    row = ops.filter(pl.col("name") == "aten::convolution_backward").row(0, named=True)
    ids = op_ext_ids(RESNET, "aten::convolution_backward")
    expected = sum(e["dur"] for e in gpu_events(RESNET) if ext_id(e) in ids)
    assert row["calls"] == len(ids) == 159
    assert row["device_self_us"] == pytest.approx(expected) == pytest.approx(10331.192)


def test_operator_total_device_time_includes_descendants() -> None:
    """ConvolutionBackward0 launches nothing itself; its total is what the ops inside it launched."""
    events = raw_events(RESNET)
    outer = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "ConvolutionBackward0"]
    inner_ids = set()
    for o in outer:  # ops contained in time, on the same thread
        for e in events:
            if (
                e.get("cat") == "cpu_op"
                and e["tid"] == o["tid"]
                and o["ts"] <= e["ts"]
                and e["ts"] + e["dur"] <= o["ts"] + o["dur"]
            ):
                inner_ids.add(ext_id(e))
    expected = sum(e["dur"] for e in gpu_events(RESNET) if ext_id(e) in inner_ids)
    row = loaded(RESNET).ops().filter(pl.col("name") == "ConvolutionBackward0").row(0, named=True)
    assert row["device_self_us"] == 0.0
    assert row["device_total_us"] == pytest.approx(expected)


def test_host_self_time_subtracts_child_operators_and_runtime_calls() -> None:
    """Self CPU as torch counts it: minus direct child operators and the runtime calls made,
    including the calls of the DataLoader pin-memory thread (it records no operator; torch files
    its calls under the main thread, docs/figures.md).  torch's table: 3.664ms."""
    layer = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")
    events = [e for e in raw_events(RESNET) if e.get("cat") in layer]
    with_ops = {e["tid"] for e in events if e["cat"] in ("cpu_op", "user_annotation")}
    main = next(e["tid"] for e in events if e["name"].startswith("ProfilerStep#"))
    target = [e for e in events if e["name"] == "aten::conv2d"]
    children_time = 0.0
    for o in target:  # direct children: contained events not contained in another contained one
        inside = [
            e
            for e in events
            if e is not o
            and (e["tid"] == o["tid"] or (o["tid"] == main and e["tid"] not in with_ops))
            and o["ts"] <= e["ts"]
            and e["ts"] + e["dur"] <= o["ts"] + o["dur"]
        ]
        for e in inside:
            if not any(p is not e and p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] for p in inside):
                children_time += e["dur"]
    row = loaded(RESNET).ops().filter(pl.col("name") == "aten::conv2d").row(0, named=True)
    assert row["host_total_us"] == pytest.approx(sum(o["dur"] for o in target))
    assert row["host_self_us"] == pytest.approx(sum(o["dur"] for o in target) - children_time)
    assert row["host_self_us"] == pytest.approx(3664, abs=0.5)


def test_device_self_column_reconciles_with_all_gpu_time() -> None:
    for name in (RESNET, GPT2, LEGACY, ROCM):
        total_gpu = sum(e["dur"] for e in gpu_events(name))
        assert loaded(name).ops()["device_self_us"].sum() == pytest.approx(total_gpu), name


def test_copy_and_dataloader_are_not_zero_on_resnet() -> None:
    """The TensorBoard plugin reports zero for both on this trace."""
    profile = loaded(RESNET)
    copy = profile.ops().filter(pl.col("name") == "aten::copy_").row(0, named=True)
    ids = op_ext_ids(RESNET, "aten::copy_")
    assert copy["device_self_us"] == pytest.approx(sum(e["dur"] for e in gpu_events(RESNET) if ext_id(e) in ids))
    assert copy["device_self_us"] > 0
    loader = [e for e in raw_events(RESNET) if str(e.get("name", "")).startswith("enumerate(DataLoader)")]
    steps = profile.steps()
    assert steps["dataloader_us"].sum() == pytest.approx(sum(e["dur"] for e in loader), abs=0.01)


def test_step_breakdown_adds_up_and_covers_the_host_step() -> None:
    steps = loaded(RESNET).steps()
    assert steps["step"].to_list() == [2, 3, 4]
    categories = [c for c in steps.columns if c.endswith("_us") and c not in ("start_us", "duration_us")]
    for row in steps.iter_rows(named=True):
        assert sum(row[c] for c in categories) == pytest.approx(row["duration_us"], abs=0.01)
    annotations = {
        e["name"]: e["dur"]
        for e in raw_events(RESNET)
        if e.get("cat") == "user_annotation" and "ProfilerStep" in e["name"]
    }
    for row in steps.iter_rows(named=True):
        assert row["duration_us"] >= annotations[row["name"]] - 0.01
    # steps never overlap
    ends = (steps["start_us"] + steps["duration_us"]).to_list()
    assert all(ends[i] <= steps["start_us"][i + 1] + 1e-6 for i in range(len(ends) - 1))


def test_step_kernel_time_is_kernel_union_inside_the_step() -> None:
    """Kernel = the union of the kernels launched in the window (a launching call in the trace:
    the ones launched before it are the Before window category, tests/test_parity_rules.py)."""
    profile = loaded(GPT2)
    steps = profile.steps()
    start = profile.model.span_start
    calls = ("cuda_runtime", "cuda_driver")
    launches = {e["args"].get("correlation") for e in raw_events(GPT2) if e.get("cat") in calls}
    kernels = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in raw_events(GPT2)
        if e.get("cat") == "kernel" and "nccl" not in e["name"] and e["args"].get("correlation") in launches
    )
    for row in steps.iter_rows(named=True):
        lo, hi = start + row["start_us"], start + row["start_us"] + row["duration_us"]
        covered, cur_s, cur_e = 0.0, None, None
        for s, e in kernels:
            s, e = max(s, lo), min(e, hi)
            if e <= s:
                continue
            if cur_e is None or s > cur_e:
                covered += (cur_e - cur_s) if cur_e is not None else 0.0
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        covered += (cur_e - cur_s) if cur_e is not None else 0.0
        assert row["kernel_us"] == pytest.approx(covered, abs=0.05)


def test_convolution_backward_drill_down() -> None:
    profile = loaded(RESNET)
    launches = profile.launches("aten::convolution_backward")
    ids = op_ext_ids(RESNET, "aten::convolution_backward")
    raw = [e for e in gpu_events(RESNET) if ext_id(e) in ids]
    per_name: dict[str, list[float]] = defaultdict(list)
    for e in raw:
        per_name[e["name"]].append(e["dur"])
    assert set(launches["name"]) == set(per_name)
    assert launches["calls"].sum() == len(raw)
    assert launches["total_us"].sum() == pytest.approx(10331.192)
    top = launches.row(0, named=True)
    assert top["name"] == "nvjet_sm90_hsh_64x64_64x13_1x2_h_bz_splitK_NTT"
    assert (top["calls"], top["total_us"]) == (len(per_name[top["name"]]), pytest.approx(sum(per_name[top["name"]])))
    # drilling into the autograd node above reaches the same kernels through descendants
    outer = profile.launches("ConvolutionBackward0")
    assert outer["total_us"].sum() == pytest.approx(10331.192)
    assert outer["direct_calls"].sum() == 0


def test_kernel_drill_down_names_the_op_chain_and_python_stack() -> None:
    profile = loaded(RESNET)
    conv_kernel = profile.launches("aten::cudnn_convolution")["name"][0]
    back = profile.kernel_launches(conv_kernel)
    assert back["calls"].sum() == profile.kernels().filter(pl.col("name") == conv_kernel)["calls"].sum()
    row = back.row(0, named=True)
    assert row["op"] == "aten::cudnn_convolution"
    assert row["op_chain"].startswith("ProfilerStep*")
    assert row["op_chain"].endswith("aten::convolution > aten::_convolution > aten::cudnn_convolution")
    assert "torch/nn/modules/conv.py" in row["python_stack"]


def test_gpt2_unattributed_gpu_work() -> None:
    """GPU work with no launching op recorded (launched before the window) is its own row."""
    events = raw_events(GPT2)
    op_ids = {ext_id(e) for e in events if e.get("cat") in ("cpu_op", "user_annotation") and ext_id(e)}
    runtime_corr = {
        e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("args")
    }
    orphans = [
        e for e in gpu_events(GPT2) if ext_id(e) not in op_ids and e["args"].get("correlation") not in runtime_corr
    ]
    row = loaded(GPT2).ops().filter(pl.col("name") == "(unattributed)").row(0, named=True)
    assert row["calls"] == len(orphans) == 373
    assert row["device_self_us"] == pytest.approx(sum(e["dur"] for e in orphans))
    assert loaded(GPT2).launches("(unattributed)")["calls"].sum() == 373


def test_legacy_pytorch_1_9_trace() -> None:
    profile = loaded(LEGACY)
    raw = [e for e in raw_events(LEGACY) if e.get("cat") == "Kernel"]
    kernels = profile.kernels()
    assert kernels["calls"].sum() == len(raw) == 8772
    assert kernels["total_us"].sum() == pytest.approx(sum(e["dur"] for e in raw))
    ops = profile.ops()
    ids = op_ext_ids(LEGACY, "aten::cudnn_convolution")
    expected = sum(e["dur"] for e in gpu_events(LEGACY) if ext_id(e) in ids)
    assert ops.filter(pl.col("name") == "aten::cudnn_convolution")["device_self_us"][0] == pytest.approx(expected)
    assert expected > 0
    assert profile.steps().height == 6
    # the legacy Call stack argument stands in for the Python stack
    kernel = profile.launches("aten::cudnn_convolution")["name"][0]
    assert profile.kernel_launches(kernel)["python_stack"][0] != ""


def test_rocm_trace() -> None:
    profile = loaded(ROCM)
    raw = [e for e in raw_events(ROCM) if e.get("cat") == "kernel"]
    kernels = profile.kernels()
    assert kernels["calls"].sum() == len(raw) == 14
    assert kernels["total_us"].sum() == pytest.approx(sum(e["dur"] for e in raw))
    assert profile.steps().height == 2


def test_matches_tracelens_reference_report() -> None:
    """TraceLens' own per-op report for the same H100 trace (direct kernel time per op name)."""
    reference = pl.read_csv(sample("tracelens_h100_qwen1.5-0.5b.ops_summary.csv"))
    ops = loaded(TRACELENS).ops()
    joined = reference.join(ops, on="name")
    assert joined.height == reference.height == 20
    for row in joined.iter_rows(named=True):
        assert row["device_self_us"] == pytest.approx(row["total_direct_kernel_time_sum"], abs=0.01), row["name"]
        assert row["calls"] >= row["Count"]
    kernels = pl.read_csv(sample("tracelens_h100_qwen1.5-0.5b.kernel_summary.csv"))
    per_kernel = kernels.group_by("Kernel name").agg(pl.col("Kernel duration (µs)_sum").sum().alias("ref"))
    ours = loaded(TRACELENS).kernels().join(per_kernel, left_on="name", right_on="Kernel name")
    assert ours.height == per_kernel.height
    assert (ours["total_us"] - ours["ref"]).abs().max() < 0.01


def test_step_filter_narrows_kernels() -> None:
    profile = loaded(RESNET)
    per_step = [profile.kernels(step=s)["calls"].sum() for s in profile.step_numbers()]
    assert sum(per_step) <= profile.kernels()["calls"].sum()
    assert all(n > 0 for n in per_step)
