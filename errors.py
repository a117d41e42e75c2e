"""profview's own error type: every problem with an input becomes one of these."""

from __future__ import annotations


class ProfviewError(Exception):
    """A problem with an input file, reported to the user as one line (no traceback)."""

    def __init__(self, path: str | None, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)

    def __reduce__(self) -> tuple[type[ProfviewError], tuple[str | None, str]]:
        # Raised in a worker process (a job's ranks), it crosses back to the parent pickled.
        return (type(self), (self.path, self.problem))
