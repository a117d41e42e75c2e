"""The viewer on a distributed job: the job screen first, each rank's usual views on Enter."""

from __future__ import annotations

import sys

from textual import events

from ..errors import ProfviewError
from ..job import Job
from ..sanitize import clean
from .app import ProfviewApp, prepare
from .drilldown import DrillScreen
from .job_screen import JobScreen, rank_of
from .keymap import user_keymap
from .main_screen import MainScreen
from .messages import DrillRequested
from .table_view import FrameView


class JobApp(ProfviewApp):
    """:class:`ProfviewApp` over a :class:`Job`: q/Esc in a rank's views come back to the job."""

    def __init__(self, job: Job) -> None:
        super().__init__(job.source, no_cache=False, comm_pattern=job.comm_pattern)
        self.job = job
        self.loaded = True
        self.linked = True

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # Textual would run ProfviewApp.on_mount (which loads a file) next
        self.set_keymap(user_keymap())
        self.push_screen(JobScreen(self.job))

    def frame_view(self) -> FrameView | None:
        if isinstance(self.screen, JobScreen):
            return self.screen.frame_view()
        return super().frame_view()

    def open_rank(self, rank: int) -> None:
        """Load that rank's trace (through the cache) and show its main screen."""
        summary = self.job.summary(rank)
        self.notify(f"opening rank {rank}…", timeout=2)
        self._open(rank, summary.path)

    def _open(self, rank: int, path: str) -> None:
        from ..loading import load

        use_cache = self.job.inputs is None or self.job.inputs.temp_dir is None
        try:
            profile = load(path, use_cache=use_cache, comm_pattern=self.job.comm_pattern)
            prepare(profile, lambda _phase: None)
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
            self.exit(return_code=0)

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


def run_job(job: Job) -> int:
    """Open the viewer on ``job``; return the exit code."""
    app = JobApp(job)
    code = app.run()
    if app.error:
        print(f"profview: error: {clean(app.error)}", file=sys.stderr)
    return app.return_code or code or 0
