"""The viewer on a job (pilot): the Ranks grid and table, Collectives by wait, a rank's own views."""

from __future__ import annotations

import polars as pl
import pytest
from support import SAMPLES

from profview.jobs.job import open_job
from profview.tui.job.app import JobApp
from profview.tui.job.grid import SHADES, RankGrid, grid_text
from profview.tui.job.screen import JobScreen
from profview.tui.main.screen import MainScreen
from profview.tui.messages import LoadPhase


@pytest.fixture(scope="module")
def job():  # type: ignore[no-untyped-def]
    opened = open_job(SAMPLES / "param_dlrm_8rank_v100.tar.gz", workers=1, use_cache=False)
    yield opened
    opened.close()


def test_the_grid_reads_without_colour(job) -> None:  # type: ignore[no-untyped-def]
    text = grid_text(job.steps(), job.stragglers(), "duration_us", 80).plain
    lines = {int(line.split()[0]): line for line in text.splitlines()[1:9]}
    # rank 1 has the longest step (19.901 ms: its ProfilerStep#10 in the raw trace), rank 7 the shortest
    steps = job.steps().sort("duration_us")
    assert steps["rank"][0] == 7 and steps["rank"][-1] == 1
    assert SHADES[-1] in lines[1] and SHADES[0] in lines[7]
    # the straggler is marked on its own row only (rank 5 since collectives are matched on evidence:
    # the SendRecvs, whose peers the trace does not record, are left unmatched)
    (straggler,) = job.stragglers()
    assert lines[straggler].rstrip().endswith("◀ straggler")
    assert all("◀" not in line for rank, line in lines.items() if rank != straggler)


async def test_ranks_tab_enter_opens_a_rank_and_q_comes_back(job) -> None:  # type: ignore[no-untyped-def]
    app = JobApp(job)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, JobScreen)
        assert screen.frame_view().displayed["rank"].to_list() == list(range(8))
        assert screen.query_one(RankGrid).column == "wait_us"  # issue 22: shaded by wait first
        await pilot.press("c", "c")
        assert screen.query_one(RankGrid).column == "kernel_us"
        await pilot.press("G", "enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        opened_rank = (app.screen.profile.metadata["distributedInfo"] or {})["rank"]
        assert opened_rank == screen.frame_view().displayed["rank"][-1]
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("2")
        await pilot.pause()
        shown = screen.frame_view().displayed  # one row per collective matched across ranks
        matched = job.collectives().filter(pl.col("ranks") > 1)
        assert shown["max_wait_us"][0] == matched["wait_us"].max()
        assert shown.height == matched["collective"].n_unique() == 3  # the AllReduces: seq on every rank
        # the longest wait: the rank that waited longest at it, for the rank that arrived last
        first = job.collectives().filter(pl.col("collective") == shown["collective"][0])
        waited = first.sort("wait_us", descending=True)["rank"][0]
        assert first.filter(pl.col("last"))["rank"].to_list() == [shown["last_rank"][0]]
        assert shown["waiting_rank"][0] == waited


def test_job_screen_layout(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The Ranks tab at 80x24: grid, legend, straggler marker, ranks table, footer."""
    from support import ROOT

    monkeypatch.chdir(ROOT)
    opened = open_job("samples/param_dlrm_8rank_v100.tar.gz", workers=1, use_cache=False)

    async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()

    try:
        assert snap_compare(JobApp(opened), terminal_size=(80, 24), run_before=settle)
    finally:
        opened.close()


async def test_the_viewer_opens_a_job_with_its_progress_on_the_loading_screen() -> None:
    phases: list[str] = []

    class Recording(JobApp):
        def on_load_phase(self, message: LoadPhase) -> None:  # Textual calls JobApp's own handler too
            phases.append(message.phase)

    app = Recording(lambda progress: open_job(SAMPLES / "gloo_2rank", workers=1, use_cache=False, progress=progress))
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(200):  # the screen, then its table (composed a moment after the screen is pushed)
            if isinstance(app.screen, JobScreen) and app.screen.query("#ranks-table"):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, JobScreen)
        assert app.screen.frame_view().displayed["rank"].to_list() == [0, 1]
    assert phases[-1].startswith("ranks 2/2 done")
