"""A job's ranks held concatenated (store/rank_frames.py): each rank's frame comes back exactly.

The witness is the frame itself: what is handed in is compared, column for column and dtype for
dtype, with what a rank's slice gives back, for real ranks' summaries (the gloo job's two ranks,
each repeated so that groups of several batches form) and for generated frames of mixed schemas.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from support import SAMPLES

from profview.jobs.rank_summary import summarise_rank
from profview.store import rank_frames
from profview.store.rank_frames import INDEX, KINDS, RankFrames


@pytest.fixture(scope="module")
def gloo_frames() -> list[dict[str, pl.DataFrame]]:
    ranks = sorted((SAMPLES / "gloo_2rank").glob("*.json*"))
    summaries = [summarise_rank(str(path), use_cache=False) for path in ranks]
    return [{"steps": s.steps, "kernels": s.kernels, "calls": s.calls} for s in summaries]


def test_real_ranks_come_back_exactly_across_batches(gloo_frames, monkeypatch) -> None:
    monkeypatch.setattr(rank_frames, "BATCH", 3)
    held = RankFrames()
    order = [gloo_frames[i % 2] for i in range(8)]
    for index, frames in enumerate(order):
        held.add(index, frames)
    assert len(held.groups("kernels")) == 3  # 3 + 3 + 2 ranks, one schema
    for index, frames in enumerate(order):
        for kind in KINDS:
            assert_frame_equal(held.frame(index, kind), frames[kind])
    # The text is held encoded: a name every rank ran is one category, not eight strings.
    group = held.groups("kernels")[0]
    assert group.frame.schema["name"] == pl.Categorical
    stacked = held.stacked("kernels", ["name", "total_us"], decode=True)
    expected = sum(frames["kernels"]["total_us"].sum() for frames in order)
    assert stacked["total_us"].sum() == pytest.approx(expected, abs=1e-6)
    assert stacked.schema["name"] == pl.String


def test_a_saved_group_comes_back_with_its_empty_ranks() -> None:
    table = pl.DataFrame({"name": ["a", "b", "c"], "total_us": [1.0, 2.0, 3.0], INDEX: [4, 4, 9]})
    held = RankFrames()
    held.add_group("kernels", table.with_columns(pl.col(INDEX).cast(pl.Int32)), [4, 7, 9])
    assert held.frame(4, "kernels")["name"].to_list() == ["a", "b"]
    assert held.frame(7, "kernels").height == 0
    assert held.frame(7, "kernels").schema == {"name": pl.String, "total_us": pl.Float64}
    assert held.frame(9, "kernels")["total_us"].to_list() == [3.0]
    with pytest.raises(ValueError):
        RankFrames().add_group("kernels", table.with_columns(pl.col(INDEX).cast(pl.Int32)), [4])


_columns = st.lists(
    st.sampled_from([("name", pl.String), ("calls", pl.Int64), ("total_us", pl.Float64), ("grid", pl.String)]),
    min_size=1, max_size=4, unique_by=lambda c: c[0],
)


@st.composite
def _frame(draw: st.DrawFn) -> pl.DataFrame:
    columns = draw(_columns)
    rows = draw(st.integers(0, 5))
    data: dict[str, list] = {}
    for name, dtype in columns:
        values = st.text(max_size=6) if dtype == pl.String else (
            st.integers(-(2**63), 2**63 - 1) if dtype == pl.Int64 else st.floats(allow_nan=False)
        )
        data[name] = draw(st.lists(st.none() | values, min_size=rows, max_size=rows))
    return pl.DataFrame(data, schema=dict(columns))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_frame(), _frame(), _frame()), min_size=1, max_size=8), st.integers(1, 5))
def test_any_frames_come_back_exactly(ranks, batch) -> None:
    rank_frames_module_batch = rank_frames.BATCH
    rank_frames.BATCH = batch
    try:
        held = RankFrames()
        for index, frames in enumerate(ranks):
            held.add(index * 3, dict(zip(KINDS, frames, strict=True)))
        for index, frames in enumerate(ranks):
            for kind, frame in zip(KINDS, frames, strict=True):
                assert_frame_equal(held.frame(index * 3, kind), frame)
    finally:
        rank_frames.BATCH = rank_frames_module_batch
