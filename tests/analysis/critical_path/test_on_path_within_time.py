"""A name's time on the critical path is never more than its own time.

The path's host edges carry an event's own time and the time after it until the thread's next
event starts; that second part is no operator's time and is its own row, ``(between events)``.
Witness: the raw JSON's durations of the name, summed with the standard library (before the
rule, ``cudaStreamWaitEvent`` read 1,527.7 µs on the path of h100_compile_reduce_overhead for
7.4 µs of calls).
"""

from __future__ import annotations

import gzip
import json

import polars as pl
import pytest
from support import SAMPLES

from profview import load
from profview.analysis.critical_path.frames import BETWEEN_EVENTS
from profview.profiles.views import view_frame

TRACES = [
    "h100_compile_reduce_overhead.json.gz", "h100_compile_partial_window.json.gz", "hta_sampled_rank-0.json.gz",
    "hta_sampled_rank-1.json.gz", "gpt2_train_bf16.pt.trace.json.gz", "resnet50_train_amp.pt.trace.json.gz",
]


@pytest.mark.parametrize("name", TRACES)
def test_no_name_is_longer_on_the_path_than_its_calls(name: str) -> None:
    names = view_frame(load(SAMPLES / name, use_cache=False), "critical_path_names")
    over = names.filter(pl.col("on_path_us") > pl.col("total_us") + 0.0005)
    assert over.height == 0, over.select("name", "on_path_us", "total_us").rows()
    assert names["path_pct"].sum() <= 100.0 + 0.05 * names.height


def test_the_time_between_events_is_its_own_row_and_the_raw_calls_bound_each_name() -> None:
    path = SAMPLES / "h100_compile_reduce_overhead.json.gz"
    names = view_frame(load(path, use_cache=False), "critical_path_names")
    with gzip.open(path) as fh:
        events = json.load(fh)["traceEvents"]
    raw = sum(e.get("dur", 0) for e in events if e.get("ph") == "X" and e.get("name") == "cudaStreamWaitEvent")
    wait = names.filter(pl.col("name") == "cudaStreamWaitEvent")
    assert wait.height == 1 and 0 < wait["on_path_us"][0] <= raw + 0.0005
    between = names.filter(pl.col("name") == BETWEEN_EVENTS)
    assert between.height >= 1 and (between["on_path_us"] > 0).all()
