"""A distributed job: every rank's summary, and the views across ranks.

:func:`open_job` finds the rank traces (:mod:`profview.jobs.inputs`), summarises each in a worker
(:mod:`profview.jobs.executors`, :func:`profview.jobs.rank_summary.summarise_rank`), checks the ranks, and
matches collectives across ranks.  A :class:`Job` never holds any rank's events: only the
summaries the workers returned.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import polars as pl

from ..errors import ProfviewError
from .executors import Progress, map_ranks
from .inputs import JobInputs, check_ranks, find_inputs, rank_from_name
from .rank_summary import RankSummary, cached_summary, summarise_rank

JOB_VIEWS = ("ranks", "collectives", "steps", "kernels")
#: The job-wide kernels view: per kernel name, totals across ranks and the spread of per-rank totals.
JOB_KERNEL_COLUMNS = (
    "name",
    "calls",
    "total_us",
    "ranks",
    "min_rank_us",
    "median_rank_us",
    "max_rank_us",
    "max_rank",
    "pct",
)


@dataclass
class Job:
    """The ranks of one job, by rank: ``summaries[i]`` is rank ``ranks[i]``.

    ``world_size``: from ``distributedInfo`` (else the highest rank + 1); ``notes``: what the user
    should know (missing ranks).  Call :meth:`close` (or use ``with``) to remove an extracted
    archive.
    """

    source: str
    ranks: list[int]
    summaries: list[RankSummary]
    world_size: int
    inputs: JobInputs | None = None
    notes: list[str] = field(default_factory=list)
    comm_pattern: str | None = None

    format = "distributed job"

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the traces extracted from an archive, if any."""
        if self.inputs is not None:
            self.inputs.cleanup()

    @property
    def path(self) -> str:
        return self.source

    def summary(self, rank: int) -> RankSummary:
        """The summary of ``rank``."""
        if rank not in self.ranks:
            raise ProfviewError(self.source, f"no rank {rank} in this job (ranks: {_span(self.ranks)})")
        return self.summaries[self.ranks.index(rank)]

    @cached_property
    def _matched(self) -> tuple[pl.DataFrame, dict[int, float]]:
        from ..analysis.collectives import match_collectives

        per_rank = {r: s.calls for r, s in zip(self.ranks, self.summaries, strict=True)}
        view, offsets = match_collectives(per_rank)
        return view.with_columns((pl.col("start_us") - self._origin(offsets)).round(3)), offsets

    def _origin(self, offsets: dict[int, float]) -> float:
        """The job's start on the corrected clock (what the collectives' ``start_us`` counts from)."""
        return min(
            (s.facts.get("span_start", 0.0) - offsets.get(r, 0.0) for r, s in self._pairs()),
            default=0.0,
        )

    def collective_instances(self) -> pl.DataFrame:
        """One row per collective matched across ranks (:func:`~profview.analysis.collectives.collective_instances`)."""
        from ..analysis.collectives import collective_instances

        return collective_instances(self.collectives())

    def step_waits(self) -> pl.DataFrame:
        """Each rank's wait at matched collectives, step by step (:func:`~profview.analysis.ranks.step_waits`)."""
        from ..analysis.ranks import step_waits

        offsets = self.clock_offsets()
        origin = self._origin(offsets)
        windows = [
            s.steps.select(
                pl.lit(r, dtype=pl.Int64).alias("rank"),
                "step",
                start := (pl.col("start_us") + s.facts.get("span_start", 0.0) - offsets.get(r, 0.0) - origin),
                (start + pl.col("duration_us")).alias("end_us"),
            )
            for r, s in self._pairs()
        ]
        frame = pl.concat(windows) if windows else pl.DataFrame(
            schema={"rank": pl.Int64, "step": pl.Int64, "start_us": pl.Float64, "end_us": pl.Float64})
        return step_waits(frame, self.collectives())

    def collectives(self) -> pl.DataFrame:
        """The collectives view (see :mod:`profview.analysis.collectives`)."""
        return self._matched[0]

    def clock_offsets(self) -> dict[int, float]:
        """What was subtracted from each rank's timestamps (µs)."""
        return self._matched[1]

    @cached_property
    def _ranks_view(self) -> pl.DataFrame:
        from ..analysis.ranks import rank_table

        rows = [(r, s.steps, s.facts) for r, s in zip(self.ranks, self.summaries, strict=True)]
        return rank_table(rows, self.collectives(), self.clock_offsets())

    def ranks_view(self) -> pl.DataFrame:
        """The ranks view (see :mod:`profview.analysis.ranks`)."""
        return self._ranks_view

    def stragglers(self) -> list[int]:
        """The rank(s) the others wait for (empty when no collective was matched)."""
        return self.ranks_view().filter(pl.col("straggler"))["rank"].to_list()

    def steps(self) -> pl.DataFrame:
        """Every rank's steps view, with a ``rank`` column first."""
        frames = [s.steps.select(pl.lit(r, dtype=pl.Int64).alias("rank"), pl.all()) for r, s in self._pairs()]
        return pl.concat(frames, how="diagonal_relaxed")

    def kernels(self) -> pl.DataFrame:
        """Per kernel name: calls and total across ranks, the min/median/max of its per-rank
        totals (a rank without it counts 0) and the rank of the max."""
        frames = [s.kernels.select("name", "calls", "total_us").with_columns(rank=pl.lit(r)) for r, s in self._pairs()]
        per_rank = pl.concat(frames).group_by("name", "rank").agg(pl.col("calls").sum(), pl.col("total_us").sum())
        grid = per_rank.select("name").unique().join(pl.DataFrame({"rank": self.ranks}), how="cross")
        full = grid.join(per_rank, on=["name", "rank"], how="left").fill_null(0)
        table = (
            full.sort("rank")
            .group_by("name")
            .agg(
                pl.col("calls").sum(),
                pl.col("total_us").sum(),
                (pl.col("calls") > 0).sum().cast(pl.Int64).alias("ranks"),
                pl.col("total_us").min().alias("min_rank_us"),
                pl.col("total_us").median().alias("median_rank_us"),
                pl.col("total_us").max().alias("max_rank_us"),
                pl.col("rank").sort_by("total_us", descending=True).first().alias("max_rank"),
            )
            .sort(["total_us", "name"], descending=[True, False])
        )
        total = float(table["total_us"].sum() or 0.0)
        pct = (100.0 * pl.col("total_us") / total).round(2) if total else pl.lit(None, dtype=pl.Float64)
        return table.with_columns(pct.alias("pct")).select(JOB_KERNEL_COLUMNS)

    def view(self, name: str) -> pl.DataFrame:
        """A job view by name (:data:`JOB_VIEWS`)."""
        views = {
            "ranks": self.ranks_view,
            "collectives": self.collectives,
            "steps": self.steps,
            "kernels": self.kernels,
        }
        if name not in views:
            raise ProfviewError(None, f"a job has no {name!r} view: choose one of {', '.join(JOB_VIEWS)}")
        return views[name]()

    def _pairs(self) -> list[tuple[int, RankSummary]]:
        return list(zip(self.ranks, self.summaries, strict=True))


def open_job(
    args: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    dask: str | None = None,
    comm_pattern: str | None = None,
    use_cache: bool = True,
    progress: Progress | None = None,
) -> Job:
    """Open the job ``args`` names (a directory, a glob, several traces or an archive).

    Raises :class:`ProfviewError` (one line) for inputs that are no job: no traces, two traces
    of one rank, traces of jobs of different world sizes.
    """
    names = [os.fspath(args)] if isinstance(args, (str, os.PathLike)) else [os.fspath(a) for a in args]
    inputs = find_inputs(names)
    try:
        if comm_pattern is not None:
            from ..profiles.loading import check_pattern

            check_pattern(inputs.source, comm_pattern)
        # Traces extracted from an archive live in a temporary folder: nothing to cache.
        cache = use_cache and inputs.temp_dir is None
        summaries = _summaries(inputs.paths, comm_pattern, cache, workers, dask, progress)
        found = [(s.path, s.rank if s.rank is not None else rank_from_name(s.path), s.world_size) for s in summaries]
        ranks, world, notes = check_ranks(found)
    except BaseException:
        inputs.cleanup()
        raise
    order = sorted(range(len(ranks)), key=ranks.__getitem__)
    return Job(
        source=inputs.source,
        ranks=[ranks[i] for i in order],
        summaries=[summaries[i] for i in order],
        world_size=world,
        inputs=inputs,
        notes=notes,
        comm_pattern=comm_pattern,
    )


def _summaries(
    paths: list[str],
    comm_pattern: str | None,
    cache: bool,
    workers: int | None,
    dask: str | None,
    progress: Progress | None,
) -> list[RankSummary]:
    """Each path's summary: read from the cache here when saved, else computed by the workers."""
    found: dict[int, RankSummary] = {}
    if cache:
        for index, path in enumerate(paths):
            summary = cached_summary(path, comm_pattern)
            if summary is not None:
                found[index] = summary
    todo = [i for i in range(len(paths)) if i not in found]
    done = len(found)

    def advance(finished: int, _total: int, elapsed: float) -> None:
        if progress:
            progress(done + finished, len(paths), elapsed)

    if found and progress:
        progress(done, len(paths), 0.0)
    computed = map_ranks(
        summarise_rank, [paths[i] for i in todo], comm_pattern, cache, workers=workers, dask=dask, progress=advance
    )
    found.update(zip(todo, computed, strict=True))
    if cache and todo:
        from ..store import rank_summaries as rank_store

        rank_store.prune()
    return [found[i] for i in range(len(paths))]


def _span(ranks: list[int]) -> str:
    return f"{ranks[0]}–{ranks[-1]}" if ranks == list(range(ranks[0], ranks[-1] + 1)) else ", ".join(map(str, ranks))
