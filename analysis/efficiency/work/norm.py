"""Normalization work: layer, batch and RMS norm, forward and backward, ATen's and the fused RMS
norms of AITER and vLLM (docs/efficiency.md).

FLOPs are a count per element of the normalized input:

* forward: layer and batch norm 8 (mean, variance, normalize, scale, shift); RMS norm 4 (square,
  accumulate, normalize, scale) and 2 per normalized row (the mean's division, the reciprocal
  square root), + 1 per element where a residual is added first (``…_with_add``);
* backward: grad_input 9 for layer and batch norm (normalized input 2, grad·γ 1, two row sums 2,
  the combination 4), 8 for RMS norm (normalized input 1, grad·γ 1, one row sum 2, the
  combination 4), + 2 for grad_weight (product, sum) and + 1 for grad_bias (sum), as
  ``output_mask`` asks (all three when it is not recorded).

Bytes: every tensor argument read once (input, weight, bias, statistics, residual, grad_output),
and what the call writes (the output, or grad_input and the per-channel gradients; a residual it
updates).  No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..op_args import Call, Work, elem_size, numel, precision_of, shape_text


@dataclass(frozen=True)
class Norm:
    """Where a normalization's arguments are: ``x`` (the normalized input; the output has its
    shape and type), ``outputs`` (arguments it writes and does not read: ``out``, ``residual_out``),
    ``residual`` (an input added to x first, or -1; ``writes_residual``: the sum is written back
    into it), FLOPs per element, ``backward`` (``mask``: the index of ``output_mask``, -1: all
    three gradients) and ``weight`` (the size of a weight gradient)."""

    x: int
    per_element: float
    outputs: tuple[int, ...] = ()
    residual: int = -1
    writes_residual: bool = False
    backward: bool = False
    mask: int = -1
    weight: int = -1
    rms: bool = False
    #: where the weight is in a forward call (its size is the normalized row's), -1: unknown
    forward_weight: int = -1


NORMS: dict[str, Norm] = {
    "aten::native_layer_norm": Norm(0, 8.0),
    "aten::native_batch_norm": Norm(0, 8.0),
    "aten::cudnn_batch_norm": Norm(0, 8.0),
    "aten::miopen_batch_norm": Norm(0, 8.0),
    "aten::_fused_rms_norm": Norm(0, 4.0, rms=True, forward_weight=2),
    "aten::rms_norm": Norm(0, 4.0, rms=True, forward_weight=2),
    "aten::native_layer_norm_backward": Norm(1, 9.0, backward=True, mask=7, weight=5),
    "aten::native_batch_norm_backward": Norm(1, 9.0, backward=True, mask=9, weight=2),
    "aten::cudnn_batch_norm_backward": Norm(0, 9.0, backward=True, weight=2),
    "aten::miopen_batch_norm_backward": Norm(0, 9.0, backward=True, weight=2),
    "aten::_fused_rms_norm_backward": Norm(1, 8.0, backward=True, mask=5, weight=4, rms=True),
    # AITER and vLLM fused RMS norms (ROCm and CUDA serving)
    "aiter::rms_norm": Norm(0, 4.0, rms=True, forward_weight=1),
    "aiter::rmsnorm2d_fwd_ck": Norm(0, 4.0, rms=True, forward_weight=1),
    "aiter::rmsnorm": Norm(1, 4.0, outputs=(0,), rms=True, forward_weight=2),
    "aiter::rmsnorm2d_fwd_with_add_ck": Norm(1, 5.0, outputs=(0, 3), residual=2, rms=True, forward_weight=4),
    "aiter::add_rmsnorm": Norm(1, 5.0, outputs=(0, 3), residual=2, rms=True, forward_weight=4),
    "vllm::rocm_aiter_rms_norm": Norm(0, 4.0, rms=True, forward_weight=1),
    "vllm::rocm_aiter_rmsnorm2d_fwd_with_add": Norm(
        0, 5.0, residual=1, writes_residual=True, rms=True, forward_weight=2
    ),
    "_C::rms_norm": Norm(1, 4.0, outputs=(0,), rms=True, forward_weight=2),
    "_C::fused_add_rms_norm": Norm(0, 5.0, residual=1, writes_residual=True, rms=True, forward_weight=2),
}
NORM_OPS = frozenset(NORMS)


def _mask(call: Call, index: int) -> list[bool]:
    """``output_mask`` (``[True, True, False]``): which gradients the call computes."""
    text = str(call.concrete[index]) if 0 <= index < len(call.concrete) else ""
    flags = [part.strip().lower() == "true" for part in text.strip("[]").split(",")] if "," in text else []
    return flags if len(flags) == 3 else [True, True, True]


def _row_size(call: Call, spec: Norm, x: list[int]) -> int:
    """Elements of one normalized row: the recorded ``normalized_shape``, else the weight's size,
    else the last dim."""
    shape = call.ints(1) if call.name in ("aten::_fused_rms_norm", "aten::rms_norm") else None
    if shape:
        return numel(shape)
    weight = call.tensor(spec.forward_weight) if spec.forward_weight >= 0 else None
    return numel(weight) if weight else (x[-1] if x else 0)


def norm_work(call: Call) -> Work | None:
    """The work of one normalization call (module doc)."""
    spec = NORMS[call.name]
    x = call.tensor(spec.x)
    if x is None:
        return None
    x_type = call.types[spec.x]
    elements = numel(x)
    read = sum(call.tensor_bytes(i) for i in range(len(call.dims)) if i not in spec.outputs)
    flops = spec.per_element * elements
    if spec.backward:
        grad_input, grad_weight, grad_bias = _mask(call, spec.mask) if spec.mask >= 0 else [True] * 3
        flops = (spec.per_element if grad_input else 0.0) * elements
        weight_bytes = call.tensor_bytes(spec.weight) if spec.weight >= 0 else 0
        written = elements * elem_size(x_type) if grad_input else 0
        if grad_weight and weight_bytes:
            flops += 2.0 * elements
            written += weight_bytes
        if grad_bias and weight_bytes and not spec.rms:
            flops += 1.0 * elements
            written += weight_bytes
    else:
        if spec.rms:  # the mean's division and the reciprocal square root, per normalized row
            row = _row_size(call, spec, x)
            flops += 2.0 * (elements // row) if row else 0.0
        written = elements * elem_size(x_type)  # the output (into ``out`` where there is one)
        if spec.writes_residual or len(spec.outputs) > 1:  # the sum x + residual, kept
            written += call.tensor_bytes(spec.residual)
    kind = "rms" if spec.rms else "norm"
    params = f"{kind} in={shape_text(x)}" + (" +residual" if spec.residual >= 0 else "")
    return Work(flops, float(read + written), precision_of(call.types), "normalization", params)
