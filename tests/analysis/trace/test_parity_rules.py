"""The rules behind the torch-table parity (docs/figures.md), each against raw events or a hand-built tree.

* same-name only-child folding, on a hand-built tree and in the compiled and pure-Python call trees;
* runtime calls as rows of the ops view, and the drill-down from such a row;
* GPU work launched before the profiling window as its own step category.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from support import SHARED, loaded, raw_events

import profview
from profview.analysis.tables import operators
from profview.analysis.trace import calltree, model
from profview.analysis.trace.calltree import CallTree, fold_same_name


def tree_of(parent: list[int]) -> CallTree:
    n = len(parent)
    return CallTree(np.array(parent), np.full(n, -1), np.full(n, n))


def test_fold_rule_on_a_hand_built_tree() -> None:
    #  0 mul > 1 mul > 2 mul > 3 launch       a chain of only children folds into the outermost
    #  4 addmm > 5 addmm, 6 launch            the outer call launches too: two children, no fold
    #  7 mul > 8 add                          different names: no fold
    parent = [-1, 0, 1, 2, -1, 4, 4, -1, 7]
    names = np.array([1, 1, 1, 9, 2, 2, 9, 1, 3])
    into = fold_same_name(tree_of(parent), names, np.ones(9, dtype=bool))
    assert into.tolist() == [0, 0, 0, 3, 4, 5, 6, 7, 8]
    # Only the operator layer folds.
    assert fold_same_name(tree_of(parent), names, np.zeros(9, dtype=bool)).tolist() == list(range(9))


@pytest.mark.parametrize("name", ["gpt2_train_bf16.pt.trace.json.gz", "ddp_nccl_streams.pt.trace.json.gz"])
def test_ops_view_same_with_compiled_and_python_call_tree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    profile = loaded(name)
    if calltree._calltree is None:
        pytest.skip("the compiled call tree is not built here")
    compiled = operators.operator_table(operators.operator_rows(profile.model), pl.DataFrame())
    monkeypatch.setattr(calltree, "_calltree", None)
    pure = model.build_model(profile.events)
    np.testing.assert_array_equal(pure.tree.parent, profile.model.tree.parent)
    python = operators.operator_table(operators.operator_rows(pure), pl.DataFrame())
    assert_frame_equal(compiled, python)


def test_folding_counts_against_raw_events() -> None:
    """gpt2_train_bf16: the calls each name loses are the raw events whose parent has their name
    and no other child (raw nesting by time on each thread, done here without profview)."""
    events = [
        e
        for e in raw_events("gpt2_train_bf16.pt.trace.json.gz")
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")
    ]
    threads: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        threads[(e["pid"], e["tid"])].append(e)
    folded: dict[str, int] = defaultdict(int)

    def end(e: dict[str, Any]) -> float:
        return e["ts"] + e["dur"]

    for items in threads.values():
        items.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict[str, Any]] = []
        for e in items:
            while stack and (end(stack[-1]) <= e["ts"] or end(e) > end(stack[-1]) + 0.002):
                stack.pop()
            e["children"] = []
            e["parent"] = stack[-1] if stack else None
            if stack:
                stack[-1]["children"].append(e)
            stack.append(e)
    for e in events:
        p = e.get("parent")
        if p is not None and p["name"] == e["name"] and len(p["children"]) == 1:
            folded[e["name"]] += 1
    raw_calls: dict[str, int] = defaultdict(int)
    for e in events:
        raw_calls[e["name"]] += 1
    ops = loaded("gpt2_train_bf16.pt.trace.json.gz").ops()
    calls = dict(zip(ops["name"].to_list(), ops["calls"].to_list(), strict=True))
    assert folded["aten::mul"] == 36 and folded["aten::log_softmax"] == 3  # the pairs
    for name in ("aten::mul", "aten::log_softmax", "aten::scaled_dot_product_attention", "aten::addmm"):
        assert calls[name] == raw_calls[name] - folded[name], name


def test_runtime_rows_and_their_drill_down() -> None:
    """resnet50_train_amp: cudaLaunchKernel is a row (kind runtime) with the raw call count, and
    Enter on it lists exactly the GPU events that share a correlation id with one of its calls."""
    events = raw_events("resnet50_train_amp.pt.trace.json.gz")
    calls = [e for e in events if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"]
    correlations = {e["args"]["correlation"] for e in calls}
    launched = [
        e
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in correlations
    ]
    profile = loaded("resnet50_train_amp.pt.trace.json.gz")
    row = profile.ops().filter(pl.col("name") == "cudaLaunchKernel").row(0, named=True)
    assert (row["kind"], row["calls"]) == ("runtime", len(calls))
    assert row["host_total_us"] == pytest.approx(sum(e["dur"] for e in calls))
    table = profile.launches("cudaLaunchKernel")
    assert int(table["calls"].sum()) == len(launched) == 984
    assert float(table["total_us"].sum()) == pytest.approx(sum(e["dur"] for e in launched))
    assert int(table["direct_calls"].sum()) == len(launched)


def test_prewindow_gpu_work_is_its_own_step_category() -> None:
    """gpt2_train_bf16: 373 GPU events have no launching call in the trace (launched before the
    window).  Their union inside step 2, merged here from the raw events, is step 2's
    ``prewindow_us``; without it step 2's kernel time equals step 3's (same work each step)."""
    events = raw_events("gpt2_train_bf16.pt.trace.json.gz")
    runtime = {e["args"].get("correlation") for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    early = [e for e in gpu if e["args"].get("correlation") not in runtime]
    assert len(early) == 373
    step = next(e for e in events if e.get("cat") == "user_annotation" and e["name"] == "ProfilerStep#2")
    union, end = 0.0, -np.inf
    spans = [(max(e["ts"], step["ts"]), e["ts"] + e["dur"]) for e in early if e["ts"] + e["dur"] > step["ts"]]
    for start, stop in sorted(spans):
        if stop <= end:
            continue
        union += stop - max(start, end)
        end = stop
    steps = loaded("gpt2_train_bf16.pt.trace.json.gz").steps()
    first, second = steps.row(0, named=True), steps.row(1, named=True)
    assert first["prewindow_us"] == pytest.approx(union, abs=0.002)
    assert second["prewindow_us"] == 0.0
    assert first["kernel_us"] == pytest.approx(second["kernel_us"], rel=1e-3)
    categories = [c for c in steps.columns if c.endswith("_us") and c not in ("start_us", "duration_us")]
    assert steps.select(pl.sum_horizontal(categories) - pl.col("duration_us")).to_series().abs().max() < 0.01


def test_no_prewindow_where_the_trace_links_nothing() -> None:
    """A trace without launch links (legacy/XLA-style) says nothing about the window."""
    steps = loaded("xla_style_trace.json").steps()
    assert steps["prewindow_us"].sum() == 0.0


HTA_GRAPHS = SHARED / "traces" / "public" / "hta_diff_test_v100.json.gz"


@pytest.mark.skipif(not HTA_GRAPHS.exists(), reason="../shared/traces/public is absent")
def test_prewindow_on_a_cuda_graphs_trace() -> None:
    """HTA's V100 trace (cudaGraphLaunch): 614 GPU events share no correlation id with a runtime
    call of the trace (counted from the raw events); they run in the first 40 ms of step 1009,
    whose kernel time was 40% above the later steps'.  Without them it is within their range."""
    with gzip.open(HTA_GRAPHS) as handle:
        events = json.load(handle)["traceEvents"]
    calls = ("cuda_runtime", "cuda_driver")
    runtime = {e["args"].get("correlation") for e in events if e.get("cat") in calls}
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert len([e for e in gpu if e["args"].get("correlation") not in runtime]) == 614
    steps = profview.load(HTA_GRAPHS, use_cache=False).steps()
    first, later = steps.row(0, named=True), steps.slice(1)
    assert first["prewindow_us"] > 20_000 and later["prewindow_us"].sum() == 0.0
    assert later["kernel_us"].min() <= first["kernel_us"] <= later["kernel_us"].max()
