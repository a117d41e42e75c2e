"""Which processes of an Nsight Systems export are the ranks of a job, and how a rank is read.

Rank *i* is the *i*-th process by pid among those that launched GPU work (an export names no rank
of its own: see :mod:`profview.jobs.process_job`); a rank is read as its process's rows alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ProfviewError

if TYPE_CHECKING:
    from ..profiles.trace_profile import Profile

#: The settings a job of an export's processes is saved under (beside the analysis settings).
AS_JOB = {"as_job": "processes"}
#: What the job's notes say of its rank numbers.
NUMBERED_BY_PID = "ranks numbered by pid (the export names no rank)"


@dataclass(frozen=True)
class ExportProcesses:
    """The export at ``path`` as a job: rank ``i`` is OS process ``pids[i]`` (``names[i]``, from
    ``PROCESSES``), read with ``step_range``."""

    path: str
    pids: tuple[int, ...]
    names: tuple[str | None, ...]
    step_range: str | None = None

    def label(self, rank: int) -> str:
        """What messages and titles call rank ``rank``: ``run.sqlite:pid 144``."""
        return f"{self.path}:pid {self.pids[rank]}"

    def load(self, rank: int, comm_pattern: str | None = None) -> Profile:
        """Rank ``rank``'s profile: its process's work alone, read again from the export."""
        from ..profiles.loading import load

        return load(self.path, comm_pattern=comm_pattern, step_range=self.step_range, process=self.pids[rank])


def export_processes(path: str, step_range: str | None = None) -> tuple[ExportProcesses, list[str]]:
    """The processes of the export ``path`` that launched GPU work, as ranks, and the notes to say
    (GPU rows that name no process belong to no rank); a one-line error for a file that is no
    export, or holds fewer than two such processes."""
    from ..parsers.nsys.magic import is_sqlite
    from ..parsers.nsys.reader import list_gpu_processes

    if not is_sqlite(path):
        raise ProfviewError(
            path, "--as-job makes the processes of one Nsight Systems export (.sqlite) a job; this is no export "
            "(a job of rank traces is named by a directory, a glob or several files)"
        )
    found, unnamed = list_gpu_processes(path)
    if len(found) < 2:
        which = f"one process (pid {found[0].pid})" if found else "no process"
        raise ProfviewError(
            path, f"--as-job: {which} of this export launched GPU work, so it is no job of several ranks; "
            "open it without --as-job"
        )
    notes = [f"{NUMBERED_BY_PID}: " + ", ".join(f"rank {i} = pid {p.pid}" for i, p in enumerate(found))]
    if unnamed:
        notes.append(f"{unnamed:,} GPU rows of the export name no process (no globalPid): in no rank")
    processes = ExportProcesses(path, tuple(p.pid for p in found), tuple(p.name for p in found), step_range)
    return processes, notes
