"""The perf model's table: per operator and shapes, the FLOPs and bytes of the calls (from
:mod:`.op_models`), the time their kernels took, the rates reached and the roofline.

Each family's model and its conventions (TraceLens' where it has one; docs/efficiency.md says
where and by how much they differ) is a module of its own: :mod:`.work.gemm`,
:mod:`.work.attention`, :mod:`.work.conv`, :mod:`.work.norm`, :mod:`.work.pointwise`,
:mod:`.work.fused` and :mod:`.work.triton`.  When modelled calls nest, one of them is the row
(:func:`nested_calls`).

A GFLOP per µs is 1,000 TFLOP/s; MB is MiB (2^20 bytes), TB/s is 10^12 bytes per second, as
TraceLens writes them.  No I/O.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from .device_peaks import DevicePeak
from .op_args import Work
from .op_models import modeled, operator_work

MIB = float(1 << 20)

#: The efficiency view's columns: the figures first, the model's parameters and the shapes after.
EFFICIENCY_COLUMNS: tuple[str, ...] = (
    "name",
    "calls",
    "kernel_us",
    "tflops_s",
    "tb_s",
    "pct_of_roofline",
    "bound",
    "gflops",
    "data_mb",
    "flops_per_byte",
    "precision",
    "category",
    "params",
    "kernel_layout",
    "us_median",
    "us_min",
    "us_max",
    "tflops_s_median",
    "tflops_s_min",
    "tflops_s_max",
    "peak_tflops",
    "peak_tb_s",
    "input_dims",
    "input_types",
    "kineto_gflops",
    "note",
)
#: The keys of a row: calls of one operator with the same shapes, types and model parameters.
ROW_KEYS = ("name", "input_dims", "input_type", "params")
#: The call columns the model reads (``kernel_flop``/``kernel_num_gb``: Inductor's own counts).
CALL_KEYS = ("name", "input_dims", "input_type", "concrete_inputs")
INDUCTOR_COUNTS = ("kernel_flop", "kernel_num_gb")

__all__ = ["EFFICIENCY_COLUMNS", "Work", "call_work", "efficiency_table", "modeled", "operator_work"]


def call_work(calls: pl.DataFrame) -> pl.DataFrame:
    """Operator calls (``name``, ``input_dims``, ``input_type``, ``concrete_inputs``, and a Triton
    host op's ``kernel_hash``/``kernel_flop``/``kernel_num_gb`` where the frame has them) of
    modelled operators with ``model_flops``/``model_bytes``/``precision``/``family``/``params``/
    ``note`` per call: a call the model knows but cannot size keeps null figures and the reason.
    Calls the model cannot read at all are dropped.  The model runs once per distinct call."""
    names = [n for n in calls["name"].unique().to_list() if n and modeled(n)]
    calls = calls.filter(pl.col("name").is_in(names))
    counted = [c for c in INDUCTOR_COUNTS if c in calls.columns]
    keys = [*CALL_KEYS, *counted, *(["kernel_hash"] if "kernel_hash" in calls.columns else [])]
    distinct = calls.select(keys).unique()
    works: list[Work | None] = []
    for row in distinct.select(*CALL_KEYS, *counted).iter_rows():
        inductor = (row[4], row[5]) if len(counted) == 2 else None
        works.append(operator_work(row[0], row[1], row[2], row[3], inductor))
    hashes = distinct["kernel_hash"].to_list() if "kernel_hash" in distinct.columns else [None] * distinct.height
    sized = distinct.with_columns(
        pl.Series("model_flops", [w.flops if w else None for w in works], dtype=pl.Float64),
        pl.Series("model_bytes", [w.bytes if w else None for w in works], dtype=pl.Float64),
        pl.Series("precision", [w.precision if w else None for w in works], dtype=pl.String),
        pl.Series("family", [w.family if w else None for w in works], dtype=pl.String),
        pl.Series(
            "params",
            [(w.params + (f" hash={h[:8]}" if h else "")) if w else None for w, h in zip(works, hashes, strict=True)],
            dtype=pl.String,
        ),
        pl.Series("note", [w.note if w else None for w in works], dtype=pl.String),
    ).filter(pl.col("family").is_not_null())
    return calls.join(sized, on=keys, how="inner", nulls_equal=True)


def efficiency_table(
    calls: pl.DataFrame,
    peak: DevicePeak | None,
    *,
    peak_tflops: float | None = None,
    peak_tb_s: float | None = None,
) -> pl.DataFrame:
    """The efficiency view: one row per (operator, input dims, input types, model parameters) of
    :func:`call_work` calls (which carry ``device_total_us`` and, where the trace has it, Kineto's
    ``flops``).

    ``kernel_us``: the GPU time of the kernels the calls launched (their device total);
    ``gflops``/``data_mb``: per call; ``peak_tflops`` by the calls' precision on ``peak`` (a
    ``tf32`` column on the calls marks fp32 GEMMs that ran on tensor cores), unless overridden;
    ``bound``: ``compute`` when flops_per_byte reaches the ridge point (peak FLOP/s ÷ peak B/s),
    else ``memory``; ``pct_of_roofline``: achieved ÷ min(peak_tflops, flops_per_byte × peak_tb_s),
    which under the ridge is tb_s ÷ peak_tb_s (so a copy, of no FLOPs, has one too).
    ``us_*`` and ``tflops_s_*``: the median, least and most of one call's kernel time and rate
    (calls that launched no GPU work have no rate).  ``note``: why a known call has no figures.
    ``kernel_layout``: a GEMM's operand layout as its kernels' names state it (the most common).
    """
    if "tf32" not in calls.columns:
        calls = calls.with_columns(pl.lit(False).alias("tf32"))
    if "kernel_layout" not in calls.columns:
        calls = calls.with_columns(pl.lit(None, dtype=pl.String).alias("kernel_layout"))
    kineto = pl.col("flops").cast(pl.Float64) if "flops" in calls.columns else pl.lit(None, dtype=pl.Float64)
    precision = pl.when((pl.col("precision") == "fp32") & pl.col("tf32")).then(pl.lit("tf32"))
    per_call = pl.when(pl.col("device_total_us") > 0).then(pl.col("model_flops") / pl.col("device_total_us") / 1e6)
    sized = pl.col("model_flops").is_not_null()
    grouped = (
        calls.with_columns(
            precision.otherwise(pl.col("precision")).alias("precision"),
            kineto.alias("kineto"),
            per_call.alias("call_tflops_s"),
        )
        .group_by(*ROW_KEYS)
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("device_total_us").sum().alias("kernel_us"),
            pl.when(sized.all()).then(pl.col("model_flops").sum() / pl.len() / 1e9).alias("gflops"),
            pl.when(sized.all()).then(pl.col("model_bytes").sum() / pl.len() / MIB).alias("data_mb"),
            pl.col("family").first().alias("category"),
            pl.col("precision").mode().sort().first().alias("precision"),
            pl.col("device_total_us").median().alias("us_median"),
            pl.col("device_total_us").min().alias("us_min"),
            pl.col("device_total_us").max().alias("us_max"),
            pl.col("call_tflops_s").median().alias("tflops_s_median"),
            pl.col("call_tflops_s").min().alias("tflops_s_min"),
            pl.col("call_tflops_s").max().alias("tflops_s_max"),
            pl.when(pl.col("kineto").is_not_null().any())
            .then(pl.col("kineto").sum() / pl.len() / 1e9)
            .alias("kineto_gflops"),
            pl.col("note").drop_nulls().first().alias("note"),
            pl.col("kernel_layout").drop_nulls().mode().sort().first().alias("kernel_layout"),
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
        pl.when(pl.col("peak_tflops").is_null() | pl.col("peak_tb_s").is_null() | pl.col("gflops").is_null())
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
    table = with_impossible_notes(table, peak.cache_mib if peak else None)
    # Ties broken by every key, so that one trace's view is the same from run to run.
    return table.select(EFFICIENCY_COLUMNS).sort(
        ["kernel_us", "name", "input_dims", "input_types", "params"],
        descending=[True, False, False, False, False],
        nulls_last=True,
    )


#: Above this many times the DRAM peak no cache delivers: the row's bytes (or FLOPs) are an
#: overestimate, not a rate (L2 bandwidth is about 2-3x HBM's on the GPUs of the peak table).
CACHE_FACTOR = 3.0


def with_impossible_notes(table: pl.DataFrame, cache_mib: float | None) -> pl.DataFrame:
    """A row above the device's DRAM peak (``tb_s`` > ``peak_tb_s``) says why in ``note``: its data
    fits in the last-level cache (``cache_mib``: data per call), or the byte model counts more than
    the kernel moves (a gather, slice or broadcast reads part of its arguments).  Above
    :data:`CACHE_FACTOR` × the DRAM peak, or above the compute peak, the figure is called an
    overestimate and no bound nor roofline share is claimed."""
    dram = pl.col("peak_tb_s")
    over_dram = pl.col("tb_s") > dram
    beyond = (pl.col("tb_s") > CACHE_FACTOR * dram) | (pl.col("tflops_s") > pl.col("peak_tflops"))
    fits = pl.col("data_mb") <= cache_mib if cache_mib is not None else pl.lit(False)
    cache = f"{cache_mib:g} MiB" if cache_mib is not None else "unknown for this device"
    why = (
        pl.when(beyond)
        .then(
            pl.format(
                "overestimate: {} TB/s, {} TFLOP/s is above what any cache or unit delivers (3x the DRAM peak "
                "or the compute peak): the model counts more bytes or FLOPs than the kernel did (a gather, "
                "slice or broadcast reads part of its arguments); no bound claimed",
                pl.col("tb_s").round(2),
                pl.col("tflops_s").round(1),
            )
        )
        .when(over_dram & fits)
        .then(
            pl.format(
                "above the DRAM peak: its data ({} MiB a call) fits in the last-level cache ({}), "
                "read faster than DRAM",
                pl.col("data_mb").round(2),
                pl.lit(cache),
            )
        )
        .when(over_dram)
        .then(
            pl.format(
                "above the DRAM peak with more data than the last-level cache ({}): part of it was still in "
                "the cache from the kernel before, or the byte model counts more than the kernel moves (a "
                "gather, slice or broadcast reads part of its arguments)",
                pl.lit(cache),
            )
        )
    )
    note = pl.when(why.is_null()).then(pl.col("note")).when(pl.col("note").is_null()).then(why)
    return table.with_columns(
        note.otherwise(pl.concat_str(pl.col("note"), pl.lit("; "), why)).alias("note"),
        pl.when(beyond.fill_null(False)).then(None).otherwise(pl.col("bound")).alias("bound"),
        pl.when(beyond.fill_null(False)).then(None).otherwise(pl.col("pct_of_roofline")).alias("pct_of_roofline"),
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
    "triton": 0,
}
#: Calls that only move or set memory rank below every other: ``nll_loss_backward`` zeroes its
#: gradient with a ``fill_`` before it scatters into it, and is not that fill's wrapper.
MEMORY_ONLY = frozenset({"aten::copy_", "aten::copy", "aten::fill_", "aten::fill", "aten::zero_"})


def call_rank(name: str, family: str) -> int:
    """A call's rank for :func:`nested_calls` (:data:`FAMILY_RANK`, :data:`MEMORY_ONLY` lowest)."""
    return -1 if name in MEMORY_ONLY else FAMILY_RANK.get(family, 0)


def copies_only(rows: Any, ranks: list[int], subtree_end: Any, gpu_op_rows: Any) -> list[int]:
    """``ranks`` (:func:`call_rank`, per call given by host ``row``) with each call whose GPU work
    all runs inside the memory-only calls it encloses ranked as memory-only too: ``pow(x, 1.)``
    launches nothing but its ``copy_``'s device-to-device memcpy, so it is that copy's wrapper and
    the copy, sized by its bytes, is the row (as TraceLens has it: the operator that launched the
    work).  ``gpu_op_rows``: the launching operator's host row of each GPU event (nulls dropped)."""
    import numpy as np

    at = np.asarray(rows, dtype=np.int64)
    ends = np.asarray(subtree_end)[at] if len(at) else at
    launched = np.sort(np.asarray(gpu_op_rows, dtype=np.int64))
    memory = sorted((int(r), int(e)) for r, e, k in zip(at, ends, ranks, strict=True) if k == -1)
    starts: list[int] = []
    stops: list[int] = []
    for start, stop in memory:  # the union of the memory-only calls' subtrees
        if stops and start < stops[-1]:
            stops[-1] = max(stops[-1], stop)
        else:
            starts.append(start)
            stops.append(stop)
    which = np.searchsorted(np.asarray(starts, dtype=np.int64), launched, side="right") - 1
    in_memory = (
        (which >= 0) & (launched < np.asarray(stops, dtype=np.int64)[np.clip(which, 0, None)])
        if starts
        else (np.zeros(len(launched), dtype=bool))
    )
    copies, other = launched[in_memory], launched[~in_memory]

    def count(sorted_rows: Any) -> Any:
        return np.searchsorted(sorted_rows, ends, side="left") - np.searchsorted(sorted_rows, at, side="left")

    own, copied = count(other), count(copies)
    return [-1 if k >= 0 and o == 0 and c > 0 else k for k, o, c in zip(ranks, own, copied, strict=True)]


def nested_calls(rows: Any, ranks: list[int], subtree_end: Any) -> tuple[list[bool], list[bool]]:
    """(wrapper, inner) per modelled call, for calls given by host ``row`` (in the call tree's
    order: a call's descendants are the rows up to ``subtree_end[row]``) and their ``ranks``
    (:func:`call_rank`).

    A wrapper encloses a modelled call of its rank or above: its work is that call's.  An inner
    call lies under a modelled call that is no wrapper (one of a higher rank): it is part of that
    call's work, whose kernel time already holds its kernels.  Neither is a row of the view nor
    counted in a total, so nothing is counted twice."""
    import numpy as np

    order = np.argsort(np.asarray(rows, dtype=np.int64), kind="stable")
    sorted_rows = np.asarray(rows, dtype=np.int64)[order]
    ends = np.asarray(subtree_end)[sorted_rows] if len(sorted_rows) else sorted_rows
    rank = [ranks[i] for i in order]
    count = len(sorted_rows)
    enclosing = [-1] * count  # the innermost modelled call around each one (by position)
    stack: list[int] = []
    for at in range(count):
        while stack and ends[stack[-1]] <= sorted_rows[at]:
            stack.pop()
        enclosing[at] = stack[-1] if stack else -1
        stack.append(at)
    heaviest_inside = [-99] * count  # below every rank: nothing inside
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
    flops = calls["model_flops"].fill_null(0.0).to_numpy()  # a refused call sizes nothing
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


def first_kernels(gpu: pl.DataFrame, rows: Any, subtree_end: Any) -> pl.DataFrame:
    """Per call (host ``row``, in the call tree's order), the name of the first kernel launched in
    its subtree (``row``, ``kernel``; calls that launched none are left out)."""
    import numpy as np

    order = np.sort(np.asarray(rows, dtype=np.int64))
    if len(order) == 0:
        return pl.DataFrame(schema={"row": pl.Int64, "kernel": pl.String})
    ends = np.asarray(subtree_end)[order]
    kernels = gpu.filter((pl.col("kind") == "kernel") & pl.col("op_row").is_not_null()).sort("ts")
    op_row = kernels["op_row"].to_numpy()
    at = np.searchsorted(order, op_row, side="right") - 1
    inside = (at >= 0) & (op_row < ends[np.clip(at, 0, None)])
    names = kernels["name"].cast(pl.String).filter(pl.Series(inside))
    found = pl.DataFrame({"row": order[np.clip(at, 0, None)][inside], "kernel": names})
    return found.unique("row", keep="first", maintain_order=True)


def diff_efficiency(before: pl.DataFrame, after: pl.DataFrame, tolerance_pct: float = 5.0) -> pl.DataFrame:
    """Two efficiency views compared by (operator, input dims, input types, params): ``calls``,
    ``kernel_us`` and ``tflops_s`` before and after, ``tflops_delta_pct`` (the change of the rate
    of work: of TFLOP/s, and of TB/s for work of no FLOPs)
    and ``status`` (``faster``/``slower`` beyond ``tolerance_pct``, ``unchanged``, ``added``,
    ``removed``); largest time first."""
    keys = ["name", "input_dims", "input_types", "params"]
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
