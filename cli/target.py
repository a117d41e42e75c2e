"""What the command line names, decided once: one trace (or table), or a job of rank traces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

from ..sanitize import clean

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..jobs.executors import Progress
    from ..jobs.job import Job
    from ..profiles.snapshot_profile import SnapshotProfile
    from ..profiles.trace_profile import Profile


@dataclass(frozen=True)
class Target:
    """The inputs of a command: ``is_job`` when they name a job (a directory, a glob, several traces
    or an archive of rank traces), ``is_snapshot`` when one PyTorch memory snapshot (a pickle, by
    its content), else one trace or table (``trace``)."""

    paths: tuple[str, ...]
    is_job: bool
    is_snapshot: bool = False
    #: A directory of per-rank memory snapshots (the viewer, ``summary`` and ``export`` compare its ranks).
    snapshots: tuple[str, ...] = ()
    #: ``--as-job``: one Nsight Systems export whose processes are the job's ranks (:mod:`profview.jobs.process_job`).
    processes: bool = False

    @classmethod
    def of(cls, paths: list[str], as_job: bool = False) -> Target:
        """Decide once whether ``paths`` name a job (:func:`profview.jobs.inputs.is_job`) or a
        memory snapshot (:func:`profview.parsers.snapshot.reader.looks_like_snapshot`);
        ``as_job``: one Nsight Systems export, a job of its processes."""
        if as_job:
            from ..errors import ProfviewError

            if len(paths) != 1:
                raise ProfviewError(None, "--as-job makes one Nsight Systems export a job of its processes: name one")
            return cls(tuple(paths), is_job=True, processes=True)
        if len(paths) == 1:
            from ..parsers.snapshot.reader import looks_like_snapshot

            if looks_like_snapshot(paths[0]):
                return cls(tuple(paths), is_job=False, is_snapshot=True)
            from ..jobs.snapshot_job import snapshot_directory

            found = snapshot_directory(paths[0])
            if found:
                return cls(tuple(paths), is_job=False, snapshots=tuple(found))
        from ..jobs.inputs import is_job

        return cls(tuple(paths), is_job(paths))

    @property
    def trace(self) -> str:
        """The one input of a command given one file."""
        return self.paths[0]

    @property
    def label(self) -> str:
        """How the viewer names a job: its first input, and how many more."""
        first = self.paths[0]
        return first if len(self.paths) == 1 else f"{first} (+{len(self.paths) - 1} more)"

    def start_reading(self, no_cache: bool) -> None:
        """One trace to parse: start reading it now, while Polars imports (:mod:`profview.profiles.prefetch`)."""
        if len(self.paths) == 1 and not self.is_job and not self.is_snapshot:
            from ..profiles.prefetch import start

            start(self.paths[0], use_cache=not no_cache)

    def load(
        self,
        no_cache: bool = False,
        run: str | None = None,
        comm_pattern: str | None = None,
        step_range: str | None = None,
    ) -> Profile:
        """The one trace, loaded; its warnings go to stderr."""
        from ..profiles.loading import load

        self.refuse_snapshot_directory()
        profile = load(self.trace, use_cache=not no_cache, run=run, comm_pattern=comm_pattern, step_range=step_range)
        for warning in profile.warnings:
            typer.echo(f"profview: warning: {clean(profile.path)}: {clean(warning)}", err=True)
        return profile

    def refuse_step_range(self, step_range: str | None) -> None:
        """``--step-range`` reads one Nsight Systems export: given for a job or a snapshot, one line."""
        if step_range is not None and ((self.is_job and not self.processes) or self.is_snapshot or self.snapshots):
            from ..errors import ProfviewError

            raise ProfviewError(None, "--step-range: one Nsight Systems export's option, not a job's or a snapshot's")

    def refuse_snapshot_directory(self) -> None:
        """A directory of memory snapshots is a job to the viewer, ``summary`` and ``export``: elsewhere, one line."""
        if self.snapshots:
            from ..errors import ProfviewError

            raise ProfviewError(
                self.trace, f"a directory of {len(self.snapshots)} memory snapshots: profview DIR, summary DIR and "
                "export DIR -o ranks.csv compare its ranks; name one snapshot for its other views"
            )

    def load_snapshot(self) -> SnapshotProfile:
        """The one memory snapshot, opened; its warnings go to stderr."""
        from ..profiles.snapshot_profile import load_snapshot

        profile = load_snapshot(self.trace)
        for warning in profile.warnings:
            typer.echo(f"profview: warning: {clean(profile.path)}: {clean(warning)}", err=True)
        return profile

    def refuse_workers(self, workers: int | None, dask: str | None) -> None:
        """``--workers``/``--dask`` summarise rank traces elsewhere: an export's processes are read
        here, one after another, so either given with ``--as-job`` is one line, never ignored."""
        if self.processes and (workers is not None or dask is not None):
            from ..errors import ProfviewError

            named = "--workers" if workers is not None else "--dask"
            raise ProfviewError(
                None, f"{named}: the processes of one export are read here, one by one; not with --as-job"
            )

    def job_opener(
        self,
        no_cache: bool,
        comm_pattern: str | None,
        workers: int | None,
        dask: str | None,
        strict: bool = False,
        step_range: str | None = None,
    ) -> Callable[[Progress | None], Job]:
        """What opens the job (given a progress callback): the traces' job, or the export's processes'."""
        self.refuse_workers(workers, dask)
        if self.processes:
            from ..jobs.process_job import open_process_job

            return lambda progress: open_process_job(
                self.trace, comm_pattern=comm_pattern, step_range=step_range, use_cache=not no_cache, progress=progress
            )
        from ..jobs.job import open_job

        return lambda progress: open_job(
            list(self.paths),
            workers=workers,
            dask=dask,
            comm_pattern=comm_pattern,
            use_cache=not no_cache,
            progress=progress,
            strict=strict,
        )

    def open_job(
        self,
        no_cache: bool,
        comm_pattern: str | None,
        workers: int | None,
        dask: str | None,
        strict: bool = False,
        step_range: str | None = None,
    ) -> Job:
        """The job, opened with a progress line on stderr; warnings of its ranks, and the traces
        left out (unreadable, or no traces), go there too."""
        from ..report.job_summary import ProgressLine

        opener = self.job_opener(no_cache, comm_pattern, workers, dask, strict, step_range)
        progress = ProgressLine()
        try:
            job = opener(progress)
        finally:
            progress.finish()
        for rank, summary in zip(job.ranks, job.summaries, strict=True):
            for warning in summary.warnings:
                typer.echo(f"profview: warning: rank {rank}: {clean(warning)}", err=True)
        say_left_out(job)
        return job


def say_left_out(job: Job, side: str = "") -> None:
    """On stderr, loudly: each trace left out of the job as unreadable, and the files skipped."""
    for name, problem in job.failures:
        typer.echo(
            f"profview: warning: {side}{clean(name)}: {clean(problem)} (left out of the job; --strict fails)", err=True
        )
    for note in job.inputs.notes if job.inputs is not None else []:
        typer.echo(f"profview: note: {side}{clean(note)}", err=True)
