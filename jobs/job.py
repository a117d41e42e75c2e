"""A distributed job: every rank's summary, and the views across ranks.

:func:`open_job` finds the rank traces (:mod:`profview.jobs.inputs`), summarises each in a worker
(:mod:`profview.jobs.executors`, :func:`profview.jobs.rank_summary.summarise_rank`), checks the ranks, and
matches collectives across ranks.  A :class:`Job` never holds any rank's events: only the
summaries the workers returned.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ..collector import Paused
from ..errors import ProfviewError
from ..store.rank_frames import INDEX, RankFrames
from .executors import Progress, map_ranks
from .inputs import JobInputs, check_ranks, find_inputs, list_inputs, rank_from_name
from .rank_summary import (
    RankFailure,
    RankPath,
    RankSummary,
    SavedRankSummary,
    cached_summary,
    rank_path_or_fail,
    summarise_or_fail,
)

if TYPE_CHECKING:
    from ..profiles.trace_profile import Profile
    from .processes import ExportProcesses

JOB_VIEWS: tuple[str, ...] = ("ranks", "collectives", "steps", "kernels", "straggler_path")
#: Issue 32: each rank's critical path, computed when asked for (not by opening the job).
JOB_VIEWS += ("rank_paths",)
#: The straggler's collectives on its critical path, and how long the other ranks waited at each
#: (issue 26): what making the straggler's path shorter would release.
STRAGGLER_PATH_COLUMNS = (
    "collective",
    "name",
    "rank",
    "start_us",
    "duration_us",
    "waiting_ranks",
    "others_wait_us",
    "max_wait_us",
)
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
    #: (trace, why) of each trace left out because it could not be read
    failures: list[tuple[str, str]] = field(default_factory=list)
    #: How ranks are summarised when a view asks for more (each rank's critical path): as opened.
    workers: int | None = None
    dask: str | None = None
    use_cache: bool = True
    #: Where the ranks' frames are held (the ranks concatenated: every summary is a
    #: :class:`SavedRankSummary` reading from it), and each summary's position in it; None for a
    #: job made of summaries that hold their own frames.
    rank_frames: Callable[[], RankFrames] | None = None
    frame_keys: list[int] | None = None
    #: The ranks are the processes of one Nsight Systems export (:mod:`profview.jobs.process_job`):
    #: each rank is read from there, not from a trace file of its own.
    processes: ExportProcesses | None = None
    #: Every rank was timed on one clock (one capture): no clock offset is estimated.
    one_clock: bool = False
    _extracted: JobInputs | None = None

    @property
    def format(self) -> str:
        """What the job was read from, in words (the summary's first line)."""
        if self.processes is not None:
            return "distributed job: the processes of one Nsight Systems export"
        return "distributed job"

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the traces extracted from an archive, if any."""
        for inputs in (self.inputs, self._extracted):
            if inputs is not None:
                inputs.cleanup()

    def input_files(self) -> list[str]:
        """Every file this job was read from (traces and archives): what an export must not overwrite."""
        if self.processes is not None:
            return [self.processes.path]
        if self.inputs is None:
            return []
        named = [*self.inputs.paths, *(name for name, _problem in self.failures)]
        files = [p for p in named if p not in self.inputs.labels and os.path.isfile(p)]
        return files + list(self.inputs.archives)

    def trace_path(self, rank: int) -> str:
        """A file holding ``rank``'s trace (one from an archive is extracted again if needed; the
        export itself for a rank that is one of its processes)."""
        if self.processes is not None:
            self.summary(rank)  # an unknown rank is said
            return self.processes.path
        label = self.summary(rank).path
        for inputs in (self.inputs, self._extracted):
            if inputs is not None and inputs.temp_dir is not None:
                for path, name in inputs.labels.items():
                    if name == label:
                        return path
        if self.inputs is not None and self.inputs.archives and not os.path.isfile(label):
            self._extracted = self._extracted or find_inputs(self.inputs.archives)
            for path, name in self._extracted.labels.items():
                if name == label:
                    return path
        return label

    @property
    def path(self) -> str:
        return self.source

    def load_rank(self, rank: int, use_cache: bool = True) -> Profile:
        """Rank ``rank``'s profile, loaded whole (its trace through the cache, unless it is a
        temporary copy extracted from an archive; a process of an export read from the export)."""
        if self.processes is not None:
            self.summary(rank)  # an unknown rank is said
            return self.processes.load(self.ranks.index(rank), self.comm_pattern)
        from ..profiles.loading import load

        path = self.trace_path(rank)
        return load(path, use_cache=use_cache and not self._is_extracted(path), comm_pattern=self.comm_pattern)

    def summary(self, rank: int) -> RankSummary:
        """The summary of ``rank``."""
        if rank not in self.ranks:
            raise ProfviewError(self.source, f"no rank {rank} in this job (ranks: {_span(self.ranks)})")
        return self.summaries[self.ranks.index(rank)]

    @cached_property
    def _matched(self) -> tuple[pl.DataFrame, dict[int, float]]:
        from ..analysis.distributed.collectives import match_collectives, match_stacked

        if self.rank_frames is None or self.frame_keys is None:
            per_rank = {r: s.calls for r, s in zip(self.ranks, self.summaries, strict=True)}
            view, offsets = match_collectives(per_rank, one_clock=self.one_clock)
        else:  # every rank's calls in one frame: no frame per rank
            calls = self._with_rank(self._stacked("calls"))
            view, offsets = match_stacked(calls, sorted(self.ranks), one_clock=self.one_clock)
        return view.with_columns((pl.col("start_us") - self._origin(offsets)).round(3)), offsets

    def _stacked(self, kind: str) -> pl.DataFrame:
        """Every column of every held rank's ``kind`` frame, in one frame with ``_index``, its text decoded."""
        held = self.rank_frames() if self.rank_frames is not None else RankFrames()
        columns = list(dict.fromkeys(c for group in held.groups(kind) for c in group.frame.columns if c != INDEX))
        return held.stacked(kind, columns, decode=True).select(*columns, INDEX)

    def _origin(self, offsets: dict[int, float]) -> float:
        """The job's start on the corrected clock (what the collectives' ``start_us`` counts from)."""
        return min(
            (s.facts.get("span_start", 0.0) - offsets.get(r, 0.0) for r, s in self._pairs()),
            default=0.0,
        )

    def collective_instances(self) -> pl.DataFrame:
        """One row per collective matched across ranks
        (:func:`~profview.analysis.distributed.collectives.collective_instances`)."""
        from ..analysis.distributed.collectives import collective_instances

        return collective_instances(self.collectives())

    def step_waits(self) -> pl.DataFrame:
        """Each rank's wait at matched collectives, step by step
        (:func:`~profview.analysis.distributed.ranks.step_waits`)."""
        from ..analysis.distributed.ranks import step_waits

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
        frame = (
            pl.concat(windows)
            if windows
            else pl.DataFrame(schema={"rank": pl.Int64, "step": pl.Int64, "start_us": pl.Float64, "end_us": pl.Float64})
        )
        return step_waits(frame, self.collectives())

    def collectives(self) -> pl.DataFrame:
        """The collectives view (see :mod:`profview.analysis.distributed.collectives`)."""
        return self._matched[0]

    def clock_offsets(self) -> dict[int, float]:
        """What was subtracted from each rank's timestamps (µs)."""
        return self._matched[1]

    @cached_property
    def _ranks_view(self) -> pl.DataFrame:
        from ..analysis.distributed.ranks import rank_table, stacked_rank_table

        if self.rank_frames is None or self.frame_keys is None:
            rows = [(r, s.steps, s.facts) for r, s in zip(self.ranks, self.summaries, strict=True)]
            table = rank_table(rows, self.collectives(), self.clock_offsets())
        else:
            facts = [(r, s.facts) for r, s in self._pairs()]
            steps = self._with_rank(self._stacked("steps"))  # every rank's steps in one frame
            table = stacked_rank_table(steps, facts, self.collectives(), self.clock_offsets())
        if self.processes is not None:  # which process each rank is (ranks numbered by pid)
            pids = dict(zip(self.ranks, self.processes.pids, strict=True))
            table = table.insert_column(1, table["rank"].replace_strict(pids, return_dtype=pl.Int64).alias("pid"))
        return table

    def ranks_view(self) -> pl.DataFrame:
        """The ranks view (see :mod:`profview.analysis.distributed.ranks`)."""
        return self._ranks_view

    def stragglers(self) -> list[int]:
        """The rank(s) the others wait for (empty when no collective was matched)."""
        return self.ranks_view().filter(pl.col("straggler"))["rank"].to_list()

    def steps(self) -> pl.DataFrame:
        """Every rank's steps view, with a ``rank`` column first."""
        if self.rank_frames is None or self.frame_keys is None:
            frames = [s.steps.select(pl.lit(r, dtype=pl.Int64).alias("rank"), pl.all()) for r, s in self._pairs()]
            return pl.concat(frames, how="diagonal_relaxed")
        stacked = self._stacked("steps")
        return self._with_rank(stacked).select("rank", *(c for c in stacked.columns if c != INDEX))

    def _with_rank(self, table: pl.DataFrame) -> pl.DataFrame:
        """``table`` (rows of held frames, with ``_index``) with each row's ``rank`` in place of its
        ``_index``, in rank order (each rank's rows in their own order)."""
        assert self.frame_keys is not None
        ranks = pl.DataFrame({INDEX: self.frame_keys, "rank": self.ranks}, schema={INDEX: pl.Int32, "rank": pl.Int64})
        joined = table.join(ranks, on=INDEX, how="inner", maintain_order="left")
        return joined.sort("rank", maintain_order=True).drop(INDEX)

    def kernels(self) -> pl.DataFrame:
        """Per kernel name: calls and total across ranks, the min/median/max of its per-rank
        totals (a rank without it counts 0) and the rank of the max."""
        return self._kernels_view

    @cached_property
    def _kernels_view(self) -> pl.DataFrame:
        """:meth:`kernels`, computed once (and saved with the job: a re-open reads it back)."""
        if self.rank_frames is None or self.frame_keys is None:
            frames = [
                s.kernels.select("name", "calls", "total_us").with_columns(rank=pl.lit(r, dtype=pl.Int64))
                for r, s in self._pairs()
            ]
            stacked = pl.concat(frames)
        else:  # the held groups, their names still encoded (each distinct name held once)
            stacked = self._with_rank(self.rank_frames().stacked("kernels", ("name", "calls", "total_us")))
        per_rank = stacked.group_by("name", "rank").agg(pl.col("calls").sum(), pl.col("total_us").sum())
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
            .with_columns(pl.col("name").cast(pl.String))
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
            "straggler_path": self.straggler_path,
            "rank_paths": self.rank_paths,
        }
        if name not in views:
            raise ProfviewError(None, f"a job has no {name!r} view: choose one of {', '.join(JOB_VIEWS)}")
        return views[name]()

    def straggler_path(self) -> pl.DataFrame:
        """The straggler's collectives that lie on its own critical path (:data:`STRAGGLER_PATH_COLUMNS`):
        each with the ranks that waited for it there and how long (from the collectives view)."""
        view = self.collectives()
        origin = min(
            (s.facts.get("span_start", 0.0) - self.clock_offsets().get(r, 0.0) for r, s in self._pairs()), default=0.0
        )
        keep = np.zeros(view.height, dtype=bool)
        ranks, view_starts = view["rank"].to_numpy(), view["start_us"].to_numpy()
        paths = self.paths(self.stragglers())  # the stragglers' critical paths alone (issue 32)
        for rank in self.stragglers():
            offset = self.clock_offsets().get(rank, 0.0)
            starts = np.sort(np.asarray(paths[rank].collectives, dtype=np.float64) - offset - origin)
            if not len(starts):
                continue
            # The view's start_us went through two roundings to the ns: match within 0.01 µs.
            at = np.clip(np.searchsorted(starts, view_starts), 1, len(starts)) - 1
            near = np.minimum(
                np.abs(starts[at] - view_starts), np.abs(starts[np.minimum(at + 1, len(starts) - 1)] - view_starts)
            )
            keep |= (ranks == rank) & (near <= 0.01)
        mine = view.filter(pl.Series(keep))
        others = (
            view.join(mine.select("collective", pl.col("rank").alias("straggler")), on="collective")
            .filter(pl.col("rank") != pl.col("straggler"))
            .group_by("collective")
            .agg(
                (pl.col("wait_us") > 0).sum().cast(pl.Int64).alias("waiting_ranks"),
                pl.col("wait_us").sum().round(3).alias("others_wait_us"),
                pl.col("wait_us").max().alias("max_wait_us"),
            )
        )
        frame = mine.join(others, on="collective", how="left").sort("others_wait_us", descending=True, nulls_last=True)
        return frame.select(STRAGGLER_PATH_COLUMNS)

    def paths(self, ranks: Sequence[int] | None = None) -> dict[int, RankPath]:
        """The critical paths of ``ranks`` (default: all), computed now by the job's workers for the
        ranks that have none yet (issue 32: opening a job computes none), then kept on their
        summaries (and in the rank store, for traces that are files of their own)."""
        wanted = list(self.ranks if ranks is None else ranks)
        todo = [r for r in wanted if self.summary(r).critical_path is None]
        if todo and self.processes is not None:  # each process read from the export, here
            from .rank_summary import profile_path

            for rank in todo:
                try:
                    computed = profile_path(self.load_rank(rank))
                except ProfviewError as exc:
                    computed = RankPath(problem=exc.problem)
                self.summary(rank).critical_path = computed
        elif todo:
            traces = [self.trace_path(r) for r in todo]
            extracted = [t != self.summary(r).path or self._is_extracted(t) for r, t in zip(todo, traces, strict=True)]
            cache = self.use_cache and not any(extracted)  # no entries keyed by a temporary copy
            found = map_ranks(rank_path_or_fail, traces, self.comm_pattern, cache, workers=self.workers, dask=self.dask)
            for rank, result in zip(todo, found, strict=True):
                kept = RankPath(problem=result.problem) if isinstance(result, RankFailure) else result
                self.summary(rank).critical_path = kept
        return {r: self.summary(r).critical_path or RankPath() for r in wanted}

    def _is_extracted(self, trace: str) -> bool:
        """Whether ``trace`` is a copy extracted from an archive (a temporary file)."""
        folders = [i.temp_dir for i in (self.inputs, self._extracted) if i is not None and i.temp_dir is not None]
        return any(os.path.abspath(trace).startswith(os.path.abspath(folder) + os.sep) for folder in folders)

    def rank_paths(self) -> pl.DataFrame:
        """Each rank's critical paths (:data:`~profview.analysis.distributed.ranks.RANK_PATH_COLUMNS`): the mean
        path per step and each bound kind's share, computed when asked for (issue 32)."""
        from ..analysis.distributed.ranks import rank_path_table

        paths = self.paths()
        return rank_path_table([(r, paths[r].facts) for r in self.ranks])

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
    strict: bool = False,
) -> Job:
    """Open the job ``args`` names (a directory, a glob, several traces or an archive).

    A trace that cannot be read is left out and named in :attr:`Job.notes` (``rank 3
    unreadable: …``); with ``strict`` it is an error instead.  Raises :class:`ProfviewError`
    (one line) for inputs that are no job: no readable trace, two traces of one rank, traces of
    jobs of different world sizes, implausible ranks.  A job opened before is read back from
    its saved summary (:mod:`profview.store.job_summaries`), an archive without extracting it.
    """
    from ..collector import resume_after_read

    resume_after_read()  # the command's start is over: a job's work collects as usual (profview.collector)
    with Paused() as pause:  # a re-open's per-rank documents and summaries: many small acyclic objects
        return _open_job(args, workers, dask, comm_pattern, use_cache, progress, strict, pause)


def _open_job(
    args: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    workers: int | None,
    dask: str | None,
    comm_pattern: str | None,
    use_cache: bool,
    progress: Progress | None,
    strict: bool,
    pause: Paused,
) -> Job:
    """:func:`open_job`'s work; ``pause`` is ended unless the job is read back from its saved summary."""
    from ..store import job_summaries as job_store

    names = [os.fspath(args)] if isinstance(args, (str, os.PathLike)) else [os.fspath(a) for a in args]
    listing = list_inputs(names)
    if comm_pattern is not None:
        from ..profiles.loading import check_pattern

        check_pattern(listing.source, comm_pattern)
    settings = {"comm_pattern": comm_pattern} if comm_pattern else {}
    files = [*listing.files, *(p for _where, found in listing.found for p in found)]
    job_key = job_store.job_key(files, listing.archives, settings) if use_cache else None
    saved = job_store.load(job_key) if job_key else None
    if saved is not None:
        docs, frames, doc = saved
        summaries: list[RankSummary] = [
            SavedRankSummary(info, partial(frames.frame, index)) for index, info in enumerate(docs)
        ]
        held: Callable[[], RankFrames] = frames.held
        keys = list(range(len(summaries)))
        failures = [(str(name), str(problem)) for name, problem in doc["failures"]]
        inputs = JobInputs(listing.source, [s.path for s in summaries], notes=[str(n) for n in doc["notes"]])
        inputs.archives = [os.path.abspath(a) for a in listing.archives]
        if progress:
            progress(len(summaries), len(summaries), 0.0)
    else:
        pause.end()  # the ranks are summarised: a long run that collects as usual
        inputs = find_inputs(listing)
    run_notes: list[str] = []  # this run's (fewer workers than asked): not saved with the job
    try:
        if saved is None:
            # Traces extracted from an archive live in a temporary folder: only the whole job is saved.
            cache = use_cache and inputs.temp_dir is None
            opened = RankFrames()
            results = _summaries(inputs.paths, comm_pattern, cache, workers, dask, progress, run_notes, opened)
            summaries = [r for r in results if isinstance(r, RankSummary)]
            keys = [index for index, r in enumerate(results) if isinstance(r, RankSummary)]
            held = partial(_itself, opened)
            failures = list(inputs.unreadable)
            failures += [(inputs.label(r.path), r.problem) for r in results if isinstance(r, RankFailure)]
            for summary in summaries:
                summary.path = inputs.label(summary.path)
        if failures and (strict or not summaries):
            name, problem = failures[0]
            more = f" (and {len(failures) - 1} more unreadable)" if len(failures) > 1 else ""
            raise ProfviewError(name, f"{problem}{more}" + ("; --strict stops at an unreadable rank" if strict else ""))
        found = [(s.path, s.rank if s.rank is not None else rank_from_name(s.path), s.world_size) for s in summaries]
        unreadable = [rank for name, _problem in failures if (rank := rank_from_name(name)) is not None]
        found, unreadable, placed = place_ranks(found, unreadable, [name for name, _problem in failures])
        ranks, world, notes = check_ranks(found, unreadable)
        notes += placed_note(found, ranks, placed)
    except BaseException:
        inputs.cleanup()
        raise
    order = sorted(range(len(ranks)), key=ranks.__getitem__)
    job = Job(
        source=inputs.source,
        ranks=[ranks[i] for i in order],
        summaries=[summaries[i] for i in order],
        world_size=world,
        inputs=inputs,
        notes=notes + _failure_notes(failures, placed) + inputs.notes + run_notes,
        comm_pattern=comm_pattern,
        failures=failures,
        workers=workers,
        dask=dask,
        use_cache=use_cache,
        rank_frames=held,
        frame_keys=[keys[i] for i in order],
    )
    if saved is not None:
        _restore_views(job, saved[2])
    elif job_key and not any("memory" in problem for _name, problem in failures):
        views = _computed_views(job)
        job_store.save(job_key, [_saved_info(s) for s in summaries], held(), keys, failures, inputs.notes, views)
    return job


def place_ranks(
    found: list[tuple[str, int | None, int | None]], unreadable: list[int], failed: list[str]
) -> tuple[list[tuple[str, int | None, int | None]], list[int], dict[str, str]]:
    """Where no file names a rank (in its name or its contents: Nsight Systems exports and rocprofv3
    documents never do), rank *i* is the *i*-th file by name, the unreadable ones counted in their
    places, so that a file left out leaves its rank missing instead of moving the ranks after it.
    Returns ``found`` and ``unreadable`` with those ranks given, and the files so numbered, in rank
    order (path: ``""``, or ``" (unreadable)"``).  Unchanged, with no file, when a readable file
    names a rank or a world size (``distributedInfo``, a name) or an unreadable one's name does:
    then :func:`~profview.jobs.inputs.check_ranks` gives the files without one the ranks left."""
    if not found or any(rank is not None or size is not None for _path, rank, size in found):
        return found, unreadable, {}
    if any(rank_from_name(name) is not None for name in failed):
        return found, unreadable, {}
    files = sorted([(os.path.basename(p), 0, p) for p, _r, _s in found] + [(os.path.basename(n), 1, n) for n in failed])
    position = {(p, bad): place for place, (_base, bad, p) in enumerate(files)}
    given: list[tuple[str, int | None, int | None]] = [(path, position[(path, 0)], None) for path, _r, _s in found]
    return given, unreadable + [position[(name, 1)] for name in failed], {
        path: " (unreadable)" if bad else "" for _base, bad, path in files
    }


#: Files named one by one in the note that says how ranks were numbered, at most.
SHOWN_PLACED = 10


def placed_note(
    found: Sequence[tuple[str, int | None, int | None]], ranks: list[int], placed: dict[str, str]
) -> list[str]:
    """The note that says which ranks were numbered by file-name order (no rank in the file's name or
    contents), and which file each is: ``ranks numbered by file name (…): rank 0 = a.sqlite, …``;
    none when every rank was named."""
    if placed:
        pairs = [(place, f"{os.path.basename(path)}{why}") for place, (path, why) in enumerate(placed.items())]
    else:
        pairs = [(rank, os.path.basename(path)) for (path, named, _size), rank in zip(found, ranks, strict=True)
                 if named is None]
    if not pairs:
        return []
    pairs.sort()
    shown = ", ".join(f"rank {rank} = {name}" for rank, name in pairs[:SHOWN_PLACED])
    more = f", … ({len(pairs) - SHOWN_PLACED} more)" if len(pairs) > SHOWN_PLACED else ""
    return [f"ranks numbered by file name order (no rank in the files' names or contents): {shown}{more}"]


def _computed_views(job: Job) -> dict[str, object] | None:
    """The job's collectives, ranks and kernels views (what ``summary`` shows), to be saved with it:
    a re-open of 1,024 ranks then reads them instead of matching every rank's calls again, and
    reads no rank's frames at all."""
    try:
        views = {"collectives": job.collectives(), "ranks": job.ranks_view(), "kernels": job.kernels()}
        return views | {"offsets": job.clock_offsets()}
    except (pl.exceptions.PolarsError, ValueError, KeyError):  # the views fail later, where they are asked for
        return None


def _restore_views(job: Job, doc: dict) -> None:
    views = doc.get("views")
    if isinstance(views, dict):
        offsets = {int(rank): float(value) for rank, value in views["offsets"].items()}
        job.__dict__["_matched"] = (views["collectives"], offsets)  # the cached properties, filled
        job.__dict__["_ranks_view"] = views["ranks"]
        job.__dict__["_kernels_view"] = views["kernels"]


#: Unreadable traces named one by one in the notes, at most.
SHOWN_FAILURES = 10


def _failure_notes(failures: list[tuple[str, str]], placed: dict[str, str]) -> list[str]:
    """One note per unreadable trace (its rank, where its name or its place says it: :func:`place_ranks`)."""
    places = {path: place for place, path in enumerate(placed)}
    notes = []
    for name, problem in failures[:SHOWN_FAILURES]:
        rank = rank_from_name(name) if name not in places else places[name]
        who = f"rank {rank}" if rank is not None else os.path.basename(name)
        notes.append(f"{who} unreadable: {os.path.basename(name)}: {problem}")
    if len(failures) > SHOWN_FAILURES:
        notes.append(f"… and {len(failures) - SHOWN_FAILURES} more unreadable traces")
    return notes


def _saved_info(summary: RankSummary) -> dict[str, object]:
    return {
        "path": summary.path,
        "rank": summary.rank,
        "world_size": summary.world_size,
        "backend": summary.backend,
        "facts": summary.facts,
        "warnings": summary.warnings,
    }


def _frames(summary: RankSummary) -> dict[str, pl.DataFrame]:
    return {"steps": summary.steps, "kernels": summary.kernels, "calls": summary.calls}


def _itself(held: RankFrames) -> RankFrames:
    return held


def _held(held: RankFrames, index: int, result: RankSummary | RankFailure) -> RankSummary | RankFailure:
    """What a job keeps of a rank's summary: its frames handed to ``held`` (concatenated with the
    other ranks'), the summary reading them from there."""
    if not isinstance(result, RankSummary):
        return result
    held.add(index, _frames(result))
    return SavedRankSummary(_saved_info(result), partial(held.frame, index))


def _summaries(
    paths: list[str],
    comm_pattern: str | None,
    cache: bool,
    workers: int | None,
    dask: str | None,
    progress: Progress | None,
    notes: list[str] | None,
    held: RankFrames,
) -> list[RankSummary | RankFailure]:
    """Each path's summary (or why it has none): read from the cache here when saved, else
    computed by the workers; each summary's frames are handed to ``held`` as it arrives, under
    the path's position."""
    found: dict[int, RankSummary | RankFailure] = {}
    if cache:
        for index, path in enumerate(paths):
            summary = cached_summary(path, comm_pattern)
            if summary is not None:
                found[index] = _held(held, index, summary)
    todo = [i for i in range(len(paths)) if i not in found]
    done = len(found)

    def advance(finished: int, _total: int, elapsed: float) -> None:
        if progress:
            progress(done + finished, len(paths), elapsed)

    if found and progress:
        progress(done, len(paths), 0.0)
    computed = map_ranks(
        summarise_or_fail,
        [paths[i] for i in todo],
        comm_pattern,
        cache,
        workers=workers,
        dask=dask,
        progress=advance,
        notes=notes,
        keep=lambda position, result: _held(held, todo[position], result),
    )
    found.update(zip(todo, computed, strict=True))
    if cache and todo:
        from ..store import rank_summaries as rank_store

        rank_store.prune()
    return [found[i] for i in range(len(paths))]


def _span(ranks: list[int]) -> str:
    return f"{ranks[0]}–{ranks[-1]}" if ranks == list(range(ranks[0], ranks[-1] + 1)) else ", ".join(map(str, ranks))
