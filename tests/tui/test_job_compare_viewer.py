"""The viewer comparing two jobs (pilot and a snapshot at 80x24): Ranks, Stragglers, Kernels tabs.

Witness: the tables on screen are the JobComparison's own frames, whose figures
tests/test_diff_jobs.py checks against the raw rank traces; the straggler glyphs are checked
against the ranks present in each job (gloo: ranks 0-1; DLRM: 0-7).
"""

from __future__ import annotations

import pytest
from support import ROOT, SAMPLES

from profview.diff.job_comparison import load_job_comparison
from profview.tui.drill.screen import DrillScreen
from profview.tui.job.compare import JobCompareApp, JobCompareScreen

GLOO = "samples/gloo_2rank"
DLRM = "samples/param_dlrm_8rank_v100.tar.gz"


def opener(before: str, after: str):  # type: ignore[no-untyped-def]
    return lambda progress: load_job_comparison(before, after, workers=1, use_cache=False, progress=progress)


async def shown(pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(400):
        if isinstance(pilot.app.screen, JobCompareScreen):
            break
        await pilot.pause(0.05)
    await pilot.pause()


@pytest.fixture(autouse=True)
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


async def test_tabs_filter_and_enter_on_two_jobs() -> None:
    app = JobCompareApp(opener(GLOO, DLRM), "gloo vs dlrm")
    notes: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await shown(pilot)
        screen = app.screen
        assert isinstance(screen, JobCompareScreen)
        comparison = app.job_comparison
        ranks = screen.active_frame_view().displayed
        assert ranks["name"].to_list() == comparison.ranks()["name"].to_list()
        assert ranks["median_us_after"].to_list() == comparison.ranks()["median_us_after"].to_list()
        await pilot.press("2")
        stragglers = screen.active_frame_view().displayed
        # ranks 2-7 exist in the DLRM job only: "▲ new"; 0 and 1 are in both
        assert stragglers["change"].to_list()[2:] == ["▲ new"] * 6
        assert stragglers["rank"].to_list() == list(range(8))
        await pilot.press("slash", *"rank 7", "enter")
        await pilot.pause()
        assert screen.active_frame_view().displayed["rank"].to_list() == [7]
        await pilot.press("tab")
        assert screen.pane == "kernels"
        assert screen.active_frame_view().displayed.height == comparison.kernels().height == 76
        app.notify = lambda message, **_kw: notes.append(message)  # type: ignore[method-assign]
        await pilot.press("enter")  # a kernel → rank by rank, before / after (tests/tui/test_drill_paths.py)
        for _ in range(100):
            if isinstance(app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, DrillScreen) and app.screen.view == "jobdiff_kernel_by_rank"
        assert notes == []


async def test_a_job_and_a_trace_end_with_the_one_line_error() -> None:
    trace = str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz")
    app = JobCompareApp(opener(GLOO, trace), "mixed")
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(200):
            if app.error:
                break
            await pilot.pause(0.05)
    assert app.error is not None and app.error.startswith("cannot compare a job (samples/gloo_2rank)")


def test_job_compare_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The Stragglers tab of gloo vs DLRM at 80x24: both headers, tabs, glyphs, footer."""

    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await shown(pilot)
        await pilot.press("2")
        await pilot.pause()

    assert snap_compare(JobCompareApp(opener(GLOO, DLRM), "gloo vs dlrm"), terminal_size=(80, 24), run_before=steps)
