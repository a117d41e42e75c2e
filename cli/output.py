"""Writing to the terminal's streams: the closed-pipe exit, and the line that says what was written."""

from __future__ import annotations

import os
import sys

import typer

from ..report.wording import plural
from ..sanitize import clean


def silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def stdout_closed() -> typer.Exit:
    """The reader of our output went away (``| head``): stop quietly with the shell's code.

    Raised as an Exit, not as the OSError it was: typer turns an EPIPE OSError into exit code 1.
    """
    silence_stdout()
    return typer.Exit(141)


def say_written(written: str, rows: int, columns: int) -> None:
    """``wrote N rows × M columns to FILE`` on stderr (nothing when the table went to stdout)."""
    if written != "-":
        typer.echo(f"wrote {plural(rows, 'row')} × {plural(columns, 'column')} to {clean(written)}", err=True)
