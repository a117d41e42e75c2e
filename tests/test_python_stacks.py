"""Python stacks of launching operators: the batch lookup equals interval containment, counted apart."""

from __future__ import annotations

import polars as pl
from conftest import loaded

from profview.analysis.model import python_stacks_at


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
