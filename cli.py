"""The ``profview`` command: open the viewer, print a summary, export a view.

Textual is imported only by the viewer, so ``summary`` and ``export`` start fast.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Annotated, Optional

import typer

from . import __version__
from .errors import ProfviewError
from .sanitize import clean

app = typer.Typer(
    name="profview",
    help="A terminal trace explorer for GPU profiles: `profview TRACE` opens the viewer.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
COMMANDS = ("open", "summary", "export")

PathArg = Annotated[str, typer.Argument(help="Trace (.json, .json.gz) or profiler table file.")]
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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"profview {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """profview: kernel, operator and step tables of GPU profiles, in the terminal."""


def _load(path: str, no_cache: bool = False, run: str | None = None, comm_pattern: str | None = None):
    from .loading import load

    profile = load(path, use_cache=not no_cache, run=run, comm_pattern=comm_pattern)
    for warning in profile.warnings:
        typer.echo(f"profview: warning: {clean(profile.path)}: {clean(warning)}", err=True)
    return profile


@app.command("open")
def open_viewer(
    path: PathArg, no_cache: NoCache = False, run: RunOption = None, comm_pattern: CommPattern = None
) -> None:
    """Open the interactive viewer on PATH."""
    from .tui.app import run as run_viewer

    raise typer.Exit(run_viewer(path, no_cache=no_cache, run=run, comm_pattern=comm_pattern))


@app.command()
def summary(
    path: PathArg,
    top: Annotated[int, typer.Option("--top", "-n", min=0, help="Rows of each table.")] = 10,
    no_cache: NoCache = False,
    run: RunOption = None,
    comm_pattern: CommPattern = None,
) -> None:
    """Print an overview, the step breakdown and the top kernels and operators."""
    from .loading import remember_views
    from .summary import print_summary

    profile = _load(path, no_cache, run, comm_pattern)
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
            help="kernels, ops, steps, launches, memory, memory_ops, memory_peaks, modules, sources, gpu_idle, gaps.",
        ),
    ] = "kernels",
    op: Annotated[Optional[str], typer.Option(help="launches: the operator to drill into.")] = None,  # noqa: UP045
    kernel: Annotated[Optional[str], typer.Option(help="launches: the kernel to trace back.")] = None,  # noqa: UP045
    module: Annotated[Optional[str], typer.Option(help="launches: the module path to drill into.")] = None,  # noqa: UP045
    source: Annotated[Optional[str], typer.Option(help="launches: the source line to drill into.")] = None,  # noqa: UP045
    filter_: Annotated[
        Optional[str], typer.Option("--filter", "-f", help="Keep rows whose name matches this regex.")  # noqa: UP045
    ] = None,
    sort: Annotated[Optional[str], typer.Option(help="Sort by this column (descending).")] = None,  # noqa: UP045
    asc: Annotated[bool, typer.Option("--asc", help="Sort ascending.")] = False,
    top: Annotated[Optional[int], typer.Option("--top", "-n", min=0, help="Keep the first N rows.")] = None,  # noqa: UP045
    by_shape: Annotated[
        bool, typer.Option("--by-shape", help="Group kernels by launch shape, ops by input shapes.")
    ] = False,
    step: Annotated[Optional[int], typer.Option(help="Only this ProfilerStep number.")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
    raw_formulas: Annotated[
        bool, typer.Option("--raw-formulas", help="Do not neutralise spreadsheet formulas in CSV cells.")
    ] = False,
    no_cache: NoCache = False,
    run: RunOption = None,
    comm_pattern: CommPattern = None,
) -> None:
    """Write a view (with filter, sort and top applied) to a file."""
    from .export import export_format, write_table
    from .views import refine, view_frame

    export_format(out)
    profile = _load(path, no_cache, run, comm_pattern)
    frame = view_frame(profile, view, op=op, kernel=kernel, by_shape=by_shape, step=step, module=module, source=source)
    frame = refine(frame, pattern=filter_, sort=sort, ascending=asc, top=top)
    try:
        written = write_table(frame, out, inputs=(profile.path,), overwrite=force, raw_formulas=raw_formulas)
        sys.stdout.flush()
    except BrokenPipeError:
        raise _stdout_closed() from None
    from .loading import remember_views

    remember_views(profile)
    if written != "-":
        typer.echo(f"wrote {frame.height} rows × {frame.width} columns to {clean(written)}", err=True)


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
    try:
        # Without standalone mode, typer returns the code of an Exit (Ctrl+C is Exit(130)).
        code = app(args=args, prog_name="profview", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe is found here, not at exit
    except Terminated:
        typer.echo("profview: terminated", err=True)
        sys.exit(143)
    except ProfviewError as exc:
        typer.echo(f"profview: error: {clean(exc)}", err=True)
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
