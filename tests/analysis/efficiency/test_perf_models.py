"""Perf models of more operators (norms, reductions, FP8/FP4 and grouped GEMMs, attention kernels),
each against a hand calculation from the recorded shapes and, where
TraceLens models the same operator, TraceLens' own figure (samples/tracelens_live/, written by
scripts/tracelens_witness.py: its perf report of a sample, or its model class run on the recorded
calls of samples/tracelens_live/perf_model_calls.json, operators no trace here holds).  Where the
two definitions differ, the test states by how much (docs/efficiency.md says why)."""

from __future__ import annotations

import csv
import json
import math

import polars as pl
import pytest
from support import loaded, raw_events, sample
from witness import kernels_under

from profview.analysis.efficiency.op_models import operator_work

MIB = 1 << 20
RESNET = "resnet50_train_amp.pt.trace.json.gz"
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
SGLANG = "tracelens_mi300_sglang_qwen3_prefill_decode.json.gz"
NORMS = "tracelens_mi300_normalization_layers.json.gz"
VLLM = "tracelens_mi300_vllm_piecewise_replay.json.gz"
B200 = "tracelens_b200_nccl_eager_no_steps.json.gz"


def theirs(trace: str, sheet: str, name: str, dims: list, concrete_tail: str | None = None) -> dict[str, str]:
    """TraceLens' row of a sample's perf report for one operator and recorded dims."""
    with open(sample(f"tracelens_live/{trace.split('.')[0]}.{sheet}.csv"), newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["name"] == name and r["Input Dims_first"] == json.dumps(dims)]
    rows = [r for r in rows if concrete_tail is None or r["Concrete Inputs_first"].endswith(concrete_tail)]
    assert len(rows) == 1, rows
    return rows[0]


def ours(trace: str, name: str, dims: list, params: str | None = None) -> dict:
    frame = loaded(trace).efficiency()
    rows = frame.filter((pl.col("name") == name) & (pl.col("input_dims") == json.dumps(dims)))
    if params is not None:
        rows = rows.filter(pl.col("params").str.contains(params, literal=True))
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def raw_call(trace: str, name: str, dims: list) -> dict:
    """The first raw event of ``name`` with these dims (its recorded args, read with json)."""
    return next(e for e in raw_events(trace) if e.get("name") == name and e["args"].get("Input Dims") == dims)


def work_of(event: dict):  # type: ignore[no-untyped-def]
    args = event.get("args", event)  # a trace's event, or a call of perf_model_calls.json
    return operator_work(
        event["name"],
        json.dumps(args["Input Dims"]),
        json.dumps(args["Input type"]),
        json.dumps(args.get("Concrete Inputs", [])),
    )


# -- pointwise backward and reductions ---------------------------------------------------------


def test_relu_backward_threshold_backward() -> None:
    """ReLU's backward, ``threshold_backward(grad, self, 0)``, fp16 [64, 256, 56, 56]: 1 FLOP an
    element, two tensors read and one written: 294 MiB; TraceLens: the same figures."""
    dims = [[64, 256, 56, 56], [64, 256, 56, 56], []]
    row = ours(RESNET, "aten::threshold_backward", dims)
    elements = 64 * 256 * 56 * 56
    assert row["gflops"] * 1e9 == pytest.approx(elements)
    assert row["data_mb"] * MIB == 3 * elements * 2 == 294 * MIB
    tracelens = theirs(RESNET, "BinaryElementwise", "aten::threshold_backward", dims)
    assert row["calls"] == int(tracelens["name_count"]) == 9
    assert float(tracelens["GFLOPS_first"]) == pytest.approx(row["gflops"], rel=1e-12)
    assert float(tracelens["Data Moved (MB)_first"]) == pytest.approx(row["data_mb"], rel=1e-12)
    calls = [(e, us) for e, us in kernels_under(raw_events(RESNET), "aten::threshold_backward")]
    calls = [us for e, us in calls if e["args"]["Input Dims"] == dims]
    assert row["kernel_us"] == pytest.approx(sum(calls), abs=1e-6)


def test_argmax_and_max_reductions() -> None:
    """SGLang's sampling: ``argmax(logits[15, 151936] fp32, dim=-1)`` reads the logits and writes
    15 int64 indices (1 FLOP an element); ``max(long[15])`` (no dim) one int64.  TraceLens models
    ``max`` (the same 15 FLOPs and 128 bytes) and not ``argmax``."""
    argmax = ours(SGLANG, "aten::argmax", [[15, 151936], [], []])
    assert argmax["gflops"] * 1e9 == pytest.approx(15 * 151936)
    assert argmax["data_mb"] * MIB == 15 * 151936 * 4 + 15 * 8
    assert argmax["params"] == "in=15x151936 out=15 int64"
    maximum = ours(SGLANG, "aten::max", [[15]])
    assert (maximum["gflops"] * 1e9, maximum["data_mb"] * MIB) == (pytest.approx(15), 15 * 8 + 8)
    tracelens = theirs(SGLANG, "Reduce_fwd", "aten::max", [[15]])
    assert float(tracelens["Data Moved (MB)_first"]) * MIB == pytest.approx(128)
    assert float(tracelens["GFLOPS_first"]) == pytest.approx(maximum["gflops"], rel=1e-12)


def test_max_over_a_dim_writes_values_and_indices() -> None:
    work = operator_work("aten::max", "[[8, 512], [], []]", '["float", "Scalar", "Scalar"]', '["", "1", "False"]')
    assert work is not None and work.flops == 8 * 512
    assert work.bytes == 8 * 512 * 4 + 8 * 4 + 8 * 8  # input read; values (fp32) and indices (int64) written
    elementwise = operator_work("aten::max", "[[8, 512], [8, 512]]", '["c10::BFloat16", "float"]', '["", ""]')
    assert elementwise is not None and elementwise.bytes == 8 * 512 * (2 + 4 + 4)  # max(a, b): promoted


def test_cross_entropy_pieces() -> None:
    """``cross_entropy`` is ``log_softmax`` and ``nll_loss``: on gpt2 ``nll_loss_forward`` gathers one
    logit of each of the 8192 rows (1 FLOP a row), ``nll_loss_backward`` writes the whole
    [8192, 50257] fp32 gradient, ``_log_softmax_backward_data`` 4 FLOPs an element."""
    event = raw_call(GPT2, "aten::nll_loss_forward", [[8192, 50257], [8192], [], [], []])
    work = work_of(event)
    assert work is not None and work.flops == 8192
    assert work.bytes == 8192 * 4 + 8192 * 8 + 4  # one logit a row, the targets, the mean loss
    backward = raw_call(GPT2, "aten::nll_loss_backward", [[], [8192, 50257], [8192], [], [], [], []])
    work = work_of(backward)
    assert work is not None and work.flops == 8192
    assert work.bytes == 4 + 8192 * 8 + 4 + 8192 * 50257 * 4
    row = ours(GPT2, "aten::_log_softmax_backward_data", [[8192, 50257], [8192, 50257], [], []])
    assert row["gflops"] * 1e9 == pytest.approx(4 * 8192 * 50257)


# -- normalization ----------------------------------------------------------------------------


def test_layer_norm_backward() -> None:
    """gpt2's ``native_layer_norm_backward`` over [8, 1024, 768] fp32, all three gradients: 9 FLOPs
    an element for grad_input, + 2 (grad_weight) + 1 (grad_bias); bytes: grad_out, input, the
    per-row mean and rstd, weight and bias read, grad_input and the two parameter gradients
    written.  TraceLens: 9 an element (it counts no FLOP for the parameter gradients: the model's
    figure is 4/3 of its), and reads the input twice instead of writing grad_input."""
    dims = [[8, 1024, 768], [8, 1024, 768], [], [8, 1024, 1], [8, 1024, 1], [768], [768], []]
    row = ours(GPT2, "aten::native_layer_norm_backward", dims)
    elements, rows = 8 * 1024 * 768, 8 * 1024
    assert row["gflops"] * 1e9 == pytest.approx(12 * elements)
    read = 2 * elements * 4 + 2 * rows * 4 + 2 * 768 * 4
    assert row["data_mb"] * MIB == pytest.approx(read + elements * 4 + 2 * 768 * 4)
    tracelens = theirs(GPT2, "Normalization", "aten::native_layer_norm_backward", dims)
    assert float(tracelens["GFLOPS_first"]) * 1e9 == pytest.approx(9 * elements)
    assert row["gflops"] / float(tracelens["GFLOPS_first"]) == pytest.approx(4 / 3)
    assert row["data_mb"] / float(tracelens["Data Moved (MB)_first"]) == pytest.approx(1.0008, abs=1e-4)


def test_batch_norm_backward() -> None:
    """resnet's ``cudnn_batch_norm_backward`` (input first, grad_output second), fp16 [64, 256, 56,
    56]: 12 FLOPs an element (grad_input 9, grad_weight 2, grad_bias 1); 294 MiB (grad_out and
    input read, grad_input written, the fp32 per-channel tensors).  TraceLens takes cuDNN's
    backward for an inference one (``is_training`` False): 4 FLOPs an element and no write, 3× and
    1.5× below these figures."""
    dims = [[64, 256, 56, 56], [64, 256, 56, 56], [256], [256], [256], [256], [256], [], [0]]
    row = ours(RESNET, "aten::cudnn_batch_norm_backward", dims)
    elements = 64 * 256 * 56 * 56
    assert row["gflops"] * 1e9 == pytest.approx(12 * elements)
    channel = 5 * 256 * 4 + 1  # weight, running and saved stats (fp32), the reserve space (uint8, 1 element)
    assert row["data_mb"] * MIB == pytest.approx(2 * elements * 2 + channel + elements * 2 + 2 * 256 * 4)
    tracelens = theirs(RESNET, "Normalization", "aten::cudnn_batch_norm_backward", dims)
    assert row["calls"] == int(tracelens["name_count"]) == 12
    assert row["gflops"] / float(tracelens["GFLOPS_first"]) == pytest.approx(3.0, rel=1e-5)
    assert row["data_mb"] / float(tracelens["Data Moved (MB)_first"]) == pytest.approx(1.5, rel=1e-4)


@pytest.mark.parametrize(
    ("mask", "per_element"),
    [("[True, True]", 10), ("[True, False]", 8)],
)
def test_fused_rms_norm_backward(mask: str, per_element: int) -> None:
    """``_fused_rms_norm_backward`` (torch's fused RMSNorm), [8, 16, 32, 32] fp32 over [32, 32]:
    grad_input 8 FLOPs an element, + 2 for grad_weight when the mask asks: TraceLens' figures."""
    frame = loaded(NORMS).efficiency().filter(pl.col("name") == "aten::_fused_rms_norm_backward")
    wanted = 2 if per_element == 10 else 0  # the weight is recorded only where its gradient is asked for
    row = next(r for r in frame.iter_rows(named=True) if len(json.loads(r["input_dims"])[4]) == wanted)
    assert row["gflops"] * 1e9 == pytest.approx(per_element * 8 * 16 * 32 * 32)
    with open(sample("tracelens_live/tracelens_mi300_normalization_layers.Normalization.csv"), newline="") as fh:
        tracelens = [r for r in csv.DictReader(fh) if r["name"] == "aten::_fused_rms_norm_backward"]
    (their,) = [r for r in tracelens if r["Concrete Inputs_first"].endswith(f"'{mask}']")]
    assert float(their["GFLOPS_first"]) == pytest.approx(row["gflops"], rel=1e-12)
    rstd = 8 * 16 * 4  # read here; TraceLens counts a weight and its gradient where none is recorded
    unrecorded = 0 if per_element == 10 else 2 * 32 * 32 * 4
    assert (row["data_mb"] - float(their["Data Moved (MB)_first"])) * MIB == pytest.approx(rstd - unrecorded)


def test_rms_norm_forward_aten_and_aiter() -> None:
    """RMSNorm forward: 4 FLOPs an element and 2 a row; bytes = input and weight read, output
    written.  torch's ``_fused_rms_norm`` [8, 16, 32, 32] over [32, 32]; AITER's ``rmsnorm(out,
    input, weight, eps)`` (SGLang's q/k norm, [491520, 128]) and ``add_rmsnorm`` (+1 an element
    for the residual, which it writes back): TraceLens' figures, all of them."""
    fused = [r for r in loaded(NORMS).efficiency().iter_rows(named=True) if r["name"] == "aten::_fused_rms_norm"]
    affine = next(r for r in fused if json.loads(r["input_dims"])[2] == [32, 32])
    assert affine["gflops"] * 1e9 == pytest.approx(4 * 131072 + 2 * 128)
    with open(sample("tracelens_live/tracelens_mi300_normalization_layers.Normalization.csv"), newline="") as fh:
        (their_fused,) = [r for r in csv.DictReader(fh) if r["name"] == "aten::_fused_rms_norm"]
    assert float(their_fused["GFLOPS_first"]) == pytest.approx(affine["gflops"], rel=1e-12)
    rms = ours(SGLANG, "aiter::rmsnorm", [[491520, 128], [491520, 128], [128], []])
    assert rms["gflops"] * 1e9 == pytest.approx(4 * 491520 * 128 + 2 * 491520)
    assert rms["data_mb"] * MIB == 2 * 491520 * 128 * 2 + 128 * 2
    add = ours(SGLANG, "aiter::add_rmsnorm", [[15360, 4096]] * 4 + [[4096], []])
    assert add["gflops"] * 1e9 == pytest.approx(5 * 15360 * 4096 + 2 * 15360)
    assert add["data_mb"] * MIB == 4 * 15360 * 4096 * 2 + 4096 * 2  # input, residual in; out, residual out
    for row, dims, name in (
        (rms, [[491520, 128], [491520, 128], [128], []], "aiter::rmsnorm"),
        (add, [[15360, 4096]] * 4 + [[4096], []], "aiter::add_rmsnorm"),
    ):
        their = theirs(SGLANG, "RMSNorm_fwd", name, dims)
        assert row["calls"] == int(their["name_count"])
        assert float(their["GFLOPS_first"]) == pytest.approx(row["gflops"], rel=1e-12)
        assert float(their["Data Moved (MB)_first"]) == pytest.approx(row["data_mb"], rel=1e-12)


def test_vllm_cuda_rms_norms() -> None:
    """vLLM's CUDA ``_C::fused_add_rms_norm(input, residual, weight, eps)`` updates both in place
    (B200 trace, [888, 2880] bf16): 5 FLOPs an element and 2 a row; input, residual and weight
    read, both written back."""
    row = ours(B200, "_C::fused_add_rms_norm", [[888, 2880], [888, 2880], [2880], []])
    assert row["gflops"] * 1e9 == pytest.approx(5 * 888 * 2880 + 2 * 888)
    assert row["data_mb"] * MIB == 4 * 888 * 2880 * 2 + 2880 * 2
    assert row["calls"] == 72


# -- serving: RoPE, gated activations, custom GEMMs, attention without lengths, MoE ------------


def test_rotary_embedding() -> None:
    """SGLang's ``rotary_embedding(positions, q[15360, 4096], k[15360, 1024], 128, cache[41216,
    128], neox)``: 40 heads of 128 rotated a token, 3 FLOPs an element; bytes: Q and K read and
    written, each token's cos/sin row and position read.  TraceLens: the same FLOPs; it counts
    neither the cos/sin rows nor the positions (3.87 MiB, 1.3% less)."""
    dims = [[15360], [15360, 4096], [15360, 1024], [], [41216, 128], []]
    row = ours(SGLANG, "sgl_kernel::rotary_embedding", dims)
    rotated = 15360 * (32 + 8) * 128
    assert row["gflops"] * 1e9 == pytest.approx(3 * rotated)
    assert row["data_mb"] * MIB == 2 * rotated * 2 + 15360 * 128 * 2 + 15360 * 8
    their = theirs(SGLANG, "RoPE_fwd", "sgl_kernel::rotary_embedding", dims)
    assert float(their["GFLOPS_first"]) == pytest.approx(row["gflops"], rel=1e-12)
    assert (row["data_mb"] - float(their["Data Moved (MB)_first"])) * MIB == 15360 * 128 * 2 + 15360 * 8


def test_silu_and_mul() -> None:
    """``silu_and_mul(out[15360, 12288], x[15360, 24576])``: 2 FLOPs an output element (the
    activation and the product, one each as every elementwise operator here); TraceLens counts 5
    (SiLU as 4): 2.5× these.  Bytes: the same 1,080 MiB."""
    dims = [[15360, 12288], [15360, 24576]]
    row = ours(SGLANG, "sgl_kernel::silu_and_mul", dims)
    assert row["gflops"] * 1e9 == pytest.approx(2 * 15360 * 12288)
    their = theirs(SGLANG, "UnaryElementwise", "sgl_kernel::silu_and_mul", dims)
    assert float(their["GFLOPS_first"]) / row["gflops"] == pytest.approx(2.5)
    assert float(their["Data Moved (MB)_first"]) == row["data_mb"] == 1080.0


@pytest.mark.parametrize(
    ("trace", "name", "dims", "sheet"),
    [
        (VLLM, "vllm::rocm_unquantized_gemm", [[46, 2880], [201088, 2880], []], "GEMM"),
        (SGLANG, "aiter::gemm_a16w16", [[15360, 4096], [24576, 4096], [], [], [], [], []], "GEMM"),
    ],
)
def test_custom_gemms_x_times_weight_transposed(trace: str, name: str, dims: list, sheet: str) -> None:
    """vLLM's ROCm GEMM and AITER's a16w16 compute x @ weightᵀ: M = x's rows, N = the weight's;
    on these traces each runs an ``aten::mm`` inside, which is then the row (a GEMM around a GEMM
    is a wrapper).  TraceLens lists both calls, with the same figures."""
    event = raw_call(trace, name, dims)
    work = work_of(event)
    (m, k), (n, _k) = dims[0], dims[1]
    assert work is not None and work.flops == 2 * m * n * k
    assert work.bytes == (m * k + n * k + m * n) * 2
    their = theirs(trace, sheet, name, dims)
    assert float(their["GFLOPS_first"]) * 1e9 == pytest.approx(work.flops, rel=1e-12)
    assert float(their["Data Moved (MB)_first"]) * MIB == pytest.approx(work.bytes, rel=1e-12)
    inner = ours(trace, "aten::mm", [[m, k], [k, n]])
    assert inner["gflops"] * 1e9 == pytest.approx(work.flops) and inner["data_mb"] * MIB == work.bytes


def test_attention_without_sequence_lengths_is_refused() -> None:
    """AITER's paged ``mha_batch_prefill`` (SGLang) records Q and the KV cache, not the sequences'
    lengths: no figure, the reason, and its kernel time all the same."""
    frame = loaded(SGLANG).efficiency()
    (row,) = frame.filter(pl.col("name") == "aiter::mha_batch_prefill").to_dicts()
    assert row["gflops"] is None and row["tflops_s"] is None and row["bound"] is None
    assert "cu_seqlens" in row["note"]
    calls = kernels_under(raw_events(SGLANG), "aiter::mha_batch_prefill")
    assert row["calls"] == len(calls) == 36
    assert row["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-6)


def test_vllm_moe_forward_is_refused_with_its_time() -> None:
    """vLLM's ``moe_forward(hidden[888, 3072], router_logits[888, 128], layer)`` on the B200: the
    experts' weights and k are not recorded, so no FLOPs; its 36 calls and their kernels (the
    bmm_* expert GEMMs) are the row's time."""
    frame = loaded(B200).efficiency()
    (row,) = frame.filter(pl.col("name") == "vllm::moe_forward").to_dicts()
    assert row["gflops"] is None and "weights and top-k" in row["note"]
    calls = kernels_under(raw_events(B200), "vllm::moe_forward")
    assert row["calls"] == len(calls) == 36
    assert row["kernel_us"] == pytest.approx(sum(us for _, us in calls), abs=1e-6)
    assert row["category"] == "moe"


# -- operators no trace here holds: the recorded calls of tracelens_live/perf_model_calls.json ---


def _calls() -> list[tuple[dict, dict]]:
    calls = json.loads(sample("tracelens_live/perf_model_calls.json").read_text())
    with open(sample("tracelens_live/calls.csv"), newline="") as fh:
        figures = list(csv.DictReader(fh))
    return list(zip(calls, figures, strict=True))


def _call(note_start: str):  # type: ignore[no-untyped-def]
    call, their = next((c, t) for c, t in _calls() if c["note"].startswith(note_start))
    return call, work_of(call), their


def test_fp8_scaled_mm() -> None:
    """FP8 ``_scaled_mm`` 4096×8192 @ 8192×4096, bf16 out: 2·M·N·K; fp8 A and B, the two fp32
    scales, a bf16 output.  TraceLens: the same FLOPs; 8 bytes less (it leaves the scales out)."""
    _, work, their = _call("FP8 tensor-wise")
    m, n, k = 4096, 4096, 8192
    assert work.flops == 2 * m * n * k == int(their["flops"])
    assert work.bytes == m * k + k * n + 2 * 4 + m * n * 2
    assert work.bytes - int(their["bytes"]) == 8
    assert work.precision == "fp8" and "out=bf16" in work.params


def test_fp4_scaled_mm_counts_two_values_a_byte() -> None:
    """MXFP4 ``_scaled_mm``: each byte of A [4096, 4096] and B holds two fp4 values, so K is
    8192 and the FLOPs 2·4096·4096·8192; the e8m0 block scales are read too.  TraceLens takes the
    recorded 4096 for K: half the FLOPs."""
    _, work, their = _call("FP4")
    assert work.flops == 2 * 4096 * 4096 * 8192
    assert work.flops / float(their["flops"]) == 2.0
    assert work.bytes == 2 * 4096 * 4096 + 2 * 4096 * 512 + 4096 * 4096 * 2
    assert work.precision == "fp4"


@pytest.mark.parametrize("note", ["bf16 grouped", "FP8 grouped"])
def test_grouped_gemm(note: str) -> None:
    """``_grouped_mm``/``_scaled_grouped_mm``, 8192 routed tokens [8192, 4096] against 8 experts'
    [4096, 14336]: each token meets one expert, 2·8192·4096·14336 FLOPs whatever the split;
    bytes: A, the 8 weights, offsets (and scales), the output [8192, 14336] in bf16.  TraceLens
    has no model for these two."""
    _, work, their = _call(note)
    assert their["error"] == "no TraceLens model"
    assert work.flops == 2 * 8192 * 4096 * 14336
    element = 1 if note.startswith("FP8") else 2
    inputs = (8192 * 4096 + 8 * 4096 * 14336) * element + 8 * 4
    if note.startswith("FP8"):
        inputs += 8192 * 4 + 8 * 14336 * 4
    assert work.bytes == inputs + 8192 * 14336 * 2
    assert work.params == "G=8 M=8192 N=14336 K=4096"


def test_flash_attn_forward_and_backward() -> None:
    """flash-attn's ``_flash_attn_forward`` ([B, N, H, d]: 2×4096 tokens, 32 query heads over 8 KV
    heads, d 128, causal): 4·B·Hq·N²·d / 2 — TraceLens' figure, FLOPs and bytes.  Its backward:
    2.5× the forward; TraceLens adds the reduction of the GQA heads' gradients (+3.1 MFLOP) and
    leaves out the forward's output, which the backward reads (64 MiB)."""
    _c, forward, their = _call("flash-attn 2 forward")
    b, n, hq, hk, d = 2, 4096, 32, 8, 128
    assert forward.flops == 4 * b * hq * n * n * d / 2 == float(their["flops"])
    assert forward.bytes == (b * n * hq * d * 2 + 2 * b * n * hk * d) * 2 == int(their["bytes"])
    assert "H=32/8" in forward.params and "causal=yes" in forward.params
    _c, backward, their = _call("flash-attn 2 backward")
    assert backward.flops == 2.5 * forward.flops
    assert float(their["flops"]) - backward.flops == 2 * b * n * d * (hq // hk - 1) / 2  # GQA sums, causal
    assert backward.bytes - int(their["bytes"]) == b * n * hq * d * 2


def test_aiter_and_flash_attn_3() -> None:
    """AITER's ``mha_fwd`` (not causal), ``mha_bwd`` (causal) and flash-attn 3's ``fwd`` (causal
    at its 25th argument): TraceLens' figures, but the backward's bytes (the output it reads)."""
    _c, work, their = _call("AITER MHA forward")
    assert work.flops == 4 * 2 * 32 * 4096 * 4096 * 128 == float(their["flops"])
    assert work.bytes == int(their["bytes"])
    _c, work, their = _call("AITER MHA backward")
    assert work.flops == 2.5 * 4 * 2 * 32 * 4096 * 4096 * 128 / 2 == float(their["flops"])
    assert work.bytes - int(their["bytes"]) == 2 * 4096 * 32 * 128 * 2
    _c, work, their = _call("flash-attn 3")
    assert work.flops == 4 * 16 * 2048 * 2048 * 128 / 2 == float(their["flops"])
    assert work.bytes == int(their["bytes"])


def test_causal_fraction_when_query_and_key_lengths_differ() -> None:
    """Causal attention with Nq ≠ Nkv keeps the pairs the mask keeps: top-left for PyTorch's SDPA
    (one query of eight keys sees key 0), bottom-right for flash-attn (it sees all eight)."""
    from profview.analysis.efficiency.work.attention import causal_pairs

    assert causal_pairs(1, 8, bottom_right=False) == 1 / 8
    assert causal_pairs(1, 8, bottom_right=True) == 1.0
    assert causal_pairs(2, 4, bottom_right=True) == (3 + 4) / 8
    assert causal_pairs(4, 4, bottom_right=False) == 0.5  # the flash-attention convention, not 10/16


def test_fused_moe_layer() -> None:
    """AITER's fused MoE: 512 tokens, hidden 4096, 8 experts of 14336, top-2, gated: up
    2·M·K·N·k·2, down 2·M·K·N·k, the weighted sum 2·M·K·k; TraceLens: the same GEMMs, M·K·(2k−1)
    for the sum.  Bytes: every expert's weights (a bound: the routing is not recorded; TraceLens
    estimates the experts in use, all 8 here)."""
    _c, work, their = _call("AITER fused MoE")
    m, k, n, top = 512, 4096, 14336, 2
    assert work.flops == 2 * m * k * n * top * 3 + 2 * m * k * top
    assert work.flops - float(their["flops"]) == 2 * m * k * top - m * k * (2 * top - 1)
    assert work.bytes - float(their["bytes"]) == pytest.approx(512 * 2 * 4, abs=1)  # the top-k weights
    assert "bound" in work.params


def test_fused_cross_entropy_and_rope() -> None:
    """TransformerEngine's ``CrossEntropyFunction`` (5 FLOPs a logit, logits and targets read, an
    fp32 loss a row) and ``FusedRoPEFunc`` (3 FLOPs an element, read and written): TraceLens'."""
    _c, work, their = _call("fused cross-entropy")
    assert work.flops == 5 * 16384 * 32000 == float(their["flops"])
    assert work.bytes == 16384 * 32000 * 4 + 16384 * 8 + 16384 * 4 == int(their["bytes"])
    _c, work, their = _call("TransformerEngine RoPE")
    elements = math.prod([4096, 2, 32, 128])
    assert work.flops == 3 * elements == float(their["flops"])
    assert work.bytes == 2 * elements * 2 == int(their["bytes"])


# -- beside each row: parameters, precision, per-call spread -----------------------------------


def test_params_precision_and_spread_beside_each_row() -> None:
    """The H100 Qwen trace's first GEMM: M/N/K/bias in ``params``, bf16, and the median,
    least and most of one call's kernel time and TFLOP/s, from the raw launches under each call."""
    trace = "tracelens_h100_qwen1.5-0.5b.json.gz"
    dims = [[8944, 1024], [1024, 2816]]
    row = ours(trace, "aten::mm", dims)
    assert row["params"] == "M=8944 N=2816 K=1024 bias=no" and row["precision"] == "bf16"
    assert row["kernel_layout"] == "TN"
    events = raw_events(trace)
    calls = [e for e in events if e.get("name") == "aten::mm" and e["args"].get("Input Dims") == dims]
    launches = {
        r["args"]["correlation"]
        for r in events
        if r.get("cat") == "cuda_runtime"
        and "correlation" in r.get("args", {})
        and any(c["tid"] == r["tid"] and c["ts"] <= r["ts"] <= c["ts"] + c["dur"] for c in calls)
    }
    names = {e["name"] for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in launches}
    assert names and all("_tn_" in name for name in names)  # cuBLAS' sm90_xmma_gemm_…_tn_n_…: A transposed
    times = sorted(us for e, us in kernels_under(raw_events(trace), "aten::mm") if e["args"]["Input Dims"] == dims)
    assert len(times) == row["calls"] == 48
    median = (times[23] + times[24]) / 2
    assert (row["us_min"], row["us_max"]) == (pytest.approx(times[0]), pytest.approx(times[-1]))
    assert row["us_median"] == pytest.approx(median)
    flop = row["gflops"] * 1e9
    assert row["tflops_s_max"] == pytest.approx(flop / times[0] / 1e6)
    assert row["tflops_s_min"] == pytest.approx(flop / times[-1] / 1e6)
    sdpa = loaded(trace).efficiency().filter(pl.col("category") == "attention").row(0, named=True)
    assert sdpa["params"] == "B=16 H=16/16 Nq=559 Nkv=559 d=64 causal=yes"
    conv_dims = [[4, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]
    conv = ours("tracelens_h100_vit_falconsai.json.gz", "aten::convolution", conv_dims)
    assert conv["params"] == "in=4x3x224x224 w=768x3x16x16 stride=16,16 pad=0,0 groups=1 bias=yes"
