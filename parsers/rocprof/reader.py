"""A rocprofv3 JSON document read into the events frame (:data:`profview.parsers.schema.EVENT_SCHEMA`).

Each record becomes the event a Kineto trace would hold for the same work, so every view reads it
unchanged:

- a kernel dispatch: a ``kernel`` event named by its ``kernel_symbols`` entry
  (``formatted_kernel_name``, the name rocprofv3's own CSV and Perfetto outputs use; the
  ``--kernel-rename`` region name where the run renamed kernels), on the GPU's process (``pid``:
  the GPU's index among the agents, ``logical_node_type_id``) and its HIP stream's lane (``tid``),
  with the work-group size as ``block``, the work-groups per dimension as ``grid`` (rocprofv3
  records the grid in work-items: ``ceil(grid_size / workgroup_size)`` work-groups run), the LDS
  bytes as ``shared_mem``;
- a memory copy: a ``memcpy`` event named by its direction (``MEMORY_COPY_HOST_TO_DEVICE``) with
  its bytes, on the GPU end's device;
- a HIP API call: a ``runtime`` event, an HSA call a ``driver`` event, an RCCL call a ``cpu_op``
  (an operator, ``collective`` its name), all on the process's thread;
- a roctx range: a ``user_annotation`` named by its message, a ``roctxMarkA`` an instant;
- the internal correlation id links a call to the GPU work it enqueued (``correlation``).

Times are nanoseconds in the file, microseconds in the frame (durations from the integer
difference, so no rounding of the start reaches them).  What the file cannot give is named in
``missing`` (no HIP API records: no launches, no operators), the record kinds not read in one
warning.  Any problem with the document is a :class:`~profview.errors.ProfviewError` of one line.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from typing import Any

import msgspec
import polars as pl

from ...errors import ProfviewError
from ..schema import EVENT_SCHEMA
from .layout import Agent, Dispatch, Document, MemoryCopy, Process, Timed
from .sniff import TOOL_KEY

FORMAT = "rocprofv3 JSON"
#: Agent types (rocprofiler_agent_type_t).
GPU_AGENT = 2
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Correlation ids are unique within one process: a second process's are offset by this much.
PROCESS_ID_STRIDE = 1 << 48
#: The record kinds counted, not read (``buffer_records`` keys), as a warning says.
UNREAD_KINDS = (
    "memory_allocation",
    "scratch_memory",
    "rocdecode_api",
    "rocjpeg_api",
    "pc_sample_host_trap",
    "pc_sample_stochastic",
    "ompt",
    "kfd_events",
)
#: Marker kinds whose records are ranges or marks with a message.
_MESSAGE_MARKERS = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")


@dataclass
class RocprofTrace:
    """The events of a rocprofv3 document, its metadata, what it lacks and what was noticed."""

    events: pl.DataFrame
    metadata: dict[str, Any]
    missing: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    format: str = FORMAT


def decode(data: bytes | bytearray | memoryview | mmap.mmap, path: str) -> Document:
    """The document, or one line saying why it cannot be read (cut, not JSON, another layout)."""
    try:
        return msgspec.json.decode(data, type=Document)
    except msgspec.ValidationError as exc:
        raise ProfviewError(path, f"a rocprofv3 JSON document profview cannot read ({exc})") from None
    except msgspec.DecodeError as exc:
        problem = "it is cut short" if "truncated" in str(exc) else f"it is not valid JSON ({exc})"
        raise ProfviewError(path, f"a rocprofv3 JSON document that cannot be read: {problem}") from None


def read_rocprof(data: bytes | bytearray | memoryview | mmap.mmap, path: str) -> RocprofTrace:
    """Read a rocprofv3 JSON document's bytes (decompressed) into a :class:`RocprofTrace`."""
    document = decode(data, path)
    if not document.processes:
        raise ProfviewError(path, f"a rocprofv3 JSON document whose {TOOL_KEY!r} list holds no process")
    columns = _Columns()
    warnings: list[str] = []
    devices: list[dict[str, Any]] = []
    for index, process in enumerate(document.processes):
        _read_process(process, index * PROCESS_ID_STRIDE, columns, warnings, path)
        known = {d["id"] for d in devices}
        devices += [d for d in _device_properties(process.agents) if d["id"] not in known]
    events = columns.frame()
    if events.height == 0:
        raise ProfviewError(
            path,
            "a rocprofv3 JSON document with no records profview reads (no kernel dispatches, "
            "API calls, markers or memory copies)",
        )
    first = document.processes[0]
    metadata: dict[str, Any] = {
        "deviceProperties": devices,
        "rocprofv3": {
            "pid": [p.metadata.pid for p in document.processes],
            "hostname": first.metadata.node.hostname,
            "command": " ".join(first.metadata.command),
            "init_time_ns": first.metadata.init_time,
            "fini_time_ns": first.metadata.fini_time,
        },
    }
    unread = _unread(document.processes)
    if unread:
        warnings.append(f"rocprofv3 records not read: {unread}")
    return RocprofTrace(events, metadata, _missing(document.processes), warnings)


class _Columns:
    """The events frame's columns, filled a record at a time."""

    NAMES = (
        "ph",
        "cat",
        "kind",
        "name",
        "pid",
        "tid",
        "ts",
        "dur",
        "correlation",
        "stream",
        "device",
        "grid",
        "block",
        "shared_mem",
        "bytes",
        "collective",
    )

    def __init__(self) -> None:
        self.values: dict[str, list[Any]] = {name: [] for name in self.NAMES}
        self.negative = 0

    def add(
        self,
        record: Timed,
        *,
        ph: str,
        cat: str,
        kind: str,
        name: str,
        pid: str,
        tid: str,
        correlation: int | None,
        **extra: Any,
    ) -> None:
        """One event; the columns not given are null."""
        span = record.end_timestamp - record.start_timestamp
        if span < 0:
            self.negative += 1
            span = 0
        row = {
            "ph": ph,
            "cat": cat,
            "kind": kind,
            "name": name,
            "pid": pid,
            "tid": tid,
            "ts": record.start_timestamp / 1000.0,
            "dur": None if ph == "i" else span / 1000.0,
            "correlation": correlation,
            **extra,
        }
        for column, values in self.values.items():
            value = row.get(column)
            # An id or size outside Int64 (a damaged file) is unknown, not an overflow.
            values.append(None if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX else value)

    def frame(self) -> pl.DataFrame:
        """The events frame, every documented column in order (those no record fills null)."""
        given = pl.DataFrame(
            self.values, schema={name: _STRING_OF.get(name, EVENT_SCHEMA[name]) for name in self.NAMES}
        )
        return given.select(
            (pl.col(name) if name in self.values else pl.lit(None)).cast(dtype).alias(name)
            for name, dtype in EVENT_SCHEMA.items()
        )


#: Columns filled as text first (Categorical and Enum columns are cast once, at the end).
_STRING_OF: dict[str, pl.DataType] = {
    name: pl.String() for name in ("ph", "cat", "kind", "pid", "tid", "grid", "block")
}


def _read_process(process: Process, offset: int, columns: _Columns, warnings: list[str], path: str) -> None:
    """Every record of one process into ``columns``; what it could not name into ``warnings``."""
    names = _OperationNames(process)
    pid = str(process.metadata.pid)
    gpus = {a.id.handle: a.logical_node_type_id for a in process.agents if a.type == GPU_AGENT}

    def correlation(record: Timed) -> int | None:
        internal = record.correlation_id.internal
        return internal + offset if internal > 0 else None

    buffers = process.buffer_records
    for kind, records in (("runtime", buffers.hip_api), ("driver", buffers.hsa_api)):
        for record in records:
            columns.add(
                record,
                ph="X",
                cat=names.kind(record.kind),
                kind=kind,
                name=names.operation(record),
                pid=pid,
                tid=str(record.thread_id),
                correlation=correlation(record),
            )
    for record in buffers.rccl_api:
        operation = names.operation(record)
        columns.add(
            record,
            ph="X",
            cat=names.kind(record.kind),
            kind="cpu_op",
            name=operation,
            pid=pid,
            tid=str(record.thread_id),
            correlation=correlation(record),
            collective=operation,
        )
    messages = {item.key: item.value for item in process.strings.marker_api}
    unnamed_markers = 0
    for record in buffers.marker_api:
        domain, operation = names.kind(record.kind), names.operation(record)
        if domain not in _MESSAGE_MARKERS or operation == "roctxGetThreadId":
            columns.add(
                record,
                ph="X",
                cat=domain,
                kind="other",
                name=operation,
                pid=pid,
                tid=str(record.thread_id),
                correlation=correlation(record),
            )
            continue
        message = messages.get(record.correlation_id.internal)
        if message is None:
            unnamed_markers += 1
        mark = operation == "roctxMarkA"
        columns.add(
            record,
            ph="i" if mark else "X",
            cat=domain,
            kind="instant" if mark else "user_annotation",
            name=operation if message is None else message,
            pid=pid,
            tid=str(record.thread_id),
            correlation=correlation(record),
        )
    if unnamed_markers:
        warnings.append(
            f"{unnamed_markers:,} roctx records have no message in strings.marker_api: "
            "named by their call (roctxRangePushA)"
        )
    _read_dispatches(process, buffers.kernel_dispatch, gpus, names, columns, correlation, warnings, path)
    unknown_agent = 0
    for copy in buffers.memory_copy:
        device = gpus.get(copy.dst_agent_id.handle, gpus.get(copy.src_agent_id.handle))
        unknown_agent += device is None
        columns.add(
            copy,
            ph="X",
            cat=names.kind(copy.kind),
            kind="memcpy",
            name=names.operation(copy),
            pid="unknown device" if device is None else str(device),
            tid=_lane(copy),
            device=device,
            stream=_stream(copy),
            correlation=correlation(copy),
            bytes=copy.bytes,
        )
    if unknown_agent:
        warnings.append(f"{unknown_agent:,} memory copies name no GPU agent the file lists: their device is unknown")
    if columns.negative:
        warnings.append(f"{columns.negative:,} events with a negative duration were counted as 0")


def _read_dispatches(
    process: Process,
    dispatches: list[Dispatch],
    gpus: dict[int, int],
    names: _OperationNames,
    columns: _Columns,
    correlation: Any,
    warnings: list[str],
    path: str,
) -> None:
    """The kernel dispatches of one process, each named through ``kernel_symbols``."""
    if not dispatches:
        return
    if process.kernel_symbols is None:
        raise ProfviewError(
            path,
            f"a rocprofv3 JSON document without kernel_symbols: its {len(dispatches):,} "
            "kernel dispatches cannot be named",
        )
    symbols = {s.kernel_id: s for s in process.kernel_symbols}
    renames = (
        {item.key: item.value for item in process.strings.correlation_id.external}
        if process.metadata.config.kernel_rename
        else {}
    )
    unnamed: set[int] = set()
    unnamed_count = unknown_agent = 0
    for record in dispatches:
        info = record.dispatch_info
        symbol = symbols.get(info.kernel_id)
        name = renames.get(record.correlation_id.external) if renames else None
        if name is None and symbol is not None:
            name = symbol.formatted_kernel_name or symbol.demangled_kernel_name or symbol.kernel_name or None
        if name is None:
            unnamed.add(info.kernel_id)
            unnamed_count += 1
            name = f"kernel id {info.kernel_id} (not in kernel_symbols)"
        device = gpus.get(info.agent_id.handle)
        unknown_agent += device is None
        columns.add(
            record,
            ph="X",
            cat=names.kind(record.kind),
            kind="kernel",
            name=name,
            pid="unknown device" if device is None else str(device),
            tid=_lane(record),
            device=device,
            stream=_stream(record),
            correlation=correlation(record),
            grid=_shape(
                _groups(info.grid_size.x, info.workgroup_size.x),
                _groups(info.grid_size.y, info.workgroup_size.y),
                _groups(info.grid_size.z, info.workgroup_size.z),
            ),
            block=_shape(info.workgroup_size.x, info.workgroup_size.y, info.workgroup_size.z),
            shared_mem=info.group_segment_size,
        )
    if unnamed_count:
        ids = ", ".join(str(i) for i in sorted(unnamed)[:5]) + (" ..." if len(unnamed) > 5 else "")
        warnings.append(
            f"{unnamed_count:,} kernel dispatches name {len(unnamed):,} kernel ids that kernel_symbols "
            f"does not hold ({ids}): named 'kernel id N (not in kernel_symbols)'"
        )
    if unknown_agent:
        warnings.append(
            f"{unknown_agent:,} kernel dispatches ran on an agent the file does not list as a GPU: "
            "their device is unknown"
        )


def _groups(items: int, group: int) -> int | None:
    """Work-groups along one dimension: ``ceil(items / group)`` (None where the group size is 0)."""
    return -(-items // group) if group > 0 else None


def _shape(x: int | None, y: int | None, z: int | None) -> str | None:
    """A launch shape as Kineto writes it, ``[x, y, z]``."""
    return None if x is None or y is None or z is None else f"[{x}, {y}, {z}]"


def _stream(record: Dispatch | MemoryCopy) -> int | None:
    """The HIP stream handle of GPU work, where the file records one."""
    return record.stream_id.handle if record.stream_id is not None else None


def _lane(record: Dispatch | MemoryCopy) -> str:
    """The lane (``tid``) of GPU work: its HIP stream, else its hardware queue, else ``copies``."""
    if record.stream_id is not None:
        return str(record.stream_id.handle)
    if isinstance(record, Dispatch):
        return f"queue {record.dispatch_info.queue_id.handle}"
    return "copies"


class _OperationNames:
    """Kind and operation names from ``strings.buffer_records`` (a number where the file has none)."""

    def __init__(self, process: Process) -> None:
        self.kinds = process.strings.buffer_records

    def kind(self, kind: int) -> str:
        """The kind's name (``HIP_RUNTIME_API``)."""
        if 0 <= kind < len(self.kinds) and self.kinds[kind].kind:
            return self.kinds[kind].kind
        return f"kind {kind}"

    def operation(self, record: Timed) -> str:
        """The operation's name (``hipLaunchKernel``), or ``KIND operation N``."""
        if 0 <= record.kind < len(self.kinds):
            operations = self.kinds[record.kind].operations
            if 0 <= record.operation < len(operations) and operations[record.operation]:
                return operations[record.operation]
        return f"{self.kind(record.kind)} operation {record.operation}"


def _device_properties(agents: list[Agent]) -> list[dict[str, Any]]:
    """The GPU agents as Kineto's ``deviceProperties`` entries (``id`` the GPU index, ``name``
    the product name, ``numSms`` the compute units), so the peaks and the device lines read them."""
    listed = []
    for agent in agents:
        if agent.type != GPU_AGENT:
            continue
        entry: dict[str, Any] = {
            "id": agent.logical_node_type_id,
            "name": agent.product_name or agent.name,
            "gcnArchName": agent.name,
            "numSms": agent.cu_count,
            "warpSize": agent.wave_front_size,
        }
        if agent.max_engine_clk_fcompute:
            entry["clockRateMHz"] = agent.max_engine_clk_fcompute
        if agent.local_mem_size:
            entry["totalGlobalMem"] = agent.local_mem_size
        listed.append(entry)
    return listed


def _missing(processes: list[Process]) -> dict[str, str]:
    """The views a run without HIP API records (or without kernel dispatches) cannot fill, and why."""

    def total(kind: str) -> int:
        return sum(len(getattr(p.buffer_records, kind)) for p in processes)

    missing: dict[str, str] = {}
    if not total("hip_api"):
        missing["launches"] = (
            "this rocprofv3 run recorded no HIP API calls, so no kernel is linked to a launching "
            "call (record with rocprofv3 --hip-trace)"
        )
        if not (total("marker_api") or total("rccl_api")):
            missing["ops"] = (
                "this rocprofv3 run recorded no HIP API calls, roctx ranges or RCCL calls: no operators "
                "(record with rocprofv3 --hip-trace --marker-trace)"
            )
    if not total("kernel_dispatch"):
        missing["kernels"] = "this rocprofv3 run recorded no kernel dispatches (record with rocprofv3 --kernel-trace)"
    return missing


def _unread(processes: list[Process]) -> str:
    """``12 memory_allocation, 3 scratch_memory`` for the record kinds present but not read."""
    counts = {kind: sum(len(getattr(p.buffer_records, kind)) for p in processes) for kind in UNREAD_KINDS}
    return ", ".join(f"{count:,} {kind}" for kind, count in counts.items() if count)
