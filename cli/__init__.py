"""The ``profview`` command (typer); Textual is imported only by the viewer."""

from .app import main

__all__ = ["main"]
