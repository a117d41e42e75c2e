"""Kernel categories: what kind of work each GPU event is (GEMM, attention, elementwise ...).

Two rules, one per kind of view (docs/efficiency.md says which view uses which, with a worked
example and how often they differ on the shared traces):

**By operator** (:func:`categorize`; the categories and efficiency views, the Overview, once the
model is linked).  Each GPU event gets the first category that applies, in this order:

1. its kind: a memcpy is ``memcpy``, a memset ``memset`` (whatever operator launched it: the
   workspace memset cuBLAS issues under ``aten::mm`` is memory work, as HTA counts it);
2. communication, by :mod:`~profview.analysis.trace.communication`'s rules (the ``backend`` column of
   :func:`~profview.analysis.trace.communication.classify_communication`);
3. the innermost operator that launched it (:data:`OPERATOR_RULES`): a kernel launched by
   ``aten::mm`` is GEMM whatever its name;
4. the kernel's name, as the kernel table reads it (one system, issue 40): an Inductor Triton
   kernel by its prefix (:data:`INDUCTOR_RULES`), then :data:`NAME_RULES`: cuBLAS/cuBLASLt
   (``nvjet_*``), CUTLASS, hipBLASLt (``Cijk_*``), flash/efficient/cuDNN attention, cuDNN
   convolutions, other Triton kernels ...;
5. ``other``.

**By name** (:func:`name_categories`; the kernel table, which links no model for it, issue 32).
A kernel name gets the first category that applies:

1. ``communication``: a name :mod:`~profview.analysis.trace.communication`'s name rules (or ``--comm-pattern``) match;
2. an Inductor Triton kernel by its prefix (:data:`INDUCTOR_RULES`: ``triton_poi_``/``_for_``
   elementwise, ``triton_red_``/``_per_`` reduction, or normalization where its fused operators
   name a norm, ``triton_tem_`` GEMM or convolution where its fused operators say which);
3. :data:`NAME_RULES`, as step 4 above;
4. ``other``.

:data:`COARSE` folds the categories into HTA's three kernel types (computation, communication,
memory), so that both splits of one trace can be checked against each other.  Every regular
expression here runs in Polars' engine (linear in the text), once per distinct name.  No I/O.
"""

from __future__ import annotations

import polars as pl

from ..trace.name_rules import first_match

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
        r"\bconv_|_conv_|depthwise|igemm|miopen.*conv|[sh]cudnn_",
    ),
    (
        "gemm",
        r"(?i)gemm|^nvjet_|cublas|cutlass|^Cijk_|hipblaslt|_scaled_mm|splitKreduce|gemv|xmma_|wmma|matmul"
        r"|^bmm_",  # TensorRT-LLM's batched GEMMs (bmm_MxE4m3…, bmm_Bfloat16…: MoE experts on Blackwell)
    ),
    (
        "normalization",
        r"(?i)GammaBeta|layer_norm|layernorm|batch_norm|batchnorm|group_norm|rms_?norm|\bbn_|instance_norm"
        r"|RowwiseMoments",
    ),
    (
        "reduction",
        r"(?i)pool|reduce|reduction|softmax|argmax|argmin|cub::|scan|sort|topk|welford|nll_loss|cross_entropy",
    ),
    (
        "elementwise",
        r"(?i)elementwise|pointwise|vectorized|unrolled|CatArrayBatchedCopy|fill_kernel|copy_kernel|"
        r"multi_tensor_apply|index_elementwise|_foreach|binary|unary|dropout",
    ),
)

#: Inductor's Triton kernels (``triton_<kind>_fused_<operators>_<n>``), in order: the prefix says
#: what kind of kernel it is (``poi`` pointwise, ``for`` foreach, ``red``/``per`` a reduction, ``tem``
#: a template); the fused operators refine it only within that kind (a reduction that is a norm, a
#: template that is a matrix product or a convolution).  Any other ``triton_`` name goes on to
#: :data:`NAME_RULES` (``triton``).
INDUCTOR_RULES: tuple[tuple[str, str], ...] = (
    ("elementwise", r"^triton_(?:poi|for)_"),
    ("normalization", r"^triton_(?:red|per)_fused_.*(?:layer|batch|group|instance|rms)_norm"),
    ("reduction", r"^triton_(?:red|per)_"),
    ("gemm", r"^triton_tem_fused_(?:\w*_)?(?:mm|addmm|bmm|baddbmm|_scaled_mm|_int_mm)(?:_|$)"),
    ("convolution", r"^triton_tem_fused_(?:\w*_)?convolution"),
)


def _per_distinct(values: pl.Series, rules: tuple[tuple[str, str], ...]) -> pl.Series:
    """The first rule each value matches (:func:`~profview.analysis.trace.name_rules.first_match`, the one engine of
    profview's name rules: linear in each name), the rules run once per distinct value."""
    text = values.cast(pl.String)
    distinct = text.unique().drop_nulls()
    each: pl.Series = text.replace_strict(distinct, first_match(distinct, rules), default=None, return_dtype=pl.String)
    return each


def operator_categories(ops: pl.Series) -> pl.Series:
    """The category each operator name gives its kernels (rule 3 by operator; null: none)."""
    return _per_distinct(ops, OPERATOR_RULES).rename("category")


def operator_category(op: str | None) -> str | None:
    """The category an operator's name gives its kernels (rule 3), or None."""
    return operator_categories(pl.Series([op], dtype=pl.String))[0] if op else None


def name_category(kernel: str | None) -> str | None:
    """The category a kernel's name gives it by :data:`NAME_RULES` (rule 4 by operator), or None."""
    return _per_distinct(pl.Series([kernel], dtype=pl.String), NAME_RULES)[0] if kernel else None


def kernel_category(kind: str, backend: str | None, op: str | None, kernel: str | None) -> str:
    """One GPU event's category by operator (``backend``: its communication backend)."""
    frame = pl.DataFrame(
        {"kind": [kind], "backend": [backend], "op_name": [op], "name": [kernel]},
        schema={"kind": pl.String, "backend": pl.String, "op_name": pl.String, "name": pl.String},
    )
    return str(_by_operator(frame)[0])


def _by_operator(frame: pl.DataFrame) -> pl.Series:
    """The by-operator rule over ``kind``, ``backend``, ``op_name`` and ``name`` (text columns)."""
    kind = pl.col("kind")
    return frame.select(
        pl.when(kind.is_in(["memcpy", "memset"]))
        .then(kind)
        .when(pl.col("backend").is_not_null())
        .then(pl.lit("communication"))
        .otherwise(
            pl.coalesce(
                operator_categories(frame["op_name"]),
                _per_distinct(frame["name"], (*INDUCTOR_RULES, *NAME_RULES)),
                pl.lit("other"),
            )
        )
        .alias("category")
    )["category"]


def name_categories(names: pl.Series, communication: pl.Series) -> pl.Series:
    """The kernel table's rule: each kernel name's category from the name alone (the module's
    rule by name; ``communication``: per name, whether
    :mod:`~profview.analysis.trace.communication` names it a collective)."""
    by_name = _per_distinct(names, (*INDUCTOR_RULES, *NAME_RULES))
    frame = pl.DataFrame({"comm": communication.fill_null(False), "found": by_name})
    return frame.select(
        pl.when(pl.col("comm"))
        .then(pl.lit("communication"))
        .otherwise(pl.col("found").fill_null("other"))
        .alias("category")
    )["category"]


def with_name_category(table: pl.DataFrame, comm_pattern: str | None = None) -> pl.DataFrame:
    """A kernel table (one row per kernel name, or name and shape) with ``category`` at the end, by
    the rule by name (:func:`name_categories`); ``comm_pattern``: the user's ``--comm-pattern``."""
    from ..trace.communication import name_backends

    distinct = table["name"].unique().drop_nulls().sort()
    comm = [backend is not None for backend in name_backends(distinct.to_list(), comm_pattern)]
    is_comm = table["name"].replace_strict(distinct, comm, default=False, return_dtype=pl.Boolean)
    return table.with_columns(name_categories(table["name"], is_comm))


def categorize(gpu: pl.DataFrame, op_names: pl.Series | None = None) -> pl.DataFrame:
    """``gpu`` (GPU work with ``backend`` from
    :func:`~profview.analysis.trace.communication.classify_communication`) with
    ``op_name`` (the launching operator's name, from ``op_names``, per row; null when unknown) and
    ``category`` by operator.  The rules run once per distinct (kind, backend, operator, kernel)."""
    ops = op_names if op_names is not None else pl.Series("op_name", [None] * gpu.height, dtype=pl.String)
    frame = gpu.with_columns(ops.alias("op_name"))
    keys = ["kind", "backend", "op_name", "name"]
    # Each key as a number (its code in one Categorical cast of this frame): grouping and joining
    # on the strings themselves took 35 MB for gpt2_train_big's 49 k events (long kernel names).
    codes = frame.select(pl.col(k).cast(pl.String).cast(pl.Categorical).to_physical() for k in keys)
    first = codes.with_row_index("_first").unique(subset=keys, keep="first", maintain_order=True)
    distinct = frame.select(pl.col("kind").cast(pl.String), *keys[1:])[first["_first"]]
    categories = _by_operator(distinct)
    found = codes.join(first.with_columns(categories), on=keys, how="left", nulls_equal=True, maintain_order="left")
    return frame.with_columns(found["category"])


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

    from ..trace.communication import merge_intervals

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
