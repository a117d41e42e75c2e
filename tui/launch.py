"""The viewer's one entry point: the CLI (and anyone else) opens the viewer through here.

``run`` (one trace), ``run_compare`` (two traces), ``run_job`` (a distributed job),
``run_job_compare`` (two jobs), ``run_snapshot`` (a memory snapshot) and ``run_snapshot_job`` (a
directory of per-rank snapshots) build the app, run it and
turn its outcome into an exit code (:func:`finish_run`).  Textual is imported only when one of them
runs, so ``profview summary`` never loads it.  It only launches: what every load does after
parsing (the apps' side) is in :mod:`profview.tui.lifecycle`, which the apps import, so no import
runs back up to this module.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..sanitize import clean

if TYPE_CHECKING:
    from ..diff.job_comparison import JobComparison
    from ..jobs.executors import Progress
    from ..jobs.job import Job
    from ..profiles.background import BackgroundLoad
    from .app import ProfviewApp


def _missing(*paths: str) -> str | None:
    """The one-line error for the first of ``paths`` that does not exist."""
    for path in paths:
        if not Path(path).exists():
            return f"profview: error: {clean(path)}: no such file"
    return None


def _no_terminal(instead: str) -> str | None:
    """The one-line error when the viewer has no terminal to draw on or read keys from (its output
    piped or redirected, ``profview T | less``, or its input not a terminal): its escape sequences
    would land in the pipe.  ``instead``: the command that gives the same figures as text."""
    for name, stream in (("stdout", sys.stdout), ("stdin", sys.stdin)):
        isatty = getattr(stream, "isatty", None)
        if stream is None or isatty is None or not isatty():
            return f"profview: error: the viewer needs a terminal and {name} is not one: {instead}"
    return None


def _refused(*paths: str, instead: str) -> int | None:
    """Exit code 2 with its line when a path is missing or there is no terminal, else ``None``."""
    problem = _missing(*paths) or _no_terminal(instead)
    if problem is None:
        return None
    print(problem, file=sys.stderr)
    return 2


def run(
    path: str,
    *,
    no_cache: bool = False,
    run: str | None = None,
    comm_pattern: str | None = None,
    step_range: str | None = None,
    pending: BackgroundLoad | None = None,
    capture: list[str] | None = None,
    iteration: int | None = None,
    step: int | None = None,
) -> int:
    """Open ``path`` in the viewer; return the exit code (2 with a one-line error on bad input);
    ``iteration``: open narrowed to that iteration (``--iteration N``); ``step``: to that step
    (``--step N``).

    ``pending``: the load of ``path`` with these options, already started (see
    :mod:`profview.profiles.background`); ``capture``: ``--capture`` paths."""
    instead = f"profview summary {clean(path)} prints the figures"
    if (refused := _refused(path, *(capture or []), instead=instead)) is not None:
        return refused
    from .app import ProfviewApp

    app = ProfviewApp(
        path,
        no_cache=no_cache,
        run=run,
        comm_pattern=comm_pattern,
        step_range=step_range,
        pending=pending,
        capture=capture,
        iteration=iteration,
        step=step,
    )
    return finish_run(app, app.run())


def run_compare(before: str, after: str, *, no_cache: bool = False, comm_pattern: str | None = None,
                step_range: str | None = None, **options: Any) -> int:
    """Open the viewer in compare mode on BEFORE and AFTER; ``options``: ``per_step``, ``match``,
    ``tolerance_pct`` (see :func:`profview.diff.comparison.load_comparison`)."""
    instead = f"profview diff {clean(before)} {clean(after)} --summary prints the comparison"
    if (refused := _refused(before, after, instead=instead)) is not None:
        return refused
    from .app import ProfviewApp

    app = ProfviewApp(
        before, no_cache=no_cache, comm_pattern=comm_pattern, step_range=step_range, compare={"after": after, **options}
    )
    return finish_run(app, app.run())


def run_snapshot(path: str) -> int:
    """Open the memory snapshot ``path`` on its own screen; return the exit code."""
    if (refused := _refused(path, instead=f"profview summary {clean(path)} prints the figures")) is not None:
        return refused
    from .snapshot.app import SnapshotApp

    app = SnapshotApp(path)
    return finish_run(app, app.run())


def run_snapshot_job(path: str, snapshots: list[str]) -> int:
    """Open the directory ``path`` of per-rank memory snapshots on its ranks screen; return the exit code."""
    if (refused := _refused(path, instead=f"profview summary {clean(path)} prints the figures")) is not None:
        return refused
    from .snapshot.job import SnapshotJobApp

    app = SnapshotJobApp(path, snapshots)
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
    if (refused := _refused(instead=f"profview summary {clean(label)} prints the job's figures")) is not None:
        return refused
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
    if (refused := _refused(instead="profview diff BEFORE AFTER --summary prints the comparison")) is not None:
        return refused
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


__all__ = ["finish_run", "run", "run_compare", "run_job", "run_job_compare", "run_snapshot", "run_snapshot_job"]
