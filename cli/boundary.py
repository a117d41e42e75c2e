"""The command's one error boundary: every problem becomes one line on stderr and an exit code.

Exit codes: 0 done; 2 a bad input or output (:class:`profview.errors.ProfviewError`, out of memory, a
failed write); 3 a bug (``PROFVIEW_DEBUG=1`` shows the traceback); 130 interrupted; 141 the reader of
our output went away; 143 terminated (SIGTERM).
"""

from __future__ import annotations

import os
import signal
import sys

import typer

from ..errors import ProfviewError
from ..parsers.source import cap_polars_threads, economise_address_space
from ..sanitize import clean
from .app import COMMANDS, app_for
from .output import silence_stdout


def _path_of(args: list[str]) -> str:
    """``PATH: `` of the input named on the command line (for errors that do not name it)."""
    return f"{args[1]}: " if len(args) > 1 and not args[1].startswith("-") else ""


class Terminated(BaseException):
    """SIGTERM (a scheduler ending the job): unwinds like Ctrl+C, so no partial file is left."""


def _terminated(_signum: int, _frame: object) -> None:
    raise Terminated


def _internal_error(args: list[str], exc: BaseException) -> None:
    """A bug (or a panic inside Polars): one line and exit code 3; ``PROFVIEW_DEBUG=1`` re-raises."""
    if os.environ.get("PROFVIEW_DEBUG"):
        raise exc
    typer.echo(
        f"profview: error: {clean(_path_of(args))}internal error ({type(exc).__name__}: {clean(exc)}); "
        "PROFVIEW_DEBUG=1 shows the traceback",
        err=True,
    )
    sys.exit(3)


def _end_children() -> None:
    """Worker processes (a job's ranks) stopped and joined before profview exits (issue 32); the
    job machinery is not imported for it when no job ran."""
    executors = sys.modules.get("profview.jobs.executors")
    if executors is not None:
        executors.end_children()


#: Options that stand alone: ``profview --help`` and ``--version`` list the commands, they open nothing.
_ALONE = {"--help", "-h", "--version"}


def with_command(args: list[str]) -> list[str]:
    """``args`` with ``open`` first where they name no command: ``profview PATH`` and ``profview
    --no-cache PATH`` (options before the path) both mean ``profview open ...``.  A line of options
    only (``profview --help``, ``--version``) is left to the app, which lists the commands."""
    if not args or args[0] in COMMANDS:
        return args
    words = [a for a in args if not a.startswith("-")]
    if not words or (args[0].startswith("-") and words[0] in COMMANDS):
        return args
    if args[0].startswith("-") and _ALONE & set(args):
        return args
    return ["open", *args]


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``profview PATH`` means ``profview open PATH``; errors are one line; worker
    processes are joined before it returns or exits, whatever the outcome."""
    from ..reads import forget

    forget()  # each command's inputs are its own (a process may run several: the tests do)
    try:
        _main(argv)
    finally:
        _end_children()


def _main(argv: list[str] | None = None) -> None:
    args = with_command(list(sys.argv[1:] if argv is None else argv))
    try:
        # Inside the try: a SIGTERM just after the handler is set is caught too (it was a traceback).
        signal.signal(signal.SIGTERM, _terminated)
        economise_address_space()
        for warning in cap_polars_threads():
            typer.echo(f"profview: warning: {clean(warning)}", err=True)
        if not os.environ.get("PROFVIEW_DEBUG"):  # a Rust panic's own report is two lines, not a backtrace
            os.environ["RUST_BACKTRACE"] = "0"
        # Without standalone mode, typer returns the code of an Exit (Ctrl+C is Exit(130)).
        code = app_for(args)(args=args, prog_name="profview", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe is found here, not at exit
    except Terminated:
        typer.echo("profview: terminated", err=True)
        sys.exit(143)
    except ProfviewError as exc:
        typer.echo(f"profview: error: {clean(exc)}", err=True)
        if exc.out_of_memory or exc.leave_now:
            sys.stderr.flush()
            os._exit(2)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("profview: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # the reader of our output went away (| head): quietly stop
        silence_stdout()
        sys.exit(141)
    except OSError as exc:  # writing the output failed (a full disk: summary > /dev/full)
        silence_stdout()
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
        _internal_error(args, exc)
    except BaseException as exc:  # a Rust panic in Polars (PanicException is a BaseException)
        if type(exc).__name__ != "PanicException":
            raise
        _internal_error(args, exc)
    if isinstance(code, int) and code:
        if code == 130:
            typer.echo("profview: interrupted", err=True)
        sys.exit(code)
