"""The perf model: FLOPs and bytes moved per operator call, from its recorded input shapes and types.

TraceLens' conventions, so that its reports check these figures (docs/efficiency.md):

* GEMM (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``_scaled_mm``): FLOPs = 2·B·M·N·K, plus M·N
  (B·M·N) for a bias; bytes = the elements of A, B, the output and the bias × element size.
  ``linear`` and ``matmul`` are not rows of their own: they run one of these, which is.
  Likewise a modelled call that encloses another of its rank or above (autocast's outer ``addmm``
  around the cast and the bf16 ``addmm``; math SDPA around its ``bmm``) is a wrapper: its enclosed
  calls are the rows; a lighter call inside one that is the real work (flash SDPA's ``fill_``, a
  convolution's bias ``add_``) is part of it (:func:`nested_calls`).
* SDPA forward (flash, efficient, cuDNN, math): FLOPs = 2·B·H·Nq·Nkv·(d_qk + d_v), which is
  4·B·H·Nq·Nkv·d, halved when causal; bytes = Q, K, V and the output.  Backward: 2.5× the
  forward FLOPs; bytes = Q, K, V, the output and its gradient read, the three gradients written.
* Convolution forward (``aten::convolution``): 2·N·Cout·Hout·Wout·(Cin/groups)·kh·kw (+ N·Cout·Hout·Wout
  for a bias); bytes = input, weight, output (and bias).  Backward (``convolution_backward``): 2× the
  forward FLOPs without bias; bytes = grad_output, input, weight read, grad_input and grad_weight written.
* Elementwise, reductions and normalization: :data:`PER_ELEMENT` FLOPs per element of the largest
  input; bytes = the tensor inputs read and the output written (:func:`_pointwise`).

A GFLOP per µs is 1,000 TFLOP/s; MB is MiB (2^20 bytes), TB/s is 10^12 bytes per second, as
TraceLens writes them.  No I/O.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from .device_peaks import DTYPE_BYTES, DTYPE_PRECISION, DevicePeak

MIB = float(1 << 20)

#: The efficiency view's columns (``category``, ``precision`` and ``kineto_gflops`` follow them).
EFFICIENCY_COLUMNS: tuple[str, ...] = (
    "name",
    "input_dims",
    "input_types",
    "calls",
    "kernel_us",
    "gflops",
    "data_mb",
    "flops_per_byte",
    "tflops_s",
    "tb_s",
    "peak_tflops",
    "peak_tb_s",
    "bound",
    "pct_of_roofline",
    "category",
    "precision",
    "kineto_gflops",
)

GEMM_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm"})
#: SDPA operators: (category of pass, index of Q, K, V in the inputs, index of is_causal, of the output).
SDPA_FORWARD: dict[str, tuple[int, int, int, int]] = {
    "aten::_scaled_dot_product_flash_attention": (0, 1, 2, 4),
    "aten::_scaled_dot_product_efficient_attention": (0, 1, 2, 6),
    "aten::_scaled_dot_product_cudnn_attention": (0, 1, 2, 6),
    "aten::_scaled_dot_product_attention_math": (0, 1, 2, 5),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (0, 1, 2, 4),
}
SDPA_BACKWARD: dict[str, tuple[int, int, int, int]] = {
    "aten::_scaled_dot_product_flash_attention_backward": (1, 2, 3, 11),
    "aten::_scaled_dot_product_efficient_attention_backward": (1, 2, 3, 11),
    "aten::_scaled_dot_product_cudnn_attention_backward": (1, 2, 3, 14),
}
CONV_FORWARD = "aten::convolution"
CONV_BACKWARD = "aten::convolution_backward"
#: FLOPs per element of pointwise work, by operator (the trailing ``_`` of in-place ops dropped).
PER_ELEMENT: dict[str, tuple[str, float]] = {
    **{f"aten::{n}": ("elementwise", 1.0) for n in ("add", "sub", "mul", "div", "rsub", "neg", "relu")},
    **{f"aten::{n}": ("elementwise", 1.0) for n in ("sigmoid", "tanh", "exp", "sqrt", "rsqrt", "reciprocal")},
    **{f"aten::{n}": ("elementwise", 1.0) for n in ("clamp", "where", "masked_fill", "abs", "pow")},
    "aten::gelu": ("elementwise", 1.0),
    "aten::silu": ("elementwise", 1.0),
    "aten::copy": ("elementwise", 0.0),
    "aten::fill": ("elementwise", 0.0),
    "aten::sum": ("reduction", 1.0),
    "aten::mean": ("reduction", 1.0),
    "aten::amax": ("reduction", 1.0),
    "aten::_softmax": ("reduction", 5.0),
    "aten::_log_softmax": ("reduction", 5.0),
    "aten::native_layer_norm": ("normalization", 8.0),
    "aten::_fused_rms_norm": ("normalization", 4.0),
    "aten::native_batch_norm": ("normalization", 8.0),
    "aten::cudnn_batch_norm": ("normalization", 8.0),
}
#: Operators whose output has the shape of their first input (else: broadcast of the inputs).
SAME_SHAPE_OUTPUT = frozenset(
    {"aten::_softmax", "aten::_log_softmax", "aten::native_layer_norm", "aten::_fused_rms_norm"}
    | {"aten::native_batch_norm", "aten::cudnn_batch_norm"}
)
#: Reductions whose output is the input with the dims of argument 1 removed (or kept as size 1).
REDUCTIONS = frozenset({"aten::sum", "aten::mean", "aten::amax"})


@dataclass(frozen=True)
class Work:
    """One call's work: FLOPs, bytes moved, the precision its compute peak is read for, its family."""

    flops: float
    bytes: float
    precision: str | None
    family: str


def modeled(name: str) -> bool:
    """Whether the perf model has a closed form for operator ``name``."""
    return (
        name in GEMM_OPS
        or name in SDPA_FORWARD
        or name in SDPA_BACKWARD
        or name in (CONV_FORWARD, CONV_BACKWARD)
        or _base(name) in PER_ELEMENT
    )


def _base(name: str) -> str:
    """``aten::add_`` → ``aten::add``: an in-place op moves the same data as its out-of-place form."""
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _numel(shape: Any) -> int:
    return math.prod(shape) if isinstance(shape, list) and all(isinstance(d, int) for d in shape) else 0


def _is_tensor(shape: Any, dtype: Any) -> bool:
    return isinstance(shape, list) and len(shape) > 0 and isinstance(dtype, str) and dtype in DTYPE_BYTES


def _size(dtype: Any) -> int:
    return DTYPE_BYTES.get(dtype, 0) if isinstance(dtype, str) else 0


def _precision(types: list[Any]) -> str | None:
    """The precision of the first floating-point tensor input."""
    return next((DTYPE_PRECISION[t] for t in types if isinstance(t, str) and t in DTYPE_PRECISION), None)


def _flag(concrete: list[Any], index: int) -> bool:
    value = concrete[index] if 0 <= index < len(concrete) else ""
    return str(value).strip().lower() in ("true", "1")


def _int_list(text: Any) -> list[int] | None:
    """``'[1, 1]'`` or ``'2'`` (a Concrete Inputs cell) → a list of ints; None when it is neither."""
    try:
        value = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        return None
    if isinstance(value, int):
        return [value]
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return value
    return None


def gemm_work(name: str, dims: list[Any], types: list[Any]) -> Work | None:
    """FLOPs and bytes of one GEMM call (module doc)."""
    if name in ("aten::addmm", "aten::baddbmm"):
        bias, a, b = dims[0], dims[1], dims[2]
        bias_type, a_type = types[0], types[1]
    else:
        bias, a, b, bias_type, a_type = None, dims[0], dims[1], None, types[0]
    if not (isinstance(a, list) and isinstance(b, list) and len(a) >= 2 and len(b) >= 2):
        return None
    batch = math.prod(a[:-2]) if len(a) > 2 else 1
    m, k, n = a[-2], a[-1], b[-1]
    flops = 2.0 * batch * m * n * k
    size = _size(a_type)
    elements = batch * (m * k + k * n + m * n)
    if name == "aten::_scaled_mm":  # fp8 inputs, the output in out_dtype (not recorded): bf16
        nbytes = batch * (m * k + k * n) * size + batch * m * n * 2
        return Work(flops, float(nbytes), _precision(types), "gemm")
    nbytes = elements * size
    if bias is not None and _is_tensor(bias, bias_type):
        flops += batch * m * n
        nbytes += _numel(bias) * _size(bias_type)
    return Work(flops, float(nbytes), _precision(types), "gemm")


def sdpa_work(name: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> Work | None:
    """FLOPs and bytes of one scaled-dot-product-attention call (module doc)."""
    backward = name in SDPA_BACKWARD
    iq, ik, iv, icausal = (SDPA_BACKWARD if backward else SDPA_FORWARD)[name]
    if max(iq, ik, iv) >= len(dims):
        return None
    q, k, v = dims[iq], dims[ik], dims[iv]
    if not all(isinstance(t, list) and len(t) == 4 for t in (q, k, v)):
        return None
    batch, heads, n_q, d_qk = q
    n_kv, d_v = k[2], v[3]
    flops = 2.0 * batch * heads * n_q * n_kv * (d_qk + d_v)
    if _flag(concrete, icausal):
        flops /= 2
    size = _size(types[iq])
    out = batch * heads * n_q * d_v
    tensors = _numel(q) + _numel(k) + _numel(v) + out
    if backward:
        flops *= 2.5
        tensors = 2 * (_numel(q) + _numel(k) + _numel(v)) + 2 * out
    return Work(flops, float(tensors * size), _precision(types), "attention")


def conv_work(name: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> Work | None:
    """FLOPs and bytes of one convolution call, forward or backward (module doc)."""
    backward = name == CONV_BACKWARD
    # forward: input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    # backward: grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
    #           groups, output_mask
    offset = 1 if backward else 0
    if len(dims) < 3 + offset or len(concrete) < 9 + offset:
        return None
    x, w = dims[offset], dims[offset + 1]
    if not (isinstance(x, list) and isinstance(w, list) and len(x) >= 3 and len(x) == len(w)):
        return None
    stride = _int_list(concrete[3 + offset]) or [1]
    padding = _int_list(concrete[4 + offset]) or [0]
    dilation = _int_list(concrete[5 + offset]) or [1]
    groups = (_int_list(concrete[8 + offset]) or [1])[0]
    if _flag(concrete, 6 + offset):  # transposed convolutions: not modelled
        return None
    spatial = len(x) - 2

    def at(values: list[int], i: int) -> int:
        return values[i] if i < len(values) else values[-1]

    out_spatial = [
        (x[2 + i] + 2 * at(padding, i) - at(dilation, i) * (w[2 + i] - 1) - 1) // at(stride, i) + 1
        for i in range(spatial)
    ]
    if any(s <= 0 for s in out_spatial) or groups <= 0:
        return None
    out = x[0] * w[0] * math.prod(out_spatial)
    flops = 2.0 * out * (x[1] // groups) * math.prod(w[2:])
    size = _size(types[offset])
    if backward:
        return Work(2 * flops, float((out + 2 * _numel(x) + 2 * _numel(w)) * size), _precision(types), "convolution")
    nbytes = (_numel(x) + _numel(w) + out) * size
    bias, bias_type = dims[2], types[2] if len(types) > 2 else None
    if _is_tensor(bias, bias_type):
        flops += out
        nbytes += _numel(bias) * _size(bias_type)
    return Work(flops, float(nbytes), _precision(types), "convolution")


def _broadcast(shapes: list[list[int]]) -> list[int]:
    rank = max(len(s) for s in shapes)
    padded = [[1] * (rank - len(s)) + s for s in shapes]
    return [max(col) for col in zip(*padded, strict=True)]


def pointwise_work(name: str, dims: list[Any], types: list[Any], concrete: list[Any]) -> Work | None:
    """FLOPs and bytes of elementwise, reduction and normalization calls (:data:`PER_ELEMENT`)."""
    base = _base(name)
    family, per_element = PER_ELEMENT[base]
    tensors = [(d, t) for d, t in zip(dims, types, strict=False) if _is_tensor(d, t)]
    if not tensors:
        return None
    first, first_type = tensors[0]
    read = sum(_numel(d) * _size(t) for d, t in tensors)
    if base in SAME_SHAPE_OUTPUT:
        out_shape = first
    elif base in REDUCTIONS:
        axes = _int_list(concrete[1]) if len(concrete) > 1 else None
        keep = _flag(concrete, 2)
        if axes:
            reduced = {a % len(first) for a in axes}
            out_shape = [1 if i in reduced else d for i, d in enumerate(first) if keep or i not in reduced]
        else:
            out_shape = []
    else:
        out_shape = _broadcast([d for d, _ in tensors])
    elements = max(_numel(d) for d, _ in tensors)
    out_type = first_type  # in place or not, the output takes the first tensor's dtype
    written = (math.prod(out_shape) if out_shape else 1) * _size(out_type)
    if base == "aten::copy":  # copy_(dst, src): reads src, writes dst
        read = _numel(tensors[-1][0]) * _size(tensors[-1][1])
    return Work(per_element * elements, float(read + written), _precision(types), family)


def operator_work(name: str, input_dims: str | None, input_types: str | None, concrete: str | None) -> Work | None:
    """The work of one call of ``name`` from its recorded ``Input Dims``, ``Input type`` and
    ``Concrete Inputs`` (JSON text as the events frame holds them); None when unknown."""
    if not input_dims or not input_types or not modeled(name):
        return None
    try:
        dims = json.loads(input_dims)
        types = json.loads(input_types)
        scalars = json.loads(concrete) if concrete else []
    except ValueError:
        return None
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    try:
        if name in GEMM_OPS:
            work = gemm_work(name, dims, types)
        elif name in SDPA_FORWARD or name in SDPA_BACKWARD:
            work = sdpa_work(name, dims, types, scalars)
        elif name in (CONV_FORWARD, CONV_BACKWARD):
            work = conv_work(name, dims, types, scalars)
        else:
            work = pointwise_work(name, dims, types, scalars)
    except (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None  # a shape the trace recorded in some other way: no figure rather than a wrong one
    if work is None or not (0 <= work.flops < math.inf and 0 < work.bytes < math.inf):
        return None  # negative or absurd dimensions (a damaged trace): no figure
    return work


def call_work(calls: pl.DataFrame) -> pl.DataFrame:
    """Operator calls (``name``, ``input_dims``, ``input_type``, ``concrete_inputs``) of modelled
    operators with ``flops``/``bytes``/``precision``/``family`` per call; calls the model cannot
    size are dropped.  The model runs once per distinct (operator, shapes, types, scalars)."""
    names = [n for n in calls["name"].unique().to_list() if n and modeled(n)]
    calls = calls.filter(pl.col("name").is_in(names))
    keys = ["name", "input_dims", "input_type", "concrete_inputs"]
    distinct = calls.select(keys).unique()
    works = [operator_work(*row) for row in distinct.iter_rows()]
    sized = distinct.with_columns(
        pl.Series("model_flops", [w.flops if w else None for w in works], dtype=pl.Float64),
        pl.Series("model_bytes", [w.bytes if w else None for w in works], dtype=pl.Float64),
        pl.Series("precision", [w.precision if w else None for w in works], dtype=pl.String),
        pl.Series("family", [w.family if w else None for w in works], dtype=pl.String),
    ).filter(pl.col("model_flops").is_not_null())
    return calls.join(sized, on=keys, how="inner", nulls_equal=True)


def efficiency_table(
    calls: pl.DataFrame,
    peak: DevicePeak | None,
    *,
    peak_tflops: float | None = None,
    peak_tb_s: float | None = None,
) -> pl.DataFrame:
    """The efficiency view: one row per (operator, input dims, input types) of :func:`call_work`
    calls (which carry ``device_total_us`` and, where the trace has it, Kineto's ``flops``).

    ``kernel_us``: the GPU time of the kernels the calls launched (their device total);
    ``gflops``/``data_mb``: per call; ``peak_tflops`` by the calls' precision on ``peak`` (a
    ``tf32`` column on the calls marks fp32 GEMMs that ran on tensor cores), unless overridden;
    ``bound``: ``compute`` when flops_per_byte reaches the ridge point (peak FLOP/s ÷ peak B/s),
    else ``memory``; ``pct_of_roofline``: achieved ÷ min(peak_tflops, flops_per_byte × peak_tb_s),
    which under the ridge is tb_s ÷ peak_tb_s (so a copy, of no FLOPs, has one too).
    """
    if "tf32" not in calls.columns:
        calls = calls.with_columns(pl.lit(False).alias("tf32"))
    kineto = pl.col("flops").cast(pl.Float64) if "flops" in calls.columns else pl.lit(None, dtype=pl.Float64)
    precision = pl.when((pl.col("precision") == "fp32") & pl.col("tf32")).then(pl.lit("tf32"))
    grouped = (
        calls.with_columns(precision.otherwise(pl.col("precision")).alias("precision"), kineto.alias("kineto"))
        .group_by("name", "input_dims", "input_type")
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("device_total_us").sum().alias("kernel_us"),
            (pl.col("model_flops").sum() / pl.len() / 1e9).alias("gflops"),
            (pl.col("model_bytes").sum() / pl.len() / MIB).alias("data_mb"),
            pl.col("family").first().alias("category"),
            pl.col("precision").mode().sort().first().alias("precision"),
            pl.when(pl.col("kineto").is_not_null().any())
            .then(pl.col("kineto").sum() / pl.len() / 1e9)
            .alias("kineto_gflops"),
        )
        .rename({"input_type": "input_types"})
    )
    peaks = [
        peak_tflops if peak_tflops is not None else (peak.peak_tflops(p) if peak else None)
        for p in grouped["precision"].to_list()
    ]
    bandwidth = peak_tb_s if peak_tb_s is not None else (peak.tb_s if peak else None)
    table = grouped.with_columns(
        pl.Series("peak_tflops", peaks, dtype=pl.Float64),
        pl.lit(bandwidth, dtype=pl.Float64).alias("peak_tb_s"),
        (pl.col("gflops") * 1e9 / (pl.col("data_mb") * MIB)).alias("flops_per_byte"),
        pl.when(pl.col("kernel_us") > 0)
        .then(pl.col("calls") * pl.col("gflops") / pl.col("kernel_us") * 1e3)
        .alias("tflops_s"),
        pl.when(pl.col("kernel_us") > 0)
        .then(pl.col("calls") * pl.col("data_mb") * MIB / pl.col("kernel_us") / 1e6)
        .alias("tb_s"),
    )
    roof = pl.col("peak_tflops")
    ridge = pl.col("peak_tflops") / pl.col("peak_tb_s")
    table = table.with_columns(
        pl.when(pl.col("peak_tflops").is_null() | pl.col("peak_tb_s").is_null())
        .then(None)
        .when(pl.col("flops_per_byte") >= ridge)
        .then(pl.lit("compute"))
        .otherwise(pl.lit("memory"))
        .alias("bound"),
        # achieved ÷ roof: on the memory roof that is tb_s ÷ peak_tb_s (defined too for work of no FLOPs)
        pl.when(pl.col("flops_per_byte") < ridge)
        .then(pl.col("tb_s") / pl.col("peak_tb_s") * 100.0)
        .when(roof > 0)
        .then(pl.col("tflops_s") / roof * 100.0)
        .alias("pct_of_roofline"),
    )
    # Ties broken by every key, so that one trace's view is the same from run to run.
    return table.select(EFFICIENCY_COLUMNS).sort(
        ["kernel_us", "name", "input_dims", "input_types"], descending=[True, False, False, False]
    )


#: How much of the work a call's family stands for when modelled calls nest: a call is a wrapper
#: when it encloses a modelled call of its rank or above (autocast's outer ``addmm`` around the bf16
#: ``addmm``; math SDPA around its ``bmm``), and a call of a higher rank is the real work of the
#: lighter calls it encloses (flash SDPA's ``fill_`` of its log-sum-exp, a convolution's bias
#: ``add_``), which are inner parts of it, no rows of their own.
FAMILY_RANK: dict[str, int] = {
    "gemm": 2,
    "attention": 2,
    "convolution": 2,
    "moe": 2,
    "normalization": 1,
    "elementwise": 0,
    "reduction": 0,
}


def nested_calls(rows: Any, families: list[str], subtree_end: Any) -> tuple[list[bool], list[bool]]:
    """(wrapper, inner) per modelled call, for calls given by host ``row`` (in the call tree's
    order: a call's descendants are the rows up to ``subtree_end[row]``) and their ``families``.

    A wrapper encloses a modelled call of its rank or above (:data:`FAMILY_RANK`): its work is
    that call's.  An inner call lies under a modelled call that is no wrapper (one of a higher
    rank): it is part of that call's work, whose kernel time already holds its kernels.  Neither
    is a row of the view nor counted in a total, so nothing is counted twice."""
    import numpy as np

    order = np.argsort(np.asarray(rows, dtype=np.int64), kind="stable")
    sorted_rows = np.asarray(rows, dtype=np.int64)[order]
    ends = np.asarray(subtree_end)[sorted_rows] if len(sorted_rows) else sorted_rows
    rank = [FAMILY_RANK.get(families[i], 0) for i in order]
    count = len(sorted_rows)
    enclosing = [-1] * count  # the innermost modelled call around each one (by position)
    stack: list[int] = []
    for at in range(count):
        while stack and ends[stack[-1]] <= sorted_rows[at]:
            stack.pop()
        enclosing[at] = stack[-1] if stack else -1
        stack.append(at)
    heaviest_inside = [-1] * count
    for at in range(count - 1, -1, -1):
        up = enclosing[at]
        if up >= 0:
            heaviest_inside[up] = max(heaviest_inside[up], rank[at], heaviest_inside[at])
    wrapper = [heaviest_inside[at] >= rank[at] for at in range(count)]
    inner = [False] * count
    for at in range(count):
        up = enclosing[at]
        inner[at] = up >= 0 and (not wrapper[up] or inner[up])
    out_wrapper = [False] * count
    out_inner = [False] * count
    for at, original in enumerate(order):
        out_wrapper[original] = wrapper[at]
        out_inner[original] = inner[at]
    return out_wrapper, out_inner


def step_flops(calls: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Model FLOPs per step: ``step`` and ``model_flops``, the FLOPs of the modelled calls (no
    wrappers nor inner calls, :func:`nested_calls`) that started in the step's host range (``ranges``: ``step``,
    ``start``, ``end`` in the trace's µs), as the operator table under a step takes its calls."""
    ts = calls["ts"].to_numpy()
    flops = calls["model_flops"].to_numpy()
    totals = [
        float(flops[(ts >= start) & (ts <= end)].sum())
        for start, end in zip(ranges["start"], ranges["end"], strict=True)
    ]
    return pl.DataFrame({"step": ranges["step"], "model_flops": pl.Series(totals, dtype=pl.Float64)})


def dominant_precision(calls: pl.DataFrame) -> str | None:
    """The precision that carries the most model FLOPs (the peak an MFU is read against)."""
    if calls.height == 0:
        return None
    sums = calls.group_by("precision").agg(pl.col("model_flops").sum()).drop_nulls("precision")
    if sums.height == 0:
        return None
    return str(sums.sort(["model_flops", "precision"], descending=[True, False])["precision"][0])


def kernel_flops(gpu: pl.DataFrame, calls: pl.DataFrame, subtree_end: Any) -> pl.Series:
    """Per GPU event, the model FLOPs it did (null: no modelled call launched it).

    A modelled call's FLOPs go to the kernels launched in its subtree (``op_row`` in
    ``[row, subtree_end[row])``: ``aten::convolution``'s kernels are launched by the
    ``cudnn_convolution`` under it), shared by duration, so that each of them runs at the call's
    TFLOP/s.  Wrappers are no calls here, so no event falls in two calls.
    """
    import numpy as np

    if calls.height == 0:
        return pl.Series("model_flops", [None] * gpu.height, dtype=pl.Float64)
    ordered = calls.select("row", "model_flops").sort("row")
    rows = ordered["row"].to_numpy()
    ends = np.asarray(subtree_end)[rows]
    op_row = gpu["op_row"].fill_null(-1).to_numpy()
    kernel = (gpu["kind"].cast(pl.String) == "kernel").to_numpy()
    at = np.searchsorted(rows, op_row, side="right") - 1
    inside = kernel & (op_row >= 0) & (at >= 0)
    inside &= op_row < ends[np.clip(at, 0, None)]
    call = np.where(inside, at, -1)
    dur = gpu["dur"].to_numpy()
    call_time = np.bincount(call[inside], weights=dur[inside], minlength=len(rows))
    flops = ordered["model_flops"].to_numpy()
    share = np.full(len(dur), np.nan)
    timed = inside & (call_time[np.clip(call, 0, None)] > 0)
    share[timed] = flops[call[timed]] * dur[timed] / call_time[call[timed]]
    return pl.Series("model_flops", share).fill_nan(None)


def kernel_tflops(gpu: pl.DataFrame) -> pl.DataFrame:
    """Per kernel name: ``tflops_s`` over its launches with model FLOPs (:func:`kernel_flops`, a
    ``model_flops`` column); null for a kernel no modelled call launched."""
    known = pl.col("model_flops").is_not_null()
    return (
        gpu.lazy()  # only the four columns it reads are filtered, not every column of the GPU frame
        .filter(pl.col("kind") == "kernel")
        .group_by("name")
        .agg(
            pl.col("model_flops").filter(known).sum().alias("flops"),
            pl.col("dur").filter(known).sum().alias("us"),
            known.any().alias("known"),
        )
        .select(
            "name",
            pl.when(pl.col("known") & (pl.col("us") > 0)).then(pl.col("flops") / pl.col("us") / 1e6).alias("tflops_s"),
        )
        .collect()
    )


def operator_tflops(calls: pl.DataFrame, by_shapes: bool = False) -> pl.DataFrame:
    """Per operator name (and input dims): ``tflops_s`` of its modelled calls (model FLOPs ÷ their
    device total time)."""
    keys = ["name", "input_dims"] if by_shapes else ["name"]
    return calls.group_by(keys).agg(
        pl.when(pl.col("device_total_us").sum() > 0)
        .then(pl.col("model_flops").sum() / pl.col("device_total_us").sum() / 1e6)
        .alias("tflops_s")
    )


def diff_efficiency(before: pl.DataFrame, after: pl.DataFrame, tolerance_pct: float = 5.0) -> pl.DataFrame:
    """Two efficiency views compared by (operator, input dims, input types): ``calls``,
    ``kernel_us`` and ``tflops_s`` before and after, ``tflops_delta_pct`` (the change of the rate
    of work: of TFLOP/s, and of TB/s for work of no FLOPs)
    and ``status`` (``faster``/``slower`` beyond ``tolerance_pct``, ``unchanged``, ``added``,
    ``removed``); largest time first."""
    keys = ["name", "input_dims", "input_types"]
    values = ("calls", "kernel_us", "tflops_s", "pct_of_roofline")
    b = before.select(*keys, *(pl.col(v).alias(f"{v}_before") for v in values), pl.lit(True).alias("in_before"))
    a = after.select(*keys, *(pl.col(v).alias(f"{v}_after") for v in values), pl.lit(True).alias("in_after"))
    joined = b.join(a, on=keys, how="full", coalesce=True, nulls_equal=True)
    # The same shapes do the same work per call, so the rate changes as the time per call: this
    # is the change of TFLOP/s, and of TB/s for work of no FLOPs (a copy).
    per_call_before = pl.col("kernel_us_before") / pl.col("calls_before")
    per_call_after = pl.col("kernel_us_after") / pl.col("calls_after")
    change = (per_call_before / per_call_after - 1.0) * 100.0
    joined = joined.with_columns(pl.when(per_call_after > 0).then(change).alias("tflops_delta_pct"))
    status = (
        pl.when(pl.col("in_before").is_null())
        .then(pl.lit("added"))
        .when(pl.col("in_after").is_null())
        .then(pl.lit("removed"))
        .when(pl.col("tflops_delta_pct").abs() <= tolerance_pct)
        .then(pl.lit("unchanged"))
        .when(pl.col("tflops_delta_pct") > 0)
        .then(pl.lit("faster"))
        .when(pl.col("tflops_delta_pct") < 0)
        .then(pl.lit("slower"))
        .otherwise(pl.lit("unchanged"))
    )
    order = pl.max_horizontal(pl.col("kernel_us_before").fill_null(0.0), pl.col("kernel_us_after").fill_null(0.0))
    return (
        joined.with_columns(status.alias("status"), order.alias("_order"))
        .sort(["_order", "name"], descending=[True, False])
        .select(*keys, *(f"{v}_{s}" for v in values for s in ("before", "after")), "tflops_delta_pct", "status")
    )
