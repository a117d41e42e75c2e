"""The job screen says why (issue 22): the straggler's reason line, one row per collective with its
per-rank rows on Enter, the grid shaded by wait and following the ranks table's sort and filter.

Witness: the rank traces' raw events for the waits (a collective kernel's start on each rank,
corrected by the clock offsets the engine reports), the CLI's own line for the header.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile

import polars as pl
import pytest
from pilot import screen_text
from support import SAMPLES, run_cli

from profview.jobs.job import open_job
from profview.report.job_summary import ranks_phrase, straggler_line
from profview.tui.drill.screen import DrillScreen
from profview.tui.job.app import JobApp
from profview.tui.job.grid import SHADES, RankGrid, bound_labels, bucket_bounds, grid_text
from profview.tui.job.screen import JobScreen, grid_steps

DLRM = "param_dlrm_8rank_v100.tar.gz"


@pytest.fixture(scope="module")
def job():  # type: ignore[no-untyped-def]
    opened = open_job(SAMPLES / DLRM, workers=1, use_cache=False)
    yield opened
    opened.close()


def first_kernel_starts() -> dict[int, float]:
    """Each rank's first NCCL kernel start (µs, its own clock), from the archive's raw events."""
    starts = {}
    with tarfile.open(SAMPLES / DLRM) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            handle = tar.extractfile(member)
            assert handle is not None
            doc = json.load(handle)
            rank = doc["distributedInfo"]["rank"]
            starts[rank] = min(e["ts"] for e in doc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"])
    return starts


async def test_the_header_says_why_and_collectives_are_one_row_each(job) -> None:  # type: ignore[no-untyped-def]
    app = JobApp(job)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        reason = straggler_line(job)  # the same line profview summary prints
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert run_cli(["summary", str(SAMPLES / DLRM), "--no-cache", "-j", "1"]) == 0
        assert reason.startswith("straggler: rank 5, named by the least total wait")
        assert reason in " ".join(out.getvalue().split())
        assert " ".join(text.split()).count(reason) == 1
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, JobScreen)
        rows = screen.frame_view().displayed
        assert rows.columns[:6] == ["collective", "name", "bytes", "ranks", "last_rank", "max_wait_us"]
        # the first row's collective: its wait on rank r is the last arrival's start minus r's, on
        # the corrected clock (the SendRecvs have no recorded peer: only the AllReduces are matched)
        calls = job.collectives().filter(pl.col("collective") == rows["collective"][0])
        assert set(calls["name"].to_list()) == {"AllReduce"} and calls.height == 8
        corrected = dict(zip(calls["rank"].to_list(), calls["start_us"].to_list(), strict=True))
        last = max(corrected, key=corrected.__getitem__)
        first = rows.row(0, named=True)
        assert first["last_rank"] == last
        assert first["skew_us"] == pytest.approx(max(corrected.values()) - min(corrected.values()), abs=0.01)
        assert first["max_wait_us"] == pytest.approx(corrected[last] - min(corrected.values()), abs=0.01)
        await pilot.press("enter")  # its per-rank rows, longest wait first
        await pilot.pause()
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.view == "collective_ranks"
        assert drill.frame["rank"].to_list() == sorted(corrected, key=lambda r: (corrected[r], r))
        assert drill.frame.filter(pl.col("arrival") == "◀ last")["rank"].to_list() == [last]


async def test_the_grid_is_shaded_by_wait_and_follows_the_ranks_table(job) -> None:  # type: ignore[no-untyped-def]
    app = JobApp(job)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, JobScreen)
        grid = screen.query_one(RankGrid)
        lines = [line for line in str(grid.render()).splitlines() if line[1:6].strip().isdigit()]
        by_rank = {int(line[1:6]): line for line in lines}
        # the rank that waits least is the lightest shade, the one that waits most the darkest
        waits = grid_steps(job).group_by("rank").agg(pl.col("wait_us").sum()).sort("wait_us")
        assert SHADES[0] in by_rank[waits["rank"][0]] and SHADES[-1] in by_rank[waits["rank"][-1]]
        view = screen.frame_view()
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"rank [4-7]$", "enter")  # filter the ranks table: the grid follows
        await pilot.pause(0.2)
        assert view.displayed["rank"].to_list() == [4, 5, 6, 7]
        shown = [int(line[1:6]) for line in str(grid.render()).splitlines() if line[1:6].strip().isdigit()]
        assert shown == [4, 5, 6, 7]


def test_the_legend_buckets_differ() -> None:
    """Quartiles that coincide make one bucket, and labels get the decimals that tell them apart."""
    assert bucket_bounds(pl.Series([1.0, 1.0, 1.0, 2.0])) == [1.0, 1.25]
    assert bound_labels([1020.0, 1060.0, 1090.0]) == ["1.02ms", "1.06ms", "1.09ms"]
    steps = pl.DataFrame({"rank": [0, 1, 2, 3], "step": [1] * 4, "wait_us": [1000.0, 1040.0, 1060.0, 1100.0]})
    legend = grid_text(steps, [0], "wait_us", 80).plain.splitlines()[-1]
    labels = [part.split()[1] for part in legend.split(":", 1)[1].split("  ") if part.strip()]
    assert len(labels) == len(set(labels)) == 4


def test_ties_are_summarised() -> None:
    assert ranks_phrase(list(range(7, 1024, 8))) == "rank 7 and 127 more ranks tie (every 8th from 7)"
    assert ranks_phrase(list(range(4, 12))) == "rank 4 and 7 more ranks tie (4-11)"
    assert ranks_phrase([2, 5]) == "ranks 2, 5" and ranks_phrase([3]) == "rank 3"


def test_the_grid_scrolls_to_the_highlighted_rank(job) -> None:  # type: ignore[no-untyped-def]
    """Fewer lines than ranks: the rows around the cursor, and where they are among all."""

    text = grid_text(grid_steps(job), job.stragglers(), "wait_us", 80, list(range(8)), height=6, cursor=7).plain
    lines = text.splitlines()
    assert lines[0].endswith("ranks 4–7 shown, 8 in all")  # issue 34: the ranks' ids (it said "ranks 5-8 of 8")
    assert [int(line[1:6]) for line in lines[1:-1]] == [4, 5, 6, 7] and lines[-2].startswith("›    7")


def test_collectives_tab_layout(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The Collectives tab at 80x24: the reason line, one row per collective, longest wait first."""
    from support import ROOT

    monkeypatch.chdir(ROOT)
    opened = open_job("samples/param_dlrm_8rank_v100.tar.gz", workers=1, use_cache=False)

    async def collectives(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()

    try:
        assert snap_compare(JobApp(opened), terminal_size=(80, 24), run_before=collectives)
    finally:
        opened.close()
