"""The ``profview`` command (typer); Textual is imported only by the viewer."""

from .boundary import main

__all__ = ["main"]
