"""Triton kernels compiled by TorchInductor: the ATen operators a kernel fuses (from its name) and
its work (from the host op Inductor records around each launch), in TraceLens' conventions for
compiled Triton kernels (``TraceLens/PerfModel/triton_compiled_perf_model.py``).

* The name ``triton_{poi,red,per}_fused_<ops>_<n>`` lists the fused operators, sorted, joined by
  ``_``; operator names hold ``_`` too (``native_layer_norm``, ``_unsafe_view``), so the name is
  cut into the fewest pieces whose multi-word pieces are operators of :data:`MULTI_WORD_OPS`.
* The host op's last integer scalars are the kernel's sizes: ``xnumel`` for a pointwise kernel
  (``poi``), ``xnumel, rnumel`` for a reduction (``red``, ``per``).
* FLOPs = Σ :data:`FLOPS_PER_ELEMENT` of the fused operators × xnumel × rnumel (operators the
  table lacks count 0); bytes = every tensor argument once (inputs read, outputs written) plus, for
  a pointwise kernel, its first argument once more (Inductor's in-place ``in_out_ptr``) unless a
  later argument of ``xnumel`` elements has another element type (:func:`in_place`): then that is
  the output and the first is only read.  Element sizes are every recorded type's (``float`` 4,
  ``long int`` 8, ``bool`` 1), where TraceLens knows only the ``c10::`` names (docs/efficiency.md).
* Where Inductor records its own count (``kernel_flop``, ``kernel_num_gb``), those are the figures.
No I/O.
"""

from __future__ import annotations

import re

from ..op_args import Call, Work, elem_size, numel, precision_of

TRITON_NAME = re.compile(r"^triton_(poi|red|per)_fused(?:_(.+))?_(\d+)$")
#: FLOPs per element of the operators a compiled kernel fuses (TraceLens' table); the rest: 0.
FLOPS_PER_ELEMENT: dict[str, int] = {
    **dict.fromkeys(("add", "sub", "mul", "div", "relu", "mean", "sum", "abs", "neg"), 1),
    **dict.fromkeys(("ne", "eq", "lt", "gt"), 1),
    **dict.fromkeys(("pow", "sqrt", "rsqrt", "var", "reciprocal"), 2),
    **dict.fromkeys(("exp", "log", "sigmoid", "tanh", "silu"), 4),
    "gelu": 8,
}
#: ATen operators whose names hold ``_`` (and those starting with one), as Inductor writes them.
MULTI_WORD_OPS = frozenset(
    {
        "_unsafe_view", "_to_copy", "_log_softmax", "_softmax", "_unsafe_index", "_unsafe_index_put", "_foreach_add",
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention", "_fused_rms_norm", "_log_softmax_backward_data",
        "_softmax_backward_data", "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
        "native_layer_norm", "native_layer_norm_backward", "native_batch_norm", "native_batch_norm_backward",
        "native_group_norm", "native_group_norm_backward", "native_dropout", "native_dropout_backward", "layer_norm",
        "group_norm", "batch_norm", "rms_norm", "constant_pad_nd", "index_select", "index_put", "index_add",
        "index_copy", "scatter_add", "scatter_reduce", "select_scatter", "slice_scatter", "split_with_sizes",
        "as_strided", "masked_fill", "new_zeros", "new_empty", "new_ones", "new_full", "full_like", "zeros_like",
        "ones_like", "empty_like", "bitwise_and", "bitwise_or", "bitwise_not", "bitwise_xor", "logical_and",
        "logical_or", "logical_not", "logical_xor", "clamp_min", "clamp_max", "threshold_backward", "gelu_backward",
        "silu_backward", "sigmoid_backward", "tanh_backward", "nll_loss_forward", "nll_loss_backward",
        "embedding_dense_backward", "avg_pool2d", "max_pool2d_with_indices", "upsample_nearest2d",
        "upsample_bilinear2d", "var_mean", "std_mean", "nan_to_num", "lift_fresh_copy", "moe_forward",
        "scaled_dot_product_attention", "cross_entropy_loss", "log_softmax", "prepare_softmax_online",
        "scalar_tensor", "_safe_softmax", "masked_scatter", "index_reduce", "full_default", "rand_like",
        "randn_like", "inductor_seeds", "inductor_random", "inductor_lookup_seed", "_adaptive_avg_pool2d",
        "adaptive_avg_pool2d", "avg_pool2d_backward", "max_pool2d_with_indices_backward", "convolution_backward",
        "select_backward", "slice_backward", "mse_loss", "binary_cross_entropy", "smooth_l1_loss",
        "_fused_moving_avg_obs_fq_helper", "_native_batch_norm_legit",
    }
)  # fmt: skip


def is_triton(name: str) -> bool:
    """Whether an operator (or kernel) name is an Inductor-compiled Triton kernel's."""
    return TRITON_NAME.match(name) is not None


#: Tokens (``_``-separated words, an empty one included) of the longest operator name of several.
_LONGEST_OP = max((len(op.split("_")) for op in MULTI_WORD_OPS), default=1)


def fused_ops(name: str) -> list[str]:
    """The ATen operators a compiled kernel's name lists: ``triton_poi_fused_add_addmm_mul_pow_tanh_view_5``
    → add, addmm, mul, pow, tanh, view ([] for a name that is no compiled kernel's)."""
    found = TRITON_NAME.match(name)
    if found is None or not found.group(2):
        return []
    tokens = found.group(2).split("_")
    count = len(tokens)
    # best[i]: the fewest pieces covering tokens[:i]; a piece of several tokens must be an operator
    best: list[tuple[int, int] | None] = [None] * (count + 1)
    best[0] = (0, 0)
    # A piece of several tokens is an operator's name, so it has at most as many tokens as the longest
    # one: only that many starts are tried per end (linear in the name; trying every start was cubic).
    for end in range(1, count + 1):
        for start in range(max(0, end - _LONGEST_OP), end):
            prior = best[start]
            piece = "_".join(tokens[start:end])
            if prior is None or not piece or piece == "_" * len(piece):
                continue
            if end - start > 1 and piece not in MULTI_WORD_OPS:
                continue
            if tokens[start] == "" and piece not in MULTI_WORD_OPS:
                continue
            current = best[end]
            if current is None or prior[0] + 1 < current[0]:
                best[end] = (prior[0] + 1, start)
    if best[count] is None:
        return [t for t in tokens if t]
    pieces: list[str] = []
    at = count
    while at > 0:
        step = best[at]
        assert step is not None
        pieces.append("_".join(tokens[step[1] : at]))
        at = step[1]
    return pieces[::-1]


def sizes(call: Call) -> tuple[int, int] | None:
    """(xnumel, rnumel) from the host op's integer scalars (module doc), None when absent."""
    values = [int(v) for v in call.concrete if isinstance(v, str) and re.fullmatch(r"-?[0-9]{1,18}", v.strip())]
    reduction = call.name.startswith(("triton_red_", "triton_per_"))
    if reduction and len(values) >= 2:
        return values[-2], values[-1]
    if values:
        return values[-1], 1
    return None


def in_place(call: Call, tensors: list[int], xnumel: int) -> bool:
    """Whether a pointwise kernel's first tensor is read and written (Inductor's ``in_out_ptr0``,
    an output reusing an input's buffer), as TraceLens assumes for every pointwise kernel.  An
    inference from the shapes: a buffer written in place keeps its element type, so where a later
    tensor argument of ``xnumel`` elements has another type, that one is the kernel's output
    (``out_ptr``: ``_to_copy`` reads fp32 and writes bf16), and the first is only read."""
    first = call.types[tensors[0]]
    return not any(
        call.types[i] != first and numel(call.tensor(i) or []) == xnumel and elem_size(call.types[i]) > 0
        for i in tensors[1:]
    )


def triton_work(call: Call, counted: tuple[float | None, float | None] | None = None) -> Work | None:
    """The work of one compiled Triton kernel launch (module doc); ``counted``: Inductor's own
    (``kernel_flop``, ``kernel_num_gb``) where the host op records them."""
    ops = fused_ops(call.name)
    tensors = [i for i in range(len(call.dims)) if call.tensor(i) is not None]
    flop, num_gb = counted or (None, None)
    names = ",".join(ops)
    if flop is not None and num_gb is not None and num_gb > 0:
        return Work(float(flop), float(num_gb) * 1e9, precision_of(call.types), "triton", f"{names} (inductor)")
    found = sizes(call)
    if found is None or not tensors:
        return None
    xnumel, rnumel = found
    flops = float(sum(FLOPS_PER_ELEMENT.get(op, 0) for op in ops) * xnumel * rnumel)
    nbytes = sum(call.tensor_bytes(i) for i in tensors)
    if call.name.startswith("triton_poi_") and in_place(call, tensors, xnumel):
        nbytes += elem_size(call.types[tensors[0]]) * xnumel
    shape = f"x={xnumel}" + (f" r={rnumel}" if rnumel > 1 else "")
    return Work(flops, float(nbytes), precision_of(call.types), "triton", f"{names} {shape}")
