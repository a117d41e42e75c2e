"""The perf model (issue 24) against its witnesses: TraceLens' own perf report for the H100 Qwen
trace (GEMM.csv, SDPA_fwd.csv, copied into samples/ from ../shared/traces/public), a GEMM of
gpt2_train_bf16 computed by hand from its recorded shapes, torch's own key_averages table (its
``Total GFLOPs`` column), the raw events summed with the standard library, and the step table."""

from __future__ import annotations

import csv
import gzip
import json
import re
from functools import cache

import polars as pl
import pytest
from support import SHARED, loaded, raw_events, sample

import profview
from profview.analysis.efficiency.device_peaks import PEAKS, match_device
from profview.errors import ProfviewError

QWEN = "tracelens_h100_qwen1.5-0.5b.json.gz"
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
MIB = 1 << 20


def tracelens_rows(kind: str) -> list[dict[str, str]]:
    with open(sample(f"tracelens_h100_qwen1.5-0.5b.{kind}.csv"), newline="") as fh:
        return list(csv.DictReader(fh))


def our_row(frame: pl.DataFrame, name: str, dims: str) -> dict:
    rows = frame.filter((pl.col("name") == name) & (pl.col("input_dims") == dims))
    assert rows.height == 1, (name, dims, rows)
    return rows.row(0, named=True)


@pytest.mark.parametrize("kind", ["GEMM", "SDPA_fwd"])
def test_tracelens_rows_row_by_row(kind: str) -> None:
    """gflops, data_mb (MiB), calls and kernel_us equal TraceLens' columns for every row it wrote."""
    frame = loaded(QWEN).efficiency()
    rows = tracelens_rows(kind)
    assert len(rows) == {"GEMM": 5, "SDPA_fwd": 1}[kind]
    for theirs in rows:
        ours = our_row(frame, theirs["name"], theirs["Input Dims_first"])
        assert ours["gflops"] == pytest.approx(float(theirs["GFLOPS_first"]), rel=1e-12)
        assert ours["data_mb"] == pytest.approx(float(theirs["Data Moved (MB)_first"]), rel=1e-12)
        assert ours["flops_per_byte"] == pytest.approx(float(theirs["FLOPS/Byte_first"]), rel=1e-9)
        assert ours["calls"] == int(theirs["name_count"])
        # TraceLens sums kernel times in float32: equal to ours to the nanosecond
        assert ours["kernel_us"] == pytest.approx(float(theirs["Kernel Time (µs)_sum"]), abs=2e-3)
        # TraceLens averages per-call TFLOP/s; ours is total FLOPs / total time: within 0.2%
        assert ours["tflops_s"] == pytest.approx(float(theirs["TFLOPS/s_mean"]), rel=2e-3)


def test_tracelens_figures_spelled_out() -> None:
    """The first GEMM row, by hand: aten::mm 8944×1024 @ 1024×2816 in bf16, 48 calls."""
    row = our_row(loaded(QWEN).efficiency(), "aten::mm", "[[8944, 1024], [1024, 2816]]")
    m, k, n = 8944, 1024, 2816
    assert 2 * m * n * k == 51_581_550_592
    assert row["gflops"] == pytest.approx(51.581550592, rel=1e-15)
    assert row["data_mb"] == pytest.approx((m * k + k * n + m * n) * 2 / MIB, rel=1e-15)
    assert row["calls"] == 48
    assert row["kernel_us"] == pytest.approx(4055.251, abs=1e-3)
    assert row["tflops_s"] == pytest.approx(48 * 51.581550592 / 4055.251 * 1e3, rel=1e-6)
    assert (row["precision"], row["peak_tflops"], row["peak_tb_s"], row["bound"]) == ("bf16", 989.4, 3.35, "compute")
    assert row["pct_of_roofline"] == pytest.approx(row["tflops_s"] / 989.4 * 100)
    sdpa = loaded(QWEN).efficiency().filter(pl.col("category") == "attention").row(0, named=True)
    # causal flash attention: 4·B·H·N²·d halved; ridge 989.4/3.35 = 295 FLOP/B > 139.75: memory-bound
    assert sdpa["gflops"] == pytest.approx(4 * 16 * 16 * 559 * 559 * 64 / 2 / 1e9, rel=1e-15)
    assert sdpa["bound"] == "memory"
    assert sdpa["pct_of_roofline"] == pytest.approx(sdpa["tb_s"] / 3.35 * 100)


def test_kernel_us_is_the_ops_view_device_total() -> None:
    """One source of truth: kernel_us is the operator's device total in the ops view by shape."""
    profile = loaded(QWEN)
    ops = profile.ops(by_shapes=True)
    for row in profile.efficiency().filter(pl.col("category") == "gemm").iter_rows(named=True):
        op = ops.filter((pl.col("name") == row["name"]) & (pl.col("input_dims") == row["input_dims"]))
        assert op["device_total_us"][0] == pytest.approx(row["kernel_us"], abs=1e-9)
        assert op["calls"][0] == row["calls"]


@cache
def torch_table(name: str) -> dict[str, tuple[int, float]]:
    """``# of Calls`` and the last column (``Total GFLOPs``, or ``Total FLOPs``) per operator from
    torch's key_averages table beside the trace (its first table)."""
    text = sample(name.replace(".pt.trace.json.gz", ".tables.txt")).read_text()
    out = {}
    for line in text.split("\n\n")[0].splitlines():
        match = re.match(r"\s*(aten::\S+)\s.*\s(\d+)\s+([\d.]+)\s*$", line)
        if match:
            out[match.group(1)] = (int(match.group(2)), float(match.group(3)))
    return out


def test_gpt2_gemm_by_hand_and_raw_events() -> None:
    """gpt2's LM-head GEMM from its recorded shapes, its kernel time from the raw events."""
    profile = loaded(GPT2)
    row = our_row(profile.efficiency(), "aten::mm", "[[8192, 768], [768, 50257]]")
    m, k, n = 8192, 768, 50257
    assert row["gflops"] * 1e9 == pytest.approx(2 * m * k * n, rel=1e-15)  # 632.379 GFLOP a call
    assert row["data_mb"] == pytest.approx((m * k + k * n + m * n) * 2 / MIB)  # 870.88 MiB
    # second witness for the time: GPU events whose External id is one of these calls' ids
    events = raw_events(GPT2)
    ids = {
        e["args"]["External id"]
        for e in events
        if e.get("name") == "aten::mm"
        and e.get("cat") == "cpu_op"
        and json.dumps(e["args"].get("Input Dims")) == "[[8192, 768], [768, 50257]]"
    }
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memset") and e["args"].get("External id") in ids]
    assert len(ids) == row["calls"] == 3
    assert row["kernel_us"] == pytest.approx(sum(e["dur"] for e in gpu), abs=1e-6)


def test_gpt2_gemm_flops_match_torch_table() -> None:
    """torch's ``Total GFLOPs`` (2·M·N·K, no bias): equal for mm (297 calls, 14040.831 GFLOP).
    For addmm torch counts 288 calls: under autocast each bf16 addmm runs inside an outer addmm
    (the cast wrapper), and torch counts both; the model counts the inner call once (the outer one
    is a wrapper, perf_model.wrapper_calls) and adds the bias' M·N, as TraceLens does."""
    table = torch_table(GPT2)
    frame = loaded(GPT2).efficiency()

    def total(name: str) -> tuple[int, float]:
        rows = frame.filter(pl.col("name") == name)
        return int(rows["calls"].sum()), float((rows["calls"] * rows["gflops"]).sum())

    calls, gflops = total("aten::mm")
    assert (calls, gflops) == (table["aten::mm"][0], pytest.approx(table["aten::mm"][1], abs=5e-4))
    calls, gflops = total("aten::addmm")
    bias = 0.0
    for row in frame.filter(pl.col("name") == "aten::addmm").iter_rows(named=True):
        _bias, a, b = json.loads(row["input_dims"])[:3]
        bias += row["calls"] * a[0] * b[1] / 1e9
    assert 2 * calls == table["aten::addmm"][0] == 288
    assert 2 * (gflops - bias) == pytest.approx(table["aten::addmm"][1], abs=5e-4)  # 8349.416


def test_peak_overrides() -> None:
    """--peak-tflops/--peak-tbs replace the table's peaks everywhere in the view."""
    frame = loaded(QWEN).efficiency(peak_tflops=700.0, peak_tb_s=2.0)
    assert set(frame["peak_tflops"].to_list()) == {700.0}
    assert set(frame["peak_tb_s"].to_list()) == {2.0}
    row = our_row(frame, "aten::mm", "[[8944, 1024], [1024, 2816]]")
    assert row["pct_of_roofline"] == pytest.approx(row["tflops_s"] / 700.0 * 100)
    # issue 40: above the compute peak a rate is impossible: an overestimate, no bound claimed
    lower = our_row(loaded(QWEN).efficiency(peak_tflops=500.0), "aten::mm", "[[8944, 1024], [1024, 2816]]")
    assert lower["tflops_s"] > 500.0
    assert lower["pct_of_roofline"] is None and lower["bound"] is None and lower["note"].startswith("overestimate")


def test_step_model_flops_and_the_gpu_busy_rule() -> None:
    """Per step: model FLOPs add up to the efficiency rows' FLOPs; GPU busy is the step columns'
    GPU categories plus the work launched before the window (the one rule, docs/efficiency.md)."""
    profile = loaded(GPT2)
    per_step = profile.step_efficiency()
    frame = profile.efficiency()
    assert float(per_step["model_tflop"].sum()) == pytest.approx(float((frame["calls"] * frame["gflops"]).sum()) / 1e3)
    steps = profile.steps().join(per_step, on="step")
    for row in steps.iter_rows(named=True):
        gpu = row["kernel_us"] + row["memcpy_us"] + row["memset_us"] + row["communication_us"] + row["prewindow_us"]
        assert gpu == pytest.approx(row["gpu_busy_us"], abs=5e-3)
        assert row["tflops_s"] == pytest.approx(row["model_tflop"] * 1e6 / row["duration_us"])
        assert row["mfu_pct"] == pytest.approx(row["tflops_s"] / 989.4 * 100)  # bf16 carries most FLOPs
    idle = profile.gpu_idle()
    assert per_step["gpu_busy_us"].to_list() == idle["gpu_busy_us"].round(3).to_list()
    # step 2 holds 12.5 ms of GPU work launched before the window: inside busy, outside kernel_us
    assert steps.filter(pl.col("step") == 2)["prewindow_us"][0] == pytest.approx(12546.111, abs=1e-3)


def test_mi300_busy_rule(shared_dir) -> None:  # type: ignore[no-untyped-def]
    """The issue's case: TraceLens' MI300 Qwen trace, 13.1 of 42.9 ms launched before the window."""
    profile = profview.load(SHARED / "traces/public/tracelens_mi300_qwen1.5-0.5b.json.gz", use_cache=False)
    row = profile.steps().join(profile.step_efficiency(), on="step").row(0, named=True)
    assert row["prewindow_us"] == pytest.approx(13125.297, abs=1e-3)
    assert row["gpu_busy_us"] == pytest.approx(42869.225, abs=1e-3)
    assert row["kernel_us"] + row["memcpy_us"] + row["memset_us"] + row["prewindow_us"] == pytest.approx(
        row["gpu_busy_us"], abs=2e-3
    )
    assert profile.device_peak()[1].name == "MI300X"


def test_no_shapes_says_so(shared_dir) -> None:  # type: ignore[no-untyped-def]
    """A trace recorded without shapes: one line naming the missing option, not an empty table."""
    profile = profview.load(SHARED / "traces/public/hta_a100_nccl_data.json.gz", use_cache=False)
    with pytest.raises(ProfviewError, match=r"no input shapes in this trace.*record_shapes=True"):
        profile.efficiency()


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"name": "NVIDIA H100 80GB HBM3", "numSms": 132}, "H100 SXM"),
        ({"name": "NVIDIA H100 PCIe", "numSms": 114}, "H100 PCIe"),
        ({"name": "NVIDIA H200", "numSms": 132}, "H200"),
        ({"name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42_314_694_656}, "A100 40GB"),
        ({"name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85_100_000_000}, "A100 80GB SXM"),
        ({"name": "Tesla V100-SXM2-32GB"}, "V100 SXM2"),
        ({"name": "NVIDIA L4"}, "L4"),
        ({"name": "NVIDIA L40S"}, "L40S"),
        ({"name": "NVIDIA B200", "numSms": 148}, "B200"),
        ({"name": "AMD Instinct MI300X VF", "numSms": 304}, "MI300X"),
        ({"name": "", "numSms": 304}, "MI300X"),
        ({"name": "AMD Instinct MI250X", "numSms": 110}, "MI250X (one GCD)"),
        ({"name": "AMD Instinct MI210", "numSms": 104}, "MI210"),
        ({"name": "AMD Radeon Graphics", "numSms": 104}, None),  # MI210 or one MI250 GCD: unknown
    ],
)
def test_device_matching(props: dict, expected: str | None) -> None:
    found = match_device(props)
    assert (found.name if found else None) == expected


def test_peak_table_has_every_device_and_ridge_points() -> None:
    names = {p.name for p in PEAKS}
    for device in ("H100 SXM", "H100 PCIe", "H200", "A100 40GB", "A100 80GB SXM", "V100 SXM2", "L4", "L40S"):
        assert device in names
    for device in ("B200", "MI300X", "MI250X (one GCD)", "MI210"):
        assert device in names
    for peak in PEAKS:
        assert "fp32" in peak.tflops and peak.tb_s > 0
        # dense tensor throughput is above fp32 on every device of the table
        assert max(peak.tflops.get(p, 0) for p in ("bf16", "fp16")) > peak.tflops["fp32"]


def test_devices_of_the_corpus(shared_dir) -> None:  # type: ignore[no-untyped-def]
    """Every trace's deviceProperties name that the table knows is matched."""
    found = {}
    for name in ("tracelens_b200_nccl_eager_no_steps.json.gz", "hta_diff_control_a100.json.gz"):
        with gzip.open(SHARED / "traces/public" / name, "rt") as fh:
            props = json.load(fh)["deviceProperties"][0]
        found[name] = match_device(props).name  # type: ignore[union-attr]
    assert found == {
        "tracelens_b200_nccl_eager_no_steps.json.gz": "B200",
        "hta_diff_control_a100.json.gz": "A100 40GB",
    }


def test_diff_compares_tflops(shared_dir) -> None:  # type: ignore[no-untyped-def]
    """profview diff --view efficiency: the same Qwen model on H100 and MI300X, shape by shape."""
    from profview.diff.comparison import load_comparison

    public = SHARED / "traces/public"
    comparison = load_comparison(
        str(public / "tracelens_h100_qwen1.5-0.5b.json.gz"),
        str(public / "tracelens_mi300_qwen1.5-0.5b.json.gz"),
        use_cache=False,
    )
    frame = comparison.view("efficiency")
    row = our_row(frame, "aten::mm", "[[8944, 1024], [1024, 2816]]")
    h100 = our_row(loaded(QWEN).efficiency(), "aten::mm", "[[8944, 1024], [1024, 2816]]")
    assert row["tflops_s_before"] == h100["tflops_s"]  # TraceLens' 48 calls, 4,055.25 µs
    assert (row["calls_before"], row["calls_after"]) == (48, 48)
    assert row["kernel_us_after"] == pytest.approx(5308.273, abs=1e-3)
    assert row["tflops_delta_pct"] == pytest.approx((row["tflops_s_after"] / row["tflops_s_before"] - 1) * 100)
    assert row["status"] == "slower"
    for row in frame.filter(pl.col("status").is_in(["faster", "slower", "unchanged"])).iter_rows(named=True):
        if row["tflops_s_before"]:
            assert row["tflops_delta_pct"] == pytest.approx((row["tflops_s_after"] / row["tflops_s_before"] - 1) * 100)


def test_kineto_flops_beside_the_model() -> None:
    """Where calls carry Kineto's ``flops`` (with_flops in the torch versions that write it; no
    trace in ../shared does), kineto_gflops shows it per call beside gflops. Here the Qwen calls
    get torch's own GEMM rule (2·M·N·K, no bias): equal for mm, short of the model by the bias'
    M·N for addmm — the one place the two conventions differ."""
    from profview.analysis.efficiency.perf_model import call_work, efficiency_table

    profile = loaded(QWEN)
    calls = call_work(profile._operator_rows).filter(pl.col("name").is_in(["aten::mm", "aten::addmm"]))

    def torch_flops(dims: str) -> int:
        shapes = [d for d in json.loads(dims) if len(d) == 2]
        (m, k), (_k, n) = shapes[-2], shapes[-1]
        return 2 * m * n * k

    calls = calls.with_columns(pl.col("input_dims").map_elements(torch_flops, return_dtype=pl.Int64).alias("flops"))
    frame = efficiency_table(calls, profile.device_peak()[1])
    mm = our_row(frame, "aten::mm", "[[8944, 1024], [1024, 2816]]")
    assert mm["kineto_gflops"] == pytest.approx(mm["gflops"], rel=1e-15)
    addmm = our_row(frame, "aten::addmm", "[[1024], [8944, 1024], [1024, 1024], [], []]")
    assert (addmm["gflops"] - addmm["kineto_gflops"]) * 1e9 == pytest.approx(8944 * 1024)


def test_a_reopened_trace_reads_the_figures_from_the_cache(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Categories, efficiency, the per-step figures and the kernel view's new columns are kept
    with the cached views: a second open shows the same frames without linking the model."""
    import shutil

    from profview.profiles.loading import remember_views
    from profview.profiles.views import view_frame

    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    trace = tmp_path / QWEN
    shutil.copy(sample(QWEN), trace)
    views = ("categories", "efficiency", "steps", "kernels", "ops")
    first = profview.load(trace)
    before = {view: view_frame(first, view) for view in views}
    lines = first.efficiency_lines()
    remember_views(first)
    again = profview.load(trace)
    for view in views:
        assert view_frame(again, view).equals(before[view]), view
    assert again.efficiency_lines() == lines
    assert "model" not in vars(again)  # nothing above linked GPU work to operators again


def test_resnet_convolution_flops_match_torch_table() -> None:
    """Convolution forward, 2·N·Cout·Hout·Wout·(Cin/groups)·kh·kw from the recorded shapes and
    Concrete Inputs (stride, padding, dilation, groups): torch's table lists aten::conv2d with 318
    calls and 3,138,920,644,608 FLOPs — under autocast each conv2d runs inside a conv2d wrapper and
    torch counts both — and the model sizes the 159 aten::convolution calls at half of that; the
    backward (aten::convolution_backward) is 2× the forward by TraceLens' convention."""
    table = torch_table("resnet50_train_amp.pt.trace.json.gz")
    assert table["aten::conv2d"] == (318, 3138920644608.0)
    frame = loaded("resnet50_train_amp.pt.trace.json.gz").efficiency()
    forward = frame.filter(pl.col("name") == "aten::convolution")
    backward = frame.filter(pl.col("name") == "aten::convolution_backward")
    assert int(forward["calls"].sum()) == 159 == int(backward["calls"].sum())
    assert float((forward["calls"] * forward["gflops"]).sum()) * 1e9 * 2 == pytest.approx(3138920644608.0, rel=1e-12)
    assert float((backward["calls"] * backward["gflops"]).sum()) == pytest.approx(
        2 * float((forward["calls"] * forward["gflops"]).sum()), rel=1e-12
    )


def test_a_small_step_is_written_in_gflop_not_as_zero_tflop() -> None:
    """The Overview's FLOPs line keeps its digits on a small model (DDP MLP: a fraction of a TFLOP per step)."""
    profile = loaded("ddp_nccl_streams.pt.trace.json.gz")
    tflop = profile.step_efficiency()["model_tflop"].mean()
    assert 0 < tflop < 1
    line = next(line for line in profile.efficiency_lines() if line.startswith("model FLOPs"))
    assert f"per average step: {tflop * 1e3:.3g} GFLOP," in line and "0.000 TFLOP" not in line
