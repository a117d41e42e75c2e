"""Each rank's wait at collectives, step by step (the job grid's default shading, issue 22), and the
collectives view as one row per matched collective.

Witness: the ranks view's total waits (what ``summary`` prints) are the sum of the step waits, and
every call the ranks view counts lies in one step of gloo_2rank (three ProfilerStep ranges per rank).
"""

from __future__ import annotations

import polars as pl
import pytest
from support import SAMPLES

from profview.jobs.job import open_job


@pytest.fixture(scope="module")
def gloo():  # type: ignore[no-untyped-def]
    opened = open_job(SAMPLES / "gloo_2rank", workers=1, use_cache=False)
    yield opened
    opened.close()


def test_step_waits_add_up_to_each_ranks_total(gloo) -> None:  # type: ignore[no-untyped-def]
    waits = gloo.step_waits()
    assert waits.select("rank", "step").rows() == gloo.steps().select("rank", "step").sort("rank", "step").rows()
    totals = dict(waits.group_by("rank").agg(pl.col("wait_us").sum()).iter_rows())
    for rank, total in gloo.ranks_view().select("rank", "wait_us").iter_rows():
        assert totals[rank] == pytest.approx(total, abs=0.01)
    # rank 1 is the straggler: it waits only in its first step (1.947 ms), rank 0 in all three
    by = {(r, s): w for r, s, w in waits.iter_rows()}
    assert by[(1, 2)] == pytest.approx(1947.009, abs=0.001) and by[(1, 3)] == by[(1, 4)] == 0.0
    assert min(by[(0, s)] for s in (2, 3, 4)) > 40_000


def test_one_row_per_matched_collective(gloo) -> None:  # type: ignore[no-untyped-def]
    view = gloo.collectives()
    instances = gloo.collective_instances()
    matched = view.filter(pl.col("ranks") > 1)
    assert instances.height == matched["collective"].n_unique() == 9
    assert instances["max_wait_us"].to_list() == sorted(instances["max_wait_us"].to_list(), reverse=True)
    for row in instances.iter_rows(named=True):
        calls = matched.filter(pl.col("collective") == row["collective"])
        assert row["max_wait_us"] == calls["wait_us"].max()
        assert row["last_rank"] == calls.filter(pl.col("last"))["rank"].min()
        assert row["skew_us"] == pytest.approx(calls["start_us"].max() - calls["start_us"].min(), abs=0.001)
    # the straggler (rank 1) arrives last at 8 of the 9 (summary: "arrives last at 8 of 9 collectives")
    assert instances["last_rank"].to_list().count(1) == 8
