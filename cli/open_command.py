"""``profview open PATH`` (or plain ``profview PATH``): the viewer on a trace, a table or a job."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from .options import (
    AsJob,
    CaptureOption,
    CommPattern,
    DaskOption,
    NoCache,
    PathArg,
    RunOption,
    StepRange,
    StrictOption,
    Workers,
)
from .target import Target


def _ascii_digits(text: str) -> bool:
    """Whether ``text`` (spaces around it aside) is ASCII digits: ``str.isdigit`` also takes
    ``٣`` and ``²``, which are no number profview prints."""
    text = text.strip()
    return text.isascii() and text.isdigit()


def open_viewer(
    path: PathArg,
    no_cache: NoCache = False,
    run: RunOption = None,
    comm_pattern: CommPattern = None,
    step_range: StepRange = None,
    workers: Workers = None,
    dask: DaskOption = None,
    strict: StrictOption = False,
    as_job: AsJob = False,
    capture: CaptureOption = None,
    iteration: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--iteration", help="Open narrowed to iteration N (its number in the Iterations tab)."),
    ] = None,
    step: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--step", help="Open narrowed to step N (ProfilerStep#N), as Enter on it in Steps."),
    ] = None,
) -> None:
    """Open the interactive viewer on PATH."""
    target = Target.of(path, as_job)
    target.refuse_step_range(step_range)
    target.start_reading(no_cache)
    if target.is_job and capture:
        from ..errors import ProfviewError

        raise ProfviewError(None, "--capture: one trace's option, not a job's")
    number = None
    if iteration is not None:  # issue 40: said before the viewer takes the terminal
        from ..errors import ProfviewError

        if target.is_job or not _ascii_digits(iteration):
            given = iteration[:40]
            raise ProfviewError(None, f"--iteration in the viewer: one trace's iteration number, not {given!r}")
        number = int(iteration)
    step_number = None
    if step is not None:  # said before the viewer takes the terminal, as --iteration
        from ..errors import ProfviewError

        whole = _ascii_digits(step.strip().removeprefix("-"))
        if target.is_job or iteration is not None or not whole or len(step) > 12:
            given = step[:40]
            raise ProfviewError(
                None, f"--step in the viewer: one trace's step number (not with --iteration), not {given!r}"
            )
        step_number = int(step)
    if capture:  # a missing capture is said before the viewer takes the terminal
        from ..profiles.graph_views import check_capture_paths

        check_capture_paths(capture)
    if target.is_snapshot or target.snapshots:
        if capture or iteration is not None or run:
            from ..errors import ProfviewError

            raise ProfviewError(None, "--capture, --iteration and --run: a trace's options, not a memory snapshot's")
        if target.snapshots:
            from ..tui.launch import run_snapshot_job

            raise typer.Exit(run_snapshot_job(target.trace, list(target.snapshots)))
        from ..tui.launch import run_snapshot

        raise typer.Exit(run_snapshot(target.trace))
    if target.is_job:
        from ..tui.launch import run_job

        if target.processes:  # an export without two processes of GPU work is said before the terminal is taken
            from ..jobs.processes import export_processes

            export_processes(target.trace)
        else:
            from ..jobs.inputs import list_inputs

            list_inputs(list(target.paths))  # a pattern that matches nothing is said before the terminal is taken
        opener = target.job_opener(no_cache, comm_pattern, workers, dask, strict, step_range)
        raise typer.Exit(run_job(opener, target.label))
    trace = target.trace
    pending = None
    from ..collector import until_first_screen

    until_first_screen()  # the viewer's imports follow the read: collection resumes at its first screen
    if os.path.isfile(trace):  # the parse starts now and overlaps the viewer's imports (issue 13)
        from ..profiles.background import BackgroundLoad
        from ..tui.lifecycle import prepare_early  # no Textual: the first screen's tables, built on the read's thread

        pending = BackgroundLoad(
            trace, use_cache=not no_cache, run=run, comm_pattern=comm_pattern, step_range=step_range,
            then=None if capture else prepare_early,  # a capture changes the graph views: the viewer prepares then
        )
    from ..tui.launch import run as run_viewer

    code = run_viewer(
        trace, no_cache=no_cache, run=run, comm_pattern=comm_pattern, step_range=step_range, pending=pending,
        capture=capture,
        iteration=number, step=step_number,
    )
    raise typer.Exit(code)
