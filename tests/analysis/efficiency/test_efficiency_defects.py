"""Perf-model defects, each on the real trace it was seen on, each figure recomputed from
the raw JSON with the standard library (tests/witness.py) or by hand from the recorded shapes, and
checked against TraceLens' own report of the same trace where it models the call."""

from __future__ import annotations

import csv
import gzip
import json

import polars as pl
import pytest
from support import loaded, raw_events, sample
from witness import kernels_under

import profview

MIB = 1 << 20
VIT = "tracelens_h100_vit_falconsai.json.gz"
MI300_QWEN = "traces/public/tracelens_mi300_qwen1.5-0.5b.json.gz"


def _rows(frame: pl.DataFrame, name: str) -> list[dict]:
    return frame.filter(pl.col("name") == name).to_dicts()


def tracelens(trace: str, sheet: str) -> list[dict[str, str]]:
    """TraceLens' perf-model rows of a sample (scripts/tracelens_witness.py wrote them)."""
    with open(sample(f"tracelens_live/{trace}.{sheet}.csv"), newline="") as fh:
        return list(csv.DictReader(fh))


def their_row(trace: str, sheet: str, name: str, dims: str, types: str | None = None) -> dict[str, str]:
    rows = [r for r in tracelens(trace, sheet) if r["name"] == name and r["Input Dims_first"] == dims]
    rows = [r for r in rows if types is None or r["Input type_first"] == types]
    assert len(rows) == 1, rows
    return rows[0]


def our_row(frame: pl.DataFrame, name: str, dims: str, types: str | None = None) -> dict:
    rows = frame.filter((pl.col("name") == name) & (pl.col("input_dims") == dims))
    if types is not None:
        rows = rows.filter(pl.col("input_types") == types)
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def raw_calls(name: str, trace: str, dims: list, types: list) -> list[tuple[dict, float]]:
    """The calls of ``name`` with these recorded dims and types, with their GPU µs (witness.py)."""
    found = kernels_under(raw_events(trace), name)
    return [(e, us) for e, us in found if e["args"]["Input Dims"] == dims and e["args"]["Input type"] == types]


def test_flash_attention_that_fills_its_logsumexp_is_a_row(shared_dir) -> None:  # type: ignore[no-untyped-def]
    """Defect 1: on ROCm the flash SDPA forward runs a ``fill_`` before its ``attn_fwd`` kernel;
    the wrapper rule took the SDPA call for a wrapper of that fill and dropped all 24 calls.
    A call is a wrapper only around a modelled call of its rank or above; the fill is part of it."""
    path = shared_dir / MI300_QWEN
    frame = profview.load(path, use_cache=False).efficiency()
    rows = _rows(frame, "aten::_scaled_dot_product_flash_attention")
    assert len(rows) == 1
    row = rows[0]
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    calls = kernels_under(events, "aten::_scaled_dot_product_flash_attention")
    assert row["calls"] == len(calls) == 24
    assert row["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-6)
    assert row["kernel_us"] == pytest.approx(4016.343, abs=1e-3)  # TraceLens' Kernel Time (µs)_sum
    b, h, n, d = calls[0][0]["args"]["Input Dims"][0]
    assert calls[0][0]["args"]["Concrete Inputs"][4] == "True"  # is_causal
    assert row["gflops"] * 1e9 == pytest.approx(4 * b * h * n * n * d / 2, rel=1e-15)
    assert row["gflops"] == pytest.approx(10.239377408, rel=1e-12)  # TraceLens' GFLOPS_first
    # the fill is inside the row (its kernel time is in kernel_us), not a row of its own
    assert not _rows(frame, "aten::fill_")


def test_convolution_with_its_bias_add_is_a_row() -> None:
    """Defect 1, the convolution case: cuDNN adds a convolution's bias with an ``add_`` inside
    ``aten::convolution``; the ViT patch embedding (16×16 kernel, stride 16) was dropped as its
    wrapper, the ``add_`` left as the row.  TraceLens' live report of the same trace
    (samples/tracelens_live/tracelens_h100_vit_falconsai.CONV_fwd.csv) has the call with 129.6 µs and
    0.924844032 GFLOP: the model adds the bias' N·Cout·Hout·Wout, which TraceLens never counts
    (it looks for a bias only when Input Dims has three entries; the trace writes nine)."""
    frame = loaded(VIT).efficiency()
    (row,) = _rows(frame, "aten::convolution")
    (call, us), *_ = kernels_under(raw_events(VIT), "aten::convolution")
    (n, cin, hin, win), (cout, _cin, kh, kw) = call["args"]["Input Dims"][:2]
    stride = json.loads(call["args"]["Concrete Inputs"][3])
    hout, wout = (hin - kh) // stride[0] + 1, (win - kw) // stride[1] + 1
    assert (hout, wout) == (14, 14)
    out = n * cout * hout * wout
    assert row["calls"] == 1
    assert row["kernel_us"] == pytest.approx(us, abs=1e-6)
    assert row["gflops"] * 1e9 == pytest.approx(2 * out * cin * kh * kw + out, rel=1e-15)
    bias_bytes = cout * 2
    assert row["data_mb"] * MIB == pytest.approx((n * cin * hin * win + cout * cin * kh * kw + out) * 2 + bias_bytes)
    (theirs,) = tracelens("tracelens_h100_vit_falconsai", "CONV_fwd")
    assert row["kernel_us"] == pytest.approx(float(theirs["Kernel Time (µs)_sum"]), abs=1e-3)
    assert (row["gflops"] * 1e9 - out) / 1e9 == pytest.approx(float(theirs["GFLOPS_first"]), rel=1e-12)
    assert (row["data_mb"] * MIB - bias_bytes) / MIB == pytest.approx(float(theirs["Data Moved (MB)_first"]))
    assert not _rows(frame, "aten::add_")  # the bias add is part of the convolution


def test_nested_calls_rule_by_rank() -> None:
    """The rule on a small tree: rows 0..9 in call-tree order, ``ends`` = each row's subtree end."""
    from profview.analysis.efficiency.perf_model import call_rank, nested_calls

    #  0 addmm (outer, autocast)  ⊃ 1 addmm (bf16) ⊃ 2 copy_
    #  3 sdpa flash ⊃ 4 fill_
    #  5 mul ⊃ 6 mul                 (autocast's cast wrapper of a pointwise op)
    #  7 sdpa math ⊃ 8 bmm, 9 softmax
    ends = [3, 3, 3, 5, 5, 7, 7, 10, 9, 10]
    rows = list(range(10))
    names = ["aten::addmm", "aten::addmm", "aten::copy_", "sdpa", "aten::fill_", "aten::mul", "aten::mul"]
    names += ["sdpa_math", "aten::bmm", "aten::_softmax"]
    families = ["gemm", "gemm", "elementwise", "attention", "elementwise"]
    families += ["elementwise", "elementwise", "attention", "gemm", "reduction"]
    ranks = [call_rank(n, f) for n, f in zip(names, families, strict=True)]
    wrapper, inner = nested_calls(rows, ranks, ends)
    assert [i for i in rows if wrapper[i]] == [0, 5, 7]
    assert [i for i in rows if inner[i]] == [2, 4]
    kept = [i for i in rows if not wrapper[i] and not inner[i]]
    assert kept == [1, 3, 6, 8, 9]  # under a wrapper, its bmm and softmax are rows


GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
DDP = "ddp_nccl_streams.pt.trace.json.gz"
RESNET = "resnet50_train_amp.pt.trace.json.gz"


@pytest.mark.parametrize("types", [["c10::BFloat16", "float"], ["float", "c10::BFloat16"]])
def test_mixed_dtype_multiply_writes_the_promoted_type(types: list[str]) -> None:
    """Defect 2: ``mul(bf16, float)`` writes float, as PyTorch promotes: on gpt2_train_bf16 each of
    the 36 calls over [8, 1024, 3072] reads 2 + 4 bytes and writes 4 an element: 240 MiB (the
    model wrote bf16: 192).  TraceLens' live report: 240.0."""
    dims = [[8, 1024, 3072], [8, 1024, 3072]]
    row = our_row(loaded(GPT2).efficiency(), "aten::mul", json.dumps(dims), json.dumps(types))
    calls = raw_calls("aten::mul", GPT2, dims, types)
    elements = 8 * 1024 * 3072
    assert row["calls"] == len(calls) == 36
    assert row["data_mb"] * MIB == elements * (2 + 4 + 4) == 240 * MIB
    assert row["gflops"] * 1e9 == pytest.approx(elements, rel=1e-15)
    assert row["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-6)
    theirs = their_row("gpt2_train_bf16", "BinaryElementwise", "aten::mul", json.dumps(dims), str(types))
    assert float(theirs["Data Moved (MB)_first"]) == row["data_mb"] == 240.0


def test_in_place_add_of_mixed_types_writes_its_first_argument() -> None:
    """The other side of promotion: ``add_(bf16, float)`` writes into the bf16 tensor."""
    from profview.analysis.efficiency.op_models import operator_work

    dims, types = "[[4, 8], [4, 8], []]", '["c10::BFloat16", "float", "Scalar"]'
    work = operator_work("aten::add_", dims, types, '["", "", "1"]')
    assert work is not None and work.bytes == 32 * (2 + 4) + 32 * 2
    work = operator_work("aten::add", dims, types, '["", "", "1"]')
    assert work is not None and work.bytes == 32 * (2 + 4) + 32 * 4


def test_out_tensor_is_written_not_read() -> None:
    """Defect 3: DDP's reducer runs ``mul(grad, 1/world_size, out=bucket)``; the ``out`` tensor
    (the third recorded argument, beyond mul's two) was counted as an input: 192 MiB for the
    [4096, 4096] fp32 gradient, where the call reads 64 MiB and the 0-dim factor and writes 64 MiB.
    TraceLens' live report: 128.0000076 MiB, the same figure."""
    dims, types = [[4096, 4096], [], [4096, 4096]], ["float", "double", "float"]
    row = our_row(loaded(DDP).efficiency(), "aten::mul", json.dumps(dims))
    calls = raw_calls("aten::mul", DDP, dims, types)
    assert row["calls"] == len(calls) == 24
    assert row["data_mb"] * MIB == 4096 * 4096 * 4 * 2 + 8  # the double factor: one element
    assert row["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-6)
    theirs = their_row("ddp_nccl_streams", "BinaryElementwise", "aten::mul", json.dumps(dims))
    assert row["data_mb"] == pytest.approx(float(theirs["Data Moved (MB)_first"]), rel=1e-12)
    assert row["gflops"] == pytest.approx(float(theirs["GFLOPS_first"]), rel=1e-12)


def test_zero_dim_tensors_hold_one_element() -> None:
    """Defect 4: ``add_([], [])`` (batch norm's step counter, int64) was no row, its 159 calls
    and 224.320 µs missing: a 0-dim tensor has one element, so each call does 1 FLOP and moves
    8 + 8 bytes read, 8 written.  TraceLens' live report: the same 159 calls and 24 bytes, and
    224.314 µs (it sums kernel times in float32)."""
    row = our_row(loaded(RESNET).efficiency(), "aten::add_", "[[], [], []]")
    calls = raw_calls("aten::add_", RESNET, [[], [], []], ["long int", "long int", "Scalar"])
    assert row["calls"] == len(calls) == 159
    assert row["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-6)
    assert row["kernel_us"] == pytest.approx(224.320, abs=1e-3)
    assert (row["gflops"] * 1e9, row["data_mb"] * MIB) == (pytest.approx(1.0), pytest.approx(24.0))
    theirs = their_row("resnet50_train_amp", "BinaryElementwise", "aten::add_", "[[], [], []]")
    assert int(theirs["name_count"]) == 159
    assert float(theirs["Kernel Time (µs)_sum"]) == pytest.approx(row["kernel_us"], abs=1e-2)
    assert float(theirs["Data Moved (MB)_first"]) * MIB == pytest.approx(24.0)


def test_a_calls_row_does_not_depend_on_another_threads_calls() -> None:
    """Defect 5: DDP's ``loss.mean()`` is ``aten::mean`` whose only child is ``aten::mean`` (the
    dim overload), folded into one call as torch's table does; in step 4 the NCCL watchdog's
    ``cudaEventQuery`` calls (another thread, filed under the main thread's operator as torch
    files them) land inside the outer call, which then has more than one child: three identical
    calls showed as two rows of different shapes.  The perf model's calls are the innermost ones
    whatever lands beside them: one row, three calls.  The raw events: three outer calls, each
    enclosing one inner call with the recorded dims, their kernels launched from inside."""
    frame = loaded(DDP).efficiency()
    rows = _rows(frame, "aten::mean")
    assert len(rows) == 1
    inner = [[256, 4096], [], [], []]
    calls = [(e, us) for e, us in kernels_under(raw_events(DDP), "aten::mean") if e["args"]["Input Dims"] == inner]
    assert rows[0]["calls"] == len(calls) == 3
    assert json.loads(rows[0]["input_dims"]) == inner
    assert rows[0]["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-6)
    watchdog = [
        e
        for e in raw_events(DDP)
        if e.get("name") == "cudaEventQuery" and e.get("cat") == "cuda_runtime" and e["tid"] != calls[0][0]["tid"]
    ]
    inside = [w for w in watchdog for e, _ in calls if e["ts"] <= w["ts"] <= e["ts"] + e["dur"]]
    assert inside  # another thread's calls do fall inside one of them


def test_a_copy_that_is_all_of_its_callers_work_is_the_row() -> None:
    """``PowBackward0`` runs ``pow(x, 1.)``, which launches nothing but its ``copy_``'s
    device-to-device memcpy: the copy was an inner part of the pow (no row), so the view lacked
    TraceLens' ``aten::copy_`` row of [256, 4096] (3 calls, 6.944 µs, 8 MiB).  A call whose GPU
    work all runs in the memory-only calls it encloses is their wrapper: the copy is the row, sized
    by its bytes (4 read + 4 written per element), and the pow row keeps only the 3 ``pow(x, 2)``
    calls that launched a kernel of their own.  TraceLens counts the memcpy twice (its pow row has
    6 calls, 15.07 µs); each GPU µs here is in one row."""
    dims = [[256, 4096], [256, 4096], []]
    frame = loaded(DDP).efficiency()
    row = our_row(frame, "aten::copy_", json.dumps(dims))
    calls = raw_calls("aten::copy_", DDP, dims, ["float", "float", "Scalar"])
    assert row["calls"] == len(calls) == 3
    assert row["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-6)
    assert row["data_mb"] * MIB == 256 * 4096 * (4 + 4)
    theirs = their_row("ddp_nccl_streams", "UnaryElementwise", "aten::copy_", json.dumps(dims))
    assert int(theirs["name_count"]) == row["calls"]
    assert float(theirs["Kernel Time (µs)_sum"]) == pytest.approx(row["kernel_us"], abs=1e-2)
    assert float(theirs["Data Moved (MB)_first"]) == row["data_mb"]
    # the pow row: the calls that launched a kernel themselves (pow(x, 2)), not the copies
    pows = [(e, us) for e, us in kernels_under(raw_events(DDP), "aten::pow") if e["args"]["Input Dims"] == dims[1:]]
    squares = [(e, us) for e, us in pows if e["args"]["Concrete Inputs"][1] == "2"]
    pow_row = our_row(frame, "aten::pow", json.dumps(dims[1:]))
    assert (pow_row["calls"], len(pows)) == (len(squares), 6)
    assert pow_row["kernel_us"] == pytest.approx(sum(us for _, us in squares), abs=1e-6)
    assert pow_row["kernel_us"] + row["kernel_us"] == pytest.approx(sum(us for _, us in pows), abs=1e-6)
