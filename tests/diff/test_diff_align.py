"""profview diff --view align / moved: one step of each trace aligned operator by operator.

Witnesses: the launching operator calls of the step counted from the raw events (a GPU event's
``External id`` names the operator that launched it), and the alignment's length checked
against a longest common subsequence computed independently (Hyyrö's bit-vector algorithm, and
a plain dynamic program on random sequences).
"""

from __future__ import annotations

import collections
import random

import polars as pl
import pytest
from witness import AFTER, BEFORE, GPU_CATS, raw

from profview.analysis.diff.align import MAX_ALIGN_CELLS, edit_script
from profview.diff.comparison import Comparison, load_comparison


def lcs_length(a: list[str], b: list[str]) -> int:
    """Hyyrö's bit-parallel LCS length (Python integers as bit vectors)."""
    masks: dict[str, int] = {}
    for j, item in enumerate(b):
        masks[item] = masks.get(item, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for item in a:
        u = v & masks.get(item, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - bin(v).count("1")


def lcs_dp(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def raw_launchers(path, start: float, end: float):  # type: ignore[no-untyped-def]
    """GPU events per launching operator name, for operators starting in [start, end), from the raw
    events: a GPU event's ``correlation`` names its runtime call (these traces' ``External id``s
    of kernels and operators are different counters), whose innermost enclosing operator on its
    thread, found by a sweep with a stack, launched it.

    Also returns ``alias``: an operator with exactly its parent's interval (``aten::item`` >
    ``aten::_local_scalar_dense``, both 31 µs from the same instant) cannot be told from it by
    time, so such names are compared as the outer one's."""
    alias: dict[str, str] = {}
    events = raw(path)
    # ProcessGroupNCCL's async ``nccl:*`` annotations are no operators of their thread (torch keeps
    # them out of the tree): the kernels they cover are launched by the enclosing record_param_comms.
    host = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime")
        and not (e.get("cat") == "user_annotation" and e["name"].startswith("nccl:"))
    ]
    host.sort(key=lambda e: (e["pid"], e["tid"], e["ts"], -e["dur"], e["cat"] == "cuda_runtime"))
    launcher: dict[int, dict] = {}
    stack: list[dict] = []
    thread = None
    for e in host:
        if (e["pid"], e["tid"]) != thread:
            thread, stack = (e["pid"], e["tid"]), []
        while stack and stack[-1]["ts"] + stack[-1]["dur"] < e["ts"] + e["dur"]:
            stack.pop()
        if e["cat"] == "cuda_runtime":
            if stack and "correlation" in e.get("args", {}):
                launcher[e["args"]["correlation"]] = stack[-1]
        else:
            if stack and (stack[-1]["ts"], stack[-1]["dur"]) == (e["ts"], e["dur"]):
                alias[e["name"]] = stack[-1]["name"]
            stack.append(e)
    counts: collections.Counter[str] = collections.Counter()
    for e in events:
        if e.get("cat") in GPU_CATS and e.get("ph") == "X":
            op = launcher.get(e["args"].get("correlation"))
            if op is not None and start <= op["ts"] < end:
                counts[alias.get(op["name"], op["name"])] += 1
    return counts, alias


@pytest.fixture(scope="module")
def hta() -> Comparison:
    return load_comparison(str(BEFORE), str(AFTER), use_cache=False)


def test_edit_script_is_a_longest_common_subsequence() -> None:
    rng = random.Random(14)
    for _ in range(200):
        a = [rng.choice("abcd") for _ in range(rng.randrange(0, 25))]
        b = [rng.choice("abcd") for _ in range(rng.randrange(0, 25))]
        pairs = edit_script(a, b)
        matched = [(i, j) for i, j in pairs if i is not None and j is not None]
        assert all(a[i] == b[j] for i, j in matched)
        assert len(matched) == lcs_dp(a, b) == lcs_length(a, b)
        assert [i for i, _ in pairs if i is not None] == list(range(len(a)))  # every item once, in order
        assert [j for _, j in pairs if j is not None] == list(range(len(b)))


def test_hta_step_aligned(hta: Comparison) -> None:
    steps = (hta.representative_step("before"), hta.representative_step("after"))
    # each side's step of median duration, from the steps view
    for which, step in zip(("before", "after"), steps, strict=True):
        durations = hta.side(which).steps().sort("duration_us")
        assert durations["step"][(durations.height - 1) // 2] == step
    sequences = {w: hta.launch_sequence(w) for w in ("before", "after")}
    for which, path in (("before", BEFORE), ("after", AFTER)):
        profile = hta.side(which)
        row = profile.steps().filter(pl.col("step") == hta.representative_step(which)).row(0, named=True)
        start = row["start_us"] + profile.span_start
        witness, alias = raw_launchers(path, start, start + row["duration_us"])
        got = collections.Counter()
        for r in sequences[which].iter_rows(named=True):
            got[alias.get(r["op"], r["op"])] += r["calls"]
        assert got == witness and sum(witness.values()) > 1000
    aligned = hta.align()
    same = aligned.filter(pl.col("alignment") == "same")
    a, b = sequences["before"]["op"].to_list(), sequences["after"]["op"].to_list()
    assert same.height == lcs_length(a, b)
    assert (same["op_before"] == same["op_after"]).all()
    assert aligned.filter(pl.col("alignment") != "only_after")["op_before"].to_list() == a
    assert aligned.filter(pl.col("alignment") != "only_before")["op_after"].to_list() == b
    assert (aligned["delta_us"] == aligned["device_us_after"] - aligned["device_us_before"]).all()
    assert aligned["device_us_before"].sum() == sequences["before"]["device_us"].sum()
    moved = hta.moved()  # the A100 cutlass GEMMs became V100 volta_sgemm under the same aten::mm calls
    mm = moved.filter(pl.col("op") == "aten::mm")
    assert mm.height and mm["kernels_before"].str.contains("cutlass_80").all()
    assert mm["kernels_after"].str.contains("volta_sgemm").all()
    assert moved["calls"].sum() == same.filter(pl.col("kernels_changed")).height


def test_same_trace_aligns_completely() -> None:
    from support import SAMPLES

    path = str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz")
    comparison = load_comparison(path, path, use_cache=False)
    aligned = comparison.align()
    assert set(aligned["alignment"]) == {"same"} and (aligned["delta_us"] == 0).all()
    assert comparison.moved().height == 0
    comparison.step = 3
    assert comparison.representative_step("before") == 3


def test_long_sequences_fall_back_to_matching_blocks() -> None:
    n = int(MAX_ALIGN_CELLS**0.5) + 10
    a = ["x", "y"] * (n // 2)
    b = ["y", "x"] * (n // 2)
    pairs = edit_script(a, b)
    matched = [(i, j) for i, j in pairs if i is not None and j is not None]
    assert all(a[i] == b[j] for i, j in matched) and len(matched) >= n - 2


def test_align_needs_traces(capsys: pytest.CaptureFixture[str]) -> None:
    from support import SAMPLES, run_cli

    table, trace = SAMPLES / "gpt2_train_bf16.tables.txt", SAMPLES / "gpt2_train_bf16.pt.trace.json.gz"
    assert run_cli(["diff", str(table), str(trace), "--view", "moved", "-o", "-"]) == 2
    err = capsys.readouterr().err
    assert f"profview: error: {table}: a PyTorch key_averages table has no operator sequence to align" in err
