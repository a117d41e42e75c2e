"""Two distributed jobs compared (``profview diff JOB_A JOB_B``): BEFORE and AFTER opened as
:class:`~profview.jobs.job.Job`, and their diff views (:mod:`profview.analysis.diff.jobs`).

:func:`diff_kind` tells two jobs, two single profiles and a mix (a one-line error) apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from ..analysis.diff.compare import DEFAULT_TOLERANCE_PCT, MATCH_MODES
from ..errors import ProfviewError

if TYPE_CHECKING:
    from ..jobs.executors import Progress
    from ..jobs.job import Job

JOB_DIFF_VIEWS = ("ranks", "stragglers", "kernels")
SIDES = ("before", "after")


def diff_kind(before: str, after: str) -> str:
    """``jobs`` when both name a job, ``profiles`` when neither does; a mix raises a one-line error."""
    from ..jobs.inputs import is_job

    jobs = [is_job([before]), is_job([after])]
    if all(jobs):
        return "jobs"
    if not any(jobs):
        return "profiles"
    job, single = (before, after) if jobs[0] else (after, before)
    if not os.path.exists(single):  # a typo is no single profile
        raise ProfviewError(single, "no such file or directory")
    raise ProfviewError(
        None, f"cannot compare a job ({job}) with a single profile ({single}): give two jobs or two traces"
    )


@dataclass
class JobComparison:
    """Two jobs and how to compare them (``tolerance_pct``, ``match`` as for two traces)."""

    before: Job
    after: Job
    match: str = "exact"
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT

    def __enter__(self) -> JobComparison:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove both jobs' extracted archives."""
        self.before.close()
        self.after.close()

    def side(self, which: str) -> Job:
        """``before`` or ``after``."""
        return self.before if which == "before" else self.after

    def ranks(self) -> pl.DataFrame:
        """Per-rank medians compared (:func:`profview.analysis.diff.jobs.diff_rank_medians`)."""
        from ..analysis.diff.jobs import diff_rank_medians

        return diff_rank_medians(
            self.before.ranks_view(), self.after.ranks_view(), tolerance_pct=self.tolerance_pct
        )

    def stragglers(self) -> pl.DataFrame:
        """The straggler tables compared, rank by rank (:func:`~profview.analysis.diff.jobs.diff_stragglers`)."""
        from ..analysis.diff.jobs import diff_stragglers

        return diff_stragglers(self.before.ranks_view(), self.after.ranks_view(), tolerance_pct=self.tolerance_pct)

    def kernels(self) -> pl.DataFrame:
        """Kernels across ranks compared (:func:`~profview.analysis.diff.jobs.diff_job_kernels`)."""
        from ..analysis.diff.jobs import diff_job_kernels

        return diff_job_kernels(
            self.before.kernels(), self.after.kernels(), tolerance_pct=self.tolerance_pct, match=self.match
        )

    def view(self, name: str) -> pl.DataFrame:
        """One of :data:`JOB_DIFF_VIEWS`."""
        if name not in JOB_DIFF_VIEWS:
            raise ProfviewError(None, f"two jobs have no {name!r} diff view: choose one of {', '.join(JOB_DIFF_VIEWS)}")
        return getattr(self, name)()

    # -- drill-downs (the viewer's job compare mode) ------------------------------------------
    def figure_by_rank(self, figure: str) -> pl.DataFrame:
        """One figure of the ranks view (``step_us``, ``wait_us``, …), rank by rank, before and after."""
        from ..analysis.diff.jobs import diff_per_rank

        def side(job: Job) -> pl.DataFrame:
            view = job.ranks_view()
            if figure not in view.columns:
                raise ProfviewError(job.source, f"the ranks view has no {figure!r} figure")
            return view.select("rank", pl.col(figure).alias("value_us"))

        frame = diff_per_rank(side(self.before), side(self.after), ("value_us",), tolerance_pct=self.tolerance_pct)
        return frame.rename({"value_us_before": f"{figure}_before", "value_us_after": f"{figure}_after"})

    def kernel_by_rank(self, before: str | None, after: str | None) -> pl.DataFrame:
        """One kernel (its name on each side; None where missing), rank by rank: calls and total
        before and after (0 on a rank that did not run it), the delta of the totals."""
        from ..analysis.diff.jobs import diff_per_rank

        def side(job: Job, name: str | None) -> pl.DataFrame:
            rows = [
                (rank, *summary.kernels.filter(pl.col("name") == name).select(
                    pl.col("calls").sum(), pl.col("total_us").sum()).row(0))
                for rank, summary in zip(job.ranks, job.summaries, strict=True)
            ] if name else []
            frame = pl.DataFrame(rows, schema={"rank": pl.Int64, "calls": pl.Int64, "total_us": pl.Float64},
                                 orient="row")
            return frame.filter(pl.col("calls") > 0)  # a rank that never ran it: not on this side

        return diff_per_rank(side(self.before, before), side(self.after, after), ("calls", "total_us"),
                             tolerance_pct=self.tolerance_pct)

    def rank_kernels(self, rank: int) -> pl.DataFrame:
        """One rank's kernels before and after (:func:`~profview.analysis.diff.compare.diff_kernels`; a side
        without the rank counts none)."""
        from ..analysis.diff.compare import diff_kernels

        def side(job: Job) -> pl.DataFrame:
            if rank in job.ranks:
                return job.summary(rank).kernels
            return pl.DataFrame(schema={"name": pl.String, "calls": pl.Int64, "total_us": pl.Float64})

        return diff_kernels(side(self.before), side(self.after), tolerance_pct=self.tolerance_pct, match=self.match)

    def ranks_line(self, which: str) -> str:
        """``8 of 8 ranks`` or the job's own note (``7 of 8 ranks (missing: 3)``)."""
        job = self.side(which)
        return "; ".join(job.notes) if job.notes else f"{len(job.ranks)} of {job.world_size} ranks"

    def straggler_names(self, which: str) -> str:
        """``rank 7`` (or ``ranks 2, 5``), or ``none`` without matched collectives."""
        found = self.side(which).stragglers()
        if not found:
            return "none"
        return ("rank " if len(found) == 1 else "ranks ") + ", ".join(map(str, found))

    def header(self, which: str, *, file_name: bool = False) -> str:
        """``BEFORE  path · 8 of 8 ranks · straggler rank 7`` (``file_name``: the job's name, not its path)."""
        job = self.side(which)
        source = os.path.basename(job.source.rstrip("/")) if file_name else job.source
        return f"{which.upper():<6}  {source} · {self.ranks_line(which)} · straggler {self.straggler_names(which)}"

    def settings_line(self) -> str:
        """How the two were compared."""
        match = " · match normalized" if self.match == "normalized" else ""
        return f"medians across ranks · kernels summed over ranks · unchanged within {self.tolerance_pct:g}%{match}"


def load_job_comparison(
    before: str,
    after: str,
    *,
    use_cache: bool = True,
    comm_pattern: str | None = None,
    match: str = "exact",
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
    workers: int | None = None,
    progress: Progress | None = None,
    as_job: bool = False,
    step_range: str | None = None,
) -> JobComparison:
    """Open the jobs BEFORE and AFTER (one after the other, each across worker processes); with
    ``as_job``, each one Nsight Systems export whose processes are its ranks
    (:func:`profview.jobs.process_job.open_process_job`, read with ``step_range``): the ranks are
    then compared by number, rank *i* being each side's *i*-th process by pid.

    Raises :class:`ProfviewError` (one line) when either is no job (see :func:`diff_kind`), or,
    with ``as_job``, no export of several processes.
    """
    from ..jobs.job import open_job
    from ..jobs.process_job import open_process_job

    if as_job:
        if workers is not None:
            raise ProfviewError(None, "--workers: the processes of one export are read here, one by one; "
                                "not with --as-job")
    elif step_range is not None:
        raise ProfviewError(None, "--step-range: one Nsight Systems export's option, not a job's (--as-job takes it)")
    elif diff_kind(before, after) != "jobs":
        raise ProfviewError(None, f"{before} and {after} are no jobs: compare two traces with load_comparison")
    if match not in MATCH_MODES:
        raise ProfviewError(None, f"--match must be one of {', '.join(MATCH_MODES)}, not {match!r}")
    if not 0 <= tolerance_pct < float("inf"):  # 1e400 is read as inf: no change would ever count
        raise ProfviewError(None, f"--tolerance must be a finite number, 0 or more, not {tolerance_pct}")

    def opened(side: str) -> Job:
        if as_job:
            return open_process_job(
                side, comm_pattern=comm_pattern, step_range=step_range, use_cache=use_cache, progress=progress
            )
        return open_job(side, workers=workers, comm_pattern=comm_pattern, use_cache=use_cache, progress=progress)

    first = opened(before)
    try:
        second = opened(after)
    except BaseException:
        first.close()
        raise
    return JobComparison(first, second, match=match, tolerance_pct=tolerance_pct)
