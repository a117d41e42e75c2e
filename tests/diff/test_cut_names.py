"""A text table diffed against a trace pairs the rows whose names the table cut short with
the one whole name each stands for, and says what could not pair.  Checked against the raw events
(gzip + json) and the table's own printed text."""

from __future__ import annotations

import polars as pl
from support import SAMPLES, raw_events

import profview
from profview.analysis.diff.compare import cut_prefix, diff_kernels, unpaired_cut_names

TABLE = SAMPLES / "gpt2_train_bf16.tables.txt"
TRACE = "gpt2_train_bf16.pt.trace.json.gz"


def raw_kernel_totals() -> dict[str, tuple[int, float]]:
    out: dict[str, tuple[int, float]] = {}
    for event in raw_events(TRACE):
        if event.get("cat") == "kernel":
            calls, total = out.get(event["name"], (0, 0.0))
            out[event["name"]] = (calls + 1, total + float(event["dur"]))
    return out


def printed_kernel_rows(kernels: dict[str, tuple[int, float]]) -> list[tuple[str, int, str]]:
    """(name, calls, CUDA total as printed) of each row the table prints for a kernel of the trace
    (its name, or the start it keeps, begins a kernel's name), each once (the run is printed twice)."""
    rows = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        if len(cells) < 15 or not cells[14].isdigit():
            continue
        start = cut_prefix(cells[0]) or cells[0]
        if any(name.startswith(start) for name in kernels):
            rows.append((cells[0], int(cells[14]), cells[8]))
    return list(dict.fromkeys(rows))


def test_every_kernel_row_of_the_table_pairs_with_the_trace_kernel_it_stands_for() -> None:
    raw = raw_kernel_totals()
    printed = printed_kernel_rows(raw)
    cut = [name for name, _calls, _total in printed if cut_prefix(name) is not None]
    # several rows share a cut name, and a cut name starts several of the trace's kernels
    assert len(cut) > len(set(cut)) and max(sum(w.startswith(cut_prefix(c) or "") for w in raw) for c in cut) >= 3
    comparison = profview.load_comparison(TABLE, SAMPLES / TRACE, match="normalized")
    diff = comparison.kernels()
    paired = diff.filter(pl.col("calls_before") > 0)
    assert paired.height == len(printed) == 18  # every row the table prints: none removed, none summed
    assert paired.filter(pl.col("status") == "removed").height == 0
    for row in paired.iter_rows(named=True):
        calls, total = raw[row["name"]]  # the whole name, from the raw events
        assert row["calls_before"] == row["calls_after"] == calls
        assert abs(row["total_us_before"] - total) <= 0.5  # the table prints ms with 3 decimals
    assert set(paired["match_rule"]) <= {"exact", "prefix", "prefix+figures"}
    assert paired.filter(pl.col("match_rule") == "prefix+figures").height >= 10
    assert not comparison.notes("kernels")  # no row left to sum into another
    assert not comparison.unpaired_cut_lines("kernels")


def test_cut_names_that_nothing_singles_out_stay_unpaired_and_are_named() -> None:
    """Another run's figures (here the trace's times 30% longer): the cut rows that start several
    kernels cannot be told apart, so they stay unpaired, each with how many kernels it starts."""
    table = profview.load(TABLE).kernels()
    trace = profview.load(SAMPLES / TRACE).kernels().with_columns(pl.col("total_us") * 1.3)
    diff = diff_kernels(table, trace)
    lonely = dict(unpaired_cut_names(diff, trace["name"].to_list(), "before"))
    assert lonely
    raw = raw_kernel_totals()
    for name, count in lonely.items():
        assert count == sum(1 for whole in raw if whole.startswith(cut_prefix(name) or ""))
        assert diff.filter(pl.col("name") == name)["status"].to_list() == ["removed"]
    # a cut name that starts exactly one kernel still pairs, whatever the figures
    unique = [r for r in diff.iter_rows(named=True) if r["calls_before"] and r["calls_after"]]
    for row in unique:
        assert sum(1 for whole in raw if whole.startswith(row["name"][:40])) >= 1
