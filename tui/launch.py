"""The viewer's one entry point: the CLI (and anyone else) opens the viewer through here.

``run`` (one trace), ``run_compare`` (two traces), ``run_job`` (a distributed job) and
``run_job_compare`` (two jobs) build the app, run it and turn its outcome into an exit code
(:func:`finish_run`).  Textual is imported only when one of them runs, so ``profview summary``
never loads it.  :func:`prepare` and :func:`remember` are what every load does after parsing:
build the first screens' tables off the UI thread, then save them to the cache.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ProfviewError
from ..profiles.trace_profile import Profile
from ..sanitize import clean

if TYPE_CHECKING:
    from ..diff.job_comparison import JobComparison
    from ..jobs.executors import Progress
    from ..jobs.job import Job
    from ..profiles.background import BackgroundLoad
    from .app import ProfviewApp

#: From this many events a trace shows its first screen (the early Overview, Kernels) before the
#: model is linked (about 0.1 s of linking per 100,000 events on one core; issue 13).
LARGE_TRACE_EVENTS = 100_000


def is_large(profile: Profile) -> bool:
    """Whether ``profile`` is a trace large enough that linking it takes seconds (a re-opened one
    whose Overview is kept with it links nothing: it opens on its whole Overview at once, issue 32)."""
    large = profile.is_trace and profile.event_count >= LARGE_TRACE_EVENTS and profile.available("kernels")
    return large and not (profile.saved is not None and "overview" in profile.saved.facts())


def prepare(profile: Profile, phase: Callable[[str], object]) -> None:
    """Build what the first screens show (the linked model, the tables) off the UI thread."""
    if profile.is_trace:
        phase("linking GPU work to operators and steps")
        profile.overview()
        profile.efficiency_lines()  # the Overview's categories and model FLOPs: made (and kept) here
        profile.span_start  # noqa: B018 (the Steps pane's time origin: a fact kept with the views)
    phase("building tables")
    for view in ("kernels", "ops", "steps"):
        if profile.available(view):
            getattr(profile, view)()
    if profile.is_trace:  # memory and modules (issue 15): computed here, not on the UI thread
        for view in ("memory_ops", "memory_peaks", "modules"):  # the timeline is built when first shown
            with contextlib.suppress(ProfviewError):  # the pane says why
                getattr(profile, view)()


def remember(profile: Profile) -> None:
    """Save the views and the linked model: the next open reads them instead of linking again.

    A trace's launch index (every launching operator row's path) is made ready first, off the UI
    thread, so that Enter on a kernel only groups its GPU events (issue 25); it is saved too, and
    so is the critical path of every step (the Overview's path line, the on-path column: issue 32;
    the viewer computes it anyway, and a re-open then shows the whole Overview without linking).
    Then the events frame goes (a trace parsed with the cache on): every pane reads the model and
    the views made by :func:`prepare`, and anything that asks for the events again reads them from
    the cache entry the parse wrote.  gpt2_train_big's viewer holds 160 MB less from then on."""
    from ..profiles.loading import remember_views

    if profile.is_trace and profile.available("launches"):
        with contextlib.suppress(ProfviewError):
            profile.launch_index  # noqa: B018 (computed or read now, kept on the profile)
    if profile.is_trace and profile.cacheable:  # the Overview's path line, the on-path column: kept (issue 32)
        with contextlib.suppress(ProfviewError):  # (the reason a trace has none is kept as well)
            profile.critical_path()
            profile.critical_path_names()
    remember_views(profile, model=True)
    if profile.cacheable:  # without a cache entry, reading them again would mean parsing again
        profile.release_events()


def _missing(*paths: str) -> str | None:
    """The one-line error for the first of ``paths`` that does not exist."""
    for path in paths:
        if not Path(path).exists():
            return f"profview: error: {clean(path)}: no such file"
    return None


def run(
    path: str,
    *,
    no_cache: bool = False,
    run: str | None = None,
    comm_pattern: str | None = None,
    pending: BackgroundLoad | None = None,
) -> int:
    """Open ``path`` in the viewer; return the exit code (2 with a one-line error on bad input).

    ``pending``: the load of ``path`` with these options, already started (see
    :mod:`profview.profiles.background`)."""
    if (missing := _missing(path)) is not None:
        print(missing, file=sys.stderr)
        return 2
    from .app import ProfviewApp

    app = ProfviewApp(path, no_cache=no_cache, run=run, comm_pattern=comm_pattern, pending=pending)
    return finish_run(app, app.run())


def run_compare(before: str, after: str, *, no_cache: bool = False, comm_pattern: str | None = None,
                **options: Any) -> int:
    """Open the viewer in compare mode on BEFORE and AFTER; ``options``: ``per_step``, ``match``,
    ``tolerance_pct`` (see :func:`profview.diff.comparison.load_comparison`)."""
    if (missing := _missing(before, after)) is not None:
        print(missing, file=sys.stderr)
        return 2
    from .app import ProfviewApp

    app = ProfviewApp(before, no_cache=no_cache, comm_pattern=comm_pattern, compare={"after": after, **options})
    return finish_run(app, app.run())


def _start_resource_tracker() -> None:
    """The worker pool's resource tracker is started now, while stderr is still the terminal:
    started from inside the viewer (whose stderr is a capture with no file descriptor) it fails."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()


def run_job(job: Job | Callable[[Progress], Job], label: str = "job") -> int:
    """Open the viewer on ``job`` (or on what the function opens); return the exit code.

    A job opened here is closed (its extracted archive removed) when the viewer ends.
    """
    from ..jobs.job import Job
    from .job.app import JobApp

    if not isinstance(job, Job):
        _start_resource_tracker()
    app = JobApp(job, label)
    try:
        code = app.run()
    finally:
        if app.job is not None and app.job is not job:
            app.job.close()
    return finish_run(app, code, workers=True)  # quitting while ranks are summarised stops the workers


def run_job_compare(opener: Callable[[Progress], JobComparison], label: str) -> int:
    """Open the viewer on two jobs (``opener`` opens them, in a worker); return the exit code.

    The jobs' extracted archives are removed when the viewer ends.
    """
    from .job.compare import JobCompareApp

    _start_resource_tracker()
    app = JobCompareApp(opener, label)
    try:
        code = app.run()
    finally:
        if app.job_comparison is not None:
            app.job_comparison.close()
    return finish_run(app, code, workers=True)


def finish_run(app: ProfviewApp, code: int | None, *, workers: bool = False) -> int:
    """After ``app.run()``: print its one-line error; the exit code.

    Work still running in a detached thread (a parse, a large trace's linking, a drill-down given
    up with Esc) cannot be interrupted: leave at once.  ``workers``: that work may drive rank
    workers (a job being opened), which are stopped first, and leaving then means interrupted (130).
    """
    if app.error:
        print(f"profview: error: {clean(app.error)}", file=sys.stderr)
    if app.threads.busy():
        interrupted = not app.loaded
        if workers:  # leaving at once: the workers stopped and joined first (issue 32)
            from ..jobs.executors import end_children

            end_children()
        if interrupted:
            print("profview: interrupted", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        left = app.return_code if app.return_code is not None else (code or 130)
        os._exit(130 if interrupted and workers else left)
    return app.return_code or code or 0


__all__ = ["finish_run", "is_large", "prepare", "remember", "run", "run_compare", "run_job", "run_job_compare"]
