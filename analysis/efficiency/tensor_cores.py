"""Tensor Core use per GEMM and convolution kernel, read from the kernel's name.

A trace records no instruction mix, so whether a kernel ran on Tensor Cores (AMD: matrix cores)
is what its library wrote into its name.  Each name gets the first rule of :data:`RULES` whose
pattern it contains (case-insensitive), and with it ``tensor_cores`` ``yes`` or ``no`` and the
fragment that decided (``evidence``); a name no rule matches is ``unknown``, never a guess (a
Triton template, ``gemv``, cuBLAS's ``splitKreduce``).  The SIMT rules come first: cuBLAS writes
``xmma`` into FP32 kernels that run on the CUDA cores (``sm80_xmma_gemm_f32f32_…_ffma_…``), and
``ffma`` (FP32 fused multiply-add) or ``f32f32`` inputs outrank it; ``tf32f32`` is TF32 on Tensor
Cores, so ``f32f32`` counts only where no ``t`` precedes it.

``precision`` comes from the name alone as well (:data:`PRECISIONS`, first match; else
``unknown``).  The table (:func:`tensor_core_table`) lists the kernel table's GEMM and
convolution rows with their share of all kernel time; :func:`fp32_simt_share` is the share the
Overview's hint reads: FP32 kernels that did not use Tensor Cores.  Every pattern runs in Polars'
engine, once per distinct name.  No I/O.
"""

from __future__ import annotations

import polars as pl

from ..trace.name_rules import first_match

#: (evidence, pattern, tensor_cores), in order: the first pattern a name contains decides.
RULES: tuple[tuple[str, str, str], ...] = (
    ("ffma", r"(?i)ffma", "no"),  # FP32 fused multiply-add: the SIMT cores
    ("simt", r"(?:^|_)simt_", "no"),  # CUTLASS's SIMT kernels (cutlass_80_simt_sgemm_…)
    ("sgemm", r"(?:^|_)sgemm", "no"),  # cuBLAS/cuDNN FP32 SIMT GEMMs (ampere_sgemm_…, implicit_convolve_sgemm)
    ("f32f32", r"(?i)(?:^|[^t])f32f32", "no"),  # FP32 inputs (cuBLAS xmma naming), not tf32f32
    ("tf32", r"(?i)tf32", "yes"),
    ("bf16", r"(?i)bf16|bfloat16", "yes"),
    ("fp8", r"(?i)e4m3|e5m2|fp8|f8f8", "yes"),
    ("hmma", r"(?i)hmma|imma|wgmma|hgmma|mma_sync", "yes"),  # the MMA instructions themselves
    ("mma shape", r"(?i)[hsi](?:884|1688|16816|8816)", "yes"),  # h884gemm, s1688gemm, h16816gemm ...
    ("tensorop", r"(?i)tensorop|tensor\d+x\d+x\d+|_wmma", "yes"),  # CUTLASS tensorop, cuDNN tensor16x8x8
    ("nvjet", r"^nvjet_", "yes"),  # cuBLAS's Hopper/Blackwell JIT kernels (warpgroup MMA)
    ("xmma", r"(?i)xmma", "yes"),  # NVIDIA's MMA library (its FP32 SIMT names matched above)
    ("matrix cores", r"_MI\d+x\d+x\d+|(?i)mfma", "yes"),  # hipBLASLt/Tensile MFMA kernels (AMD)
)
#: (precision, pattern), in order.
PRECISIONS: tuple[tuple[str, str], ...] = (
    ("tf32", r"(?i)tf32"),
    ("bf16", r"(?i)bf16|bfloat16"),
    ("fp8", r"(?i)e4m3|e5m2|fp8|f8f8"),
    ("int8", r"(?i)imma|int8|i8816"),
    ("fp16", r"(?i)fp16|_f16|h884|h1688|h16816|hgemm|hmma"),
    ("fp32", r"(?i)ffma|(?:^|_)sgemm|(?:^|[^t])f32f32"),
    ("fp64", r"(?i)dgemm|fp64|f64f64"),
)
#: The kernel table's categories whose rows the table lists.
MATRIX_CATEGORIES = ("gemm", "convolution")

TENSOR_CORE_COLUMNS = ("tensor_cores", "precision", "calls", "total_us", "pct", "category", "evidence", "name")


def tensor_core_use(names: pl.Series) -> pl.DataFrame:
    """Per name (in order): ``name``, ``tensor_cores`` (yes/no/unknown), ``precision`` and the
    rule's ``evidence`` (null where no rule matched)."""
    distinct = names.cast(pl.String).unique().drop_nulls().sort()
    evidence = first_match(distinct, [(label, pattern) for label, pattern, _ in RULES])
    verdict = dict((label, used) for label, _, used in RULES)
    precision = first_match(distinct, PRECISIONS)
    found = pl.DataFrame({"name": distinct, "evidence": evidence, "precision": precision}).with_columns(
        pl.col("evidence").replace_strict(verdict, default="unknown", return_dtype=pl.String).alias("tensor_cores"),
        pl.col("precision").fill_null("unknown"),
    )
    return pl.DataFrame({"name": names.cast(pl.String)}).join(found, on="name", how="left", maintain_order="left")


def tensor_core_table(kernels: pl.DataFrame) -> pl.DataFrame:
    """The GEMM and convolution rows of a categorised kernel table (``name``, ``calls``,
    ``total_us``, ``pct``, ``category``), each with its Tensor Core use; most time first."""
    rows = kernels.filter(pl.col("category").is_in(MATRIX_CATEGORIES))
    use = tensor_core_use(rows["name"]).drop("name")
    return pl.concat([rows.select("name", "calls", "total_us", "pct", "category"), use], how="horizontal").select(
        TENSOR_CORE_COLUMNS
    )


def fp32_simt_share(table: pl.DataFrame) -> tuple[float, int, str | None]:
    """Of :func:`tensor_core_table`'s rows, those in FP32 without Tensor Cores: their share of all
    kernel time (%), their count and the name of the one with the most time (None: none)."""
    simt = table.filter((pl.col("tensor_cores") == "no") & (pl.col("precision") == "fp32")).sort(
        "total_us", descending=True
    )
    if simt.height == 0:
        return 0.0, 0, None
    return float(simt["pct"].sum()), simt.height, str(simt["name"][0])


#: The share of kernel time in FP32 GEMMs without Tensor Cores from which the Overview hints.
FP32_SIMT_HINT_PCT = 10.0


def fp32_simt_hint(table: pl.DataFrame) -> str | None:
    """One line where FP32 GEMMs and convolutions without Tensor Cores hold
    :data:`FP32_SIMT_HINT_PCT` % or more of kernel time (``table``: :func:`tensor_core_table`'s)."""
    share, count, top = fp32_simt_share(table)
    if share < FP32_SIMT_HINT_PCT or top is None:
        return None
    kernels = "kernel" if count == 1 else "kernels"
    simt = table.filter((pl.col("tensor_cores") == "no") & (pl.col("precision") == "fp32"))
    what = "GEMMs and convolutions" if (simt["category"] == "convolution").any() else "GEMMs"
    return (
        f"FP32 {what} without Tensor Cores take {share:.1f}% of kernel time ({count} {kernels}): use bf16/fp16 "
        "autocast, or TF32 on Ampere and newer (torch.set_float32_matmul_precision('high')); the tensor_cores "
        "view lists them"
    )


def kernel_table_hint(kernels: pl.DataFrame, comm_pattern: str | None = None) -> str | None:
    """:func:`fp32_simt_hint` of a kernel table (``name``, ``calls``, ``total_us``, ``pct``),
    its categories by the kernel table's rule (by name)."""
    if kernels.height == 0 or "name" not in kernels.columns:
        return None
    from .categories import with_name_category

    categorised = kernels if "category" in kernels.columns else with_name_category(kernels, comm_pattern)
    return fp32_simt_hint(tensor_core_table(categorised))
