"""Every drill path of the viewer, by pilot (issue 22): one trace, a rank of a job, compare mode,
two jobs compared, text tables.

Witness: the raw events, read with the standard library (a kernel's launch paths add up to the
number of its kernel events in the trace), and the engine's own frames for the tables a drill-down
shows.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from pilot import wait_loaded
from support import SAMPLES, raw_events, viewer
from textual.widgets import Input, Static

from profview.jobs.job import open_job
from profview.tui.drill.screen import DrillScreen
from profview.tui.drill.worker import DrillProgress
from profview.tui.job.app import JobApp
from profview.tui.job.screen import JobScreen
from profview.tui.main.screen import MainScreen
from profview.tui.widgets.table_view import FrameView

RESNET = "resnet50_train_amp.pt.trace.json.gz"
DLRM = "param_dlrm_8rank_v100.tar.gz"
QWEN = "tracelens_h100_qwen1.5-0.5b.json.gz"


async def until(pilot, done: Callable[[], bool], seconds: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(seconds / 0.05)):
        if done():
            break
        await pilot.pause(0.05)
    await pilot.pause()


def kernel_count(events: list[dict], name: str) -> int:
    return sum(1 for e in events if e.get("cat") == "kernel" and e.get("ph") == "X" and e.get("name") == name)


def rank_events(rank: int) -> list[dict]:
    """Rank ``rank``'s trace events, read from the archive with the standard library."""
    with tarfile.open(SAMPLES / DLRM) as tar:
        member = next(m for m in tar.getmembers() if f"/worker{rank}_" in m.name)
        handle = tar.extractfile(member)
        assert handle is not None
        return json.load(handle)["traceEvents"]


@pytest.fixture(scope="module")
def job():  # type: ignore[no-untyped-def]
    opened = open_job(SAMPLES / DLRM, workers=1, use_cache=False)
    yield opened
    opened.close()


async def test_one_trace_a_kernel_drills_into_its_launch_paths() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "enter")
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.view == "kernel_launches"
        name = drill.path[-1].removeprefix("kernel ")
        assert int(drill.frame["calls"].sum()) == kernel_count(raw_events(RESNET), name) > 0


async def test_enter_on_a_decode_loops_gemm_shows_the_launchers_of_the_precomputed_index() -> None:
    """The viewer computes every launching row's path once, after linking (the launch
    index); Enter on the most launched GEMM of a decode loop shows what the per-kernel computation
    gives, and its launches add up to the trace's kernel events (counted with the standard library)."""
    from profview.analysis.tables.launches import kernel_launches

    app = viewer(QWEN)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_loaded(pilot, app)
        await until(pilot, lambda: not app.threads.busy())  # the load's last part: the index made
        profile = app.profile
        assert profile is not None and "launch_index" in vars(profile)
        await pilot.press("2")
        await pilot.pause()
        view = next(v for v in app.screen.query(FrameView) if v.view == "kernels")
        gemm = profile.kernels().sort("calls", descending=True)["name"][0]
        view.table.move_cursor(row=view.displayed["name"].to_list().index(gemm), column=0)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.path[-1] == f"kernel {gemm}"
        assert drill.frame.equals(kernel_launches(profile.model, gemm))
        assert int(drill.frame["calls"].sum()) == kernel_count(raw_events(QWEN), gemm) == 241


async def test_a_rank_of_a_job_drills_down(job) -> None:  # type: ignore[no-untyped-def]
    """Enter on rank 7, Kernels, Enter on its top kernel: the launch paths of that kernel in rank 7."""
    app = JobApp(job)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, JobScreen)
        await pilot.press("G", "enter")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        assert isinstance(app.screen, MainScreen)
        # titled after the job and the rank's own file, not the archive's temporary copy
        assert app.screen.title_text == "param_dlrm_8rank_v100.tar.gz › rank 7 (worker7_step_12.1694128201553)"
        await pilot.press("2", "e")  # an export from a rank's views is named after the job and the rank
        await pilot.pause()
        box = app.screen.query_one(Input)
        assert Path(box.value).name == "profview-param-dlrm-8rank-v100-rank-7-kernels.csv"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.view == "kernel_launches"
        name = drill.path[-1].removeprefix("kernel ")
        assert int(drill.frame["calls"].sum()) == kernel_count(rank_events(7), name) > 0
        await pilot.press("enter")  # deeper: the launching operator's GPU work, still rank 7's
        await until(pilot, lambda: len([s for s in app.screen_stack if isinstance(s, DrillScreen)]) == 2)
        assert isinstance(app.screen, DrillScreen) and app.screen.view == "op_launches"
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await pilot.press("escape")  # Esc from the rank's views: back to the job
        await pilot.pause()
        assert isinstance(app.screen, JobScreen)
        await pilot.press("e")  # the job screen's exports are named after the job, even after a rank was open
        await pilot.pause()
        assert Path(app.screen.query_one(Input).value).name == "profview-param-dlrm-8rank-v100-ranks.csv"


async def test_a_rank_opens_in_a_worker_with_progress_and_esc(job, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Opening a rank parses it off the UI thread: a progress screen, and Esc gives up (the job stays)."""
    import threading

    from profview.profiles import loading

    release = threading.Event()
    real = loading.load

    def slow(*args, **kwargs):  # type: ignore[no-untyped-def]
        release.wait(20)
        return real(*args, **kwargs)

    monkeypatch.setattr(loading, "load", slow)
    app = JobApp(job)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("G", "enter")
        await pilot.pause(0.4)
        assert isinstance(app.screen, DrillProgress)
        shown = str(app.screen.query_one("#drill-progress-text", Static).render())
        assert "opening param_dlrm_8rank_v100.tar.gz › rank 7 (worker7_step_12.1694128201553)" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, JobScreen)
        release.set()
        await pilot.pause(0.5)
        assert isinstance(app.screen, JobScreen)  # the dropped result opens nothing


async def test_text_tables_say_why_a_row_has_no_drill_down() -> None:
    """A torch key_averages table links no operator to its kernels: Enter says so, in the message line."""
    app = viewer("resnet50_train_amp.tables.txt")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot, app)
        for pane in ("2", "3"):
            await pilot.press(pane, "enter")
            await pilot.pause(0.3)
            assert isinstance(app.screen, MainScreen)
            assert app.notices[-1] == (
                "no drill-down: a key_averages table does not link operators to the kernels they launched"
            )


async def test_compare_mode_drills_into_both_sides() -> None:
    """A kernel in both traces → its launch paths before / after / delta; a path → its operator's
    kernels on both sides.  Every figure adds up to the raw events of each side."""
    from witness import AFTER, BEFORE, raw_kernels

    from profview.tui.app import ProfviewApp
    from profview.tui.compare.screen import CompareScreen

    name = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
    app = ProfviewApp(str(BEFORE), no_cache=True, compare={"after": str(AFTER)})
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        view = app.frame_view()
        assert view is not None
        await pilot.press(*["down"] * view.displayed["name"].to_list().index(name), "enter")
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.view == "diff_kernel_launches"
        assert drill.path == ["Kernels · before → after", f"kernel {name}"]
        frame = drill.frame
        before, after = raw_kernels(BEFORE)[name], raw_kernels(AFTER)[name]
        assert (int(frame["calls_before"].sum()), int(frame["total_us_before"].sum())) == before == (18, 32880)
        assert (int(frame["calls_after"].sum()), int(frame["total_us_after"].sum())) == after
        assert frame.columns[:4] == ["change", "name", "delta_us", "delta_pct"]  # the change first at 80 columns
        assert (frame["total_us_after"] - frame["total_us_before"]).to_list() == frame["delta_us"].to_list()
        await pilot.press("enter")  # the top path's operator: its GPU work on both sides
        await until(pilot, lambda: len([s for s in app.screen_stack if isinstance(s, DrillScreen)]) == 2)
        deeper = app.screen
        assert isinstance(deeper, DrillScreen) and deeper.view == "diff_op_launches"
        assert deeper.path[-1] == f"op {frame['op'][0]}"
        row = deeper.frame.filter(pl.col("name") == name).row(0, named=True)
        assert row["calls_before"] <= before[0] and row["calls_after"] <= after[0]


async def test_two_jobs_compared_drill_rank_by_rank() -> None:
    """Kernels of gloo vs DLRM: Enter on the top kernel → its calls and total on each rank, before
    and after; Enter on a rank → that rank's kernels.  Witness: each rank's raw events."""
    from support import ROOT

    from profview.diff.job_comparison import load_job_comparison
    from profview.tui.job.compare import JobCompareApp, JobCompareScreen

    def opener(progress):  # type: ignore[no-untyped-def]
        return load_job_comparison(str(ROOT / "samples/gloo_2rank"), str(SAMPLES / DLRM), workers=1,
                                   use_cache=False, progress=progress)

    app = JobCompareApp(opener, "gloo vs dlrm")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, JobCompareScreen), 60)
        await pilot.press("3", "enter")
        await until(pilot, lambda: isinstance(app.screen, DrillScreen))
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.view == "jobdiff_kernel_by_rank"
        name = drill.path[-1].removeprefix("kernel ").removesuffix(" · rank by rank")
        frame = drill.frame
        assert frame["rank"].to_list() == list(range(8))
        for rank, calls, total in frame.select("rank", "calls_after", "total_us_after").iter_rows():
            events = [e for e in rank_events(rank) if e.get("cat") == "kernel" and e.get("name") == name]
            assert (calls, total) == (len(events), sum(e["dur"] for e in events))
        await pilot.press("G", "enter")  # rank 7 → its kernels, before (gloo has no rank 7) and after
        await until(pilot, lambda: len([s for s in app.screen_stack if isinstance(s, DrillScreen)]) == 2)
        ranked = app.screen
        assert isinstance(ranked, DrillScreen) and ranked.view == "jobdiff_rank_kernels"
        kernels = ranked.frame
        assert int(kernels["calls_before"].sum()) == 0
        assert int(kernels["calls_after"].sum()) == sum(1 for e in rank_events(7) if e.get("cat") == "kernel")
