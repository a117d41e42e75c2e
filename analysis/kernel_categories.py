"""Kernel categories: what kind of work each GPU event is (GEMM, attention, elementwise ...).

Each GPU event gets the first category that applies, in this order:

1. its kind: a memcpy is ``memcpy``, a memset ``memset`` (whatever operator launched it: the
   workspace memset cuBLAS issues under ``aten::mm`` is memory work, as HTA counts it);
2. communication, by :mod:`.communication`'s rules (the ``backend`` column of
   :func:`~.communication.classify_communication`);
3. the innermost operator that launched it (:data:`OPERATOR_RULES`): a kernel launched by
   ``aten::mm`` is GEMM whatever its name;
4. the kernel's name (:data:`NAME_RULES`): cuBLAS/cuBLASLt (``nvjet_*``), CUTLASS, hipBLASLt
   (``Cijk_*``), flash/efficient/cuDNN attention, cuDNN convolutions, Triton kernels ...;
5. ``other``.

:data:`COARSE` folds the categories into HTA's three kernel types (computation, communication,
memory), so that both splits of one trace can be checked against each other.  No I/O.
"""

from __future__ import annotations

import polars as pl

from .name_rules import first_match

#: The categories, in the order tables list them.
KERNEL_CATEGORIES: tuple[str, ...] = (
    "gemm",
    "attention",
    "convolution",
    "elementwise",
    "reduction",
    "normalization",
    "triton",
    "communication",
    "memcpy",
    "memset",
    "other",
)
#: HTA's kernel types: each category's coarse class.
COARSE: dict[str, str] = {
    **dict.fromkeys(
        ("gemm", "attention", "convolution", "elementwise", "reduction", "normalization", "triton", "other"),
        "computation",
    ),
    "communication": "communication",
    "memcpy": "memory",
    "memset": "memory",
}

#: Operator-name rules (searched in the innermost launching operator's name), in order.
OPERATOR_RULES: tuple[tuple[str, str], ...] = (
    (
        "attention",
        r"^aten::(?:_?scaled_dot_product\w*|_flash_attention\w*|_efficient_attention\w*|_cudnn_attention\w*)$"
        r"|flash_attn|flashinfer|paged_attention",
    ),
    (
        "gemm",
        r"^aten::(?:mm|addmm|bmm|baddbmm|addbmm|matmul|linear|_scaled_mm|_scaled_grouped_mm|mv|addmv|dot"
        r"|_addmm_activation|_int_mm|linear_backward)$",
    ),
    (
        "convolution",
        r"^aten::(?:conv\w*|_convolution\w*|convolution\w*|cudnn_convolution\w*|miopen_convolution\w*"
        r"|mkldnn_convolution\w*|_conv_depthwise2d\w*)$",
    ),
    (
        "normalization",
        r"^aten::(?:native_)?(?:layer|batch|group|instance|rms)_norm\w*$|^aten::_fused_rms_norm\w*$"
        r"|^aten::(?:cudnn|miopen)_batch_norm\w*$|^aten::_batch_norm\w*$|^aten::batch_norm_\w+$",
    ),
    (
        "reduction",
        r"^aten::(?:sum|mean|prod|amax|amin|max|min|argmax|argmin|std|var|std_mean|var_mean|norm"
        r"|linalg_vector_norm|_?softmax|_?log_softmax|_softmax_backward_data|_log_softmax_backward_data"
        r"|nll_loss\w*|cross_entropy_loss|max_pool\w*|avg_pool\w*|adaptive_\w*pool\w*|logsumexp|cumsum|cumprod|all|any|topk|sort|count_nonzero)$",
    ),
    (
        "elementwise",
        r"^aten::(?:add|sub|mul|div|rsub|neg|abs|exp|exp2|log|log1p|sqrt|rsqrt|pow|reciprocal|sign"
        r"|relu|gelu|silu|sigmoid|tanh|hardtanh|leaky_relu|elu|threshold|clamp|clamp_min|clamp_max"
        r"|where|masked_fill|lerp|addcmul|addcdiv|copy|fill|zero|ne|eq|gt|lt|ge|le|bitwise_\w+|logical_\w+"
        r"|_to_copy|dropout|native_dropout|native_dropout_backward|gelu_backward|silu_backward"
        r"|threshold_backward|sigmoid_backward|tanh_backward|mul_backward|cos|sin|floor|ceil|round|trunc"
        r"|maximum|minimum|fmod|remainder|erf|_foreach_\w+|_fused_adamw?|_fused_sgd|nan_to_num|isinf|isnan"
        r"|_amp_foreach_non_finite_check_and_unscale|_amp_update_scale)_?$",
    ),
)

#: Kernel-name rules, in order (convolution and attention before GEMM: cuDNN's implicit-GEMM
#: convolutions and flash kernels templated on CUTLASS types mention ``gemm``/``cutlass``).
NAME_RULES: tuple[tuple[str, str], ...] = (
    ("triton", r"^triton_|\btriton\b"),
    (
        "attention",
        r"(?i)flash_fwd|flash_bwd|flash::|fmha|attention|attn|flashinfer|paged_attention|sdpa|dot_do_o|convert_dq_to",
    ),
    (
        "convolution",
        r"(?i)fprop|dgrad|wgrad|implicit_gemm|implicit_convolve|winograd|conv2d|conv3d|convolve|"
        r"\bconv_|_conv_|depthwise|igemm|miopen.*conv",
    ),
    (
        "gemm",
        r"(?i)gemm|^nvjet_|cublas|cutlass|^Cijk_|hipblaslt|_scaled_mm|splitKreduce|gemv|xmma_|wmma|matmul",
    ),
    (
        "normalization",
        r"(?i)GammaBeta|layer_norm|layernorm|batch_norm|batchnorm|group_norm|rms_?norm|\bbn_|instance_norm",
    ),
    (
        "reduction",
        r"(?i)pool|reduce|reduction|softmax|argmax|argmin|cub::|scan|sort|topk|welford|nll_loss|cross_entropy",
    ),
    (
        "elementwise",
        r"(?i)elementwise|pointwise|vectorized|unrolled|CatArrayBatchedCopy|fill_kernel|copy_kernel|"
        r"multi_tensor_apply|index_elementwise|_foreach|binary|unary",
    ),
)

def operator_categories(ops: pl.Series) -> pl.Series:
    """The category each operator name gives its kernels (rule 3), null where none; the rules
    run once over the column (:func:`~.name_rules.first_match`: linear in each name)."""
    return first_match(ops, OPERATOR_RULES)


def name_categories(kernels: pl.Series) -> pl.Series:
    """The category each kernel name gives it (rule 4), null where none (as :func:`operator_categories`)."""
    return first_match(kernels, NAME_RULES)


def operator_category(op: str | None) -> str | None:
    """The category an operator's name gives its kernels (rule 3), or None."""
    if not op:
        return None
    found: str | None = operator_categories(pl.Series([op]))[0]
    return found


def name_category(kernel: str | None) -> str | None:
    """The category a kernel's name gives it (rule 4), or None."""
    if not kernel:
        return None
    found: str | None = name_categories(pl.Series([kernel]))[0]
    return found


def kernel_category(kind: str, backend: str | None, op: str | None, kernel: str | None) -> str:
    """One GPU event's category by the module's rules (``backend``: its communication backend)."""
    if kind in ("memcpy", "memset"):
        return kind
    if backend is not None:
        return "communication"
    return operator_category(op) or name_category(kernel) or "other"


def categorize(gpu: pl.DataFrame, op_names: pl.Series | None = None) -> pl.DataFrame:
    """``gpu`` (GPU work with ``backend`` from :func:`~.communication.classify_communication`) with
    ``op_name`` (the launching operator's name, from ``op_names``, per row; null when unknown) and
    ``category``.  The name rules run once per distinct operator and per distinct kernel name."""
    ops = op_names if op_names is not None else pl.Series("op_name", [None] * gpu.height, dtype=pl.String)
    frame = gpu.with_columns(ops.alias("op_name"))
    # Each column's distinct values in its own type (a Categorical's codes: no copy of every row's
    # text), their categories by the rules, joined back.
    keys = frame.select("kind", "backend", "op_name", "name")
    for column, rules in (("op_name", operator_categories), ("name", name_categories)):
        distinct = keys[column].unique().drop_nulls()
        lookup = pl.DataFrame([distinct, rules(distinct).alias(f"_by_{column}")])
        keys = keys.join(lookup, on=column, how="left", maintain_order="left")
    kind = pl.col("kind").cast(pl.String)
    category = (
        pl.when(kind.is_in(["memcpy", "memset"]))
        .then(kind)
        .when(pl.col("backend").is_not_null())
        .then(pl.lit("communication"))
        .otherwise(pl.coalesce("_by_op_name", "_by_name", pl.lit("other")))
    )
    return frame.with_columns(keys.select(category.alias("category")).to_series())


def operator_names(host: pl.DataFrame, op_rows: pl.Series) -> pl.Series:
    """The name of the host row each GPU event's ``op_row`` points at (null where none)."""
    names: pl.Series = host["name"].cast(pl.String).gather(op_rows)
    return names.rename("op_name")


def category_table(gpu: pl.DataFrame) -> pl.DataFrame:
    """The categories view: ``category, coarse, kernels`` (distinct names), ``calls``, ``total_us``
    and ``pct`` of all GPU time (kernels, memcpy and memset), largest first."""
    total = float(gpu["dur"].sort().sum() or 0.0) if gpu.height else 0.0
    table = (
        gpu.group_by("category")
        .agg(
            pl.col("name").n_unique().cast(pl.Int64).alias("kernels"),
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("dur").sum().alias("total_us"),
        )
        .with_columns(
            pl.col("category").replace_strict(COARSE, default="computation").alias("coarse"),
            (pl.col("total_us") / total * 100.0 if total else pl.lit(None, dtype=pl.Float64)).alias("pct"),
        )
    )
    return table.select("category", "coarse", "kernels", "calls", "total_us", "pct").sort(
        ["total_us", "category"], descending=[True, False]
    )


#: HTA's kernel types in its order (each a bit of the mask :func:`coarse_overlap` sweeps).
COARSE_CLASSES: tuple[str, ...] = ("computation", "communication", "memory")


def coarse_segments(gpu: pl.DataFrame) -> pl.DataFrame:
    """The GPU's busy time cut where the set of running coarse classes changes: ``start``, ``end``
    (µs) and ``classes`` (e.g. ``computation + communication``).  Each class's work is first merged
    into its union, so two kernels of one class on two streams count once; idle time is no segment."""
    import numpy as np

    from .communication import merge_intervals

    times: list[np.ndarray] = []
    steps: list[np.ndarray] = []
    for bit, name in enumerate(COARSE_CLASSES):
        rows = gpu.filter(pl.col("category").replace_strict(COARSE, default="computation") == name)
        starts, ends = merge_intervals(rows["ts"].to_numpy(), rows["end"].to_numpy())
        times += [starts, ends]
        steps += [np.full(len(starts), 1 << bit), np.full(len(ends), -(1 << bit))]
    if not any(len(t) for t in times):
        return pl.DataFrame(schema={"start": pl.Float64, "end": pl.Float64, "classes": pl.String})
    at = np.concatenate(times)
    change = np.concatenate(steps)
    order = np.argsort(at, kind="stable")
    at, change = at[order], change[order]
    running = np.cumsum(change)
    keep = (running[:-1] > 0) & (at[1:] > at[:-1])
    labels = [" + ".join(c for b, c in enumerate(COARSE_CLASSES) if mask & (1 << b)) for mask in range(8)]
    return pl.DataFrame(
        {
            "start": at[:-1][keep],
            "end": at[1:][keep],
            "classes": [labels[m] for m in running[:-1][keep]],
        }
    )


def coarse_split(gpu: pl.DataFrame) -> dict[str, float]:
    """µs of GPU time per set of coarse classes running (see :func:`coarse_segments`): the split
    HTA's ``get_gpu_kernel_breakdown`` reports (``computation + communication`` is its
    "COMPUTATION overlapping COMMUNICATION")."""
    segments = coarse_segments(gpu).with_columns((pl.col("end") - pl.col("start")).alias("us"))
    sums = segments.group_by("classes").agg(pl.col("us").sum())
    return {row[0]: float(row[1]) for row in sums.sort("classes").iter_rows()}
