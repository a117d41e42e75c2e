"""Python stacks of launching operators: the batch lookup equals interval containment, counted apart."""

from __future__ import annotations

import polars as pl
from support import loaded

from profview.analysis.trace.model import python_stacks_at


def test_batch_python_stacks_equal_the_frames_that_contain_each_operator() -> None:
    profile = loaded("resnet50_train_amp.pt.trace.json.gz")
    model = profile.model
    rows = model.gpu["op_row"].drop_nulls().unique().sort().to_list()
    stacks = python_stacks_at(model, rows)
    frames = model.host.filter(pl.col("is_python")).select("row", "pid", "tid", "ts", "end", "dur")
    ops = model.host[rows].select("pid", "tid", "ts")
    with_stack = 0
    for (pid, tid, ts), stack in zip(ops.iter_rows(), stacks, strict=True):
        # The witness: every frame of the same thread whose interval holds the operator's start,
        # outermost (earliest start, then longest) first.
        enclosing = frames.filter(
            (pl.col("pid") == pid) & (pl.col("tid") == tid) & (pl.col("ts") <= ts) & (pl.col("end") >= ts)
        ).sort(["ts", "dur"], descending=[False, True])
        assert stack == enclosing["row"].to_list()
        with_stack += bool(stack)
    assert len(rows) > 1000 and with_stack > len(rows) // 2  # the trace was recorded with_stack


def test_kernel_launch_paths_equal_a_walk_per_launch() -> None:
    """The numbered paths of kernel_launches (a trie built with NumPy) give the text a plain walk
    up the call tree gives for each launch, and the calls add up to the raw GPU events."""
    from profview.analysis.tables.launches import kernel_launches
    from profview.frames import CHAIN_SEPARATOR, display_name

    profile = loaded("tracelens_h100_qwen1.5-0.5b.json.gz")  # with_stack, a decode loop
    model = profile.model
    kernel = profile.kernels().sort("calls", descending=True)["name"][0]
    table = kernel_launches(model, kernel)
    names = model.host.select(display_name(pl.col("name")))["name"].to_list()
    parent = model.tree.parent
    launched = model.gpu.filter(pl.col("name") == kernel)
    rows = launched["op_row"].drop_nulls().to_list()
    stacks = dict(zip(rows, python_stacks_at(model, rows), strict=True))
    expected: dict[tuple[str, str], int] = {}
    for row in rows:
        chain, node = [], row
        while node >= 0:
            chain.append(names[node])
            node = int(parent[node])
        key = (CHAIN_SEPARATOR.join(reversed(chain)), CHAIN_SEPARATOR.join(names[f] for f in reversed(stacks[row])))
        expected[key] = expected.get(key, 0) + 1
    got = {
        (r["op_chain"], r["python_stack"]): r["calls"]
        for r in table.filter(pl.col("op") != "(unattributed)").iter_rows(named=True)
    }
    assert got == expected and len(got) > 10
    assert table["calls"].sum() == launched.height
