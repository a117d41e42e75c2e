"""One Nsight Systems export whose processes are the ranks of a job (``--as-job``).

A ``torchrun`` or ``mpirun`` captured by one ``nsys profile`` is one export holding every rank's
process.  :func:`open_process_job` makes each OS process that launched GPU work one rank: the
reader reads that process's rows alone (:func:`profview.parsers.nsys.reader.read_nsys` with
``process``), as if the export held it alone, and its summary is the one a rank trace gets
(:func:`profview.jobs.rank_summary.summarise_profile`).  From there the job is the same
:class:`~profview.jobs.job.Job` a directory of rank traces makes: the ranks view, the straggler,
collectives matched across ranks, the job screen.

**Which rank is which.** An export names no rank of its own: nsys records the processes, not
``RANK`` (its environment table is the ``nsys`` command's, not each process's), and NCCL writes a
communicator's rank only in the binary payload of its ``ncclCommInitRank`` range, which the
exports at hand do not hold.  So rank *i* is the *i*-th process by pid, and the job says so
(``ranks numbered by pid``): rank 0 is not claimed to be ``RANK=0``.

**One clock.** Every process of one capture is timed on nsys's one session clock, so no clock
offset is estimated between them (all 0).

The processes are read one after another in this process (the export is one file, read by SQL a
process at a time), each let go before the next; the whole job is saved like a job of traces
(:mod:`profview.store.job_summaries`, keyed by the export's ``stat``), so a re-open reads no rank.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ..errors import ProfviewError
from ..store.rank_frames import RankFrames
from .executors import Progress
from .rank_summary import RankSummary, SavedRankSummary, summarise_profile

if TYPE_CHECKING:
    from ..profiles.trace_profile import Profile
    from .job import Job

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


def open_process_job(
    path: str,
    *,
    comm_pattern: str | None = None,
    step_range: str | None = None,
    use_cache: bool = True,
    progress: Progress | None = None,
) -> Job:
    """The job whose ranks are the processes of the Nsight Systems export ``path`` that launched
    GPU work (module doc); read back from the saved job when the export has not changed."""
    from ..profiles.loading import check_pattern
    from ..store import job_summaries as job_store
    from .job import Job, _computed_views, _held, _restore_views, _saved_info

    for pattern, option in ((comm_pattern, "--comm-pattern"), (step_range, "--step-range")):
        if pattern is not None:
            check_pattern(path, pattern, option)
    processes, notes = export_processes(path, step_range)
    settings: dict[str, object] = dict(AS_JOB)
    settings |= {k: v for k, v in (("comm_pattern", comm_pattern), ("step_range", step_range)) if v is not None}
    job_key = job_store.job_key([path], [], settings) if use_cache else None
    saved = job_store.load(job_key) if job_key else None
    labels = [processes.label(rank) for rank in range(len(processes.pids))]
    if saved is not None and [info.get("path") for info in saved[0]] != labels:
        saved = None  # saved for other processes: summarised again
    summaries: list[RankSummary]
    if saved is not None:
        docs, frames, _doc = saved
        summaries = [SavedRankSummary(info, partial(frames.frame, index)) for index, info in enumerate(docs)]
        held = frames.held
        if progress:
            progress(len(summaries), len(summaries), 0.0)
    else:
        opened = RankFrames()
        summaries = []
        began = time.monotonic()
        for rank, label in enumerate(labels):
            profile = processes.load(rank, comm_pattern)
            summary = summarise_profile(profile, label, rank, len(labels))
            del profile  # one process's events at a time
            kept = _held(opened, rank, summary)
            assert isinstance(kept, RankSummary)
            summaries.append(kept)
            if progress:
                progress(rank + 1, len(labels), time.monotonic() - began)

        def held() -> RankFrames:
            return opened

    job = Job(
        source=path,
        ranks=list(range(len(labels))),
        summaries=summaries,
        world_size=len(labels),
        notes=notes,
        comm_pattern=comm_pattern,
        use_cache=use_cache,
        rank_frames=held,
        frame_keys=list(range(len(labels))),
        processes=processes,
        one_clock=True,
    )
    if saved is not None:
        _restore_views(job, saved[2])
    elif job_key:
        views = _computed_views(job)
        job_store.save(job_key, [_saved_info(s) for s in summaries], held(), job.frame_keys or [], [], notes, views)
    return job
