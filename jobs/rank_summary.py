"""One rank's summary: what a worker computes from one trace and sends back (never the events).

:func:`summarise_rank` loads a trace (through the cache, like a single trace), and returns its
steps and kernel views, its collective calls (:func:`profview.analysis.distributed.collectives.rank_collectives`)
and a few figures per step window (communication, its overlap with compute, exposed
communication): what the job's ranks, steps, kernels and collectives views show, nothing more
(issue 32).  The whole summary is saved in :mod:`profview.store.rank_summaries`, so re-opening a
job reads summaries only.

:func:`rank_path` is the rank's critical paths (issue 26), computed only when a view asks for them
(``rank_paths``, ``straggler_path``) and kept in the same store once computed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import polars as pl

from ..errors import ProfviewError

T = TypeVar("T")


@dataclass
class RankSummary:
    """One rank's results: ``rank``/``world_size``/``backend`` from ``distributedInfo`` (None if
    absent); ``steps``/``kernels``: the usual views; ``calls``: its collective calls (absolute µs
    of its own clock); ``facts``: ``span_start``, ``comm_us``, ``gpu_comm_us``, ``overlap_us``,
    ``exposed_us`` (totals over its steps); ``critical_path``: its critical paths once a view
    asked for them (:func:`rank_path`)."""

    path: str
    rank: int | None
    world_size: int | None
    backend: str | None
    steps: pl.DataFrame
    kernels: pl.DataFrame
    calls: pl.DataFrame
    facts: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    critical_path: RankPath | None = None


class SavedRankSummary(RankSummary):
    """A rank whose frames are held elsewhere (:class:`~profview.store.rank_frames.RankFrames`: a
    job's ranks concatenated, as opened or as read back from a saved job): its document's fields
    at once, its ``steps``, ``kernels`` and ``calls`` frames from ``frame(kind)`` each time one is
    asked for, so that a job holds no frame of its own per rank and a re-open showing only the
    job's saved views reads none."""

    def __init__(self, info: dict[str, Any], frame: Callable[[str], pl.DataFrame]) -> None:
        # The dataclass's __init__ would set the three frames; these come from ``frame`` instead.
        self._read_frame = frame
        self._frames: dict[str, pl.DataFrame] = {}  # frames set on this summary itself
        self.path = info["path"]
        self.rank = info.get("rank")
        self.world_size = info.get("world_size")
        self.backend = info.get("backend")
        self.facts = dict(info["facts"])
        self.warnings = list(info["warnings"])
        self.critical_path = None

    def _frame(self, name: str) -> pl.DataFrame:
        return self._frames[name] if name in self._frames else self._read_frame(name)

    @property  # type: ignore[override]
    def steps(self) -> pl.DataFrame:
        return self._frame("steps")

    @steps.setter
    def steps(self, value: pl.DataFrame) -> None:
        self._frames["steps"] = value

    @property  # type: ignore[override]
    def kernels(self) -> pl.DataFrame:
        return self._frame("kernels")

    @kernels.setter
    def kernels(self, value: pl.DataFrame) -> None:
        self._frames["kernels"] = value

    @property  # type: ignore[override]
    def calls(self) -> pl.DataFrame:
        return self._frame("calls")

    @calls.setter
    def calls(self, value: pl.DataFrame) -> None:
        self._frames["calls"] = value


@dataclass
class RankPath:
    """One rank's critical paths summed over its steps (issue 26): ``facts`` ``cp_steps``,
    ``cp_path_us`` and ``cp_<bound>_us`` per bound kind (empty: the trace has none, ``problem``
    says why); ``collectives``: the starts (µs, its own clock) of the collective kernels on them."""

    facts: dict[str, float] = field(default_factory=dict)
    collectives: list[float] = field(default_factory=list)
    problem: str | None = None


@dataclass
class RankFailure:
    """A trace that could not be summarised: the job opens without it (unless ``--strict``)."""

    path: str
    problem: str


def summarise_or_fail(
    path: str, comm_pattern: str | None = None, use_cache: bool = True
) -> RankSummary | RankFailure:
    """:func:`summarise_rank`, with a bad trace's one-line error returned instead of raised, so
    that one unreadable rank does not stop the others (runs in a worker process)."""
    return _or_failure(path, lambda: summarise_rank(path, comm_pattern, use_cache))


def _or_failure(path: str, compute: Callable[[], T]) -> T | RankFailure:
    """``compute()``, or the one line that says why ``path`` could not be read."""
    try:
        return compute()
    except ProfviewError as exc:
        return RankFailure(path, exc.problem)
    except MemoryError:
        return RankFailure(path, "out of memory while reading it")


def summarise_rank(path: str, comm_pattern: str | None = None, use_cache: bool = True) -> RankSummary:
    """Load ``path`` and summarise it (runs in a worker process; see the module doc).

    With ``use_cache``, a trace already in the trace cache is read from it (as a single trace
    would be), and the summary is saved in :mod:`profview.store.rank_summaries`; a job's traces are not
    added to the trace cache (a 1,000-rank job would flush it).
    """
    from ..parsers.schema import EVENT_SCHEMA
    from ..profiles.loading import load
    from ..store import rank_summaries as rank_store
    from ..store import trace_cache as cache

    cached = use_cache and cache.lookup(path, EVENT_SCHEMA) is not None
    profile = load(path, use_cache=cached, comm_pattern=comm_pattern)
    if not profile.is_trace:
        raise ProfviewError(path, f"a {profile.format} is not a rank trace: a job needs Chrome traces")
    info = profile.metadata.get("distributedInfo") or {}
    info = info if isinstance(info, dict) else {}
    summary = summarise_profile(profile, path, _int(info.get("rank")), _int(info.get("world_size")) or None)
    summary.backend = info.get("backend") if isinstance(info.get("backend"), str) else None
    summary.warnings += several_processes(profile.metadata, path)
    if use_cache:
        saved: dict[str, object] = {"rank": summary.rank, "world_size": summary.world_size, "backend": summary.backend}
        saved |= {"warnings": summary.warnings, "facts": summary.facts}
        frames = {"steps": summary.steps, "kernels": summary.kernels, "calls": summary.calls}
        rank_store.save(path, profile.settings, frames, saved)
    return summary


def several_processes(metadata: dict[str, Any], path: str) -> list[str]:
    """For an Nsight Systems export read as one rank that holds several processes that launched
    kernels, the warning that says so: the rank sums them (``--as-job`` makes each a rank)."""
    nsys = metadata.get("nsys")
    processes = nsys.get("processes") if isinstance(nsys, dict) else None
    if not isinstance(processes, list):
        return []
    pids = [p.get("pid") for p in processes if isinstance(p, dict) and (p.get("kernels") or 0) > 0]
    if len(pids) < 2 or None in pids:
        return []
    return [
        f"{len(pids)} processes of this export launched kernels (pids {', '.join(map(str, pids))}): read as one "
        f"rank, their work together; `profview {shlex.quote(path)} --as-job` makes each process a rank"
    ]


def summarise_profile(profile: Any, path: str, rank: int | None, world_size: int | None) -> RankSummary:
    """The summary of a loaded rank (its steps and kernel views, collective calls and facts),
    named ``path``, as rank ``rank`` of ``world_size`` (None: unknown); nothing is saved."""
    steps, kernels = profile.steps(), profile.kernels()
    calls, facts = _compute(profile, steps)
    return RankSummary(
        path=path,
        rank=rank,
        world_size=world_size,
        backend=None,
        steps=steps,
        kernels=kernels,
        calls=calls,
        facts=facts,
        warnings=list(profile.warnings),
    )


def cached_summary(path: str, comm_pattern: str | None = None) -> RankSummary | None:
    """The summary of ``path`` saved by an earlier open (:mod:`profview.store.rank_summaries`), or None.

    Cheap: the parent process reads these itself before starting any worker.
    """
    from ..store import rank_summaries as rank_store

    found = rank_store.load(path, {"comm_pattern": comm_pattern} if comm_pattern else {})
    if found is None:
        return None
    frames, info = found
    facts = info.get("facts")
    if not rank_store.valid_info(info):  # damaged or forged: replaced by the next open
        rank_store.discard(path, {"comm_pattern": comm_pattern} if comm_pattern else {})
        return None
    return RankSummary(
        path=path,
        rank=_int(info.get("rank")),
        world_size=_int(info.get("world_size")) or None,  # 0 processes: no size
        backend=info.get("backend") if isinstance(info.get("backend"), str) else None,
        steps=frames["steps"],
        kernels=frames["kernels"],
        calls=frames["calls"],
        facts=facts if isinstance(facts, dict) else {},
        warnings=[str(w) for w in info.get("warnings") or []],
    )


def rank_path(path: str, comm_pattern: str | None = None, use_cache: bool = True) -> RankPath:
    """The critical paths of the rank trace ``path`` (runs in a worker process): kept in
    :mod:`profview.store.rank_summaries` (with ``use_cache``) once computed, read from there after."""
    from ..parsers.schema import EVENT_SCHEMA
    from ..profiles.loading import load
    from ..store import rank_summaries as rank_store
    from ..store import trace_cache as cache

    settings = {"comm_pattern": comm_pattern} if comm_pattern else {}
    found = rank_store.load_path(path, settings) if use_cache else None
    if found is not None:
        return RankPath(**found)
    cached = use_cache and cache.lookup(path, EVENT_SCHEMA) is not None
    profile = load(path, use_cache=cached, comm_pattern=comm_pattern)
    computed = profile_path(profile)
    if use_cache:
        saved = {"facts": computed.facts, "collectives": computed.collectives, "problem": computed.problem}
        rank_store.save_path(path, settings, saved)
    return computed


def profile_path(profile: Any) -> RankPath:
    """The critical paths of a loaded rank (:func:`rank_path` without the store)."""
    return RankPath(*_critical_path_facts(profile))


def rank_path_or_fail(path: str, comm_pattern: str | None = None, use_cache: bool = True) -> RankPath | RankFailure:
    """:func:`rank_path`, with a bad trace's one-line error returned instead of raised."""
    return _or_failure(path, lambda: rank_path(path, comm_pattern, use_cache))


#: Integers above int64 are missing values (as for ids; docs/robustness.md), on both readers.
_INT64_MAX = 2**63 - 1


def _int(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT64_MAX
    return value if ok else None


def _compute(profile: Any, steps: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, float]]:
    """The collective calls and the per-step communication figures of a loaded trace."""
    import numpy as np

    from ..analysis.distributed.collectives import ARG_FIELDS, rank_collectives
    from ..analysis.trace import intervals as iv
    from ..analysis.trace.communication import classify_communication, host_collective_intervals
    from ..analysis.trace.events import COMPLETE, GPU_COLUMNS
    from ..frames import GPU_KINDS, HOST_OP_KINDS

    events: pl.DataFrame = profile.events
    backend = (profile.metadata.get("distributedInfo") or {}).get("backend")
    gpu = (
        events.filter(pl.col("kind").is_in(GPU_KINDS) & COMPLETE)
        .select(*GPU_COLUMNS, *(c for c in ARG_FIELDS if c not in GPU_COLUMNS))
        .with_columns(pl.col("dur").clip(lower_bound=0.0))
        .with_columns((pl.col("ts") + pl.col("dur")).alias("end"))
    )
    comm = classify_communication(gpu, profile.comm_pattern, backend if isinstance(backend, str) else None)
    calls = rank_collectives(events, comm)
    kernels = comm.filter(pl.col("kind") == "kernel")
    is_comm = pl.col("backend").is_not_null()
    gpu_comm = iv.union(*_pair(kernels.filter(is_comm)))
    compute = iv.union(*_pair(kernels.filter(~is_comm)))
    host = events.filter(pl.col("kind").is_in(HOST_OP_KINDS) & COMPLETE).select(
        "name", "ts", (pl.col("ts") + pl.col("dur").clip(lower_bound=0.0)).alias("end"), pl.lit(True).alias("is_op")
    )
    host_starts, host_ends = host_collective_intervals(host)
    all_comm = iv.union(np.concatenate([gpu_comm[0], host_starts]), np.concatenate([gpu_comm[1], host_ends]))
    span_start = float(profile.span_start)
    totals = {"comm_us": 0.0, "gpu_comm_us": 0.0, "overlap_us": 0.0, "exposed_us": 0.0}
    for start, duration in zip(steps["start_us"].to_list(), steps["duration_us"].to_list(), strict=True):
        lo = span_start + start
        hi = lo + duration
        step_gpu_comm = iv.clip(gpu_comm, lo, hi)
        step_comm = iv.clip(all_comm, lo, hi)
        step_compute = iv.clip(compute, lo, hi)
        totals["gpu_comm_us"] += iv.length(step_gpu_comm)
        totals["overlap_us"] += iv.length(iv.intersection(step_gpu_comm, step_compute))
        totals["comm_us"] += iv.length(step_comm)
        totals["exposed_us"] += iv.length(step_comm) - iv.length(iv.intersection(step_comm, step_compute))
    facts = {k: round(v, 3) for k, v in totals.items()} | {"span_start": span_start}
    return calls, facts


def _critical_path_facts(profile: Any) -> tuple[dict[str, float], list[float], str | None]:
    """The rank's critical paths summed over its steps — ``cp_steps``, ``cp_path_us``
    and ``cp_<bound>_us`` per bound kind — and the starts of the collective kernels on them
    (nothing, and why, when the trace has no path, e.g. no runtime events)."""
    from ..analysis.critical_path.frames import path_event_rows

    try:
        paths = profile.step_paths()
        frame = profile.critical_path()
    except ProfviewError as exc:
        return {}, [], exc.problem
    except ValueError as exc:
        return {}, [], str(exc)
    per_bound = frame.group_by("bound_by").agg(pl.col("duration_us").sum())
    facts = {f"cp_{bound}_us": round(float(value), 3) for bound, value in per_bound.iter_rows()}
    steps = frame.unique("step")
    facts |= {"cp_steps": float(steps.height), "cp_path_us": round(float(steps["path_us"].sum()), 3)}
    on_gpu = path_event_rows(paths).filter(pl.col("gpu"))["row"].to_numpy()
    comm = profile.model_communication().is_not_null().to_numpy()
    starts = profile.model.gpu["ts"].to_numpy()[on_gpu[comm[on_gpu]]] if len(on_gpu) else []
    return facts, [float(t) for t in starts], None


def _pair(frame: pl.DataFrame) -> tuple[Any, Any]:
    return frame["ts"].to_numpy(), frame["end"].to_numpy()
