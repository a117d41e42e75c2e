"""The viewer on a distributed job: the job screen first, each rank's usual views on Enter."""

from __future__ import annotations

import os
from collections.abc import Callable

from textual import events

from ...errors import ProfviewError
from ...jobs.executors import Progress
from ...jobs.job import Job
from ...sanitize import clean
from ..app import ProfviewApp, finish_run, prepare, remember
from ..dialogs.loading import LoadingScreen
from ..drill.screen import DrillScreen
from ..keymap import user_keymap
from ..main.screen import MainScreen
from ..messages import DrillRequested
from ..thread_opener import OpensOnThread
from ..widgets.table_view import FrameView
from .screen import JobScreen, rank_of


def _ranks_left(done: int, total: int, elapsed: float) -> str:
    left = elapsed / done * (total - done) if done else 0.0
    return f"ranks {done}/{total} done, ~{left:.0f} s left"


class JobApp(OpensOnThread, ProfviewApp):
    """:class:`ProfviewApp` over a :class:`Job`: q/Esc in a rank's views come back to the job."""

    def __init__(self, job: Job | Callable[[Progress], Job], label: str = "job") -> None:
        """``job``: an opened job, or a function that opens one (called in a thread, with a
        progress callback: the loading screen shows the ranks done and the time left)."""
        self.opener = None if isinstance(job, Job) else job
        source = job.source if isinstance(job, Job) else label
        super().__init__(source, no_cache=False, comm_pattern=job.comm_pattern if isinstance(job, Job) else None)
        self.job = job if isinstance(job, Job) else None
        self.linked = True
        self.loaded = self.job is not None

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # Textual would run ProfviewApp.on_mount (which loads a file) next
        self.set_keymap(user_keymap())
        if self.job is not None:
            self.push_screen(JobScreen(self.job))
            return
        self.push_screen(LoadingScreen(self.path))
        self.open_on_thread(self.opener, "the job", _ranks_left, self._opened)

    def _opened(self, job: Job) -> None:
        self.job = job
        self.loaded = True
        self.comm_pattern = job.comm_pattern
        self.switch_screen(JobScreen(job))
        for rank, summary in zip(job.ranks, job.summaries, strict=True):
            for warning in summary.warnings:
                self.notify(clean(warning), title=f"rank {rank}: warning", severity="warning", timeout=10)

    def frame_view(self) -> FrameView | None:
        if isinstance(self.screen, JobScreen):
            return self.screen.frame_view()
        return super().frame_view()

    def open_rank(self, rank: int) -> None:
        """Load that rank's trace (through the cache) and show its main screen."""
        if self.job is None:
            return
        self.notify(f"opening rank {rank}…", timeout=2)
        try:
            path = self.job.trace_path(rank)  # a rank of an archive re-opened from the cache: extracted now
        except ProfviewError as exc:
            self.notify(clean(exc.problem), title=f"rank {rank}", severity="error")
            return
        self._open(rank, path)

    def _open(self, rank: int, path: str) -> None:
        from ...profiles.loading import load

        assert self.job is not None
        use_cache = os.path.realpath(path) == os.path.realpath(self.job.summary(rank).path)  # not an extracted copy
        try:
            profile = load(path, use_cache=use_cache, comm_pattern=self.job.comm_pattern)
            prepare(profile, lambda _phase: None)
            remember(profile)
        except ProfviewError as exc:
            self.notify(clean(exc.problem), title=f"rank {rank}", severity="error")
            return
        self.profile = profile
        self.path = path
        self.push_screen(MainScreen(profile))

    def on_drill_requested(self, message: DrillRequested) -> None:
        message.prevent_default()  # ProfviewApp's handler is called here, not again by Textual
        if isinstance(self.screen, JobScreen):
            rank = rank_of(message.row)
            if rank is not None:
                self.open_rank(rank)
            return
        super().on_drill_requested(message)

    def _back_to_job(self) -> bool:
        if isinstance(self.screen, MainScreen):
            self.pop_screen()
            self.profile = None
            return True
        return False

    def action_back_or_quit(self) -> None:
        if isinstance(self.screen, DrillScreen):
            self.pop_screen()
        elif not self._back_to_job():
            self.exit(return_code=0 if self.loaded else 130)

    def action_back(self) -> None:
        view = self.frame_view()
        if view is not None and view.pattern:
            super().action_back()
        elif isinstance(self.screen, DrillScreen):
            self.pop_screen()
        else:
            self._back_to_job()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if isinstance(self.screen, JobScreen) and action in ("cycle", "group", "next_run"):
            return False
        return super().check_action(action, parameters)


def run_job(job: Job | Callable[[Progress], Job], label: str = "job") -> int:
    """Open the viewer on ``job`` (or on what the function opens); return the exit code.

    A job opened here is closed (its extracted archive removed) when the viewer ends.
    """
    if not isinstance(job, Job):
        # The worker pool's resource tracker is started now, while stderr is still the terminal:
        # started from inside the viewer (whose stderr is a capture with no file descriptor) it fails.
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    app = JobApp(job, label)
    try:
        code = app.run()
    finally:
        if app.job is not None and app.job is not job:
            app.job.close()
    return finish_run(app, code, workers=True)  # quitting while ranks are summarised stops the workers
