"""The tables a query reads: every view a trace or a job exports, by its export name, each with a
``trace`` column (the input as named) and, for a job's per-rank tables, ``rank``.

The tables are a lazy mapping (:class:`Tables`): a table is computed, or read from the trace
cache, only when it is asked for, so a query pays only for the tables it names.  Every table is the
frame ``profview export --view NAME`` writes (:func:`profview.profiles.views.view_frame`, or
:meth:`profview.jobs.job.Job.view`), so a query and an export never disagree; ``events`` is the
parsed events frame itself, every event the trace holds (none dropped for overlapping another).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import polars as pl

from ..errors import ProfviewError
from ..sanitize import utf8_text

if TYPE_CHECKING:
    from ..jobs.job import Job
    from ..profiles.snapshot_profile import SnapshotProfile
    from ..profiles.trace_profile import Profile

#: A trace's tables, by export name, and what one row is.  ``launches`` is left out: it needs an
#: operator or kernel to drill into (``profview export --view launches --op NAME``).
TRACE_TABLES: dict[str, str] = {
    "events": "one per trace event as parsed (every phase: X, i, s/f, M), none dropped; with its step and iteration",
    "kernels": "one per GPU kernel name (kernels only: memcpy and memset are in events)",
    "ops": "one per operator name and kind (host and device time, self and total)",
    "steps": "one per ProfilerStep (a trace without steps: one row, step -1, the whole trace)",
    "iterations": "one per serving or decode iteration (else per step)",
    "phases": "one per iteration phase (prefill, decode ...)",
    "graphs": "one per CUDA/HIP graph replayed",
    "graph_nodes": "one per graph node replayed",
    "graph_ops": "one per operator with replays attributed through a capture",
    "efficiency": "one per operator and input shapes: FLOPs, bytes, TFLOP/s (the perf model)",
    "categories": "one per kernel category (gemm, attention, elementwise ...)",
    "modules": "one per nn.Module path: its GPU time",
    "sources": "one per Python source line: its GPU time",
    "memory": "one per allocator event (profile_memory traces)",
    "memory_ops": "one per operator: memory allocated and freed",
    "memory_peaks": "one per device: the peak and what held it",
    "gpu_idle": "one per step: GPU idle, and compute/communication overlap",
    "gaps": "one per GPU idle gap, with what the host did in it",
    "critical_path": "one per step: its critical path and what bounds it",
    "critical_path_events": "one per event on a step's critical path",
    "critical_path_names": "one per name: its time on the critical path",
    "launch_stats": "one per GPU event launched by one call: launch delay, call and GPU durations (HTA's)",
    "launch_names": "one per GPU event name: its launch delays' distribution, short kernels, long delays",
    "queue_length": "one per stream: launches outstanding, min/mean/max at its changes (HTA's)",
    "queue_series": "one per change of a stream's queue length (+1 at a launch call, -1 at a GPU start)",
    "tensor_cores": "one per GEMM or convolution kernel name: Tensor Cores yes/no/unknown from its name",
    "meta": "one per trace: the origin of every table's times (trace_origin_us, absolute as written)",
}
#: A job's own tables (``profview export JOB --view NAME``), by export name.
JOB_TABLES: dict[str, str] = {
    "ranks": "one per rank: steps, waits, the straggler",
    "collectives": "one per collective call per rank, matched across ranks: wait, skew",
    "steps": "one per rank and step",
    "kernels": "one per kernel name across ranks: calls, total, min/median/max per rank",
    "straggler_path": "one per straggler collective on its critical path",
    "rank_paths": "one per rank: its mean critical path per step",
    "rank_kernels": "one per rank and kernel name: each rank's own kernel table",
}

#: Units by column name: the exact names first, then the endings (what ``--tables`` prints).
UNIT_NAMES: dict[str, str] = {
    "ts": "µs", "dur": "µs", "trace_origin_us": "µs", "trace_end_us": "µs",
    "bytes": "bytes", "shared_mem": "bytes", "occupancy": "%", "pct": "%",
    "flops": "FLOP", "kernel_flop": "FLOP", "kernel_num_gb": "GB", "mem_bytes": "bytes", "mem_allocated": "bytes",
    "mem_reserved": "bytes", "gflops": "GFLOP per call", "kineto_gflops": "GFLOP per call",
    "data_mb": "MiB per call", "model_tflop": "TFLOP", "tb_s": "TB/s", "pct_of_roofline": "%",
    "flops_per_byte": "FLOP/byte", "gpu_us_per_token": "µs", "kv_us_per_1k_context": "µs",
}
UNIT_ENDINGS: tuple[tuple[str, str], ...] = (
    ("_us", "µs"), ("_ms", "ms"), ("_bytes", "bytes"), ("_pct", "%"), ("_tflops", "TFLOP/s"), ("_tb_s", "TB/s"),
    ("_gb_s", "GB/s"), ("_mb", "MB"),
)
#: Units by how a column's name starts (``tflops_s_min``: TFLOP/s; ``us_median``: µs).
UNIT_STARTS: tuple[tuple[str, str], ...] = (("tflops_s", "TFLOP/s"), ("us_", "µs"))


def unit_of(column: str) -> str:
    """The unit a column's name says (``total_us``: µs), or ``""`` for a count, a name or a flag."""
    if column in UNIT_NAMES:
        return UNIT_NAMES[column]
    found = next((unit for ending, unit in UNIT_ENDINGS if column.endswith(ending)), "")
    return found or next((unit for start, unit in UNIT_STARTS if column.startswith(start)), "")


class Tables(Mapping[str, pl.DataFrame]):
    """Tables by name, each built on first use and kept: a query computes only what it names.

    ``about``: what one row of each table is (``--tables``)."""

    def __init__(self, builders: Mapping[str, Callable[[], pl.DataFrame]], about: Mapping[str, str]) -> None:
        self._builders = dict(builders)
        self._built: dict[str, pl.DataFrame] = {}
        self.about = dict(about)

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self._built:
            if name not in self._builders:
                raise KeyError(name)
            self._built[name] = self._builders[name]()
        return self._built[name]

    def __contains__(self, name: object) -> bool:  # Mapping's own would build the table to know
        return name in self._builders

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)

    def built(self) -> list[str]:
        """The tables built so far (a query's cost: what it read)."""
        return list(self._built)


def _labelled(frame: pl.DataFrame, trace: str, rank: int | None = None) -> pl.DataFrame:
    """``frame`` with ``trace`` first (and ``rank`` after it, where given and not there already)."""
    front = [pl.lit(utf8_text(trace), dtype=pl.String).alias("trace")]  # a file name's odd bytes as \xNN
    if rank is not None and "rank" not in frame.columns:
        front.append(pl.lit(rank, dtype=pl.Int64).alias("rank"))
    return frame.select(*front, pl.all().exclude("trace"))


#: What the ``meta`` table says of the clock (docs/query.md, "One clock").
CLOCK = (
    "every *_us time of a table (start_us, end_us, ts_us) is µs from trace_origin_us; events.ts is "
    "absolute as written, events.start_us = ts - trace_origin_us"
)


def _meta(profile: Profile) -> pl.DataFrame:
    """One row: the trace's origin and end (absolute µs, as its events are written), its span,
    and what the clock of each table is."""
    if not profile.is_trace:
        raise ProfviewError(profile.path, f"a {profile.format} has no timeline (only its tables)")
    origin = float(profile.span_start)
    end = float(profile.model.span_end)
    return pl.DataFrame(
        {"trace_origin_us": [origin], "trace_end_us": [end], "span_us": [end - origin], "clock": [CLOCK]},
        schema={"trace_origin_us": pl.Float64, "trace_end_us": pl.Float64, "span_us": pl.Float64, "clock": pl.String},
    )


def _events(profile: Profile) -> pl.DataFrame:
    """The events frame with ``start_us`` (µs from the trace's origin, the clock of every other
    table), ``step`` and ``iteration`` (:mod:`profview.analysis.tables.event_scope`) after ``dur``."""
    if profile.events is None:
        raise ProfviewError(profile.path, f"a {profile.format} has no trace events (only its tables)")
    from ..analysis.tables.event_scope import event_iterations, event_steps
    from ..profiles.iteration_views import ROUNDING_US

    events, model = profile.events, profile.model
    try:
        iterations = profile.iterations()
    except ProfviewError:  # no iterations: every event's is null
        iterations = pl.DataFrame()
    added = [
        (pl.col("ts").cast(pl.Float64) - float(profile.span_start)).alias("start_us"),
        event_steps(events, model),
        event_iterations(events, model, iterations, ROUNDING_US),
    ]
    framed = events.with_columns(added)
    at = framed.columns.index("dur") + 1 if "dur" in framed.columns else len(events.columns)
    rest = [c for c in events.columns]
    order = [*rest[:at], "start_us", "step", "iteration", *rest[at:]]
    return framed.select(order)


def _trace_view(profile: Profile, name: str) -> pl.DataFrame:
    """The frame ``profview export --view NAME`` writes (``events``: the events frame, with its
    step, iteration and time from the origin; ``meta``: the origin)."""
    if name == "events":
        return _events(profile)
    if name == "meta":
        return _meta(profile)
    from ..profiles.views import view_frame

    return view_frame(profile, name)


def trace_tables(profile: Profile, label: str | None = None) -> Tables:
    """Every table of one trace (:data:`TRACE_TABLES`), built when asked for, each with ``trace``
    (``label``, else the profile's path) first.  A table the trace cannot give (no memory
    profile, no graphs) raises :class:`ProfviewError` with the reason when a query names it."""
    trace = label if label is not None else profile.path

    def build(name: str) -> Callable[[], pl.DataFrame]:
        return lambda: _labelled(_trace_view(profile, name), trace)

    return Tables({name: build(name) for name in TRACE_TABLES}, TRACE_TABLES)


def snapshot_tables(profile: SnapshotProfile, label: str | None = None) -> Tables:
    """Every table of one memory snapshot (its views by export name, :data:`SNAPSHOT_VIEWS
    <profview.profiles.snapshot_profile.SNAPSHOT_VIEWS>`), built when asked for, each with ``trace``
    (``label``, else the snapshot's path) first."""
    from ..profiles.snapshot_profile import SNAPSHOT_VIEWS

    trace = label if label is not None else profile.path

    def build(name: str) -> Callable[[], pl.DataFrame]:
        return lambda: _labelled(profile.view(name), trace)

    return Tables({name: build(name) for name in SNAPSHOT_VIEWS}, SNAPSHOT_VIEWS)


def snapshot_job_tables(paths: list[str], label: str) -> Tables:
    """The table of a directory of per-rank memory snapshots: ``ranks`` (:data:`SNAPSHOT_JOB_VIEWS
    <profview.jobs.snapshot_job.SNAPSHOT_JOB_VIEWS>`, as ``export DIR`` writes it), with ``trace``
    (``label``) first; the snapshots are read when a query names it."""
    from ..jobs.snapshot_job import SNAPSHOT_JOB_VIEWS, rank_rows, ranks_frame

    return Tables({"ranks": lambda: _labelled(ranks_frame(rank_rows(paths)), label)}, SNAPSHOT_JOB_VIEWS)


def job_tables(job: Job, label: str | None = None, use_cache: bool = True) -> Tables:
    """Every table of a job: its own (:data:`JOB_TABLES`, as ``export JOB --view NAME`` writes
    them) and each rank's trace tables stacked, with ``rank`` (every :data:`TRACE_TABLES` name a
    job view does not take), each with ``trace`` (``label``, else the job's source) first.  A
    rank's trace is opened only for a query that names one of its tables."""
    trace = label if label is not None else job.source
    profiles: dict[int, Profile] = {}

    def rank_profile(rank: int) -> Profile:
        if rank not in profiles:
            # A copy extracted from an archive is a temporary file: no cache entry is keyed by it.
            profiles[rank] = job.load_rank(rank, use_cache=use_cache)
        return profiles[rank]

    def per_rank(name: str) -> Callable[[], pl.DataFrame]:
        view = "kernels" if name == "rank_kernels" else name
        return lambda: pl.concat(
            [_labelled(_trace_view(rank_profile(r), view), trace, r) for r in job.ranks], how="diagonal_relaxed"
        )

    def own(name: str) -> Callable[[], pl.DataFrame]:
        return lambda: _labelled(job.view(name), trace)

    builders: dict[str, Callable[[], pl.DataFrame]] = {n: own(n) for n in JOB_TABLES if n != "rank_kernels"}
    builders["rank_kernels"] = per_rank("rank_kernels")
    builders |= {n: per_rank(n) for n in TRACE_TABLES if n not in builders}
    about = {n: JOB_TABLES.get(n) or f"per rank: {TRACE_TABLES[n]}" for n in builders}
    return Tables(builders, about)


def stacked(sources: list[Tables]) -> Tables:
    """The tables of several traces or jobs as one: each table the rows of every source that has
    it (its ``trace`` column tells them apart; columns one lacks are null in its rows)."""
    if len(sources) == 1:
        return sources[0]
    names = list(dict.fromkeys(n for source in sources for n in source))
    about = {n: next(s.about[n] for s in sources if n in s) for n in names}

    def build(name: str) -> Callable[[], pl.DataFrame]:
        return lambda: pl.concat([s[name] for s in sources if name in s], how="diagonal_relaxed")

    return Tables({n: build(n) for n in names}, about)
