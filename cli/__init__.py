"""The ``profview`` command (typer); Textual is imported only by the viewer."""

from __future__ import annotations

import os
import signal
import sys


def _terminated_while_starting(_signum: int, _frame: object) -> None:
    """SIGTERM while the command's modules import (a second on a busy machine): nothing is
    written yet, so it ends at once, and says so (it died silently, or with a traceback)."""
    sys.stderr.write("profview: terminated\n")
    sys.stderr.flush()
    os._exit(143)


def main(argv: list[str] | None = None) -> None:
    """Entry point (:func:`profview.cli.boundary.main`, imported here: its imports take time)."""
    signal.signal(signal.SIGTERM, _terminated_while_starting)
    from ..collector import hold, resume

    hold()  # no cyclic collection over the modules starting imports: the first read resumes it
    try:
        from .boundary import main as run

        run(argv)
    finally:
        resume()  # a command that read nothing (--help, a bad argument), called from a program


__all__ = ["main"]
