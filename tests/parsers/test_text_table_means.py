"""A key_averages text table's kernel mean is the table's printed average where that is finer
than the printed total divided by the calls (torch prints every time with 3 decimals of the unit
it picks: a total of 13.405 ms over 611 calls is only known to 1 µs / 611).

The second witness: the trace of the same run (``samples/gpt2_train_bf16.pt.trace.json.gz``, its
``.tables.txt`` printed by torch at the end of the run), whose kernels' exact means come from the
raw JSON: for every kernel row the mean profview reads is at least as close to it as the division.
"""

from __future__ import annotations

from collections import defaultdict

import polars as pl
from support import raw_events, sample

from profview.parsers.torch_table import parse_torch_tables


def test_the_kernel_mean_is_the_printed_average_where_it_is_finer() -> None:
    tables = parse_torch_tables(sample("gpt2_train_bf16.tables.txt").read_text())
    assert tables is not None
    kernels = tables.kernels.with_columns((pl.col("total_us") / pl.col("calls")).alias("divided"))
    durations: dict[str, list[float]] = defaultdict(list)
    for event in raw_events("gpt2_train_bf16.pt.trace.json.gz"):
        if event.get("cat") == "kernel" and event.get("ph") == "X":
            durations[event["name"]].append(event["dur"])
    changed = 0
    for row in kernels.iter_rows(named=True):
        name = row["name"]
        if name.endswith("..."):  # torch cuts long names: the one trace name it begins
            found = [n for n in durations if n.startswith(name[:-3])]
            name = found[0] if len(found) == 1 else name
        exact = durations.get(name)
        if not exact or len(exact) != row["calls"]:
            continue  # a name the table cut, or a row of several names
        truth = sum(exact) / len(exact)
        assert abs(row["mean_us"] - truth) <= abs(row["divided"] - truth) + 1e-9, row["name"]
        changed += abs(row["mean_us"] - row["divided"]) > 1e-6
    assert changed >= 3  # three rows with a whole trace name take the finer printed average
