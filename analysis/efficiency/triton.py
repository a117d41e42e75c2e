"""The Triton kernels TorchInductor compiled, in a trace: per kernel name, what its host ops say
(file, hash, launch configuration) and the ATen operators it fuses; per execution, the call whose
recorded arguments size it.

A compiled kernel is identified by its name and ``kernel_hash`` (one name can exist in two
compiled graphs).  Inductor records a host op named as the kernel around each launch; a kernel
run from a CUDA graph replay has none (the host op was recorded once, when the graph was
captured).  An execution therefore takes its call from the host op that launched it, or, without
one, from the trace's only compiled variant of its name (name, hash and recorded arguments: a
graph replays what it captured, shapes included); a name with several variants leaves such an
execution unattributed, and says so.  No I/O.
"""

from __future__ import annotations

import polars as pl

from .work.triton import fused_ops, is_triton

#: The kernel view's columns for Triton kernels (issue 36), after the others.
TRITON_KERNEL_COLUMNS = ("fused_ops", "kernel_file", "kernel_hash", "num_warps", "num_stages")
#: A variant of a compiled kernel: the keys of its calls.
VARIANT_KEYS = ("name", "input_dims", "input_type", "concrete_inputs", "kernel_hash")
#: Why an execution without its host op has no call.
AMBIGUOUS = "replayed without its host op, and the name has {n} compiled variants in this trace: not attributed"
BY_NAME = "replays sized by the trace's only compiled variant of this name (its captured host op)"


def _listed(column: str) -> pl.Expr:
    """The distinct values of a column, sorted, joined by ``, `` as text (null when none): one
    name's host ops in two compiled graphs list both hashes (and both warps, if they differ)."""
    values = pl.col(column).drop_nulls().unique().sort().cast(pl.String)
    return pl.when(values.len() > 0).then(values.str.join(", ")).alias(column)


def kernel_columns(names: list[str], host_ops: pl.DataFrame | None) -> pl.DataFrame | None:
    """Per Triton kernel name of ``names`` (the kernel table's): ``fused_ops`` (from the name) and
    the ``kernel_file``, ``kernel_hash``, ``num_warps``, ``num_stages`` its host ops recorded
    (``host_ops``: events with ``name`` and those columns, None where the trace has none: the
    columns are then null; several values are listed, comma separated).  None when no name is a
    Triton kernel's."""
    triton = sorted({n for n in names if is_triton(n)})
    if not triton:
        return None
    fused = pl.DataFrame(
        {"name": triton, "fused_ops": [", ".join(fused_ops(n)) or None for n in triton]},
        schema={"name": pl.String, "fused_ops": pl.String},
    )
    if host_ops is None:
        return fused.with_columns(pl.lit(None, dtype=pl.String).alias(c) for c in TRITON_KERNEL_COLUMNS[1:])
    recorded = (
        host_ops.with_columns(pl.col("name").cast(pl.String))
        .filter(pl.col("name").is_in(triton))
        .group_by("name")
        .agg(*(_listed(c) for c in TRITON_KERNEL_COLUMNS[1:]))
    )
    return fused.join(recorded, on="name", how="left").select("name", *TRITON_KERNEL_COLUMNS)


def executions(calls: pl.DataFrame, kernels: pl.DataFrame) -> pl.DataFrame:
    """One call per execution of a compiled kernel: the Triton host-op calls ``calls`` (operator
    rows: ``row``, the :data:`VARIANT_KEYS`, Inductor's counts where recorded) and the GPU
    ``kernels`` named as Triton kernels (``name``, ``ts``, ``dur``, ``op_row``).

    Each execution keeps its launching call's columns (``row``, ``input_dims`` …), ``ts`` and
    ``device_total_us`` its own; ``how`` says where the call came from (``launch``: the host op
    that launched it; ``name``: the name's only variant) and ``note`` why one has none
    (:data:`AMBIGUOUS`; its columns are then null)."""
    keys = [c for c in (*VARIANT_KEYS, "kernel_flop", "kernel_num_gb") if c in calls.columns]
    texts = [c for c in VARIANT_KEYS if c in keys]
    call_columns = calls.select("row", *keys).with_columns(pl.col(texts).cast(pl.String))
    runs = kernels.select(pl.col("name").cast(pl.String), "ts", pl.col("dur").alias("device_total_us"), "op_row")
    launched = runs.join(call_columns.rename({"name": "_launcher"}), left_on="op_row", right_on="row", how="left")
    direct = launched.filter(pl.col("_launcher").is_not_null() & (pl.col("_launcher") == pl.col("name")))
    others = runs.join(direct.select("op_row", "ts"), on=["op_row", "ts"], how="anti", nulls_equal=True)
    variants = call_columns.select(keys).unique()
    counts = variants.group_by("name").agg(pl.len().alias("_variants"))
    single = variants.join(counts.filter(pl.col("_variants") == 1), on="name").drop("_variants")
    by_name = others.join(single, on="name", how="inner")
    ambiguous = others.join(counts.filter(pl.col("_variants") > 1), on="name", how="inner")
    frames = [
        direct.drop("_launcher").with_columns(
            pl.col("op_row").alias("row"), pl.lit("launch").alias("how"), pl.lit(None, dtype=pl.String).alias("note")
        ),
        by_name.with_columns(
            pl.lit(-1, dtype=pl.Int64).alias("row"), pl.lit("name").alias("how"), pl.lit(BY_NAME).alias("note")
        ),
        ambiguous.with_columns(
            pl.lit(-1, dtype=pl.Int64).alias("row"),
            pl.lit("none").alias("how"),
            pl.format(AMBIGUOUS.replace("{n}", "{}"), pl.col("_variants")).alias("note"),
        ).drop("_variants"),
    ]
    columns = ["row", *keys, "ts", "device_total_us", "how", "note"]
    schema = pl.Schema(
        {**dict(call_columns.select("row", *keys).schema), "ts": pl.Float64(), "device_total_us": pl.Float64()}
        | {"how": pl.String(), "note": pl.String()}
    )
    picked = [f.select([pl.col(c) if c in f.columns else pl.lit(None).alias(c) for c in columns]) for f in frames]
    return pl.concat([f.cast(schema) for f in picked])
