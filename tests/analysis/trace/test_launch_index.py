"""The launch index (issue 25): every launching row's path computed once, then a kernel's launchers
are a group-by of its GPU events.

Witnesses: the per-kernel computation (:func:`kernel_launches`, which numbers only that kernel's
launching rows), and the raw events read with the standard library: each kernel event is matched
to its runtime call by correlation id, and the call to the innermost operator of its thread whose
interval holds it; kernels whose runtime call was not recorded are the ``(unattributed)`` row.
"""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest
from support import loaded, raw_events

from profview.analysis.tables.launches import kernel_launches, launch_index
from profview.analysis.trace.launch_index import kernel_launchers
from profview.frames import UNATTRIBUTED

QWEN = "tracelens_h100_qwen1.5-0.5b.json.gz"  # with_stack, a decode loop: many rows share a path
SAMPLES = [QWEN, "resnet50_train_amp.pt.trace.json.gz", "gpt2_train_bf16.pt.trace.json.gz"]


@pytest.mark.parametrize("name", SAMPLES)
def test_every_kernels_launchers_from_the_index_equal_the_per_kernel_computation(name: str) -> None:
    model = loaded(name).model
    index = launch_index(model)
    kernels = model.gpu["name"].unique().sort().to_list()
    for kernel in kernels:
        assert kernel_launchers(index, kernel).equals(kernel_launches(model, kernel)), kernel
    # One number per distinct path, one path per launching row (and every such row has one).
    assert index.rows["op_row"].is_unique().all()
    assert index.paths.select("op", "op_chain", "python_stack").is_unique().all()
    assert set(index.rows["op_row"].to_list()) == set(model.gpu["op_row"].drop_nulls().to_list())
    assert index.paths.height < index.rows.height  # rows repeat paths: the text is held once per path
    assert len(kernels) > 10


def innermost_op_per_kernel(events: list[dict]) -> Counter[tuple[str, str]]:
    """(kernel name, innermost launching operator name) → kernel events, from the raw JSON."""
    calls = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X" and "correlation" in e.get("args", {})
    }
    ops: dict[tuple[object, object], list[dict]] = {}
    for e in events:
        if e.get("cat") in ("cpu_op", "user_annotation") and e.get("ph") == "X":
            ops.setdefault((e["pid"], e["tid"]), []).append(e)
    found: Counter[tuple[str, str]] = Counter()
    for e in events:
        if e.get("cat") != "kernel" or e.get("ph") != "X":
            continue
        call = calls.get(e.get("args", {}).get("correlation"))
        if call is None:
            found[(e["name"], UNATTRIBUTED)] += 1
            continue
        holding = [
            op
            for op in ops.get((call["pid"], call["tid"]), [])
            if op["ts"] <= call["ts"] and call["ts"] + call["dur"] <= op["ts"] + op["dur"]
        ]
        innermost = max(holding, key=lambda op: (op["ts"], -op["dur"]))  # latest start, then shortest
        found[(e["name"], innermost["name"])] += 1
    return found


def test_launchers_per_operator_equal_the_raw_events_matched_by_correlation() -> None:
    profile = loaded(QWEN)
    witness = innermost_op_per_kernel(raw_events(QWEN))
    got: Counter[tuple[str, str]] = Counter()
    for kernel in {k for k, _ in witness}:
        for row in profile.kernel_launches(kernel).group_by("op").agg(pl.col("calls").sum()).iter_rows():
            got[(kernel, row[0])] += row[1]
    assert got == witness
    gemm = profile.kernels().sort("calls", descending=True)["name"][0]
    assert witness[(gemm, UNATTRIBUTED)] == 73
    # GPU work with no runtime call recorded: one row, no chain of operators, no Python stack.
    unattributed = profile.kernel_launches(gemm).filter(pl.col("op") == UNATTRIBUTED)
    assert unattributed.select("op_chain", "python_stack", "calls").rows() == [(UNATTRIBUTED, "", 73)]
    assert sum(witness.values()) == 1465  # every kernel event of the trace
