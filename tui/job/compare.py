"""Compare mode for two jobs (``profview diff JOB_A JOB_B``): Ranks (per-rank medians), Stragglers
(each rank's wait before and after) and Kernels (totals across ranks), each row led by the change
glyph of compare mode (▲ ▼ ``▲ new`` ``▼ gone`` ``=``, coloured where colour is available).

The app opens both jobs in a worker behind the loading screen; ``/``, ``s`` and ``e`` work on the
table on screen as everywhere.  Enter drills down, before / after / delta per row: a figure of
Ranks → that figure rank by rank; a rank of Stragglers → its kernels; a kernel → its calls and
total rank by rank; and from those, a rank → its kernels, a kernel → rank by rank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import polars as pl
from textual import events, work
from textual.widget import Widget

from ...analysis.diff.compare import GLYPHS
from ...diff.job_comparison import JOB_DIFF_VIEWS, SIDES, JobComparison
from ...jobs.executors import Progress
from ...sanitize import clean
from ..app import ProfviewApp
from ..compare.screen import CompareView
from ..compare.tabs import CompareTabs
from ..dialogs.loading import LoadingScreen
from ..drill.screen import DrillScreen
from ..keymap import bindings, user_keymap
from ..messages import DrillRequested, JobsCompared, LoadPhase
from ..widgets.table_view import FrameView
from ..workers import open_detached

JOB_COMPARE_TITLES = {"ranks": "Ranks (medians)", "stragglers": "Stragglers", "kernels": "Kernels"}
#: Columns shown first, so that 80 columns show the change first.
JOB_LEADING = {
    "ranks": ("change", "name", "delta_us", "delta_pct", "median_us_before", "median_us_after"),
    "stragglers": ("change", "rank", "wait_us_before", "wait_us_after", "delta_us", "straggler_before",
                   "straggler_after"),
    "kernels": ("change", "name", "delta_us", "delta_pct", "total_us_before", "total_us_after"),
    # drill-downs
    "figure_by_rank": ("change", "name", "delta_us", "delta_pct"),
    "kernel_by_rank": ("change", "name", "delta_us", "delta_pct", "calls_before", "calls_after",
                       "total_us_before", "total_us_after"),
    "rank_kernels": ("change", "name", "delta_us", "delta_pct", "calls_before", "calls_after",
                     "total_us_before", "total_us_after"),
}


def job_compare_frame(view: str, frame: pl.DataFrame) -> pl.DataFrame:
    """A job diff frame as the viewer shows it: the change glyph, then the leading columns."""
    glyphs = pl.col("status").replace_strict(GLYPHS, default="-").alias("change")
    shown = frame.with_columns(glyphs)
    leading = [c for c in JOB_LEADING[view] if c in shown.columns]
    return shown.select(*leading, *(c for c in shown.columns if c not in leading))


class JobCompareScreen(CompareTabs):
    """The three tabs of two jobs compared."""

    BINDINGS = bindings("job_compare")
    TABS = JOB_DIFF_VIEWS
    TAB_TITLES = JOB_COMPARE_TITLES

    def __init__(self, comparison: JobComparison) -> None:
        super().__init__(comparison, "ranks")
        self.comparison: JobComparison = comparison

    def panes(self) -> Iterator[Widget]:
        for pane in JOB_DIFF_VIEWS:
            yield CompareView(f"jobdiff_{pane}", job_compare_frame(pane, self.comparison.view(pane)), id=pane)


def job_drill(
    comparison: JobComparison, view: str, row: dict[str, Any], path: list[str]
) -> tuple[Callable[[], DrillScreen], str] | str:
    """What Enter on a row of ``view`` opens (a function building the screen, and what it is), or
    why nothing: the drill-downs of two jobs, before / after / delta per row."""
    status = row.get("status")
    if view == "ranks":
        figure, label = str(row.get("figure")), str(row.get("name"))
        crumb, where = [*path, f"{label} · rank by rank"], f"{label} rank by rank"

        def frame() -> pl.DataFrame:
            return comparison.figure_by_rank(figure)

        name = "figure_by_rank"
    elif view in ("stragglers", "figure_by_rank", "kernel_by_rank"):
        rank = row.get("rank")
        if not isinstance(rank, int):
            return "this row has no rank to drill into"
        crumb, where = [*path, f"rank {rank} · kernels"], f"rank {rank}'s kernels"

        def frame() -> pl.DataFrame:
            return comparison.rank_kernels(rank)

        name = "rank_kernels"
    elif view in ("kernels", "rank_kernels"):
        before = None if status == "added" else row.get("name")
        after = None if status == "removed" else row.get("name_after") or row.get("name")
        kernel = str(after or before)
        crumb, where = [*path, f"kernel {kernel} · rank by rank"], f"{kernel} rank by rank"

        def frame() -> pl.DataFrame:
            return comparison.kernel_by_rank(before and str(before), after and str(after))

        name = "kernel_by_rank"
    else:
        return "no drill-down from this table"
    if not path:
        crumb = [JOB_COMPARE_TITLES.get(view, view), *crumb]

    def build() -> DrillScreen:
        return DrillScreen(f"jobdiff_{name}", job_compare_frame(name, frame()), crumb, table=CompareView)

    return build, f"{where} (before / after)"


def _ranks_done(done: int, total: int, _elapsed: float) -> str:
    return f"ranks {done}/{total} done"


class JobCompareApp(ProfviewApp):
    """The viewer on two jobs compared: the loading screen while both open, then the compare tabs."""

    def __init__(self, opener: Callable[[Progress], JobComparison], label: str) -> None:
        super().__init__(label)
        self.opener = opener
        self.job_comparison: JobComparison | None = None

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # ProfviewApp.on_mount would load a file
        self.set_keymap(user_keymap())
        self.push_screen(LoadingScreen(self.path))
        self.open_jobs()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def open_jobs(self) -> None:
        """Open and compare both jobs (the loading screen counts the ranks done); post the comparison."""

        def progress(done: int, total: int, elapsed: float) -> None:
            self.post_message(LoadPhase(_ranks_done(done, total, elapsed)))

        opener = self.opener
        open_detached(self, lambda: opener(progress), JobsCompared, self.path, "compare the jobs", "opening the jobs")

    def on_jobs_compared(self, message: JobsCompared) -> None:
        comparison = message.comparison
        self.job_comparison = comparison
        self.loaded = self.linked = True
        self.switch_screen(JobCompareScreen(comparison))
        for which in SIDES:
            for note in comparison.side(which).notes:
                self.notify(clean(note), title=f"{which.upper()}: note", timeout=8)

    def frame_view(self) -> FrameView | None:
        if isinstance(self.screen, JobCompareScreen):
            return self.screen.active_frame_view()
        return super().frame_view()

    async def on_drill_requested(self, message: DrillRequested) -> None:
        message.prevent_default()
        comparison = self.job_comparison
        if comparison is None:
            return
        path = list(self.screen.path) if isinstance(self.screen, DrillScreen) else []
        target = job_drill(comparison, message.view.removeprefix("jobdiff_"), message.row, path)
        if isinstance(target, str):
            self.notify(target, timeout=4)
            return
        build, what = target
        await self.start_drill(build, what)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("cycle", "group", "next_run", "pane"):
            return False
        return super().check_action(action, parameters)
