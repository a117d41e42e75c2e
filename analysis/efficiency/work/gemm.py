"""GEMM work: ATen's matrix products, FP8/FP4 scaled and grouped ones, and the custom GEMMs of
vLLM and AITER (docs/efficiency.md).

FLOPs = 2·B·M·N·K, plus B·M·N for a bias; bytes = A, B, the output and the bias, each in its
element type.  ``linear`` and ``matmul`` are no rows: they run one of these.  No I/O.
"""

from __future__ import annotations

import math
import re

from ..op_args import Call, Work, elem_size, precision_of, refused
from .pointwise import dtype_text

#: (index of A, of B, of the bias or -1) per operator whose output is A @ B (+ bias).
MATMULS: dict[str, tuple[int, int, int]] = {
    "aten::mm": (0, 1, -1),
    "aten::bmm": (0, 1, -1),
    "aten::addmm": (1, 2, 0),
    "aten::baddbmm": (1, 2, 0),
}
#: Operators computing x @ weightᵀ (+ bias): (index of x, of the weight [N, K], of the bias).
LINEARS: dict[str, tuple[int, int, int]] = {
    "vllm::rocm_unquantized_gemm": (0, 1, 2),
    "aiter::gemm_a16w16": (0, 1, 2),
}
SCALED = frozenset({"aten::_scaled_mm"})
GROUPED = frozenset({"aten::_scaled_grouped_mm", "aten::_grouped_mm"})
#: c10::ScalarType numbers of the output types ``_scaled_mm``'s ``out_dtype`` names.
SCALAR_TYPES: dict[int, str] = {5: "c10::Half", 6: "float", 15: "c10::BFloat16", 23: "c10::Float8_e4m3fn"}
FP4 = "c10::Float4_e2m1fn_x2"


def _params(batch: int, m: int, n: int, k: int, bias: bool) -> str:
    head = f"B={batch} " if batch > 1 else ""
    return f"{head}M={m} N={n} K={k} bias={'yes' if bias else 'no'}"


def matmul_work(call: Call) -> Work | None:
    """``mm``, ``bmm``, ``addmm``, ``baddbmm``: the output in A's type."""
    ia, ib, ibias = MATMULS[call.name]
    a, b = call.tensor(ia), call.tensor(ib)
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return None
    batch = math.prod(a[:-2]) if len(a) > 2 else 1
    m, k, n = a[-2], a[-1], b[-1]
    bias = call.tensor(ibias) if ibias >= 0 else None
    flops = 2.0 * batch * m * n * k
    size = elem_size(call.types[ia])
    nbytes = float(batch * (m * k + k * n + m * n) * size)
    if bias is not None:
        flops += batch * m * n
        nbytes += call.tensor_bytes(ibias)
    return Work(flops, nbytes, precision_of(call.types), "gemm", _params(batch, m, n, k, bias is not None))


def linear_work(call: Call) -> Work | None:
    """``y = x @ weightᵀ (+ bias)`` (vLLM's ROCm GEMM, AITER's a16w16): M = the rows of x."""
    ix, iw, ibias = LINEARS[call.name]
    x, w = call.tensor(ix), call.tensor(iw)
    if x is None or w is None or len(x) < 1 or len(w) != 2:
        return None
    m, k, n = math.prod(x[:-1]), x[-1], w[0]
    if w[1] != k:
        return None
    bias = call.tensor(ibias)
    flops = 2.0 * m * n * k + (m * n if bias is not None else 0)
    nbytes = call.tensor_bytes(ix) + call.tensor_bytes(iw) + m * n * elem_size(call.types[ix])
    nbytes += call.tensor_bytes(ibias)
    return Work(flops, float(nbytes), precision_of(call.types), "gemm", _params(1, m, n, k, bias is not None))


def _out_type(call: Call, index: int, default: str | None) -> str | None:
    code = call.number(index)
    return SCALAR_TYPES.get(int(code), default) if code is not None else default


def scaled_mm_work(call: Call) -> Work | None:
    """``_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)``:
    FP8 (or FP4, two values a byte: K is twice the recorded columns) inputs and their scales read,
    the output written in ``out_dtype``; where the trace does not record it, at 2 bytes an element
    (bf16, what FP8 recipes ask for), and the params say so."""
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return None
    packed = 2 if call.types[0] == FP4 else 1
    m, k, n = a[0], a[1] * packed, b[1]
    out_type = _out_type(call, 6, None)
    out_size = elem_size(out_type) if out_type else 2
    bias = call.tensor(4)
    nbytes = sum(call.tensor_bytes(i) for i in range(min(len(call.dims), 6))) + m * n * out_size
    flops = 2.0 * m * n * k + (m * n if bias is not None else 0)
    out = dtype_text(out_type) if out_type else "2 B/element (out_dtype not recorded)"
    params = f"{_params(1, m, n, k, bias is not None)} out={out}"
    return Work(flops, float(nbytes), precision_of(call.types), "gemm", params)


def grouped_mm_work(call: Call) -> Work | None:
    """``_grouped_mm(a, b, offs, bias, out_dtype)`` and ``_scaled_grouped_mm(a, b, scale_a,
    scale_b, offs, bias, scale_result, out_dtype, use_fast_accum)``: G groups.  A 2-D A against a
    3-D B ([G, K, N]) is one GEMM of all A's rows, each against its group's B: 2·M·N·K FLOPs
    whatever the split; 3-D against 3-D is G GEMMs; 2-D against 2-D (the weight gradient)
    splits K: 2·M·N·K again, G outputs of M×N."""
    scaled = call.name == "aten::_scaled_grouped_mm"
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None:
        return None
    offs = call.tensor(4 if scaled else 2)
    groups = b[0] if len(b) == 3 else (a[0] if len(a) == 3 else (offs[0] if offs else None))
    if groups is None:
        return refused("gemm", "2-D × 2-D grouped GEMM without offs: the number of groups is not recorded")
    if len(a) == 2 and len(b) == 3:
        m, k, n, out = a[0], a[1], b[2], a[0] * b[2]
    elif len(a) == 3 and len(b) == 3:
        m, k, n, out = a[0] * a[1], a[2], b[2], a[0] * a[1] * b[2]
    elif len(a) == 2 and len(b) == 2:
        m, k, n, out = a[0], a[1], b[1], groups * a[0] * b[1]
    else:
        return None
    out_type = _out_type(call, 7 if scaled else 4, "c10::BFloat16" if scaled else call.types[0])
    inputs = sum(call.tensor_bytes(i) for i in range(min(len(call.dims), 7 if scaled else 4)))
    nbytes = inputs + out * elem_size(out_type)
    params = f"G={groups} M={m} N={n} K={k}"
    return Work(2.0 * m * n * k, float(nbytes), precision_of(call.types), "gemm", params)


def gemm_work(call: Call) -> Work | None:
    """The work of one GEMM-family call (module doc)."""
    if call.name in MATMULS:
        return matmul_work(call)
    if call.name in LINEARS:
        return linear_work(call)
    if call.name in SCALED:
        return scaled_mm_work(call)
    return grouped_mm_work(call)


GEMM_OPS = frozenset(MATMULS) | frozenset(LINEARS) | SCALED | GROUPED


_NVJET = re.compile(r"^nvjet_.*_([NT])([NT])[NT]?$")
_CIJK = re.compile(r"_A(lik|ilk)_B(ljk|jlk)_")
_CUTLASS = re.compile(r"(?:^|_)(nn|nt|tn|tt)(?:_|$)", re.IGNORECASE)


def kernel_layout(kernel: str) -> str | None:
    """The operand layout a GEMM kernel's name states, in BLAS's column-major terms (``TN``: A
    transposed, B not), or None: cuBLASLt's ``nvjet_…_TNT``, hipBLASLt's ``Cijk_Alik_Bljk``
    (``Alik``: A transposed; ``Bjlk``: B transposed), CUTLASS/cuBLAS ``…_tn_…``.  An inference
    from a name, which the efficiency view labels so."""
    found = _NVJET.match(kernel)
    if found:
        return found.group(1) + found.group(2)
    found = _CIJK.search(kernel)
    if found:
        return ("T" if found.group(1) == "lik" else "N") + ("T" if found.group(2) == "jlk" else "N")
    found = _CUTLASS.search(kernel.split("<")[-1])
    return found.group(1).upper() if found else None
