"""A job's collectives and ranks views built from every rank's frames in one frame equal the same
views built rank by rank; a folder's traces are listed as ``Path.rglob`` sorted lists them."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from profview.analysis.distributed.collectives import match_keys, stacked_match_keys
from profview.analysis.distributed.ranks import rank_table, stacked_rank_table
from profview.jobs.inputs import JOB_FILE_NAME, traces_below
from profview.jobs.job import Job, open_job
from profview.store.rank_summaries import valid_info

SAMPLES = Path(__file__).resolve().parent.parent.parent / "samples"
DLRM = SAMPLES / "param_dlrm_8rank_v100.tar.gz"
GLOO = SAMPLES / "gloo_2rank"


@pytest.fixture(scope="module", params=[DLRM, GLOO], ids=["dlrm", "gloo"])
def job(request: pytest.FixtureRequest) -> Job:
    opened = open_job(request.param, workers=2, use_cache=False)
    yield opened
    opened.close()


def _stacked_calls(job: Job) -> pl.DataFrame:
    return pl.concat(
        [s.calls.with_columns(pl.lit(r, dtype=pl.Int64).alias("rank")) for r, s in job._pairs()],
        how="diagonal_relaxed",
    )


def test_every_ranks_calls_keyed_at_once_are_each_ranks_calls_keyed_alone(job: Job) -> None:
    """The witness: each rank's own frame keyed on its own (its ordinals counted in it alone)."""
    alone = pl.concat(
        [match_keys(s.calls, r).with_columns(pl.lit(r, dtype=pl.Int64).alias("rank")) for r, s in job._pairs()],
        how="diagonal_relaxed",
    )
    together = stacked_match_keys(_stacked_calls(job))
    assert together.height == alone.height > 0
    assert together.select(alone.columns).equals(alone)
    assert together["match"].value_counts().height >= 1


def test_the_ranks_view_from_one_frame_is_the_view_rank_by_rank(job: Job) -> None:
    rows = [(r, s.steps, s.facts) for r, s in job._pairs()]
    by_rank = rank_table(rows, job.collectives(), job.clock_offsets())
    steps = pl.concat(
        [s.steps.with_columns(pl.lit(r, dtype=pl.Int64).alias("rank")) for r, s in job._pairs()],
        how="diagonal_relaxed",
    )
    facts = [(r, s.facts) for r, s in job._pairs()]
    stacked = stacked_rank_table(steps, facts, job.collectives(), job.clock_offsets())
    assert stacked.equals(by_rank) and stacked.height == len(job.ranks)
    assert job.ranks_view().equals(by_rank)  # what the job shows: built from its held frames
    # a figure recomputed by hand: rank 0's mean step time
    first = job.summaries[0].steps
    if first.height:
        assert by_rank["step_us"][0] == round(sum(first["duration_us"].to_list()) / first.height, 3)


def test_a_folders_traces_are_listed_as_rglob_sorted_lists_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("rank1.json", "rank10.json.gz", "rank2.json", ".hidden.json", "notes.txt", "a-b/rank3.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "rank4.json").write_text("{}")
    (tmp_path / "a.json").mkdir()  # a folder named like a trace: not a file
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "rank9.json").write_text("{}")
    os.symlink(outside, tmp_path / "linked")  # a symlinked folder: not entered
    os.symlink(tmp_path / "rank1.json", tmp_path / "rank5.json")  # a symlink to a file: kept
    os.symlink(tmp_path / "gone.json", tmp_path / "rank6.json")  # a dangling one: no file
    for folder in (str(tmp_path), str(tmp_path) + "/"):
        witness = [str(p) for p in sorted(Path(folder).rglob("*")) if JOB_FILE_NAME.search(p.name) and p.is_file()]
        assert traces_below(folder) == witness
        assert len(witness) == 7  # rank1, 2, 5, 10, .hidden, a-b/rank3, a/b/rank4
    monkeypatch.chdir(tmp_path)
    here = [str(p) for p in sorted(Path(".").rglob("*")) if JOB_FILE_NAME.search(p.name) and p.is_file()]
    assert traces_below(".") == here and "rank1.json" in here


def test_a_saved_ranks_document_is_checked_type_by_type() -> None:
    good = {
        "path": "r.json",
        "rank": 0,
        "world_size": 2,
        "backend": "nccl",
        "facts": {"a": 1.5, "b": 2},
        "warnings": [],
    }
    assert valid_info(good) and valid_info({**good, "rank": None, "backend": None})
    for bad in (
        {**good, "facts": {"a": True}},
        {**good, "facts": {"a": "1"}},
        {**good, "facts": [1.0]},
        {**good, "warnings": [1]},
        {**good, "rank": True},
        {**good, "world_size": 2.0},
        {**good, "backend": 1},
        [good],
    ):
        assert not valid_info(bad)
