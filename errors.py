"""profview's own error type: every problem with an input becomes one of these."""

from __future__ import annotations


class ProfviewError(Exception):
    """A problem with an input file, reported to the user as one line (no traceback)."""

    def __init__(self, path: str | None, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)
