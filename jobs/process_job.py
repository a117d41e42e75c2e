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
from functools import partial
from typing import TYPE_CHECKING

from ..store.rank_frames import RankFrames
from .executors import Progress
from .processes import AS_JOB, export_processes
from .rank_summary import RankSummary, SavedRankSummary, summarise_profile

if TYPE_CHECKING:
    from .job import Job


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
    from ..profiles.loading import check_patterns
    from ..store import job_summaries as job_store
    from .job import Job, _computed_views, _held, _restore_views, _saved_info

    check_patterns(path, comm_pattern, step_range)  # said before the export is read
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
