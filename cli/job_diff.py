"""``profview diff JOB_A JOB_B``: the CLI side of two jobs compared (``--summary`` tables, or
``--view ranks|stragglers|kernels -o OUT``, or the viewer's job compare mode: tui/job/compare.py)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import typer

from ..errors import ProfviewError
from ..report.wording import plural
from ..sanitize import clean


@dataclass
class JobDiffOptions:
    """What ``profview diff`` was given, as far as two jobs use it."""

    out: str | None
    view: str | None
    summary: bool
    match: str
    tolerance: float
    filter_: str | None
    sort: str | None
    asc: bool
    top: int | None
    force: bool
    raw_formulas: bool
    no_cache: bool
    comm_pattern: str | None
    workers: int | None
    #: ``--as-job``: each side one Nsight Systems export, a job of its processes (read with ``step_range``).
    as_job: bool = False
    step_range: str | None = None


def check_job_options(per_step: bool, step: int | None) -> None:
    """``--per-step`` and ``--step`` are two traces' options: an error on jobs, never ignored."""
    given = [name for name, on in (("--per-step", per_step), ("--step", step is not None)) if on]
    if given:
        raise ProfviewError(None, f"{', '.join(given)}: two traces' option, not two jobs'")


def diff_jobs(before: str, after: str, options: JobDiffOptions) -> None:
    """Run ``diff`` on two jobs: print the summary and/or export one view."""
    from ..diff.job_comparison import JOB_DIFF_VIEWS, load_job_comparison
    from ..report.job_summary import ProgressLine

    if options.out is None and not options.summary:
        raise typer.Exit(_viewer(before, after, options))
    view = options.view or "ranks"
    if options.out is not None:
        from ..report.export import export_format

        export_format(options.out)
        if view not in JOB_DIFF_VIEWS:
            raise ProfviewError(None, f"two jobs have no {view!r} diff view: choose one of {', '.join(JOB_DIFF_VIEWS)}")
        if options.out != "-":  # said before the work, not after it
            from ..report.export import check_target

            check_target(options.out, inputs=(before, after), overwrite=options.force)
    progress = ProgressLine()
    try:
        comparison = load_job_comparison(
            before, after, use_cache=not options.no_cache, comm_pattern=options.comm_pattern, match=options.match,
            tolerance_pct=options.tolerance, workers=options.workers, progress=progress, as_job=options.as_job,
            step_range=options.step_range,
        )
    finally:
        progress.finish()
    with comparison:
        for which in ("before", "after"):
            job = comparison.side(which)
            for rank, summary in zip(job.ranks, job.summaries, strict=True):
                for warning in summary.warnings:
                    typer.echo(f"profview: warning: {clean(job.source)}: rank {rank}: {clean(warning)}", err=True)
            for note in job.notes:
                typer.echo(f"profview: note: {which.upper()} {clean(job.source)}: {clean(note)}", err=True)
            for name, problem in job.failures:
                typer.echo(f"profview: warning: {which.upper()} {clean(name)}: {clean(problem)} (left out)", err=True)
        if options.summary:
            from ..report.job_diff_summary import print_job_diff_summary

            print_job_diff_summary(comparison, options.top if options.top is not None else 10)
            sys.stdout.flush()
        if options.out is not None:
            from ..profiles.views import refine
            from ..report.export import write_table

            frame = refine(
                comparison.view(view), pattern=options.filter_, sort=options.sort, ascending=options.asc,
                top=options.top,
            )
            inputs = (before, after, *comparison.before.input_files(), *comparison.after.input_files())
            written = write_table(
                frame, options.out, inputs=inputs, overwrite=options.force, raw_formulas=options.raw_formulas
            )
            sys.stdout.flush()
            if written != "-":
                shape = f"{plural(frame.height, 'row')} × {plural(frame.width, 'column')}"
                typer.echo(f"wrote {shape} to {clean(written)}", err=True)


def _viewer(before: str, after: str, options: JobDiffOptions) -> int:
    """The viewer in job compare mode; the jobs open behind its loading screen."""
    from ..diff.job_comparison import load_job_comparison
    from ..tui.launch import run_job_compare

    if options.view is not None:
        raise ProfviewError(None, "--view needs -o OUT (or use --summary, or neither for the viewer)")

    def opener(progress):  # type: ignore[no-untyped-def]
        return load_job_comparison(
            before, after, use_cache=not options.no_cache, comm_pattern=options.comm_pattern, match=options.match,
            tolerance_pct=options.tolerance, workers=options.workers, progress=progress, as_job=options.as_job,
            step_range=options.step_range,
        )

    return run_job_compare(opener, f"{before} vs {after}")
