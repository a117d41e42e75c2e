"""``profview summary PATH``: an overview, the step breakdown and the top kernels and operators."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .options import (
    MAX_TOP,
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
from .output import stdout_closed
from .target import Target


def summary(
    path: PathArg,
    top: Annotated[int, typer.Option("--top", "-n", min=0, max=MAX_TOP, help="Rows of each table.")] = 10,
    no_cache: NoCache = False,
    run: RunOption = None,
    comm_pattern: CommPattern = None,
    step_range: StepRange = None,
    workers: Workers = None,
    dask: DaskOption = None,
    strict: StrictOption = False,
    as_job: AsJob = False,
    wide: Annotated[
        bool, typer.Option("--wide", help="Names whole (folded over lines), not cut in the middle to fit.")
    ] = False,
    capture: CaptureOption = None,
    format_: Annotated[
        str,
        typer.Option(
            "--format",
            help="text, or json: the same figures as one JSON document with a schema version (docs/query.md).",
        ),
    ] = "text",
) -> None:
    """Print an overview, the step breakdown and the top kernels and operators."""
    if format_ not in ("text", "json"):
        from ..errors import ProfviewError

        raise ProfviewError(None, f"--format {format_!r}: choose text or json")
    target = Target.of(path, as_job)
    target.refuse_step_range(step_range)
    target.start_reading(no_cache)
    from ..profiles.loading import remember_views
    from ..report.profile_summary import print_summary, print_summary_json

    if target.is_job:
        from ..report.job_summary import print_job_summary, print_job_summary_json

        if capture:
            from ..errors import ProfviewError

            raise ProfviewError(None, "--capture: one trace's option, not a job's")
        with target.open_job(no_cache, comm_pattern, workers, dask, strict, step_range) as job:
            try:
                if format_ == "json":
                    print_job_summary_json(job, top)
                else:
                    print_job_summary(job, top)
                sys.stdout.flush()
            except BrokenPipeError:
                raise stdout_closed() from None
        return
    if target.snapshots:
        from ..report.snapshot_job_summary import print_snapshot_job

        try:
            print_snapshot_job(target.trace, list(target.snapshots), format_ == "json")
            sys.stdout.flush()
        except BrokenPipeError:
            raise stdout_closed() from None
        return
    if target.is_snapshot:
        from ..report.snapshot_summary import print_snapshot_summary, print_snapshot_summary_json

        if capture or run:
            from ..errors import ProfviewError

            named = "--capture" if capture else "--run"
            raise ProfviewError(None, f"{named}: a trace's option, not a memory snapshot's")
        snapshot = target.load_snapshot()
        try:
            if format_ == "json":
                print_snapshot_summary_json(snapshot, top)
            else:
                print_snapshot_summary(snapshot, top, wide=wide)
            sys.stdout.flush()
        except BrokenPipeError:
            raise stdout_closed() from None
        return
    profile = target.load(no_cache, run, comm_pattern, step_range)
    if capture:
        profile.use_capture(capture, use_cache=not no_cache)
        profile.check_captures()  # a bad capture is refused before anything is printed
    try:
        if format_ == "json":
            print_summary_json(profile, top)
        else:
            print_summary(profile, top, wide=wide)
        sys.stdout.flush()
    except BrokenPipeError:
        raise stdout_closed() from None
    remember_views(profile)
