"""The viewer on a distributed job: the job screen first, each rank's usual views on Enter."""

from __future__ import annotations

from collections.abc import Callable

from textual import events, work

from ...errors import ProfviewError
from ...jobs.executors import Progress
from ...jobs.job import Job
from ...sanitize import clean
from .. import launch
from ..app import ProfviewApp
from ..dialogs.loading import LoadingScreen
from ..drill.screen import DrillScreen
from ..keymap import user_keymap
from ..main.screen import MainScreen
from ..messages import DrillRequested, JobOpened, LoadPhase
from ..widgets.table_view import FrameView
from ..workers import Cancelled, detached, load_failed
from .screen import JobScreen, rank_of


def _ranks_left(done: int, total: int, elapsed: float) -> str:
    left = elapsed / done * (total - done) if done else 0.0
    return f"ranks {done}/{total} done, ~{left:.0f} s left"


class JobApp(ProfviewApp):
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
        self.open_job()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def open_job(self) -> None:
        """Summarise every rank (the loading screen shows the ranks done and the time left); post the job."""
        opener = self.opener
        assert opener is not None

        def progress(done: int, total: int, elapsed: float) -> None:
            self.post_message(LoadPhase(_ranks_left(done, total, elapsed)))

        try:
            job = detached(self.threads, lambda: opener(progress), "profview-open")
        except Cancelled:
            return
        except Exception as exc:
            self.post_message(load_failed(exc, self.path, "open the job", "opening the job"))
            return
        self.post_message(JobOpened(job))

    def on_job_opened(self, message: JobOpened) -> None:
        job = message.job
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
        summary = self.job.summary(rank)
        self.notify(f"opening rank {rank}…", timeout=2)
        self._open(rank, summary.path)

    def _open(self, rank: int, path: str) -> None:
        from ...profiles.loading import load

        assert self.job is not None
        use_cache = self.job.inputs is None or self.job.inputs.temp_dir is None
        try:
            profile = load(path, use_cache=use_cache, comm_pattern=self.job.comm_pattern)
            launch.prepare(profile, lambda _phase: None)
            launch.remember(profile)
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

    async def action_back(self) -> None:
        view = self.frame_view()
        if view is not None and view.pattern:
            await super().action_back()
        elif isinstance(self.screen, DrillScreen):
            self.pop_screen()
        else:
            self._back_to_job()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if isinstance(self.screen, JobScreen) and action in ("cycle", "group", "next_run"):
            return False
        return super().check_action(action, parameters)
