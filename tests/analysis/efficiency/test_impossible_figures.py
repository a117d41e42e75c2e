"""No impossible figure (issue 40, item 4): a row above the device's DRAM peak says why in ``note``;
above 3x the DRAM peak it is an overestimate and claims no bound; Triton bytes are TraceLens' V2
model (``TraceLens/PerfModel/triton_compiled_perf_model.py``, ``_meta_from_trace_args``) except
where documented, and physically read + write of what the kernel touches.

Second witness: the raw JSON with the standard library (rates from ``Input Dims`` and the kernels
of the calls' External ids; TraceLens' formula written out from its source).
"""

from __future__ import annotations

import json
from collections import defaultdict
from math import prod
from pathlib import Path

import polars as pl
import pytest
from support import SHARED, loaded, raw_events, sample

import profview

RESNET = SHARED / "traces" / "resnet50_train_amp.pt.trace.json.gz"
MIB = float(1 << 20)
H100_TB_S = 3.35
H100_CACHE_MIB = 50.0


def raw_rates(path: Path, name: str, bytes_per_element: int) -> dict[str, tuple[float, float]]:
    """Per Input Dims of in-place calls of ``name`` (one tensor read and written), (TB/s, MiB a call)
    from the raw events: bytes from the shape, time from the kernels whose launch call (by
    correlation) lies inside one of the calls, on its thread (``relu_`` launches under its inner
    ``clamp_min_``, so External ids would not find them)."""
    import bisect

    events = _read(path)
    launch_at: dict[int, tuple[int, float]] = {}
    for e in events:
        if e.get("cat") == "cuda_runtime" and "Launch" in e.get("name", ""):
            launch_at[e["args"]["correlation"]] = (e["tid"], e["ts"])
    by_thread: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "kernel" and e["args"].get("correlation") in launch_at:
            tid, ts = launch_at[e["args"]["correlation"]]
            by_thread[tid].append((ts, e["dur"]))
    for launches in by_thread.values():
        launches.sort()
    calls: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and e.get("name") == name:
            calls[json.dumps(e["args"]["Input Dims"])].append(e)
    rates = {}
    for dims, ops in calls.items():
        data = 2 * prod(json.loads(dims)[0]) * bytes_per_element
        time = 0.0
        for op in ops:
            launches = by_thread[op["tid"]]
            lo = bisect.bisect_left(launches, (op["ts"], -1.0))
            hi = bisect.bisect_right(launches, (op["ts"] + op["dur"], float("inf")))
            time += sum(d for _t, d in launches[lo:hi])
        if time > 0:
            rates[dims] = (len(ops) * data / time / 1e6, data / MIB)
    return rates


def _read(path: Path) -> list[dict]:
    import gzip

    with gzip.open(path, "rb") as fh:
        doc = json.loads(fh.read())
    return doc["traceEvents"] if isinstance(doc, dict) else doc


@pytest.mark.skipif(not RESNET.exists(), reason="../shared absent: resnet50_train_amp is not in samples/")
def test_a_row_above_the_dram_peak_says_why() -> None:
    """resnet50 on an H100 SXM (3.35 TB/s, 50 MiB L2): ``relu_`` (fp16, in place) reaches up to 4.2
    TB/s; each such row says whether its data fits in the L2, and keeps its bound (< 3x the peak)."""
    rates = raw_rates(RESNET, "aten::relu_", 2)
    above = {dims: r for dims, r in rates.items() if r[0] > H100_TB_S}
    assert len(above) >= 3  # the witness finds the case
    frame = loaded(str(RESNET)).efficiency().filter(pl.col("name") == "aten::relu_")
    for dims, (tb_s, mib) in above.items():
        row = frame.filter(pl.col("input_dims") == dims).row(0, named=True)
        assert row["tb_s"] == pytest.approx(tb_s, rel=1e-9)
        assert row["pct_of_roofline"] == pytest.approx(tb_s / H100_TB_S * 100, rel=1e-9)
        assert row["bound"] == "memory"
        fits = f"its data ({round(mib, 2)} MiB a call) fits in the last-level cache (50 MiB)"
        if mib <= H100_CACHE_MIB:
            assert fits in row["note"]
        else:
            assert row["note"].startswith("above the DRAM peak with more data than the last-level cache (50 MiB)")
    for dims, (tb_s, _mib) in rates.items():
        if tb_s <= H100_TB_S:
            assert frame.filter(pl.col("input_dims") == dims)["note"][0] is None


@pytest.mark.skipif(not RESNET.exists(), reason="../shared absent: resnet50_train_amp is not in samples/")
def test_above_three_times_the_dram_peak_is_an_overestimate_without_a_bound() -> None:
    """The same rows against a 1 TB/s memory: those above 3 TB/s (raw) are called overestimates and
    have no bound nor % of roofline; those between 1 and 3 TB/s keep theirs, with a note."""
    rates = raw_rates(RESNET, "aten::relu_", 2)
    frame = loaded(str(RESNET)).efficiency(peak_tb_s=1.0).filter(pl.col("name") == "aten::relu_")
    beyond = [d for d, (tb_s, _m) in rates.items() if tb_s > 3.0]
    within = [d for d, (tb_s, _m) in rates.items() if 1.0 < tb_s <= 3.0]
    assert beyond and within
    for dims in beyond:
        row = frame.filter(pl.col("input_dims") == dims).row(0, named=True)
        assert row["note"].startswith("overestimate: ") and row["bound"] is None and row["pct_of_roofline"] is None
    for dims in within:
        row = frame.filter(pl.col("input_dims") == dims).row(0, named=True)
        assert row["note"].startswith("above the DRAM peak") and row["pct_of_roofline"] > 100


# -- Triton bytes against TraceLens' V2 model ---------------------------------------------------

#: TraceLens' element sizes (``_C10_DTYPE_BYTES``): any other recorded type counts 0 bytes there.
TRACELENS_BYTES = {
    "c10::BFloat16": 2, "c10::Half": 2, "c10::Float": 4, "c10::Double": 8,
    "c10::Byte": 1, "c10::Char": 1, "c10::Int": 4, "c10::Long": 8,
}  # fmt: skip
#: The types torch writes that TraceLens' table lacks, with their real sizes.
UNKNOWN_TO_TRACELENS = {"float": 4, "long int": 8, "int": 4, "double": 8, "bool": 1}


def tracelens_bytes(op: dict) -> float:
    """TraceLens' ``_meta_from_trace_args`` total_bytes: every tensor by its table's size, plus the
    first tensor's element size × xnumel again for a pointwise kernel."""
    args = op["args"]
    scalars = [int(v) for v in args["Concrete Inputs"] if v != "" and v.lstrip("-").isdigit()]
    xnumel = scalars[-2] if op["name"].startswith(("triton_red_", "triton_per_")) and len(scalars) >= 2 else scalars[-1]
    tensors = [(d, t) for d, t in zip(args["Input Dims"], args["Input type"], strict=False) if t != "Scalar" and d]
    total = float(sum(prod(d) * TRACELENS_BYTES.get(t, 0) for d, t in tensors))
    if op["name"].startswith("triton_poi_") and tensors:
        total += TRACELENS_BYTES.get(tensors[0][1], 0) * xnumel
    return total


def physical_bytes(op: dict) -> tuple[float, float]:
    """(TraceLens' bytes with every type's real size, the difference the in-place rule makes): a
    pointwise kernel's first tensor is read and written unless a later tensor of xnumel elements
    has another type (then that one is the output, the first only read)."""
    args = op["args"]
    scalars = [int(v) for v in args["Concrete Inputs"] if v != "" and v.lstrip("-").isdigit()]
    tensors = [(d, t) for d, t in zip(args["Input Dims"], args["Input type"], strict=False) if t != "Scalar" and d]
    size = {**TRACELENS_BYTES, **UNKNOWN_TO_TRACELENS}
    total = float(sum(prod(d) * size[t] for d, t in tensors))
    dropped = 0.0
    if op["name"].startswith("triton_poi_"):
        xnumel = scalars[-1]
        first = tensors[0][1]
        out_of_place = any(t != first and prod(d) == xnumel for d, t in tensors[1:])
        extra = size[first] * xnumel
        if out_of_place:
            dropped = extra
        else:
            total += extra
    return total, dropped


def triton_ops(events: list[dict]) -> dict[str, dict]:
    ops = [e for e in events if e.get("cat") == "cpu_op" and e["name"].startswith("triton_")]
    return {e["name"]: e for e in ops if "Input Dims" in e["args"]}


@pytest.mark.parametrize(
    ("trace", "differ"),
    [
        ("tracelens_mi300_compile_triton.json.gz", {}),
        # embedding kernels read int64 token ids ([4, 32] long int: 1 KiB), which TraceLens counts 0 bytes
        (
            "h100_compile_reduce_overhead.json.gz",
            {
                "triton_per_fused_add_embedding_native_layer_norm_view_1": 1024,
                "triton_per_fused_add_embedding_native_layer_norm_view_3": 1024,
                "triton_per_fused_add_embedding_native_layer_norm_view_4": 1024,
                "triton_red_fused_embedding_native_layer_norm_0": 1024,
            },
        ),
    ],
)
def test_triton_bytes_equal_tracelens_but_where_documented(trace: str, differ: dict[str, int]) -> None:
    ops = triton_ops(raw_events(trace))
    frame = loaded(trace).efficiency().filter(pl.col("category") == "triton")
    assert set(frame["name"].to_list()) == set(ops)
    for row in frame.iter_rows(named=True):
        op = ops[row["name"]]
        ours = row["data_mb"] * MIB
        physical, _dropped = physical_bytes(op)
        assert ours == pytest.approx(physical, abs=1e-6)
        assert ours - tracelens_bytes(op) == pytest.approx(differ.get(row["name"], 0), abs=1e-6)


VLLM_CAPTURE = SHARED / "traces" / "public" / "tracelens_mi300_vllm_decode_graph_capture.pt.trace.json.gz"


@pytest.mark.skipif(not VLLM_CAPTURE.exists(), reason="../shared absent: the vLLM capture is not in samples/")
def test_a_cast_kernel_reads_its_input_and_writes_its_output_once() -> None:
    """vLLM's ``triton_poi_fused__to_copy_1`` reads [131072, 64] fp32 and writes [131072, 64] bf16:
    48 MiB physically (32 + 16).  TraceLens counts 16 MiB (``float`` is 0 bytes in its table, then
    the first tensor again: 0); profview before issue 40 counted 80 (the first tensor again)."""
    op = triton_ops(_read(VLLM_CAPTURE))["triton_poi_fused__to_copy_1"]
    physical, dropped = physical_bytes(op)
    assert physical == 131072 * 64 * (4 + 2) == 48 * MIB and dropped == 32 * MIB
    assert tracelens_bytes(op) == 16 * MIB
    from profview.analysis.efficiency.op_models import operator_work

    args = op["args"]
    work = operator_work(op["name"], *(json.dumps(args[k]) for k in ("Input Dims", "Input type", "Concrete Inputs")))
    assert work is not None and work.bytes == physical


def test_no_row_of_the_h100_samples_is_above_the_dram_peak_without_a_note() -> None:
    """Every row of a real trace: above the DRAM peak means a note (the rule holds on all samples here)."""
    for name in ("h100_compile_reduce_overhead.json.gz", "h100_decode_eager_kv.json.gz"):
        frame = profview.load(sample(name), use_cache=False).efficiency()
        above = frame.filter(pl.col("tb_s") > pl.col("peak_tb_s"))
        assert above["note"].null_count() == 0
