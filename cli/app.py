"""The typer app of the ``profview`` command: its commands and the ``--version`` option.

Each command lives in a module of its own (``*_command.py``); :mod:`.boundary` runs the app and
turns every error into one line.  Textual is imported only by the viewer, so ``summary`` and
``export`` start fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .. import __version__
from .diff_command import diff
from .export_command import export
from .open_command import open_viewer
from .query_command import query
from .summary_command import summary

app = typer.Typer(
    name="profview",
    help="A terminal trace explorer for GPU profiles: `profview TRACE` opens the viewer.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
COMMANDS = ("open", "summary", "export", "diff", "query")


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


app.command("open")(open_viewer)
app.command()(summary)
app.command()(export)
app.command("diff")(diff)
app.command()(query)
