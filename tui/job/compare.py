"""Compare mode for two jobs (``profview diff JOB_A JOB_B``): Ranks (per-rank medians), Stragglers
(each rank's wait before and after) and Kernels (totals across ranks), each row led by the change
glyph of compare mode (▲ ▼ ``▲ new`` ``▼ gone`` ``=``, coloured where colour is available).

The app opens both jobs in a thread behind the loading screen; ``/``, ``s`` and ``e`` work on the
table on screen as everywhere.  Rows have no drill-down: a rank's views are one job's viewer's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import polars as pl
from textual import events
from textual.widget import Widget

from ...analysis.diff import GLYPHS
from ...diff.job_comparison import JOB_DIFF_VIEWS, SIDES, JobComparison
from ...jobs.executors import Progress
from ...sanitize import clean
from ..app import ProfviewApp, finish_run
from ..compare.screen import CompareView
from ..compare.tabs import CompareTabs
from ..dialogs.loading import LoadingScreen
from ..keymap import bindings, user_keymap
from ..messages import DrillRequested
from ..thread_opener import OpensOnThread
from ..widgets.table_view import FrameView

JOB_COMPARE_TITLES = {"ranks": "Ranks (medians)", "stragglers": "Stragglers", "kernels": "Kernels"}
#: Columns shown first, so that 80 columns show the change first.
JOB_LEADING = {
    "ranks": ("change", "name", "median_us_before", "median_us_after", "delta_us", "delta_pct"),
    "stragglers": ("change", "rank", "wait_us_before", "wait_us_after", "delta_us", "straggler_before",
                   "straggler_after"),
    "kernels": ("change", "name", "total_us_before", "total_us_after", "delta_us", "delta_pct"),
}
NO_DRILL = "no drill-down here: open one job with `profview JOB` for its ranks' own views"


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


def _ranks_done(done: int, total: int, _elapsed: float) -> str:
    return f"ranks {done}/{total} done"


class JobCompareApp(OpensOnThread, ProfviewApp):
    """The viewer on two jobs compared: the loading screen while both open, then the compare tabs."""

    def __init__(self, opener: Callable[[Progress], JobComparison], label: str) -> None:
        super().__init__(label)
        self.opener = opener
        self.job_comparison: JobComparison | None = None

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # ProfviewApp.on_mount would load a file
        self.set_keymap(user_keymap())
        self.push_screen(LoadingScreen(self.path))
        self.open_on_thread(self.opener, "the jobs", _ranks_done, self._opened)

    def _opened(self, comparison: JobComparison) -> None:
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

    def on_drill_requested(self, message: DrillRequested) -> None:
        message.prevent_default()
        self.notify(NO_DRILL, timeout=4)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("cycle", "group", "next_run", "pane"):
            return False
        return super().check_action(action, parameters)


def run_job_compare(opener: Callable[[Progress], JobComparison], label: str) -> int:
    """Open the viewer on two jobs (``opener`` opens them, in a thread); return the exit code.

    The jobs' extracted archives are removed when the viewer ends.
    """
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # while stderr is still the terminal (see tui/job_app.py)
    app = JobCompareApp(opener, label)
    try:
        code = app.run()
    finally:
        if app.job_comparison is not None:
            app.job_comparison.close()
    return finish_run(app, code, workers=True)
