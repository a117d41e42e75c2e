"""The console every printed report writes to: plain text, and a closed pipe left to the CLI.

Rich's own answer to a closed stdout (``summary | head``) is ``SystemExit(1)``, which the command
line would report as a failure; here it is a :class:`BrokenPipeError`, which the CLI turns into
the shell's quiet exit code 141.
"""

from __future__ import annotations

from rich.console import Console


class ReportConsole(Console):
    """A :class:`rich.console.Console` without markup, highlighting or emoji codes (trace text is
    data), whose closed pipe is a :class:`BrokenPipeError`."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(highlight=False, markup=False, emoji=False, **kwargs)  # type: ignore[arg-type]

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")
