"""The viewer on a distributed job: the job screen first, each rank's usual views on Enter."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from textual import events, work

from ...errors import ProfviewError
from ...jobs.executors import Progress
from ...jobs.job import Job
from ...profiles.trace_profile import Profile
from ...sanitize import clean
from .. import lifecycle
from ..app import ProfviewApp
from ..dialogs.export import trace_stem
from ..dialogs.loading import LoadingScreen
from ..drill.screen import DrillScreen
from ..keymap import user_keymap
from ..main.screen import MainScreen
from ..messages import DrillRequested, JobOpened, LoadPhase, RankOpened
from ..widgets.table_view import FrameView
from ..workers import Cancelled, detached, open_detached
from .screen import JobScreen, collective_ranks, rank_of


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
        self.rank: int | None = None  # the rank whose views are open
        self.linked = True
        self.loaded = self.job is not None

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # Textual would run ProfviewApp.on_mount (which loads a file) next
        self.set_keymap(user_keymap())
        if self.job is not None:
            self.push_screen(JobScreen(self.job))
            self._say_left_out(self.job)
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

        open_detached(self, lambda: opener(progress), JobOpened, self.path, "open the job", "opening the job")

    def on_job_opened(self, message: JobOpened) -> None:
        job = message.job
        self.job = job
        self.loaded = True
        self.comm_pattern = job.comm_pattern
        self.switch_screen(JobScreen(job))
        for rank, summary in zip(job.ranks, job.summaries, strict=True):
            for warning in summary.warnings:
                self.notify(clean(warning), title=f"rank {rank}: warning", severity="warning", timeout=10)
        self._say_left_out(job)

    def _say_left_out(self, job: Job) -> None:
        """Each trace left out of the job as unreadable, loudly (``--strict`` fails instead)."""
        for name, problem in job.failures:
            self.notify(clean(problem), title=f"{clean(name)}: unreadable, left out", severity="error", timeout=15)

    def frame_view(self) -> FrameView | None:
        if isinstance(self.screen, JobScreen):
            return self.screen.frame_view()
        return super().frame_view()

    async def open_rank(self, rank: int) -> None:
        """Load that rank's trace (through the cache) in a worker and show its main screen: a
        progress screen if it takes a while, Esc gives up."""
        if self.job is None:
            return
        token = self.next_token()
        worker = self.load_rank(token, rank)
        await self.show_progress_unless_done(worker, token, self.rank_title(rank), "opening")

    def rank_title(self, rank: int) -> str:
        """``job.tar.gz › rank 7 (worker7_step_12…)``: the job's name and the rank's file (its
        archive member), never a temporary path."""
        job = self.job
        if job is None:
            return f"rank {rank}"
        member = os.path.basename(job.summary(rank).path.rsplit(":", 1)[-1])
        return f"{Path(job.source.rstrip('/')).name} › rank {rank} ({trace_stem(member)})"

    def export_subject(self) -> str:
        """Exports are named after the job (``param_dlrm_8rank_v100-rank-7-kernels``), never a temporary path."""
        name = trace_stem(self.job.source if self.job is not None else self.path)
        return f"{name} rank {self.rank}" if self.rank is not None else name

    @work(thread=True, exclusive=True, group="slow", exit_on_error=False)
    def load_rank(self, token: int, rank: int) -> None:
        """Parse and prepare one rank's trace off the UI thread (a rank of an archive re-opened from
        the cache is extracted again first); post it, or why it cannot open."""
        job = self.job
        assert job is not None

        def load() -> Profile:
            profile = job.load_rank(rank)  # an extracted copy of an archive's member is not cached
            lifecycle.prepare(profile, lambda _phase: None)
            lifecycle.remember(profile)
            return profile

        outcome: Profile | str
        try:
            outcome = detached(self.threads, load, "profview-rank")
        except Cancelled:
            return
        except ProfviewError as exc:
            outcome = exc.problem
        except Exception as exc:  # a bug: one line, never a silent Enter
            outcome = f"internal error while opening it: {type(exc).__name__}: {exc}"
        self.post_message(RankOpened(token, rank, outcome))

    def on_rank_opened(self, message: RankOpened) -> None:
        if not self.take_answer(message.token):
            return
        if isinstance(message.outcome, str):
            self.notify(clean(message.outcome), title=f"rank {message.rank}", severity="error")
            return
        self.profile = message.outcome
        self.rank = message.rank
        self.push_screen(MainScreen(message.outcome, title=self.rank_title(message.rank), scope=f"rank {message.rank}"))

    async def on_drill_requested(self, message: DrillRequested) -> None:
        message.prevent_default()  # ProfviewApp's handler is called here, not again by Textual
        if isinstance(self.screen, JobScreen) and message.view == "collectives" and self.job is not None:
            self.push_screen(collective_ranks(self.job, message.row))  # a filter of a small frame: at once
            return
        if isinstance(self.screen, JobScreen) or message.view == "collective_ranks":
            rank = rank_of(message.row)
            if rank is not None:
                await self.open_rank(rank)
            return
        await super().on_drill_requested(message)

    def _back_to_job(self) -> bool:
        if isinstance(self.screen, MainScreen):
            self.pop_screen()
            self.profile = None
            self.rank = None
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
