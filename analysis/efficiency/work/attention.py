"""Attention work: PyTorch's scaled-dot-product attention and the attention operators of
flash-attn (2 and 3) and AITER (docs/efficiency.md).

Forward FLOPs = 2·B·Hq·Nq·Nkv·(d_qk + d_v) (the two matrix products; softmax not counted) times
the fraction of (query, key) pairs a causal mask keeps: ½ when Nq = Nkv (the flash-attention
convention), else the exact count — top-left aligned for PyTorch's SDPA (query i sees keys 0..i),
bottom-right for flash-attn and AITER (the last query sees every key).  Bytes = Q, K, V and the
output (grouped-query K/V counted at their own head count).  Backward = 2.5 × the forward FLOPs
(recomputing Q·Kᵀ, then four products); bytes = Q, K, V, the output and its gradient read, the
three gradients written.  Variable-length (``varlen``) calls are refused: their sequence lengths
are the values of ``cu_seqlens``, which a trace does not record.  No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..op_args import Call, Work, elem_size, numel, precision_of, refused


@dataclass(frozen=True)
class Layout:
    """Where an attention operator's arguments are: Q, K, V indices, ``heads_first`` (``[B, H,
    N, d]`` as PyTorch's SDPA; else ``[B, N, H, d]``), the ``causal`` and ``dropout`` indices,
    ``backward``, ``bottom_right`` (causal alignment), the ``window`` (left, right) indices or
    None."""

    q: int
    causal: int
    dropout: int | None
    backward: bool = False
    heads_first: bool = True
    bottom_right: bool = False
    window: tuple[int, int] | None = None


def _flash(q: int, causal: int, dropout: int | None, backward: bool, window: int | None) -> Layout:
    return Layout(q, causal, dropout, backward, False, True, (window, window + 1) if window is not None else None)


ATTENTION: dict[str, Layout] = {
    "aten::_scaled_dot_product_flash_attention": Layout(0, 4, 3),
    "aten::_scaled_dot_product_efficient_attention": Layout(0, 6, 5),
    "aten::_scaled_dot_product_cudnn_attention": Layout(0, 6, 5),
    "aten::_scaled_dot_product_attention_math": Layout(0, 5, 4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": Layout(0, 4, 3),
    "aten::_scaled_dot_product_flash_attention_backward": Layout(1, 11, 10, backward=True),
    "aten::_scaled_dot_product_efficient_attention_backward": Layout(1, 11, 9, backward=True),
    "aten::_scaled_dot_product_cudnn_attention_backward": Layout(1, 14, 13, backward=True),
    # flash-attn 2 (its custom ops, both namespaces it has used)
    "flash_attn::_flash_attn_forward": _flash(0, 5, 3, False, 6),
    "flashattn::_flash_attn_forward": _flash(0, 5, 3, False, 6),
    "flash_attn::_flash_attn_backward": _flash(1, 11, 9, True, 12),
    "flashattn::_flash_attn_backward": _flash(1, 11, 9, True, 12),
    # AITER (ROCm)
    "aiter::_flash_attn_forward": _flash(0, 5, 3, False, 6),
    "aiter::_flash_attn_backward": _flash(1, 12, 10, True, 13),
    "aiter::mha_fwd": _flash(0, 5, 3, False, 6),
    "aiter::fmha_v3_fwd": _flash(0, 5, 3, False, 6),
    "aiter::mha_bwd": _flash(1, 8, 6, True, 9),
    "aiter::wrapper_fmha_v3_fwd": _flash(1, 6, 4, False, None),
    # flash-attn 3 (Hopper): no dropout
    "flash_attn_3::fwd": _flash(0, 24, None, False, None),
}
#: Attention operators whose sequence lengths the trace does not record.
VARLEN = frozenset(
    {
        "flash_attn::_flash_attn_varlen_forward",
        "flashattn::_flash_attn_varlen_forward",
        "flash_attn::_flash_attn_varlen_backward",
        "flashattn::_flash_attn_varlen_backward",
        "aiter::mha_varlen_fwd",
        "aiter::fmha_v3_varlen_fwd",
        "aiter::mha_batch_prefill",
        "vllm::unified_attention_with_output",
    }
)
VARLEN_NOTE = "sequence lengths are the values of cu_seqlens (or of the KV cache's block tables), not recorded"
BACKWARD_FACTOR = 2.5


def causal_pairs(n_q: int, n_kv: int, bottom_right: bool) -> float:
    """The (query, key) pairs a causal mask keeps, as a fraction of Nq·Nkv (½ when Nq = Nkv)."""
    if n_q == n_kv:
        return 0.5
    if bottom_right:  # query i sees keys up to Nkv - Nq + i
        kept = sum(min(max(n_kv - n_q + i + 1, 0), n_kv) for i in range(n_q))
    else:  # query i sees keys 0..i
        kept = sum(min(i + 1, n_kv) for i in range(n_q))
    return kept / (n_q * n_kv)


def attention_work(call: Call) -> Work | None:
    """The work of one attention call (module doc)."""
    if call.name in VARLEN:
        return refused("attention", VARLEN_NOTE)
    layout = ATTENTION[call.name]
    q, k, v = (call.tensor(layout.q + i) for i in range(3))
    if q is None or k is None or v is None or not all(len(t) == 4 for t in (q, k, v)):
        return None
    if layout.heads_first:
        (batch, heads, n_q, d_qk), (_, heads_kv, n_kv, _), d_v = q, k, v[3]
    else:
        (batch, n_q, heads, d_qk), (_, n_kv, heads_kv, _), d_v = q, k, v[3]
    causal = call.flag(layout.causal)
    dropout = call.number(layout.dropout) if layout.dropout is not None else None
    if layout.window is not None:
        left, right = (call.number(i) for i in layout.window)
        if (left is not None and left >= 0) or (right is not None and right >= 0 and not causal):
            return refused("attention", "a sliding window: the pairs it keeps depend on the window per query")
    flops = 2.0 * batch * heads * n_q * n_kv * (d_qk + d_v)
    if causal:
        flops *= causal_pairs(n_q, n_kv, layout.bottom_right)
    size = elem_size(call.types[layout.q])
    out = batch * heads * n_q * d_v
    tensors = numel(q) + numel(k) + numel(v) + out
    if layout.backward:
        flops *= BACKWARD_FACTOR
        tensors = 2 * (numel(q) + numel(k) + numel(v)) + 2 * out
    params = f"B={batch} H={heads}/{heads_kv} Nq={n_q} Nkv={n_kv} d={d_qk}"
    params += f"{'' if d_v == d_qk else f'/{d_v}'} causal={'yes' if causal else 'no'}"
    if dropout:
        params += f" dropout={dropout:g}"
    return Work(flops, float(tensors * size), precision_of(call.types), "attention", params)


ATTENTION_OPS = frozenset(ATTENTION) | VARLEN
