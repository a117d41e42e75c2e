"""profview's own error type: every problem with an input becomes one of these."""

from __future__ import annotations


class ProfviewError(Exception):
    """A problem with an input file, reported to the user as one line (no traceback)."""

    def __init__(self, path: str | None, problem: str, *, out_of_memory: bool = False, leave_now: bool = False) -> None:
        self.path = path
        self.problem = problem
        #: Refused for lack of memory: the process should end at once, without the interpreter's
        #: clean-up (which allocates, and may abort under an address-space limit).
        self.out_of_memory = out_of_memory
        #: The process should end at once after the line, for threads it cannot stop (a Dask
        #: client mid-handshake) would print on the way out.
        self.leave_now = leave_now
        super().__init__(f"{path}: {problem}" if path else problem)

    def __reduce__(self) -> tuple[type[ProfviewError], tuple[str | None, str]]:
        # Raised in a worker process (a job's ranks), it crosses back to the parent pickled.
        return (type(self), (self.path, self.problem))
