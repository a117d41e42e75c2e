"""Kernel categories (issue 24) and HTA's kernel-type split as their coarse sum.

The expectations are HTA 0.5's ``get_gpu_kernel_breakdown`` on the same traces, run in a
throwaway venv (``python3 -m venv /tmp/hta && /tmp/hta/bin/pip install HolisticTraceAnalysis
'pandas<3'``) with::

    HTA_DISABLE_NS_ROUNDING=1 /tmp/hta/bin/python -c "
    import os, shutil, sys, tempfile
    from hta.trace_analysis import TraceAnalysis
    d = tempfile.mkdtemp(); shutil.copy(sys.argv[1], os.path.join(d, 'rank0_' + os.path.basename(sys.argv[1])))
    a = TraceAnalysis(trace_dir=d, include_last_profiler_step=True)
    print(a.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)[0])" TRACE

HTA reports, per set of kernel types running at once, the union of their time, each segment cut
to whole µs (``astype(int)``); ``HTA_DISABLE_NS_ROUNDING=1`` keeps its parser from rounding event
times first, ``include_last_profiler_step=True`` keeps the last step.  HTA keeps only GPU work it
can place in a step (launched by a call inside one): on gpt2 that leaves out the 373 events
launched before the profiling window, which the test leaves out too.
"""

from __future__ import annotations

import polars as pl
import pytest
from support import SHARED, loaded, sample

import profview
from profview.analysis.efficiency.categories import (
    COARSE,
    KERNEL_CATEGORIES,
    coarse_segments,
    coarse_split,
    kernel_category,
    name_categories,
    name_category,
)

#: HTA's figures (µs): COMPUTATION, COMMUNICATION, MEMORY and the "X overlapping Y" rows.
HTA = {
    "gpt2_train_bf16.pt.trace.json.gz": {"computation": 191661, "memory": 193},
    "resnet50_train_amp.pt.trace.json.gz": {"computation": 41254, "memory": 2418},
    "tracelens_h100_qwen1.5-0.5b.json.gz": {"computation": 44704, "memory": 59},
    "ddp_nccl_streams.pt.trace.json.gz": {"computation": 17106, "memory": 1194},
}
HTA_A100_NCCL = {
    "computation": 107156,
    "communication": 39061,
    "memory": 1743,
    "computation + communication": 7196,
    "communication + memory": 345,
}


def hta_like(profile: profview.Profile, launched_only: bool) -> dict[str, int]:
    """Our coarse split cut into whole µs per segment, as HTA sums it."""
    gpu = profile._categorized
    if launched_only:
        gpu = gpu.filter(pl.col("launch_row").is_not_null())
    segments = coarse_segments(gpu).with_columns((pl.col("end") - pl.col("start")).cast(pl.Int64).alias("us"))
    return {k: int(v) for k, v in segments.group_by("classes").agg(pl.col("us").sum()).iter_rows()}


@pytest.mark.parametrize("name", sorted(HTA))
def test_coarse_split_is_htas(name: str) -> None:
    profile = loaded(name)
    assert hta_like(profile, launched_only=name.startswith("gpt2")) == HTA[name]


def test_coarse_split_with_communication_is_htas(shared_dir) -> None:  # type: ignore[no-untyped-def]
    """An A100 NCCL trace: computation, communication, memory and their overlaps, all five equal."""
    profile = profview.load(SHARED / "traces/public/hta_a100_nccl_data.json.gz", use_cache=False)
    assert hta_like(profile, launched_only=False) == HTA_A100_NCCL
    split = coarse_split(profile._categorized)
    # the exact figures, before HTA's cut to whole µs: within one µs per segment
    segments = coarse_segments(profile._categorized).height
    assert 0 <= sum(split.values()) - sum(HTA_A100_NCCL.values()) < segments


def test_categories_view_adds_up_to_the_kernel_time() -> None:
    """The categories view: every GPU µs in exactly one category; kernels by category add up to
    the kernel table, memcpy and memset to their events (summed from the raw events too)."""
    profile = loaded("resnet50_train_amp.pt.trace.json.gz")
    view = profile.categories()
    assert set(view["category"].to_list()) <= set(KERNEL_CATEGORIES)
    gpu = profile.gpu
    assert float(view["total_us"].sum()) == pytest.approx(float(gpu["dur"].sum()), abs=1e-6)
    assert float(view["pct"].sum()) == pytest.approx(100.0)
    kernels = view.filter(~pl.col("category").is_in(["memcpy", "memset"]))
    assert float(kernels["total_us"].sum()) == pytest.approx(float(profile.kernels()["total_us"].sum()), abs=1e-6)
    by_name = dict(view.select("category", "calls").iter_rows())
    assert by_name["memset"] == gpu.filter(pl.col("kind") == "memset").height
    assert by_name["memcpy"] == gpu.filter(pl.col("kind") == "memcpy").height
    # cuDNN's convolutions are the largest category of ResNet-50 (33% of GPU time)
    assert view["category"][0] == "convolution"
    assert view.row(0, named=True)["pct"] == pytest.approx(33.09, abs=0.01)


def test_the_launching_operator_decides_first() -> None:
    """A kernel launched by aten::mm is GEMM whatever its name; names decide only without an operator."""
    assert kernel_category("kernel", None, "aten::mm", "void some_kernel<float>()") == "gemm"
    assert kernel_category("kernel", None, None, "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT") == "gemm"
    assert kernel_category("kernel", None, None, "Cijk_Alik_Bljk_BBS_BH_MT128x128x64") == "gemm"
    assert kernel_category("kernel", None, "aten::_scaled_dot_product_flash_attention", "x") == "attention"
    assert kernel_category("memset", None, "aten::mm", "Memset (Device)") == "memset"
    assert kernel_category("kernel", "nccl", "aten::mm", "ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "communication"
    assert kernel_category("kernel", None, "aten::add", "triton_poi_fused_add_0") == "elementwise"
    # issue 40: one system: an Inductor kernel no operator launched is its kind, as in the kernel table
    assert kernel_category("kernel", None, None, "triton_poi_fused_add_0") == "elementwise"
    assert kernel_category("kernel", None, None, "triton_red_fused_native_layer_norm_0") == "normalization"
    assert kernel_category("kernel", None, None, "triton_tem_fused_0") == "triton"
    # flash kernels are templated on CUTLASS types; cuDNN convolutions are implicit GEMMs
    assert name_category("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<cutlass::bfloat16_t>>") == (
        "attention"
    )
    assert name_category("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc") == "convolution"
    assert set(COARSE) == set(KERNEL_CATEGORIES)


def test_gpt2_categories_by_operator() -> None:
    """gpt2: its GEMMs with a launching operator are the kernels under mm/addmm (the ops view's
    device self time of mm is those kernels plus the memsets cuBLAS issues under it); the 44 GEMMs
    launched before the window (no operator) are GEMMs by their cuBLASLt names (nvjet_*)."""
    profile = loaded("gpt2_train_bf16.pt.trace.json.gz")
    gpu = profile._categorized
    by_name = gpu.filter((pl.col("category") == "gemm") & pl.col("op_name").is_null())
    assert by_name.height == 44
    assert by_name["name"].str.starts_with("nvjet_").all()
    gemm = gpu.filter((pl.col("category") == "gemm") & pl.col("op_name").is_not_null())
    under = gpu.filter(pl.col("op_name").is_in(["aten::mm", "aten::addmm"]) & (pl.col("kind") == "kernel"))
    assert float(gemm["dur"].sum()) == pytest.approx(float(under["dur"].sum()), abs=1e-6)
    ops = profile.ops().filter(pl.col("name").is_in(["aten::mm"]))
    mm_memset = gpu.filter((pl.col("op_name") == "aten::mm") & (pl.col("kind") == "memset"))
    mm_kernels = gpu.filter((pl.col("op_name") == "aten::mm") & (pl.col("kind") == "kernel"))
    assert float(ops["device_self_us"][0]) == pytest.approx(
        float(mm_kernels["dur"].sum()) + float(mm_memset["dur"].sum()), abs=1e-6
    )


# -- issue 32: the kernel table's category, from the kernel's name alone --------------------------


def _by_name_with_re(name: str) -> str:
    """The rule by name, run by Python's ``re`` (a second regex engine) over the module's tables."""
    import re

    from profview.analysis.efficiency.categories import INDUCTOR_RULES, NAME_RULES
    from profview.analysis.trace import communication

    if any(re.search(rx, name) for _backend, rx, _kind in communication.NAME_RULES):
        return "communication"
    return next((category for category, rx in (*INDUCTOR_RULES, *NAME_RULES) if re.search(rx, name)), "other")


@pytest.mark.parametrize(
    "name",
    ["resnet50_train_amp.pt.trace.json.gz", "gpt2_train_bf16.pt.trace.json.gz", "h100_compile_reduce_overhead.json.gz",
     "ddp_nccl_streams.pt.trace.json.gz", "tracelens_h100_qwen1.5-0.5b.json.gz"],
)
def test_kernel_table_category_is_the_name_rule_on_the_raw_names(name: str) -> None:
    """Every kernel name of the raw JSON (stdlib) gets, from ``re``, the category the kernel view
    gives it (Polars' engine), and each category's time is the raw events' sum."""
    from witness import raw_kernels

    from profview.profiles.views import view_frame

    view = view_frame(loaded(name), "kernels")
    raw = raw_kernels(sample(name))
    assert dict(view.select("name", "category").iter_rows()) == {n: _by_name_with_re(n) for n in raw}
    by_category: dict[str, float] = {}
    for kernel, (_calls, total) in raw.items():
        by_category[_by_name_with_re(kernel)] = by_category.get(_by_name_with_re(kernel), 0.0) + total
    sums = view.group_by("category").agg(pl.col("total_us").sum())
    assert {c: pytest.approx(v, abs=1e-3) for c, v in by_category.items()} == dict(sums.iter_rows())


def test_inductor_kernels_by_their_prefix() -> None:
    """Inductor's Triton kernels: the prefix says the kind, the fused operators refine it within it;
    other Triton names stay ``triton``.  The torch.compile sample's ten Triton kernels: its GELU
    pointwise kernel and nine layer-norm reductions (by operator the same since issue 40: no operator
    launched them in the graph replays)."""
    from profview.profiles.views import view_frame

    view = view_frame(loaded("h100_compile_reduce_overhead.json.gz"), "kernels")
    triton = view.filter(pl.col("name").str.starts_with("triton_"))
    assert dict(triton.group_by("category").agg(pl.len()).iter_rows()) == {"elementwise": 1, "normalization": 9}
    names = [
        "triton_poi_fused_gelu_view_2", "triton_for_fused_0", "triton_red_fused_sum_1", "triton_per_fused__softmax_0",
        "triton_per_fused_add_native_layer_norm_view_8", "triton_tem_fused_addmm_gelu_0", "triton_tem_fused_mm_3",
        "triton_tem_fused_convolution_1", "triton_tem_fused_0", "my_triton_kernel_triton", "_attn_fwd",
    ]
    found = name_categories(pl.Series(names), pl.Series([False] * len(names)))
    assert found.to_list() == [
        "elementwise", "elementwise", "reduction", "reduction", "normalization", "gemm", "gemm", "convolution",
        "triton", "other", "attention",
    ]


def test_the_two_rules_differ_where_an_operator_knows_more() -> None:
    """resnet50: 26 of its 78 kernel names (8,137.140 µs, 19.3% of kernel time) have another
    category by name than by operator: 24 cuBLAS/CUTLASS GEMMs cuDNN runs for convolutions (GEMM by
    name, convolution by operator), a cuDNN padding kernel, and the AMP scale update (``other`` by
    name).  Per name, the by-operator category is the one holding most of its time."""
    from profview.profiles.views import view_frame

    profile = loaded("resnet50_train_amp.pt.trace.json.gz")
    by_name = view_frame(profile, "kernels").select("name", "category", "total_us")
    by_op = (
        profile._categorized.filter(pl.col("kind") == "kernel")
        .group_by("name", "category")
        .agg(pl.col("dur").sum())
        .sort(["name", "dur", "category"], descending=[False, True, False])
        .group_by("name", maintain_order=True)
        .first()
        .select("name", pl.col("category").alias("by_op"))
    )
    differ = by_name.join(by_op, on="name").filter(pl.col("category") != pl.col("by_op"))
    assert differ.height == 26 and by_name.height == 78
    assert float(differ["total_us"].sum()) == pytest.approx(8137.140, abs=1e-3)
    pairs = differ.group_by("by_op", "category").agg(pl.len()).sort("by_op", "category")
    assert pairs.rows() == [("convolution", "gemm", 24), ("convolution", "reduction", 1), ("elementwise", "other", 1)]
