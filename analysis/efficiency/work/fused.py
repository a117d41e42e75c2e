"""Fused operators of serving and training stacks: rotary embeddings, gated activations, the fused
cross-entropy loss and mixture-of-experts layers (docs/efficiency.md).

* RoPE (``sgl_kernel::rotary_embedding``, vLLM's ``_C::rotary_embedding``: positions, query, key,
  head_size, cos_sin_cache, is_neox; in place): 3 FLOPs per rotated element (a pair takes four
  products and two sums); bytes = the rotated part of Q and K read and written, the cos/sin rows
  of the tokens' positions and the positions read.  TransformerEngine's ``FusedRoPEFunc`` (t
  ``[S, B, H, D]``, freqs): the same per element of t.
* ``silu_and_mul`` / ``gelu_and_mul`` (out ``[T, I]``, input ``[T, 2I]``): 2 FLOPs per output
  element (the activation and the product); the input read, the output written.
* ``CrossEntropyFunction`` (logits, target): 5 FLOPs per logit (the softmax's count), the logits
  and targets read, one fp32 loss a row written.
* MoE (``vllm::rocm_aiter_fused_moe``: hidden ``[M, K]``, w1 ``[E, N or 2N, K]``, w2 ``[E, K, N]``,
  topk_weights ``[M, k]``): 2·M·K·N·k for the up projection (×2 gated), 2·M·K·N·k down, 2·M·K·k
  to weight and sum the experts' outputs; bytes = the hidden states read and written and every
  expert's weights: an upper bound, as the routing is not recorded (the params say so).  vLLM's
  ``moe_forward`` records neither the weights nor k: refused, with the reason.
No I/O.
"""

from __future__ import annotations

import math

from ..op_args import Call, Work, elem_size, numel, precision_of, refused, shape_text

ROPE = frozenset({"sgl_kernel::rotary_embedding", "_C::rotary_embedding"})
GATED_ACTIVATIONS = frozenset(
    {"sgl_kernel::silu_and_mul", "_C::silu_and_mul", "aiter::silu_and_mul", "aiter::gelu_and_mul"}
    | {"_C::gelu_and_mul", "aiter::gelu_tanh_and_mul"}
)
MOE_REFUSED = frozenset({"vllm::moe_forward", "vllm::moe_forward_shared"})
MOE_NOTE = "the experts' weights and top-k are not among the call's recorded inputs"
FUSED_OPS = ROPE | GATED_ACTIVATIONS | MOE_REFUSED | {
    "FusedRoPEFunc",
    "CrossEntropyFunction",
    "vllm::rocm_aiter_fused_moe",
}


def rope_work(call: Call) -> Work | None:
    """A rotary embedding applied in place to Q and K (module doc)."""
    if call.name == "FusedRoPEFunc":
        t = call.tensor(0)
        if t is None or len(t) != 4:
            return None
        return Work(3.0 * numel(t), 2.0 * call.tensor_bytes(0), precision_of(call.types), "elementwise", "rope")
    positions, q, k, cache = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(4)
    head_size = call.number(3)
    if positions is None or q is None or k is None or cache is None or len(cache) != 2 or not head_size:
        return None
    tokens, rot_dim = numel(positions), cache[1]
    heads = (q[-1] + k[-1]) // int(head_size)
    rotated = tokens * heads * rot_dim
    nbytes = 2 * rotated * elem_size(call.types[1]) + tokens * rot_dim * elem_size(call.types[4])
    nbytes += call.tensor_bytes(0)
    params = f"tokens={tokens} heads={q[-1] // int(head_size)}+{k[-1] // int(head_size)} rot_dim={rot_dim}"
    return Work(3.0 * rotated, float(nbytes), precision_of(call.types[1:]), "elementwise", params)


def gated_activation_work(call: Call) -> Work | None:
    """``act(x[:, :I]) * x[:, I:]`` into ``out`` (module doc)."""
    out, x = call.tensor(0), call.tensor(1)
    if out is None or x is None:
        return None
    nbytes = call.tensor_bytes(1) + call.tensor_bytes(0)
    return Work(2.0 * numel(out), float(nbytes), precision_of(call.types), "elementwise", f"out={shape_text(out)}")


def cross_entropy_work(call: Call) -> Work | None:
    """A fused softmax and negative log-likelihood over the logits (module doc)."""
    logits = call.tensor(0)
    if logits is None or not logits:
        return None
    rows = math.prod(logits[:-1]) if len(logits) > 1 else 1
    nbytes = call.tensor_bytes(0) + call.tensor_bytes(1) + rows * elem_size("float")
    params = f"rows={rows} classes={logits[-1]}"
    return Work(5.0 * numel(logits), float(nbytes), precision_of(call.types), "reduction", params)


def moe_work(call: Call) -> Work | None:
    """A mixture-of-experts layer (module doc)."""
    if call.name in MOE_REFUSED:
        return refused("moe", MOE_NOTE)
    hidden, w1, w2, topk = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3)
    if hidden is None or w1 is None or w2 is None or topk is None or len(w1) != 3 or len(w2) != 3:
        return None
    m, k_dim = math.prod(hidden[:-1]), hidden[-1]
    experts, n = w2[0], w2[2] * max(k_dim // w1[-1], 1)  # int4 weights store K packed
    per_token = topk[-1]
    gated = w1[1] == 2 * n
    flops = 2.0 * m * k_dim * n * per_token * (3 if gated else 2) + 2.0 * m * k_dim * per_token
    nbytes = 2 * call.tensor_bytes(0) + call.tensor_bytes(1) + call.tensor_bytes(2) + call.tensor_bytes(3)
    params = f"M={m} K={k_dim} N={n} E={experts} top{per_token}{' gated' if gated else ''} bytes=all experts (bound)"
    return Work(flops, float(nbytes), precision_of(call.types), "moe", params)


def fused_work(call: Call) -> Work | None:
    """The work of one fused operator (module doc)."""
    if call.name in ROPE or call.name == "FusedRoPEFunc":
        return rope_work(call)
    if call.name in GATED_ACTIVATIONS:
        return gated_activation_work(call)
    if call.name == "CrossEntropyFunction":
        return cross_entropy_work(call)
    return moe_work(call)
