"""The typer app of the ``profview`` command: its commands and the ``--version`` option.

Each command lives in a module of its own (``*_command.py``); :mod:`.boundary` runs the app and
turns every error into one line.  Textual is imported only by the viewer, so ``summary`` and
``export`` start fast.  A command line that names its command gets an app of that one command
(:func:`app_for`): the other commands' modules are not imported and typer does not read their
signatures, which a cached ``export`` would otherwise pay for on every run (its floor is
``import polars``); ``profview``, ``--help`` or an unknown command get every command.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Annotated, Any

import typer

from .. import __version__

#: Each command's name, and the module and function that implement it, in ``--help``'s order.
_COMMANDS: dict[str, tuple[str, str]] = {
    "open": ("open_command", "open_viewer"),
    "summary": ("summary_command", "summary"),
    "export": ("export_command", "export"),
    "diff": ("diff_command", "diff"),
    "query": ("query_command", "query"),
    "mcp": ("mcp_command", "mcp"),
}
COMMANDS = tuple(_COMMANDS)


def _version(value: bool) -> None:
    if value:
        from ..parsers import fast_chrome

        reader = "compiled scanner" if fast_chrome.available() else "pure-Python reader (no compiled scanner)"
        typer.echo(f"profview {__version__} ({reader})")
        raise typer.Exit()


def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """profview: kernel, operator and step tables of GPU profiles, in the terminal."""


def command(name: str) -> Callable[..., Any]:
    """The function of command ``name`` (its module imported now)."""
    module, function = _COMMANDS[name]
    found: Callable[..., Any] = getattr(import_module(f"{__package__}.{module}"), function)
    return found


def app_for(args: list[str] | None = None) -> typer.Typer:
    """The app for a command line: the command ``args`` names alone, or every command where they
    name none (no arguments, ``--help``, ``--version``, an unknown command, which typer answers
    with the list of them)."""
    app = typer.Typer(
        name="profview",
        help="A terminal trace explorer for GPU profiles: `profview TRACE` opens the viewer.",
        add_completion=False,
        no_args_is_help=True,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
    )
    app.callback()(_main)
    names = [args[0]] if args and args[0] in _COMMANDS else list(_COMMANDS)
    for name in names:
        function = command(name)
        app.command(name, short_help=short_help(function))(function)
    return app


def short_help(function: Callable[..., Any]) -> str | None:
    """The first paragraph of a command's docstring, whole: ``--help`` lists it wrapped to the
    terminal, where click would cut it at the line's end with ``...``."""
    doc = (function.__doc__ or "").strip()
    return " ".join(doc.split("\n\n", 1)[0].split()) or None
