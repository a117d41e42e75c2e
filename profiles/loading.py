"""Open any supported input file as a :class:`Profile`, detecting the format from content."""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict

import polars as pl

from ..collector import resume_after_read
from ..errors import ProfviewError
from ..parsers.schema import EVENT_SCHEMA
from ..parsers.source import BASE_MEMORY, LONG_NAME_COPIES, check_memory, long_name_bytes
from ..reads import note
from ..store import trace_cache as cache
from .trace_profile import Profile

if TYPE_CHECKING:
    from ..analysis.trace.launch_index import LaunchIndex
    from ..analysis.trace.model import TraceModel
    from ..parsers.trace_file import TraceFile

TRACE_FORMAT = "Chrome trace"


class TraceFields(TypedDict):
    """The :class:`Profile` fields of a parsed trace, stored beside its events in the cache."""

    format: str
    missing: dict[str, str]
    metadata: dict[str, Any]
    warnings: list[str]
    truncated: bool
    event_count: int


def load(
    path: str | os.PathLike[str],
    *,
    use_cache: bool = True,
    run: str | None = None,
    comm_pattern: str | None = None,
    step_range: str | None = None,
    process: int | None = None,
) -> Profile:
    """Load a trace or profiler table; raise :class:`ProfviewError` with a one-line reason.

    ``run`` picks one run of a file that holds several (TensorBoard-plugin JSON); ``use_cache``
    allows re-opening a trace from the parsed-frame cache (see :mod:`profview.store.trace_cache`), which holds
    parsed events only, so ``comm_pattern`` (a regex naming more kernels as communication, set
    on the returned Profile) applies to cached and fresh loads alike.  ``step_range`` (a regex
    naming the NVTX ranges of an Nsight Systems export that are its steps) changes the events
    themselves: an entry is used only for the ``step_range`` it was parsed with (another one parses
    the export again and replaces the entry).  ``process``: one OS process of an Nsight Systems
    export, read as if the export held it alone (a rank of the job its processes make,
    :mod:`profview.jobs.process_job`); such a profile is not kept in the trace cache, whose entry
    is the whole export's.
    """
    try:
        if process is not None:
            return _load_process(os.fspath(path), process, comm_pattern, step_range)
        return _load(path, use_cache=use_cache, run=run, comm_pattern=comm_pattern, step_range=step_range)
    finally:
        resume_after_read()  # the command's start is over once its first trace is read (profview.collector)


def _load(
    path: str | os.PathLike[str],
    *,
    use_cache: bool = True,
    run: str | None = None,
    comm_pattern: str | None = None,
    step_range: str | None = None,
) -> Profile:
    """:func:`load`'s work."""
    from ..parsers.nsys.magic import is_sqlite

    name = os.fspath(path)
    if step_range is not None and not is_sqlite(name):
        check_pattern(name, step_range, "--step-range")
        profile = _load(path, use_cache=use_cache, run=run, comm_pattern=comm_pattern)
        profile.warnings = [*profile.warnings, STEP_RANGE_IGNORED]
        return profile
    note(name)  # an input: never a write's target (profview.reads)
    check_patterns(name, comm_pattern, step_range)
    if use_cache and os.path.isfile(name):
        hit = cache.lookup(name, EVENT_SCHEMA)
        if hit is not None and _step_range_of(hit.fields) != step_range:
            cache.discard(hit.entry)  # parsed with other steps: parsed again, and the entry replaced
            hit = None
        if hit is not None:
            check_memory(name, BASE_MEMORY)  # even saved views need room to be read
            settings = {"comm_pattern": comm_pattern} if comm_pattern else {}
            profile = Profile(
                path=name,
                events_source=partial(_cached_events, hit, name, step_range),
                saved=hit.views(settings),
                saved_model=partial(_cached_model, hit),
                saved_gpu=hit.model_gpu,
                saved_launch_index=partial(_cached_launch_index, hit),
                settings=settings,
                cacheable=True,
                open_capture=load,
                **hit.fields,
            )
            return _single_run(profile, run)
    profile = _single_run(_parse(name, use_cache, run, step_range), run)
    profile.comm_pattern = comm_pattern
    profile.open_capture = load
    return profile


def _load_process(name: str, process: int, comm_pattern: str | None, step_range: str | None) -> Profile:
    """:func:`load` of one process of an Nsight Systems export."""
    from ..parsers.nsys.magic import is_sqlite

    note(name)
    if not is_sqlite(name):
        raise ProfviewError(name, "is not an Nsight Systems export: only an export's processes are read one by one")
    check_patterns(name, comm_pattern, step_range)
    profile = _parse_nsys(name, False, step_range, process)
    profile.comm_pattern = comm_pattern
    return profile


def check_patterns(name: str, comm_pattern: str | None, step_range: str | None) -> None:
    """:func:`check_pattern` of ``--comm-pattern`` and ``--step-range``, each where given."""
    for pattern, option in ((comm_pattern, "--comm-pattern"), (step_range, "--step-range")):
        if pattern is not None:
            check_pattern(name, pattern, option)


def check_pattern(name: str, pattern: str, option: str = "--comm-pattern") -> None:
    """Raise :class:`ProfviewError` if ``pattern`` is not a regular expression the engine that
    runs it can run (:mod:`profview.analysis.trace.name_rules`: no look-around)."""
    from ..analysis.trace.name_rules import pattern_problem

    problem = pattern_problem(pattern)
    if problem is not None:
        raise ProfviewError(name, f"{option} {pattern!r} is not a valid regular expression ({problem})")


#: What a ``--step-range`` on another format than an Nsight Systems export becomes.
STEP_RANGE_IGNORED = (
    "--step-range names NVTX ranges of an Nsight Systems export: ignored here (steps are its ProfilerStep#N ranges)"
)
#: Where an Nsight Systems export's entry keeps the ``--step-range`` it was parsed with.
STEP_RANGE_KEY = "step_range"


def _step_range_of(fields: dict[str, Any]) -> str | None:
    """The ``step_range`` a cache entry's events were parsed with (None: steps by name only)."""
    nsys = fields.get("metadata", {}).get("nsys")
    found = nsys.get(STEP_RANGE_KEY) if isinstance(nsys, dict) else None
    return found if isinstance(found, str) else None


def _cached_events(hit: cache.CachedTrace, name: str, step_range: str | None = None) -> pl.DataFrame:
    """The events of a cache entry; if the entry was damaged since it was found, parse again
    (and replace the entry)."""
    try:
        return hit.events()
    except (OSError, pl.exceptions.PolarsError):
        cache.discard(hit.entry)
        profile = _parse(name, use_cache=True, run=None, step_range=step_range)
        assert profile.events is not None
        return profile.events


def _read_events_again(name: str, use_cache: bool, event_count: int, step_range: str | None = None) -> pl.DataFrame:
    """The events of a trace parsed earlier in this process, whose frame was let go
    (:meth:`Profile.release_events`): from the cache entry written then, else parsed again."""
    hit = cache.lookup(name, EVENT_SCHEMA) if use_cache else None
    if hit is not None and hit.fields.get("event_count") == event_count and _step_range_of(hit.fields) == step_range:
        return _cached_events(hit, name, step_range)
    events = _parse(name, use_cache=False, run=None, step_range=step_range).events
    if events is None or events.height != event_count:
        raise ProfviewError(name, "the trace changed while it was being read; open it again")
    return events


def _cached_model(hit: cache.CachedTrace, columns: tuple[list[str], list[str]] | None = None) -> TraceModel | None:
    """The linked model stored in a cache entry (``columns``: only these host and GPU columns, the
    call tree always), or None (then it is built from the events)."""
    from ..analysis.trace.model import TREE_COLUMNS, model_from_frames

    if columns is not None:
        columns = ([*columns[0], *TREE_COLUMNS], list(columns[1]))
    stored = hit.model_frames(columns)
    if stored is None:
        return None
    return model_from_frames(*stored)


def _cached_launch_index(hit: cache.CachedTrace) -> LaunchIndex | None:
    """The launch index stored in a cache entry, or None (then it is computed from the model)."""
    from ..analysis.trace.launch_index import KERNEL_LAUNCH_GPU_COLUMNS, LaunchIndex

    stored = hit.launch_index(list(KERNEL_LAUNCH_GPU_COLUMNS))
    return None if stored is None else LaunchIndex(*stored)


def remember_views(profile: Profile, *, model: bool = False) -> None:
    """Save the views ``profile`` computed in this process beside its cached events.

    ``model``: also the linked model, if it was built here (the viewer and drill-down exports ask
    for it: a later drill-down then skips linking; a plain export does not pay for writing it),
    and the launching paths of its operator rows, if they were computed here (issue 25).
    """
    if model and profile.is_trace and "model" in vars(profile):
        profile.has_graphs()  # issue 36: kept with the model, so a re-open's drill-down need not look
    if profile.cacheable and (profile.fresh or profile.fresh_facts):
        cache.store_views(profile.path, profile.settings, dict(profile.fresh), dict(profile.fresh_facts))
        profile.fresh.clear()
        profile.fresh_facts.clear()
    if model and profile.cacheable and "model" in vars(profile) and not profile.model_stored:
        from ..analysis.trace.model import model_frames

        cache.store_model(profile.path, *model_frames(profile.model))
        profile.model_stored = True
    if model and profile.cacheable and "launch_index" in vars(profile) and not profile.launch_index_stored:
        index = profile.launch_index
        cache.store_launch_paths(profile.path, index.rows, index.paths)
        profile.launch_index_stored = True


#: Peak memory of the tables per byte of the events frame (measured: 808 MB for a 223 MB frame of
#: 300,000 distinct kernel names, from 146 MB of JSON, where the JSON-size estimate said 580 MB).
ANALYSIS_MEMORY_FACTOR = 3.6


#: Device types whose Kineto categories profview does not read as GPU work (prefix of ``cat``).
UNSUPPORTED_DEVICES = {"mtia": "MTIA"}


def unsupported_devices(events: pl.DataFrame) -> list[str]:
    """A warning per device type the trace recorded that profview does not support (an MTIA trace
    would otherwise read as one with no GPU work)."""
    warnings: list[str] = []
    # The distinct categories first (a few dozen): a trace without such a category (every trace
    # but those) is not grouped at all (the grouping's tables were 4 MB of gpt2_train_big's read).
    categories = [str(c).lower() for c in events["cat"].unique().to_list() if c is not None]
    if not any(c.startswith(prefix) for c in categories for prefix in UNSUPPORTED_DEVICES):
        return warnings
    # Counted per distinct category, not per event: no text copy of the column.
    per_cat = events.group_by("cat").len().select(pl.col("cat").cast(pl.String).str.to_lowercase(), "len")
    for prefix, device in UNSUPPORTED_DEVICES.items():
        count = int(per_cat.filter(pl.col("cat").str.starts_with(prefix))["len"].sum())
        if count:
            warnings.append(
                f"device type {device} is not supported: its {count:,} {prefix}_* events (runtime calls and "
                "device work) are left out of the tables, which cover CUDA and ROCm GPU work"
            )
    return warnings


def _parse(name: str, use_cache: bool, run: str | None, step_range: str | None = None) -> Profile:
    """Read and parse ``name`` (the parsers are imported here: a cache hit never needs them)."""
    from ..parsers.chrome_trace import read_chrome
    from ..parsers.nsys.magic import is_nsys_report, is_sqlite, report_refusal
    from ..parsers.other_chrome import (
        is_paddle_trace,
        label_device_lanes,
        needs_lane_labels,
        normalise_paddle_names,
    )
    from ..parsers.trace_file import read_trace_file
    from .prefetch import take

    if is_sqlite(name):
        from ..parsers.foreign import refuse_foreign, rocpd_kind, sqlite_tables

        if rocpd_kind(sqlite_tables(name) or []) == "rocpd":
            profile = _rocpd_profile(name, use_cache)
            if step_range is not None:
                profile.warnings = [*profile.warnings, STEP_RANGE_IGNORED]
            return profile
        with open(name, "rb") as head:
            refuse_foreign(name, head.read(100))  # an RPD database is named, not read as nsys
        return _parse_nsys(name, use_cache, step_range)
    if is_nsys_report(name):
        raise report_refusal(name)
    before = _version(name) if use_cache else None  # the identity the cache may store it under
    file = take(name) or read_trace_file(name)  # the CLI may have started reading it (prefetch)
    if file.identity is None:
        file.identity = before
    if file.chrome:
        trace = read_chrome(file)
        events, trace_format = trace.events, TRACE_FORMAT
        missing: dict[str, str] = {}
        # What the trace holds, not its JSON size, sets what the tables need: many distinct names
        # (one kernel name per launch) make the frame larger than its JSON, and the tables with it.
        # The whole peak, against the room left plus what is already held (the frame, the libraries).
        # A very long name is copied by each view, more than its share of the frame says.
        needed = events.estimated_size() * ANALYSIS_MEMORY_FACTOR + long_name_bytes(events) * LONG_NAME_COPIES
        check_memory(name, int(needed) + BASE_MEMORY, whole_process=True)
        if needs_lane_labels(events):
            events, missing = label_device_lanes(events)
            trace_format = "Chrome trace without categories (JAX/XLA/TensorFlow style)"
        elif is_paddle_trace(events):
            events, missing = normalise_paddle_names(events)
            trace_format = "PaddlePaddle Chrome trace"
        fields: TraceFields = {
            "format": trace_format,
            "missing": missing,
            "metadata": trace.metadata,
            "warnings": file.warnings + trace.warnings + unsupported_devices(events),
            "truncated": trace.truncated or bool(file.warnings),
            "event_count": events.height,
        }
        return _events_profile(name, file, events, fields, use_cache)
    from ..parsers.detect import read_text_views
    from ..parsers.rocprof.sniff import looks_like_rocprof

    source = file.source
    assert source is not None  # read whole: not a Chrome trace
    if looks_like_rocprof(source.data[:4096]):
        return _rocprof_profile(name, file, use_cache)

    try:
        views = read_text_views(source.path, source.data, source.warnings, run)
    except ProfviewError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, pl.exceptions.PolarsError) as exc:
        # A text table laid out in a way no parser foresaw: one line, never a traceback.
        raise ProfviewError(source.path, f"could not read this profile table ({type(exc).__name__}: {exc})") from None
    return Profile(path=source.path, **vars(views))


def _parse_nsys(name: str, use_cache: bool, step_range: str | None = None, process: int | None = None) -> Profile:
    """Read an Nsight Systems SQLite export (:mod:`profview.parsers.nsys`) as a trace: the same
    events frame, cached and checked for memory as a Chrome trace's is; ``step_range`` is kept in
    its metadata, so that a cache entry is used only for the steps it was parsed with;
    ``process``: that OS process's work alone (never cached)."""
    from ..parsers.nsys.reader import FORMAT, read_nsys

    use_cache = use_cache and process is None
    if not use_cache and step_range is None:
        return _nsys_gpu_first(name, process)
    before = _version(name) if use_cache else None
    trace = read_nsys(name, step_range, process)
    if step_range is not None:
        trace.metadata["nsys"][STEP_RANGE_KEY] = step_range
    events = trace.events
    fields = _checked_fields(name, events, FORMAT, trace.missing, trace.metadata, trace.warnings)
    if use_cache and before is not None:
        cache.store(name, events, fields, version=before)
    return Profile(
        path=name,
        events_source=events,
        cacheable=use_cache,
        reread_events=(
            partial(_read_events_again, name, use_cache, fields["event_count"], step_range)
            if process is None
            else partial(_read_process_again, name, fields["event_count"], step_range, process)
        ),
        **fields,
    )


def _nsys_gpu_first(name: str, process: int | None) -> Profile:
    """An export read as far as its GPU work (:func:`~profview.parsers.nsys.reader.open_nsys`),
    where nothing is cached: the kernel table is made from its GPU events alone, and its NVTX
    ranges and runtime calls are read only when a view asks for the events (the whole frame of a
    1 GB export is larger than the file; its GPU events are a fifth of it)."""
    from ..analysis.trace.events import gpu_work
    from ..parsers.nsys.reader import FORMAT, open_nsys

    part = open_nsys(name, process)
    gpu = part.gpu
    check_memory(name, int(gpu.estimated_size() * ANALYSIS_MEMORY_FACTOR) + BASE_MEMORY, whole_process=True)

    def events() -> pl.DataFrame:
        frame = part.events()
        needed = frame.estimated_size() * ANALYSIS_MEMORY_FACTOR + long_name_bytes(frame) * LONG_NAME_COPIES
        check_memory(name, int(needed) + BASE_MEMORY, whole_process=True)
        return frame

    return Profile(
        path=name,
        format=FORMAT,
        events_source=events,
        saved_gpu=lambda columns: gpu_work(gpu).select(columns),
        cacheable=False,
        reread_events=(
            partial(_read_events_again, name, False, part.event_count)
            if process is None
            else partial(_read_process_again, name, part.event_count, None, process)
        ),
        missing=part.missing,
        metadata=part.metadata,
        warnings=part.warnings,
        truncated=False,
        event_count=part.event_count,
    )


def _read_process_again(name: str, event_count: int, step_range: str | None, process: int) -> pl.DataFrame:
    """The events of one process of an export, parsed earlier in this process and let go."""
    from ..parsers.nsys.reader import read_nsys

    events = read_nsys(name, step_range, process).events
    if events.height != event_count:
        raise ProfviewError(name, "the export changed while it was being read; open it again")
    return events


def _events_profile(name: str, file: TraceFile, events: pl.DataFrame, fields: TraceFields, use_cache: bool) -> Profile:
    """The profile of a parsed events frame, stored in the cache first (when the file's identity is known)."""
    if use_cache and file.identity is not None:
        cache.store(name, events, fields, version=file.identity)
    return Profile(
        path=file.path,
        events_source=events,
        cacheable=use_cache,
        reread_events=partial(_read_events_again, name, use_cache, fields["event_count"]),
        **fields,
    )


def _rocprof_profile(name: str, file: TraceFile, use_cache: bool) -> Profile:
    """A rocprofv3 JSON document as a trace (:mod:`profview.parsers.rocprof`): its events, kept in the
    cache like a Chrome trace's, so every view and a re-open work as for one."""
    from ..parsers.rocprof.reader import read_rocprof

    source = file.source
    assert source is not None
    try:
        trace = read_rocprof(source.data, source.path)
    except (ValueError, TypeError, OverflowError, pl.exceptions.PolarsError) as exc:
        # A document laid out in a way the reader did not foresee: one line, never a traceback.
        raise ProfviewError(source.path, f"could not read this rocprofv3 JSON ({type(exc).__name__}: {exc})") from None
    events = trace.events
    fields = _checked_fields(
        name, events, trace.format, trace.missing, trace.metadata, source.warnings + trace.warnings,
        truncated=bool(source.warnings),
    )
    return _events_profile(name, file, events, fields, use_cache)


def _rocpd_profile(name: str, use_cache: bool) -> Profile:
    """A rocprofv3 rocpd database as a trace (:mod:`profview.parsers.rocprof.rocpd`): the same events
    as its JSON would give, kept in the cache like an Nsight Systems export's."""
    from ..parsers.rocprof.rocpd import read_rocpd

    before = _version(name) if use_cache else None
    try:
        trace = read_rocpd(name)
    except (ValueError, TypeError, OverflowError, pl.exceptions.PolarsError) as exc:
        # A database laid out in a way the reader did not foresee: one line, never a traceback.
        raise ProfviewError(name, f"could not read this rocpd database ({type(exc).__name__}: {exc})") from None
    events = trace.events
    fields = _checked_fields(name, events, trace.format, trace.missing, trace.metadata, trace.warnings)
    if use_cache and before is not None:
        cache.store(name, events, fields, version=before)
    return Profile(
        path=name,
        events_source=events,
        cacheable=use_cache,
        reread_events=partial(_read_events_again, name, use_cache, fields["event_count"]),
        **fields,
    )


def _checked_fields(
    name: str,
    events: pl.DataFrame,
    trace_format: str,
    missing: dict[str, str],
    metadata: dict[str, Any],
    warnings: list[str],
    *,
    truncated: bool = False,
) -> TraceFields:
    """A read trace's fields, once its events are known to leave room for the views' analysis
    (a one-line refusal otherwise: the frame's size, and its long names, which each view copies)."""
    needed = events.estimated_size() * ANALYSIS_MEMORY_FACTOR + long_name_bytes(events) * LONG_NAME_COPIES
    check_memory(name, int(needed) + BASE_MEMORY, whole_process=True)
    return {
        "format": trace_format,
        "missing": missing,
        "metadata": metadata,
        "warnings": warnings,
        "truncated": truncated,
        "event_count": events.height,
    }


def _version(name: str) -> dict[str, Any] | None:
    """The trace's cache identity now, or None (a pipe, a vanished file: nothing is stored)."""
    from ..store.keys import identity

    try:
        return identity(name)
    except OSError:
        return None


def _single_run(profile: Profile, run: str | None) -> Profile:
    """A ``run`` other than the first, asked of a file that holds one run, is an error, not ignored."""
    if run is not None and not profile.runs and run not in ("1", "run1"):
        raise ProfviewError(profile.path, f"no run {run!r}: a {profile.format} holds a single run")
    return profile
