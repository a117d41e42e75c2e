"""An Nsight Systems SQLite export as the documented events frame (:mod:`profview.parsers.schema`).

What becomes what (times: ns in the export, µs in the frame):

- kernels, memcpy and memset rows: GPU events on ``pid`` = device, ``tid`` = stream, as Kineto
  writes them, with the demangled name (``StringIds``; nsys's short name kept as ``short_name``,
  null where the export lacks ``shortName``), correlation, grid, block, registers,
  shared memory, bytes, graph and node ids;
- runtime-table rows: ``runtime`` calls, or ``driver`` calls (``cu*`` names, event class 1), on
  their process and thread, nsys's ``_vNNNN`` suffix stripped; a call written twice with one
  correlation id on one thread (the oldest layout) counted once;
- NVTX push/pop ranges: ``cpu_op`` rows when the text is PyTorch's ``emit_nvtx`` (name, sequence
  number and input shapes parsed by :mod:`.nvtx_text`), else ``user_annotation`` rows, on their
  thread, so the call tree nests kernels' launches in them; ``ProfilerStep#N`` ranges are steps;
  start/end ranges are annotations on a lane of their own beside the thread (``TID (NVTX
  start/end)``: they need not nest), marks instants;
- processes' and threads' names: metadata events, as Kineto writes them.

Correlation ids are unique per process only, so where the export holds several processes the
``correlation`` column is the process's number (0, 1, ... in pid order) times 2^32 plus nsys's id:
a kernel then links only to the call of its own process, and a one-process export keeps nsys's ids.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ...errors import ProfviewError
from ...frames import KIND
from ..schema import EVENT_SCHEMA
from .database import Export, reads_at_once
from .gpu import (
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    GpuProcess,
    GpuTables,
    copy_names,
    gpu_processes,
    read_gpu,
    shape,
)
from .host import (
    DRIVER_CLASS,
    NVTX_MARK,
    NVTX_PUSH_POP,
    NVTX_START_END,
    NVTX_TABLE,
    NVTX_THREADS,
    RUNTIME_KEY_COLUMNS,
    RUNTIME_TABLE,
    VERSION_SUFFIX,
    nvtx_query,
    nvtx_threads,
    process_names,
    read_nvtx,
    read_runtime,
    read_runtime_keys,
    thread_names,
)
from .meta import device_properties, export_info
from .nvtx_text import parse_ranges

FORMAT = "Nsight Systems SQLite export"
#: The tables one of which makes a database an nsys export.
ACTIVITY_TABLES = (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, RUNTIME_TABLE, NVTX_TABLE)
#: The lane beside a thread that holds its start/end ranges.
START_END_LANE = " (NVTX start/end)"
#: Where a process's number sits in a combined correlation id.
PROCESS_SHIFT = 2**32
STEP_RANGE = r"^ProfilerStep#[0-9]{1,18}$"
#: The many-row text columns of host events are made categorical as they are made (the events
#: frame's type for them): 4 bytes a row held until the frame is stacked, not a string's 16.
CATEGORY = pl.Categorical()


@dataclass
class NsysTrace:
    """An export read: its events, metadata (``deviceProperties``, ``nsys``), warnings, and what
    it lacks per view."""

    events: pl.DataFrame
    metadata: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)


def read_nsys(path: str, step_range: str | None = None, process: int | None = None) -> NsysTrace:
    """Read the export at ``path``; :class:`ProfviewError` (one line) if it is not one.

    ``step_range``: a regular expression (run by Polars, checked by the caller) naming the NVTX
    push/pop ranges that are the steps, beside ``ProfilerStep#N`` (:func:`named_steps`).
    ``process``: only that OS process's work (its kernels, copies and sets, its runtime calls and
    NVTX ranges, read by SQL alone), as if the export held it alone: one rank of a job whose
    ranks are an export's processes (:func:`list_gpu_processes`)."""
    with Export(path) as export, ThreadPoolExecutor(max_workers=min(2, reads_at_once())) as pool:
        # The host tables are read in full while the GPU part is, as one read of every table at
        # once; the GPU part takes its calls' ids and its ranges' counts from them.
        runtime_lacking: list[str] = []
        host = [
            pool.submit(read_runtime, export, runtime_lacking, process),
            pool.submit(read_nvtx, export, [], process),
        ]
        part = _read_gpu_part(export, process, (host, runtime_lacking))
        events = part.host_events(export, step_range, host)  # which empties ``host``
    return NsysTrace(events, part.metadata, part.warnings, part.missing)


def open_nsys(path: str, process: int | None = None) -> NsysGpuPart:
    """The export at ``path`` read as far as its GPU work, as :func:`read_nsys` reads it (the
    same GPU events, metadata, warnings and count of events), without holding its host events: a
    kernel table needs no NVTX range or runtime call in full (its calls' ids and threads are read,
    its ranges counted by SQLite), and the 10 M ranges of a 1 GB export are most of its events.
    :meth:`NsysGpuPart.events` reads the host events when a view needs them."""
    with Export(path) as export:
        return _read_gpu_part(export, process)


@dataclass
class NsysGpuPart:
    """An export read as far as its GPU work (:func:`open_nsys`): ``gpu``, its GPU events (the
    events frame's columns and types), the metadata, warnings and what it lacks per view as
    :func:`read_nsys` gives them, and ``event_count``, how many events the whole frame holds."""

    path: str
    process: int | None
    gpu: pl.DataFrame
    metadata: dict[str, Any]
    warnings: list[str]
    missing: dict[str, str]
    event_count: int
    #: Gives a frame of calls (``_proc``, ``_correlation``) its ``correlation``, as the GPU events' were made.
    correlate: Callable[[pl.DataFrame], pl.DataFrame] = field(repr=False)
    #: Where ``--step-range``'s warnings go among the others (the order :func:`read_nsys` said them in).
    steps_at: int = field(default=0, repr=False)
    #: Calls dropped as repeated and ranges dropped as unended, checked again when the events are read.
    dropped: tuple[int, int] = field(default=(0, 0), repr=False)

    def events(self) -> pl.DataFrame:
        """The whole events frame, :func:`read_nsys`'s: the host events read now, with :attr:`gpu`;
        :class:`ProfviewError` if the export no longer holds the events counted when it was opened."""
        with Export(self.path) as export:
            events = self.host_events(export)
        if events.height != self.event_count:
            raise ProfviewError(self.path, "the export changed while it was being read; open it again")
        return events

    def host_events(
        self,
        export: Export,
        step_range: str | None = None,
        reads: list[Future[pl.DataFrame]] | None = None,
    ) -> pl.DataFrame:
        """The events frame of the open ``export``: its runtime calls, NVTX ranges and thread
        names read in full (``reads``: the reads of :func:`read_runtime` and :func:`read_nvtx`,
        already started, taken out of the list), stacked with :attr:`gpu` (``step_range``: :func:`named_steps`, whose
        warnings join :attr:`warnings`)."""
        if reads is None:
            lacking: list[str] = []
            with ThreadPoolExecutor(max_workers=min(2, reads_at_once())) as pool:
                reads = [
                    pool.submit(read_runtime, export, lacking, self.process),
                    pool.submit(read_nvtx, export, lacking, self.process),
                ]
                strings = _strings(export)
                runtime, nvtx = reads.pop(0).result(), reads.pop(0).result()
        else:
            strings = _strings(export)
            runtime, nvtx = reads.pop(0).result(), reads.pop(0).result()
        # The futures are let go (the list emptied): they would hold the raw tables past their ``del``.
        raw = {"runtime": runtime, "nvtx": nvtx}
        del runtime, nvtx
        calls, repeated = _runtime_events(raw.pop("runtime"), strings)
        ranges, unclosed = _nvtx_events(raw.pop("nvtx"), strings)
        if (repeated, unclosed) != self.dropped:
            raise ProfviewError(self.path, "the export changed while it was being read; open it again")
        if step_range is not None:
            said: list[str] = []
            ranges = named_steps(ranges, step_range, said)
            self.warnings[self.steps_at : self.steps_at] = said
        calls = self.correlate(calls)
        names = _name_events(export, calls, ranges, strings)
        frames = [frame for frame in (names, calls, ranges, self.gpu) if frame.height]
        del names, calls, ranges  # the list holds them alone: each goes once conformed
        return _as_schema(frames)


def list_gpu_processes(path: str) -> tuple[list[GpuProcess], int]:
    """The processes of the export at ``path`` that launched GPU work, in pid order, and how many
    GPU rows name no process (:func:`~.gpu.gpu_processes`); :class:`ProfviewError` if it is no export."""
    with Export(path) as export:
        _check_export(export)
        return gpu_processes(export)


def _process(column: str) -> pl.Expr:
    """The OS process id in a serialised ``globalPid``/``globalTid``: ``(id >> 24) & 0xFFFFFF``."""
    return (pl.col(column) // 2**24) % 2**24


def _thread(column: str) -> pl.Expr:
    """The OS thread id in a serialised ``globalTid``: its low 24 bits."""
    return pl.col(column) % 2**24


def _us(column: str) -> pl.Expr:
    """ns → µs."""
    return pl.col(column).cast(pl.Float64) / 1000.0


def _check_export(export: Export) -> None:
    """:class:`ProfviewError` (one line) unless ``export`` is an Nsight Systems export with its strings."""
    found = [table for table in ACTIVITY_TABLES if table in export.tables]
    if not found:
        raise ProfviewError(
            export.path,
            "is an SQLite database but not an Nsight Systems export (it has none of the tables "
            f"{', '.join(ACTIVITY_TABLES)})",
        )
    if "StringIds" not in export.tables or not export.has("StringIds", "id", "value"):
        raise ProfviewError(export.path, "is an Nsight Systems export without its StringIds table (id, value)")


def _strings(export: Export) -> pl.DataFrame:
    """``StringIds`` (``id``, ``value``), each id once."""
    strings = export.frame("SELECT id, value FROM StringIds", {"id": pl.Int64(), "value": pl.String()}, "StringIds")
    return strings.unique("id", keep="first", maintain_order=True)  # the primary key, made sure of


def _read_gpu_part(
    export: Export,
    process: int | None = None,
    host: tuple[list[Future[pl.DataFrame]], list[str]] | None = None,
) -> NsysGpuPart:
    """:func:`open_nsys` on an open export; ``host``: the reads of :func:`read_runtime` and
    :func:`read_nvtx` already started (and what the runtime table lacks, as the first notes it),
    from which the calls' ids and the ranges' counts are taken instead of being read again."""
    _check_export(export)
    info = export_info(export)
    if process is not None:
        info["process"] = int(process)
    metadata: dict[str, Any] = {"nsys": info, "deviceProperties": device_properties(export)}
    warnings: list[str] = []
    missing: dict[str, str] = {}
    runtime_lacking: list[str] = []
    nvtx_lacking: list[str] = []
    ranges_query = nvtx_query(export, nvtx_lacking, process)
    # The tables are read at once where the compiled reader runs them without the GIL; the calls'
    # ids are read once the GPU rows are events (their raw tables let go), while SQLite counts the ranges.
    with ThreadPoolExecutor(max_workers=reads_at_once()) as pool:
        read_strings = pool.submit(_strings, export)
        read_kernels = pool.submit(read_gpu, export, process)
        count_ranges = None
        if host is None and ranges_query is not None:
            count_ranges = pool.submit(nvtx_threads, export, ranges_query)
        gpu_tables, strings = read_kernels.result(), read_strings.result()
        del read_strings, read_kernels  # the futures would hold the raw tables past their ``del``
        timing = [
            (table, *_timing(frame))
            for table, frame in (
                (KERNEL_TABLE, gpu_tables.kernels),
                (MEMCPY_TABLE, gpu_tables.memcpy),
                (MEMSET_TABLE, gpu_tables.memset),
            )
        ]
        # Each raw table is handed over, not kept here: it is let go as soon as it is converted, so
        # the read's peak holds one copy of a table, not two.
        gpu = _gpu_events(export, gpu_tables, strings)
        gpu_lacking = gpu_tables.lacking
        del gpu_tables
        if host is None:
            runtime = read_runtime_keys(export, runtime_lacking, process)
            range_threads = count_ranges.result() if count_ranges is not None else pl.DataFrame(schema=NVTX_THREADS)
        else:
            runtime = host[0][0].result().select(RUNTIME_KEY_COLUMNS)
            runtime_lacking = host[1]
            range_threads = _range_threads(host[0][1].result())
        del count_ranges
    timing.append((RUNTIME_TABLE, *_timing(runtime)))
    lacking = [*gpu_lacking, *runtime_lacking, *nvtx_lacking]
    if lacking:
        warnings.append("the export lacks the column(s) " + "; ".join(lacking) + " (those fields are unknown)")
    for table, untimed, backwards in timing:
        if untimed:
            warnings.append(f"{untimed:,} rows of {table} have no start or end: left out of every view")
        if backwards:
            warnings.append(f"{backwards:,} rows of {table} end before they start: read as lasting 0")
    calls = runtime.select(
        _process("globalTid").alias("_proc"),
        _thread("globalTid").alias("_thread"),
        pl.col("correlationId").alias("_correlation"),
    )
    del runtime
    repeated = _repeated_calls(calls)
    if repeated:
        warnings.append(f"{repeated:,} runtime rows repeat a call's correlation id on its thread: counted once")
    steps_at = len(warnings)
    unclosed = int(range_threads["open"].sum())
    if unclosed:
        warnings.append(f"{unclosed:,} NVTX ranges have no end (never popped in the capture): left out")
    info["processes"] = process_split(gpu, calls, export)
    gpu, correlate = _unique_correlations(gpu, calls, warnings)
    kernels = gpu.lazy().filter(pl.col("kind") == "kernel").select("correlation").collect()  # no copy of the rest
    if calls.height and kernels.height:
        launched = kernels["correlation"].is_in(correlate(calls)["correlation"].drop_nulls().implode())
        orphans = kernels.height - int(launched.sum())
        if orphans:
            warnings.append(
                f"{orphans:,} of {kernels.height:,} kernels have no launching call in the export (launched "
                "before its window began, or CUDA API calls were not traced): no operator"
            )
    elif kernels.height and not calls.height:
        missing["launches"] = "the export has no CUDA runtime calls (trace with nsys profile -t cuda)"
    if kernels.height and not int(range_threads["ranges"].sum()):
        warnings.append(
            "the export has no NVTX ranges: kernels only, no operators (profile with -t cuda,nvtx and, "
            "for PyTorch, torch.autograd.profiler.emit_nvtx())"
        )
    # The threads the host events use, as they name them: their names are metadata events.
    thread = _thread("globalTid").cast(pl.String).fill_null("?")
    call_threads = calls.select(
        pl.col("_proc").cast(pl.String).fill_null("?").alias("pid"),
        pl.col("_thread").cast(pl.String).fill_null("?").alias("tid"),
    ).unique(maintain_order=True)
    kept = range_threads.filter(pl.col("events") > pl.col("open"))
    lane_threads = kept.select(
        _process("globalTid").cast(pl.String).fill_null("?").alias("pid"),
        pl.when("start_end").then(thread + pl.lit(START_END_LANE)).otherwise(thread).alias("tid"),
    )
    names = _name_events(export, call_threads, lane_threads, strings)
    host_count = calls.height - repeated + int(kept["events"].sum()) - int(kept["open"].sum())
    event_count = names.height + host_count + gpu.height
    del kernels, calls, names, call_threads
    gpu = _as_schema([gpu] if gpu.height else [])
    if info["schema_version"] is None:
        warnings.append("the export does not say its schema version (no META_DATA_EXPORT): read as the oldest layout")
    return NsysGpuPart(
        export.path, process, gpu, metadata, warnings, missing, event_count, correlate, steps_at, (repeated, unclosed)
    )


def _timing(frame: pl.DataFrame) -> tuple[int, int]:
    """How many rows of a table have no start or end, and how many end before they start."""
    untimed = frame.select((pl.col("start").is_null() | pl.col("end").is_null()).sum()).item()
    backwards = frame.select((pl.col("end") < pl.col("start")).sum()).item()
    return int(untimed), int(backwards)


def _range_threads(nvtx: pl.DataFrame) -> pl.DataFrame:
    """:func:`~.host.nvtx_threads` of NVTX events already read (:func:`read_nvtx`)."""
    ranged = pl.col("eventType") != NVTX_MARK
    return nvtx.group_by("globalTid", (pl.col("eventType") == NVTX_START_END).alias("start_end")).agg(
        pl.len().cast(pl.Int64).alias("events"),
        (ranged & pl.col("end").is_null()).sum().cast(pl.Int64).alias("open"),
        (ranged & pl.col("end").is_not_null()).sum().cast(pl.Int64).alias("ranges"),
    )


def _repeated_calls(calls: pl.DataFrame) -> int:
    """How many of the calls (``_proc``, ``_thread``, ``_correlation``) repeat an earlier one's
    correlation id on its thread: those :func:`_runtime_events` drops."""
    # Sorted, a repeat is a row equal to the one before it: no hash table of every call (an
    # ``n_unique`` of the three columns took 850 MB for 3.8 M calls).
    # The thread as one number (its process's 24 bits above its own 24, null where unknown), and
    # filtered, sorted and compared in one lazy query: two columns copied once, not three twice.
    thread = pl.col("_proc") * 2**24 + pl.col("_thread")
    same = pl.col("_key").eq_missing(pl.col("_key").shift()) & (
        pl.col("_correlation") == pl.col("_correlation").shift()
    )
    return int(
        calls.lazy()
        .filter(pl.col("_correlation").is_not_null())
        .select(thread.alias("_key"), "_correlation")
        .sort("_key", "_correlation", nulls_last=True)
        .select((same & (pl.int_range(pl.len()) > 0)).sum())
        .collect()
        .item()
    )


def _name_of(strings: pl.DataFrame, column: str) -> pl.Expr:
    """The ``StringIds`` value of the ids in ``column`` (null where none): a lookup of that one
    column, where a join would gather every column of the frame again."""
    return pl.col(column).replace_strict(strings["id"], strings["value"], default=None, return_dtype=pl.String)


def _names(strings: pl.DataFrame, frame: pl.DataFrame, column: str, alias: str) -> pl.DataFrame:
    """``frame`` with ``alias``: the ``StringIds`` value of its ``column`` (null where none)."""
    return frame.with_columns(_name_of(strings, column).alias(alias))


def _gpu_events(export: Export, tables: GpuTables, strings: pl.DataFrame) -> pl.DataFrame:
    """The GPU events (with ``_proc``, the launching process, and ``_correlation``, nsys's id);
    ``tables`` is emptied as each is converted (its raw rows let go before the next is)."""
    empty = tables.kernels.clear()
    common = [
        pl.lit("X").cast(CATEGORY).alias("ph"),
        pl.col("deviceId").cast(pl.String).fill_null("?").cast(CATEGORY).alias("pid"),
        pl.col("streamId").cast(pl.String).fill_null("?").cast(CATEGORY).alias("tid"),
        _us("start").alias("ts"),
        ((pl.col("end") - pl.col("start")).cast(pl.Float64) / 1000.0).alias("dur"),
        pl.col("streamId").alias("stream"),
        pl.col("deviceId").alias("device"),
        pl.col("correlationId").alias("_correlation"),
        _process("globalPid").alias("_proc"),
        pl.col("graphNodeId").alias("graph_node_id"),
    ]
    # The short name looked up once: it is a column of its own and the name where none is demangled.
    kernel_rows = tables.kernels.with_columns(_name_of(strings, "shortName").alias("short_name")).select(
        *common,
        pl.lit("kernel").cast(CATEGORY).alias("cat"),
        pl.lit("kernel").cast(KIND).alias("kind"),
        pl.coalesce(_name_of(strings, "demangledName"), "short_name", pl.lit("(unnamed kernel)")).alias("name"),
        pl.col("short_name").cast(CATEGORY),
        shape("gridX", "gridY", "gridZ").cast(CATEGORY).alias("grid"),
        shape("blockX", "blockY", "blockZ").cast(CATEGORY).alias("block"),
        pl.col("registersPerThread").alias("registers"),
        (pl.col("staticSharedMemory") + pl.col("dynamicSharedMemory")).alias("shared_mem"),
        pl.col("graphId").alias("graph_id"),
    )
    tables.kernels = empty
    labels = copy_names(export)
    copy_rows = tables.memcpy.select(
        *common,
        pl.lit("gpu_memcpy").cast(CATEGORY).alias("cat"),
        pl.lit("memcpy").cast(KIND).alias("kind"),
        pl.col("copyKind")
        .replace_strict(list(labels), list(labels.values()), default=None, return_dtype=pl.String)
        .fill_null("[CUDA memcpy]")
        .alias("name"),
        pl.col("bytes"),
    )
    tables.memcpy = tables.memcpy.clear()
    set_rows = tables.memset.select(
        *common,
        pl.lit("gpu_memset").cast(CATEGORY).alias("cat"),
        pl.lit("memset").cast(KIND).alias("kind"),
        pl.lit("[CUDA memset]").alias("name"),
        pl.col("bytes"),
    )
    tables.memset = tables.memset.clear()
    return pl.concat([kernel_rows, copy_rows, set_rows], how="diagonal_relaxed")


def _runtime_events(runtime: pl.DataFrame, strings: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The runtime and driver calls, and how many repeated rows were dropped."""
    # The suffix is stripped once per distinct string, not once per call.
    cleaned = strings.with_columns(pl.col("value").str.replace(VERSION_SUFFIX, ""))
    rows = runtime.with_columns(_name_of(cleaned, "nameId").fill_null("(unnamed call)").alias("name"))
    driver = (pl.col("eventClass") == DRIVER_CLASS).fill_null(False) | pl.col("name").str.contains(r"^cu[A-Z]")
    rows = rows.select(
        pl.lit("X").alias("ph"),
        pl.when(driver).then(pl.lit("cuda_driver")).otherwise(pl.lit("cuda_runtime")).cast(CATEGORY).alias("cat"),
        pl.when(driver).then(pl.lit("driver")).otherwise(pl.lit("runtime")).cast(KIND).alias("kind"),
        "name",
        _process("globalTid").cast(pl.String).fill_null("?").cast(CATEGORY).alias("pid"),
        _thread("globalTid").cast(pl.String).fill_null("?").cast(CATEGORY).alias("tid"),
        _us("start").alias("ts"),
        ((pl.col("end") - pl.col("start")).cast(pl.Float64) / 1000.0).alias("dur"),
        pl.col("correlationId").alias("_correlation"),
        _process("globalTid").alias("_proc"),
        pl.col("start").alias("_start"),
        pl.col("end").alias("_end"),
    )
    # The oldest layout writes a call twice, with one correlation id on one thread (an outer row
    # and the versioned inner one): the outer (earliest, longest) row is kept.
    # Whether any call repeats, asked of the numbers (the thread as ``pid`` and ``tid`` are made
    # of them, a null ``globalTid`` as ``?``): no text column is hashed.
    keyed = runtime.select(
        _process("globalTid").alias("_p"), _thread("globalTid").alias("_t"), pl.col("correlationId").alias("_c")
    ).filter(pl.col("_c").is_not_null())
    # Sorted, a repeat is a row equal to the one before it: no hash table of every call (an
    # ``n_unique`` of the three columns took 850 MB for 3.8 M calls).
    keyed = keyed.sort("_p", "_t", "_c", nulls_last=True)
    same = [pl.col(column).eq_missing(pl.col(column).shift()) for column in ("_p", "_t", "_c")]
    repeats = bool(keyed.select((pl.all_horizontal(same) & (pl.int_range(pl.len()) > 0)).any()).item())
    del keyed
    if repeats:
        ordered = rows.with_row_index("_order").sort(["_start", "_end"], descending=[False, True])
        first = (
            ordered.filter(
                pl.col("_correlation").is_null() | (pl.int_range(pl.len()).over("pid", "tid", "_correlation") == 0)
            )
            .sort("_order")
            .drop("_order")
        )
        return first.drop("_start", "_end"), rows.height - first.height
    return rows.drop("_start", "_end"), 0


def _nvtx_events(nvtx: pl.DataFrame, strings: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The NVTX ranges and marks as host events, and how many ranges had no end."""
    # The read's query kept only these kinds; a frame given otherwise is filtered here (each filter
    # copies every column, so it runs only where it drops a row).
    wanted = pl.col("eventType").is_in([NVTX_PUSH_POP, NVTX_START_END, NVTX_MARK])
    kinds = nvtx if bool(nvtx.select(wanted.fill_null(False).all()).item()) else nvtx.filter(wanted)
    del nvtx
    unended = (pl.col("eventType") != NVTX_MARK) & pl.col("end").is_null()
    unclosed = int(kinds.select(unended.sum()).item())
    if unclosed:
        kinds = kinds.filter(~unended)
    text = pl.coalesce("text", _name_of(strings, "textId")).fill_null("(unnamed range)")
    # The raw rows go before the text is parsed: the coalesced text is a copy (620 MB of the grown
    # benchmark export's 9.8 M ranges), so holding both through the parse held the text twice.
    selected = kinds.select(pl.exclude("text", "textId"), text.alias("_text"))
    del kinds
    parsed = parse_ranges(selected, "_text")
    del selected
    is_op = pl.col("emit_nvtx") & ~pl.col("name").str.contains(STEP_RANGE)
    thread = _thread("globalTid").cast(pl.String).fill_null("?")
    kind = (
        pl.when(pl.col("eventType") == NVTX_MARK)
        .then(pl.lit("instant"))
        .when(is_op & (pl.col("eventType") == NVTX_PUSH_POP))
        .then(pl.lit("cpu_op"))
        .otherwise(pl.lit("user_annotation"))
    )
    # The category Kineto writes for the same kind of event (the summary notes events of a category
    # it does not know as not read). The NCCL domain's ranges (``ncclAllReduce``, ``ncclGroupStart``)
    # are user annotations like Kineto's ``nccl:all_reduce``: host ranges around a launch, which the
    # communication rules leave to the NCCL kernels they launch.
    category = pl.when(pl.col("eventType") == NVTX_MARK).then(pl.lit("cpu_instant_event")).otherwise(kind)
    events = parsed.select(
        pl.when(pl.col("eventType") == NVTX_MARK).then(pl.lit("i")).otherwise(pl.lit("X")).alias("ph"),
        category.cast(CATEGORY).alias("cat"),
        kind.cast(KIND).alias("kind"),
        "name",
        _process("globalTid").cast(pl.String).fill_null("?").cast(CATEGORY).alias("pid"),
        pl.when(pl.col("eventType") == NVTX_START_END)
        .then(thread + pl.lit(START_END_LANE))
        .otherwise(thread)
        .cast(CATEGORY)
        .alias("tid"),
        _us("start").alias("ts"),
        pl.when(pl.col("eventType") == NVTX_MARK)
        .then(None)
        .otherwise((pl.col("end") - pl.col("start")).cast(pl.Float64) / 1000.0)
        .alias("dur"),
        "sequence_number",
        "input_dims",
    )
    return events, unclosed


def process_split(gpu: pl.DataFrame, calls: pl.DataFrame, export: Export) -> list[dict[str, Any]]:
    """Per process of the export (pid order): its ``pid``, ``name`` (``PROCESSES``, None where not
    named), the ``devices`` its kernels ran on, its ``kernels`` and their ``kernel_us``; kernels that
    name no process are one entry with ``pid`` None.  An export of several processes (one per GPU
    of a ``torchrun`` job) is split by this, not read as one rank."""
    kernels = gpu.filter(pl.col("kind") == "kernel")
    per = kernels.group_by("_proc").agg(
        pl.col("device").drop_nulls().unique().sort().alias("devices"),
        pl.len().alias("kernels"),
        pl.col("dur").sum().alias("kernel_us"),
    )
    callers = calls.select(pl.col("_proc")).drop_nulls().unique()
    known = pl.concat([per.select("_proc"), callers]).unique()
    rows = known.join(per, on="_proc", how="left", nulls_equal=True).sort("_proc", nulls_last=True)
    names = dict(process_names(export).iter_rows())
    return [
        {
            "pid": row["_proc"],
            "name": names.get(str(row["_proc"])),
            "devices": row["devices"] or [],
            "kernels": row["kernels"] or 0,
            "kernel_us": row["kernel_us"] or 0.0,
        }
        for row in rows.iter_rows(named=True)
    ]


def named_steps(ranges: pl.DataFrame, pattern: str, warnings: list[str]) -> pl.DataFrame:
    """``ranges`` with the push/pop ranges whose whole name ``pattern`` matches somewhere (a
    training loop's ``train_step``) made the steps: each process's, in start order, named
    ``ProfilerStep#0``, ``#1``, ... (the name every step view reads), as ``user_annotation`` rows.
    A pattern that names no range is said; ranges already named ``ProfilerStep#N`` stay steps."""
    named = (
        (pl.col("ph") == "X")
        & ~pl.col("tid").cast(pl.String).str.ends_with(START_END_LANE)
        & pl.col("name").str.contains(pattern)
        & ~pl.col("name").str.contains(STEP_RANGE)
    )
    marked = ranges.with_columns(named.alias("_step"))
    count = int(marked["_step"].sum())
    if not count:
        warnings.append(f"--step-range {pattern!r} names no NVTX push/pop range: no steps from it")
        return ranges
    if ranges["name"].str.contains(STEP_RANGE).any():
        warnings.append(
            f"the export has ProfilerStep#N ranges besides the {count:,} that --step-range {pattern!r} names: "
            "both are steps"
        )
    number = pl.col("ts").rank("ordinal").over("pid", "_step").cast(pl.Int64) - 1
    return marked.with_columns(
        pl.when("_step").then(pl.lit("ProfilerStep#") + number.cast(pl.String)).otherwise("name").alias("name"),
        pl.when("_step").then(pl.lit("user_annotation").cast(KIND)).otherwise("kind").alias("kind"),
    ).drop("_step")


def _unique_correlations(
    gpu: pl.DataFrame, calls: pl.DataFrame, warnings: list[str]
) -> tuple[pl.DataFrame, Callable[[pl.DataFrame], pl.DataFrame]]:
    """The GPU events with ``correlation``: nsys's id, made unique across processes (module
    docstring), and the function that gives a frame of these ``calls`` (or of all their columns)
    theirs; GPU rows that name no process take the only process's, or stay unlinked. Both drop
    ``_correlation`` and ``_proc``."""
    processes = sorted(
        set(calls["_proc"].drop_nulls().unique().to_list()) | set(gpu["_proc"].drop_nulls().unique().to_list())
    )
    unnamed = int(gpu["_proc"].null_count())
    if unnamed and len(processes) == 1:
        gpu = gpu.with_columns(pl.col("_proc").fill_null(processes[0]))
    elif unnamed and len(processes) > 1:
        warnings.append(
            f"{unnamed:,} GPU rows name no process (no globalPid) in an export of {len(processes)} processes: "
            "not linked to a launching call"
        )
        gpu = gpu.with_columns(
            pl.when(pl.col("_proc").is_not_null()).then(pl.col("_correlation")).alias("_correlation")
        )
    if len(processes) <= 1:

        def same(frame: pl.DataFrame) -> pl.DataFrame:
            return frame.with_columns(pl.col("_correlation").alias("correlation")).drop("_correlation", "_proc")

        return same(gpu), same
    number = pl.DataFrame(
        {"_proc": processes, "_number": list(range(len(processes)))},
        schema={"_proc": pl.Int64(), "_number": pl.Int64()},
    )
    bounds = [frame["_correlation"].drop_nulls() for frame in (gpu, calls)]
    values = [int(value) for column in bounds if column.len() for value in (column.min(), column.max())]  # type: ignore[arg-type]
    largest, smallest = max(values, default=0), min(values, default=0)
    if smallest >= 0 and largest < PROCESS_SHIFT:

        def combined(frame: pl.DataFrame) -> pl.DataFrame:
            # A lookup of the one column (a join would gather every column of the frame again).
            process = pl.col("_proc").replace_strict(number["_proc"], number["_number"], default=None)
            return frame.with_columns(
                (process.cast(pl.Int64) * PROCESS_SHIFT + pl.col("_correlation")).alias("correlation")
            ).drop("_correlation", "_proc")

        return combined(gpu), combined
    # Ids beyond 32 bits: each (process, id) pair numbered instead, in order.
    pairs = (
        pl.concat([frame.select("_proc", "_correlation") for frame in (gpu, calls)])
        .drop_nulls()
        .unique()
        .sort("_proc", "_correlation")
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("correlation"))
    )
    warnings.append("correlation ids exceed 32 bits: numbered per (process, id) pair")

    def numbered(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.join(pairs, on=["_proc", "_correlation"], how="left", maintain_order="left").drop(
            "_correlation", "_proc"
        )

    return numbered(gpu), numbered


def _name_events(export: Export, calls: pl.DataFrame, ranges: pl.DataFrame, strings: pl.DataFrame) -> pl.DataFrame:
    """``process_name`` and ``thread_name`` metadata events for the host threads the export uses."""
    # Each frame's threads first (a few), then together: no copy of every row's pid and tid.
    used = pl.concat(
        [frame.select("pid", "tid").unique(maintain_order=True).cast(pl.String) for frame in (calls, ranges)]
    ).unique(maintain_order=True)
    if used.height == 0:
        return pl.DataFrame()
    processes = (
        used.select("pid")
        .unique(maintain_order=True)
        .join(process_names(export), on="pid", how="inner", maintain_order="left")
    )
    threads = _names(strings, thread_names(export), "nameId", "label").select(
        _process("globalTid").cast(pl.String).alias("pid"), _thread("globalTid").cast(pl.String).alias("tid"), "label"
    )
    threads = used.join(
        threads.unique(["pid", "tid"], keep="first", maintain_order=True),
        on=["pid", "tid"],
        how="inner",
        maintain_order="left",
    )
    meta = [pl.lit("M").alias("ph"), pl.lit("metadata").alias("kind"), pl.lit(0.0).alias("ts")]
    return pl.concat(
        [
            processes.select(*meta, pl.lit("process_name").alias("name"), "pid", pl.lit("0").alias("tid"), "label"),
            threads.select(*meta, pl.lit("thread_name").alias("name"), "pid", "tid", "label"),
        ],
        how="diagonal_relaxed",
    )


def _as_schema(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """The frames as one events frame with exactly :data:`EVENT_SCHEMA`'s columns and types."""
    if not frames:
        return pl.DataFrame(schema=EVENT_SCHEMA)
    # Each frame conformed on its own, then stacked: a column no frame holds stays one null
    # scalar per frame (no buffer of nulls per row, which a diagonal concat would write for each).
    # ``frames`` is emptied as it goes: a frame's text columns are let go once they are categorical.
    conformed = []
    while frames:
        frame = frames.pop(0)
        conformed.append(
            frame.select(
                (pl.col(column) if column in frame.columns else pl.lit(None)).cast(dtype).alias(column)
                for column, dtype in EVENT_SCHEMA.items()
            )
        )
        del frame
    return pl.concat(conformed, how="vertical", rechunk=False)
