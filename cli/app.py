"""The ``profview`` command: open the viewer, print a summary, export a view.

Textual is imported only by the viewer, so ``summary`` and ``export`` start fast.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Annotated, Optional

import typer

from .. import __version__
from ..errors import ProfviewError
from ..parsers.source import economise_address_space
from ..sanitize import clean

app = typer.Typer(
    name="profview",
    help="A terminal trace explorer for GPU profiles: `profview TRACE` opens the viewer.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
COMMANDS = ("open", "summary", "export", "diff")

PathArg = Annotated[
    list[str],
    typer.Argument(
        help="Trace (.json, .json.gz) or profiler table file; or a job: a directory, a glob, several traces "
        "or a .tar/.tar.gz/.tgz/.zip archive of rank traces."
    ),
]
# The options of every command that writes a table (export, diff): one definition each.
FilterOption = Annotated[
    Optional[str], typer.Option("--filter", "-f", help="Keep rows whose name matches this regex.")  # noqa: UP045
]
SortOption = Annotated[Optional[str], typer.Option(help="Sort by this column (descending).")]  # noqa: UP045
AscOption = Annotated[bool, typer.Option("--asc", help="Sort ascending.")]
TopOption = Annotated[Optional[int], typer.Option("--top", "-n", min=0, help="Keep the first N rows.")]  # noqa: UP045
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")]
RawFormulas = Annotated[
    bool, typer.Option("--raw-formulas", help="Do not neutralise spreadsheet formulas in CSV cells.")
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Parse the trace again; ignore the cache.")]
CommPattern = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--comm-pattern",
        help="Regex: kernels whose name matches it also count as communication (e.g. NVSHMEM puts).",
    ),
]
RunOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--run", help="Which run of a file that holds several (TensorBoard-plugin JSON)."),
]


# -- distributed jobs (several rank traces) ---------------------------------------------------
Workers = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--workers", "-j", min=1, help="Job: worker processes summarising ranks (default: all cores)."),
]
DaskOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--dask", help="Job: run the per-rank work on this Dask scheduler (default: $DASK_SCHEDULER_ADDRESS)."
    ),
]


def _open_job(paths: list[str], no_cache: bool, comm_pattern: str | None, workers: int | None, dask: str | None):
    """Open a job with a progress line on stderr; warnings of its ranks go there too."""
    from ..jobs.job import open_job
    from ..report.job_summary import ProgressLine

    progress = ProgressLine()
    try:
        job = open_job(
            paths, workers=workers, dask=dask, comm_pattern=comm_pattern, use_cache=not no_cache, progress=progress
        )
    finally:
        progress.finish()
    for rank, summary in zip(job.ranks, job.summaries, strict=True):
        for warning in summary.warnings:
            typer.echo(f"profview: warning: rank {rank}: {clean(warning)}", err=True)
    return job


def _single(paths: list[str]) -> str:
    """The one input of a command given one file."""
    return paths[0]


def _start_reading(paths: list[str], no_cache: bool) -> None:
    """One trace to parse: start reading it now, while Polars imports (see :mod:`profview.profiles.prefetch`)."""
    if len(paths) == 1 and not _is_job(paths):
        from ..profiles.prefetch import start

        start(paths[0], use_cache=not no_cache)


def _is_job(paths: list[str]) -> bool:
    from ..jobs.inputs import is_job

    return is_job(paths)


def _version(value: bool) -> None:
    if value:
        from ..parsers import fast_chrome

        reader = "compiled scanner" if fast_chrome.available() else "pure-Python reader (no compiled scanner)"
        typer.echo(f"profview {__version__} ({reader})")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """profview: kernel, operator and step tables of GPU profiles, in the terminal."""


def _load(path: str, no_cache: bool = False, run: str | None = None, comm_pattern: str | None = None):
    from ..profiles.loading import load

    profile = load(path, use_cache=not no_cache, run=run, comm_pattern=comm_pattern)
    for warning in profile.warnings:
        typer.echo(f"profview: warning: {clean(profile.path)}: {clean(warning)}", err=True)
    return profile


@app.command("open")
def open_viewer(
    path: PathArg,
    no_cache: NoCache = False,
    run: RunOption = None,
    comm_pattern: CommPattern = None,
    workers: Workers = None,
    dask: DaskOption = None,
) -> None:
    """Open the interactive viewer on PATH."""
    _start_reading(path, no_cache)
    if _is_job(path):
        from functools import partial

        from ..jobs.job import open_job
        from ..tui.launch import run_job

        opener = partial(open_job, path, workers=workers, dask=dask, comm_pattern=comm_pattern, use_cache=not no_cache)
        label = path[0] if len(path) == 1 else f"{path[0]} (+{len(path) - 1} more)"
        raise typer.Exit(run_job(lambda progress: opener(progress=progress), label))
    trace = _single(path)
    pending = None
    if os.path.isfile(trace):  # the parse starts now and overlaps the viewer's imports (issue 13)
        from ..profiles.background import BackgroundLoad

        pending = BackgroundLoad(trace, use_cache=not no_cache, run=run, comm_pattern=comm_pattern)
    from ..tui.launch import run as run_viewer

    code = run_viewer(trace, no_cache=no_cache, run=run, comm_pattern=comm_pattern, pending=pending)
    raise typer.Exit(code)


@app.command()
def summary(
    path: PathArg,
    top: Annotated[int, typer.Option("--top", "-n", min=0, help="Rows of each table.")] = 10,
    no_cache: NoCache = False,
    run: RunOption = None,
    comm_pattern: CommPattern = None,
    workers: Workers = None,
    dask: DaskOption = None,
) -> None:
    """Print an overview, the step breakdown and the top kernels and operators."""
    _start_reading(path, no_cache)
    from ..profiles.loading import remember_views
    from ..report.profile_summary import print_summary

    if _is_job(path):
        from ..report.job_summary import print_job_summary

        with _open_job(path, no_cache, comm_pattern, workers, dask) as job:
            try:
                print_job_summary(job, top)
                sys.stdout.flush()
            except BrokenPipeError:
                raise _stdout_closed() from None
        return
    profile = _load(_single(path), no_cache, run, comm_pattern)
    try:
        print_summary(profile, top)
        sys.stdout.flush()
    except BrokenPipeError:
        raise _stdout_closed() from None
    remember_views(profile)


@app.command()
def export(
    path: PathArg,
    out: Annotated[str, typer.Option("--out", "-o", help="Output .csv, .parquet or .json; - for CSV on stdout.")],
    view: Annotated[
        str,
        typer.Option(
            "--view",
            "-v",
            help="kernels, ops, steps, launches, memory, memory_ops, memory_peaks, modules, sources, gpu_idle, "
            "gaps; a job: ranks, collectives, steps, kernels.",
        ),
    ] = "kernels",
    op: Annotated[Optional[str], typer.Option(help="launches: the operator to drill into.")] = None,  # noqa: UP045
    kernel: Annotated[Optional[str], typer.Option(help="launches: the kernel to trace back.")] = None,  # noqa: UP045
    module: Annotated[Optional[str], typer.Option(help="launches: the module path to drill into.")] = None,  # noqa: UP045
    source: Annotated[Optional[str], typer.Option(help="launches: the source line to drill into.")] = None,  # noqa: UP045
    filter_: FilterOption = None,
    sort: SortOption = None,
    asc: AscOption = False,
    top: TopOption = None,
    by_shape: Annotated[
        bool, typer.Option("--by-shape", help="Group kernels by launch shape, ops by input shapes.")
    ] = False,
    step: Annotated[Optional[int], typer.Option(help="Only this ProfilerStep number.")] = None,  # noqa: UP045
    force: ForceOption = False,
    raw_formulas: RawFormulas = False,
    no_cache: NoCache = False,
    run: RunOption = None,
    comm_pattern: CommPattern = None,
    workers: Workers = None,
    dask: DaskOption = None,
) -> None:
    """Write a view (with filter, sort and top applied) to a file."""
    _start_reading(path, no_cache)
    from ..profiles.views import DRILL_VIEWS, refine, view_frame
    from ..report.export import export_format, write_table

    export_format(out)
    if _is_job(path):
        from ..jobs.job import JOB_VIEWS

        if view not in JOB_VIEWS:
            raise ProfviewError(None, f"a job has no {view!r} view: choose one of {', '.join(JOB_VIEWS)}")
        given_options = (
            ("--op", op), ("--kernel", kernel), ("--step", step), ("--module", module), ("--source", source)
        )
        single = [name for name, given in given_options if given is not None]
        if single or by_shape:
            raise ProfviewError(None, f"{', '.join(single or ['--by-shape'])}: one trace's option, not a job's")
        with _open_job(path, no_cache, comm_pattern, workers, dask) as job:
            frame = refine(job.view(view), pattern=filter_, sort=sort, ascending=asc, top=top)
            try:
                written = write_table(frame, out, inputs=tuple(path), overwrite=force, raw_formulas=raw_formulas)
                sys.stdout.flush()
            except BrokenPipeError:
                raise _stdout_closed() from None
        if written != "-":
            typer.echo(f"wrote {frame.height} rows × {frame.width} columns to {clean(written)}", err=True)
        return
    profile = _load(_single(path), no_cache, run, comm_pattern)
    frame = view_frame(profile, view, op=op, kernel=kernel, by_shape=by_shape, step=step, module=module, source=source)
    frame = refine(frame, pattern=filter_, sort=sort, ascending=asc, top=top)
    try:
        written = write_table(frame, out, inputs=(profile.path,), overwrite=force, raw_formulas=raw_formulas)
        sys.stdout.flush()
    except BrokenPipeError:
        raise _stdout_closed() from None
    from ..profiles.loading import remember_views

    remember_views(profile, model=view in DRILL_VIEWS)  # a drill-down re-uses the linked model
    if written != "-":
        typer.echo(f"wrote {frame.height} rows × {frame.width} columns to {clean(written)}", err=True)


# -- diff: two profiles compared (issue 14) --------------------------------------------------
@app.command("diff")
def diff(
    before: Annotated[
        str, typer.Argument(help="The profile before the change (trace or table; or a job: directory, glob, archive).")
    ],
    after: Annotated[str, typer.Argument(help="The profile after the change.")],
    out: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--out", "-o", help="Export the --view to .csv, .parquet or .json (- for CSV on stdout)."),
    ] = None,
    view: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--view", "-v",
            help="kernels, ops, steps; align or moved: one step aligned by operator. Two jobs: ranks, stragglers, "
            "kernels.",
        ),
    ] = None,
    step: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--step", help="align/moved: this ProfilerStep on both sides (default: each side's median step)."),
    ] = None,
    summary_: Annotated[
        bool, typer.Option("--summary", help="Print the biggest regressions and improvements.")
    ] = False,
    per_step: Annotated[
        bool, typer.Option("--per-step", help="Divide each side by its own number of steps.")
    ] = False,
    match: Annotated[
        str, typer.Option("--match", help="exact, or normalized: also pair names differing by arch/tile/template.")
    ] = "exact",
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Percent of change still counted unchanged.")
    ] = 5.0,
    filter_: FilterOption = None,
    sort: SortOption = None,
    asc: AscOption = False,
    top: TopOption = None,
    force: ForceOption = False,
    raw_formulas: RawFormulas = False,
    no_cache: NoCache = False,
    comm_pattern: CommPattern = None,
    workers: Workers = None,
) -> None:
    """Compare two profiles: the viewer in compare mode, --summary, or --view V -o OUT."""
    from ..diff.comparison import check_inputs, load_comparison, remember

    # -- two jobs (job_diff_cli.py); a job and a single profile is a one-line error -----------
    from ..diff.job_comparison import diff_kind

    if diff_kind(before, after) == "jobs":
        from .job_diff import JobDiffOptions, check_job_options, diff_jobs

        check_job_options(per_step, step)
        options = JobDiffOptions(
            out, view, summary_, match, tolerance, filter_, sort, asc, top, force, raw_formulas, no_cache,
            comm_pattern, workers,
        )
        try:
            diff_jobs(before, after, options)
        except BrokenPipeError:
            raise _stdout_closed() from None
        return
    if view is not None and out is None and not summary_:
        raise ProfviewError(None, "--view needs -o OUT (or use --summary, or neither for the viewer)")
    if out is None and not summary_:
        check_inputs(before, after)
        from ..tui.launch import run_compare

        raise typer.Exit(
            run_compare(
                before, after, no_cache=no_cache, comm_pattern=comm_pattern, per_step=per_step, match=match,
                tolerance_pct=tolerance,
            )
        )
    if out is not None:
        from ..report.export import export_format

        export_format(out)
    comparison = load_comparison(
        before, after, use_cache=not no_cache, comm_pattern=comm_pattern, per_step=per_step, match=match,
        tolerance_pct=tolerance,
    )
    comparison.step = step
    for side in (comparison.before, comparison.after):
        for warning in side.warnings:
            typer.echo(f"profview: warning: {clean(side.path)}: {clean(warning)}", err=True)
    noted = [view or "kernels"] if out is not None else ["kernels", "ops"]
    for note in (line for v in noted for line in comparison.notes(v)):
        typer.echo(f"profview: note: {clean(note)}", err=True)
    try:
        if summary_:
            from ..report.diff_summary import print_diff_summary

            print_diff_summary(comparison, top if top is not None else 10)
            sys.stdout.flush()
        if out is not None:
            from ..profiles.views import refine
            from ..report.export import write_table

            frame = refine(comparison.view(view or "kernels"), pattern=filter_, sort=sort, ascending=asc, top=top)
            written = write_table(frame, out, inputs=(before, after), overwrite=force, raw_formulas=raw_formulas)
            sys.stdout.flush()
            if written != "-":
                typer.echo(f"wrote {frame.height} rows × {frame.width} columns to {clean(written)}", err=True)
    except BrokenPipeError:
        raise _stdout_closed() from None
    remember(comparison)


def _path_of(args: list[str]) -> str:
    """``PATH: `` of the input named on the command line (for errors that do not name it)."""
    return f"{args[1]}: " if len(args) > 1 and not args[1].startswith("-") else ""


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class Terminated(BaseException):
    """SIGTERM (a scheduler ending the job): unwinds like Ctrl+C, so no partial file is left."""


def _terminated(_signum: int, _frame: object) -> None:
    raise Terminated


def _stdout_closed() -> typer.Exit:
    """The reader of our output went away (``| head``): stop quietly with the shell's code.

    Raised as an Exit, not as the OSError it was: typer turns an EPIPE OSError into exit code 1.
    """
    _silence_stdout()
    return typer.Exit(141)


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``profview PATH`` means ``profview open PATH``; errors are one line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] not in COMMANDS and not args[0].startswith("-"):
        args.insert(0, "open")
    signal.signal(signal.SIGTERM, _terminated)
    economise_address_space()
    try:
        # Without standalone mode, typer returns the code of an Exit (Ctrl+C is Exit(130)).
        code = app(args=args, prog_name="profview", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe is found here, not at exit
    except Terminated:
        typer.echo("profview: terminated", err=True)
        sys.exit(143)
    except ProfviewError as exc:
        typer.echo(f"profview: error: {clean(exc)}", err=True)
        if exc.out_of_memory:
            sys.stderr.flush()
            os._exit(2)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("profview: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # the reader of our output went away (| head): quietly stop
        _silence_stdout()
        sys.exit(141)
    except OSError as exc:  # writing the output failed (a full disk: summary > /dev/full)
        _silence_stdout()
        typer.echo(f"profview: error: cannot write the output ({exc.strerror or exc})", err=True)
        sys.exit(2)
    except MemoryError:
        typer.echo(f"profview: error: {_path_of(args)}out of memory", err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: bad or missing options
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            typer.echo(f"profview: error: {exc}", err=True)
        sys.exit(getattr(exc, "exit_code", 2))
    except Exception as exc:  # a bug: still one line (PROFVIEW_DEBUG=1 shows the traceback)
        if os.environ.get("PROFVIEW_DEBUG"):
            raise
        typer.echo(
            f"profview: error: {clean(_path_of(args))}internal error ({type(exc).__name__}: {clean(exc)}); "
            "PROFVIEW_DEBUG=1 shows the traceback",
            err=True,
        )
        sys.exit(3)
    if isinstance(code, int) and code:
        if code == 130:
            typer.echo("profview: interrupted", err=True)
        sys.exit(code)
