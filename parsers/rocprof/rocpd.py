"""A rocprofv3 rocpd database (SQLite, rocprofv3's default output) read into the same events frame
as a rocprofv3 JSON document (:mod:`profview.parsers.rocprof.reader`), so every view reads it
unchanged.

The layout is rocprofiler-sdk's rocpd schema, version 3 (``rocpd_tables.sql`` and
``data_views.sql`` under ``source/share/rocprofiler-sdk-rocpd/``): each table carries the run's
GUID as a suffix (``rocpd_kernel_dispatch_<uuid>``), with a view of the plain name over it; either
is read.  Rows name their node, process, thread and agent by id (``nid``, ``pid``, ``tid``,
``agent_id``), their category and correlation id through ``rocpd_event``, their names through
``rocpd_string``.  What is read, as the JSON reader reads it:

- ``rocpd_kernel_dispatch``: a ``kernel`` event named by its kernel symbol (``formatted_kernel_name``
  from the symbol's ``extdata`` where it is there, else ``display_name``, else ``kernel_name``), on
  its GPU (the agent's ``type_index``, as the JSON's ``logical_node_type_id``) and stream lane, with
  the work-group size as ``block``, the work-groups per dimension as ``grid`` and the LDS bytes;
- ``rocpd_region``: a HIP call a ``runtime`` event, an HSA call a ``driver`` event, an RCCL call an
  operator, a roctx range a ``user_annotation`` named by its message (the region's name), on the
  process's OS pid and thread;
- ``rocpd_memory_copy``: a ``memcpy`` event named by its direction, with its bytes;
- ``rocpd_info_agent``: the GPUs, as ``deviceProperties`` for the peaks.

The correlation id links a call to the work it enqueued within one process (a second process's are
offset, as in the JSON reader).  The database is opened read-only and immutable: never written,
never locked.  A table or column the schema needs that is not there, or any SQLite failure, is one
:class:`~profview.errors.ProfviewError` line naming it.
"""

from __future__ import annotations

import os
import re
import sqlite3
from typing import Any
from urllib.parse import quote

import orjson

from ...errors import ProfviewError
from .layout import Timed
from .reader import PROCESS_ID_STRIDE, RocprofTrace, _Columns, _groups, _shape

FORMAT = "rocprofv3 rocpd database"
#: The tables read, with the columns each must have.
REQUIRED: dict[str, tuple[str, ...]] = {
    "rocpd_string": ("id", "string"),
    "rocpd_event": ("id", "category_id", "correlation_id"),
    "rocpd_info_agent": ("id", "type", "type_index"),
    "rocpd_info_process": ("id", "pid"),
    "rocpd_info_thread": ("id", "tid"),
}
OPTIONAL: dict[str, tuple[str, ...]] = {
    "rocpd_info_kernel_symbol": ("id", "kernel_name", "display_name"),
    "rocpd_kernel_dispatch": (
        "pid",
        "agent_id",
        "kernel_id",
        "queue_id",
        "stream_id",
        "start",
        "end",
        "workgroup_size_x",
        "workgroup_size_y",
        "workgroup_size_z",
        "grid_size_x",
        "grid_size_y",
        "grid_size_z",
        "event_id",
    ),
    "rocpd_region": ("pid", "tid", "start", "end", "name_id", "event_id"),
    "rocpd_memory_copy": ("pid", "start", "end", "name_id", "dst_agent_id", "src_agent_id", "size", "event_id"),
}
#: Region categories read as runtime calls, driver calls and operators; the rest (roctx) as markers.
_RUNTIME = re.compile(r"HIP_(RUNTIME|COMPILER)_API")
_DRIVER = re.compile(r"HSA_\w*API")
_MARKERS = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")


class _Database:
    """One rocpd database open read-only: the name each table is read under, and its columns."""

    def __init__(self, path: str) -> None:
        self.path = path
        uri = f"file:{quote(os.path.abspath(path))}?mode=ro&immutable=1"
        try:
            self.connection = sqlite3.connect(uri, uri=True)
            rows = self.connection.execute(
                "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"
            ).fetchall()
        except sqlite3.Error as exc:
            raise self.error(exc) from None
        self.names = {str(name): str(kind) for name, kind in rows}

    def error(self, exc: BaseException) -> ProfviewError:
        """One line for an SQLite failure."""
        return ProfviewError(self.path, f"a rocpd database that cannot be read ({exc})")

    def table(self, base: str, columns: tuple[str, ...], required: bool) -> str | None:
        """The name ``base`` is read under (its view, else its one GUID-suffixed table), checked
        for ``columns``; None when an optional table is absent."""
        if base in self.names:
            found = base
        else:
            suffixed = sorted(n for n in self.names if re.fullmatch(re.escape(base) + r"_[0-9A-Fa-f_]+", n))
            if len(suffixed) > 1:
                raise ProfviewError(
                    self.path,
                    f"a rocpd database with {len(suffixed)} {base} tables and no {base} view over them: "
                    "profview reads one run's tables",
                )
            if not suffixed:
                if required:
                    raise ProfviewError(self.path, f"a rocpd database without a {base} table")
                return None
            found = suffixed[0]
        present = {str(row[1]) for row in self.query(f'PRAGMA table_info("{found}")')}
        absent = [c for c in columns if c not in present]
        if absent:
            raise ProfviewError(
                self.path,
                f"a rocpd database whose {base} has no {', '.join(absent)} column"
                f"{'s' if len(absent) > 1 else ''} (a rocpd schema other than version 3)",
            )
        return found

    def check_times(self, base: str, table: str) -> None:
        """Refuse a table whose rows lack a start or end time (the schema has both NOT NULL, so such
        a row is damage, and cannot be placed in time)."""
        ((untimed,),) = self.query(
            f"SELECT COUNT(*) FROM \"{table}\" WHERE typeof(start) != 'integer' OR typeof(\"end\") != 'integer'"
        )
        if untimed:
            rows = f"{untimed:,} row{'s' if untimed != 1 else ''}"
            raise ProfviewError(
                self.path, f"a rocpd database whose {base} has {rows} without an integer start or end time"
            )

    def columns(self, table: str) -> set[str]:
        """The columns of ``table``."""
        return {str(row[1]) for row in self.query(f'PRAGMA table_info("{table}")')}

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Every row of ``sql``; a failure is one line."""
        try:
            return self.connection.execute(sql).fetchall()
        except sqlite3.Error as exc:
            raise self.error(exc) from None

    def close(self) -> None:
        """Let go of the database."""
        self.connection.close()


def read_rocpd(path: str) -> RocprofTrace:
    """Read the rocpd database at ``path`` into a :class:`RocprofTrace` (format ``FORMAT``)."""
    database = _Database(path)
    try:
        return _read(database)
    finally:
        database.close()


def _read(db: _Database) -> RocprofTrace:
    """The events, metadata and gaps of an open database."""
    tables = {base: db.table(base, cols, True) for base, cols in REQUIRED.items()}
    tables |= {base: db.table(base, cols, False) for base, cols in OPTIONAL.items()}
    strings = {int(i): str(s) for i, s in db.query(f'SELECT id, string FROM "{tables["rocpd_string"]}"')}
    events = {
        int(i): (strings.get(c) if c is not None else None, corr)
        for i, c, corr in db.query(f'SELECT id, category_id, correlation_id FROM "{tables["rocpd_event"]}"')
    }
    processes = db.query(f'SELECT id, pid FROM "{tables["rocpd_info_process"]}" ORDER BY id')
    os_pid = {int(i): str(p) for i, p in processes}
    offset = {int(i): index * PROCESS_ID_STRIDE for index, (i, _) in enumerate(processes)}
    threads = {int(i): str(t) for i, t in db.query(f'SELECT id, tid FROM "{tables["rocpd_info_thread"]}"')}
    gpus, devices = _agents(db, tables["rocpd_info_agent"] or "")
    columns = _Columns()
    warnings: list[str] = []

    def linked(event_id: Any, process: Any) -> tuple[str, int | None]:
        category, corr = events.get(event_id, (None, None)) if event_id is not None else (None, None)
        if not isinstance(corr, int) or corr <= 0:
            return category or "", None
        return category or "", corr + offset.get(process, 0)

    counts = {"runtime": 0, "markers": 0, "kernels": 0}
    for base in ("rocpd_region", "rocpd_kernel_dispatch", "rocpd_memory_copy"):
        if tables[base]:
            db.check_times(base, str(tables[base]))
    if tables["rocpd_region"]:
        _read_regions(db, tables["rocpd_region"], strings, os_pid, threads, linked, columns, counts)
    if tables["rocpd_kernel_dispatch"]:
        _read_dispatches(db, tables, gpus, linked, columns, counts, warnings)
    if tables["rocpd_memory_copy"]:
        _read_copies(db, tables["rocpd_memory_copy"], strings, gpus, linked, columns, warnings)
    frame = columns.frame()
    if frame.height == 0:
        raise ProfviewError(
            db.path,
            "a rocpd database with no records profview reads (no kernel dispatches, API calls, markers "
            "or memory copies)",
        )
    if columns.negative:
        warnings.append(f"{columns.negative:,} events with a negative duration were counted as 0")
    metadata: dict[str, Any] = {
        "deviceProperties": devices,
        "rocprofv3": {"pid": [int(p) for _, p in processes], "database": "rocpd"},
    }
    return RocprofTrace(frame, metadata, _missing(counts), warnings, format=FORMAT)


def _agents(db: _Database, table: str) -> tuple[dict[int, int], list[dict[str, Any]]]:
    """The GPU agents: id to GPU index (``type_index``), and their ``deviceProperties`` entries
    (the compute units, wave size, clock and memory from ``extdata`` where it holds them)."""
    have = db.columns(table)
    wanted = [c for c in ("product_name", "model_name", "generic_name", "name", "extdata") if c in have]
    select = ", ".join(["id", "type_index", *(f'"{c}"' for c in wanted)])
    gpus: dict[int, int] = {}
    devices: list[dict[str, Any]] = []
    for row in db.query(f"SELECT {select} FROM \"{table}\" WHERE type = 'GPU' ORDER BY type_index"):
        agent_id, index, *rest = row
        values = dict(zip(wanted, rest, strict=True))
        if not isinstance(index, int):
            continue
        gpus[int(agent_id)] = index
        extra = _json_object(values.get("extdata"))
        arch = values.get("generic_name") or values.get("name") or extra.get("name")
        entry: dict[str, Any] = {
            "id": index,
            "name": values.get("product_name") or values.get("model_name") or arch,
            "gcnArchName": arch,
            "numSms": extra.get("cu_count"),
            "warpSize": extra.get("wave_front_size"),
        }
        if extra.get("max_engine_clk_fcompute"):
            entry["clockRateMHz"] = extra["max_engine_clk_fcompute"]
        if extra.get("local_mem_size"):
            entry["totalGlobalMem"] = extra["local_mem_size"]
        if index not in {d["id"] for d in devices}:
            devices.append(entry)
    return gpus, devices


def _json_object(value: Any) -> dict[str, Any]:
    """``extdata`` as a dict; empty when it is not JSON text of an object (binary JSONB included)."""
    if not isinstance(value, (str, bytes)):
        return {}
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _span(start: Any, end: Any) -> Timed:
    """A row's start and end (ns) as the record :meth:`_Columns.add` reads."""
    return Timed(kind=0, operation=0, start_timestamp=int(start), end_timestamp=int(end))


def _read_regions(
    db: _Database,
    table: str,
    strings: dict[int, str],
    os_pid: dict[int, str],
    threads: dict[int, str],
    linked: Any,
    columns: _Columns,
    counts: dict[str, int],
) -> None:
    """The host regions: API calls and roctx ranges."""
    rows = db.query(f'SELECT pid, tid, start, "end", name_id, event_id FROM "{table}"')
    for process, thread, start, end, name_id, event_id in rows:
        category, corr = linked(event_id, process)
        name = strings.get(name_id, f"string {name_id} (not in rocpd_string)")
        common = {
            "ph": "X",
            "cat": category or "unknown category",
            "name": name,
            "pid": os_pid.get(process, f"process {process}"),
            "tid": threads.get(thread, f"thread {thread}"),
            "correlation": corr,
        }
        if _RUNTIME.fullmatch(category):
            counts["runtime"] += 1
            columns.add(_span(start, end), kind="runtime", **common)
        elif _DRIVER.fullmatch(category):
            columns.add(_span(start, end), kind="driver", **common)
        elif category == "RCCL_API":
            counts["markers"] += 1
            columns.add(_span(start, end), kind="cpu_op", collective=name, **common)
        elif category in _MARKERS:
            counts["markers"] += 1
            columns.add(_span(start, end), kind="user_annotation", **common)
        else:
            columns.add(_span(start, end), kind="other", **common)


def _read_dispatches(
    db: _Database,
    tables: dict[str, str | None],
    gpus: dict[int, int],
    linked: Any,
    columns: _Columns,
    counts: dict[str, int],
    warnings: list[str],
) -> None:
    """The kernel dispatches, each named through its kernel symbol."""
    table = tables["rocpd_kernel_dispatch"]
    symbols_table = tables["rocpd_info_kernel_symbol"]
    rows = db.query(
        'SELECT pid, agent_id, kernel_id, queue_id, stream_id, start, "end", workgroup_size_x, workgroup_size_y, '
        "workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, "
        f"{'group_segment_size' if 'group_segment_size' in db.columns(str(table)) else 'NULL'}, event_id "
        f'FROM "{table}"'
    )
    if not rows:
        return
    if symbols_table is None:
        raise ProfviewError(
            db.path, f"a rocpd database without rocpd_info_kernel_symbol: its {len(rows):,} dispatches cannot be named"
        )
    has_extdata = "extdata" in db.columns(symbols_table)
    names: dict[int, str] = {}
    for row in db.query(
        f'SELECT id, kernel_name, display_name{", extdata" if has_extdata else ""} FROM "{symbols_table}"'
    ):
        formatted = _json_object(row[3]).get("formatted_kernel_name") if has_extdata else None
        name = formatted or row[2] or row[1]
        if isinstance(name, str) and name:
            names[int(row[0])] = name
    unnamed: set[int] = set()
    unnamed_count = unknown_agent = 0
    for process, agent, kernel, queue, stream, start, end, wx, wy, wz, gx, gy, gz, lds, event_id in rows:
        category, corr = linked(event_id, process)
        name = names.get(kernel)
        if name is None:
            unnamed.add(kernel)
            unnamed_count += 1
            name = f"kernel id {kernel} (not in rocpd_info_kernel_symbol)"
        device = gpus.get(agent)
        unknown_agent += device is None
        counts["kernels"] += 1
        columns.add(
            _span(start, end),
            ph="X",
            cat=category or "KERNEL_DISPATCH",
            kind="kernel",
            name=name,
            pid="unknown device" if device is None else str(device),
            tid=str(stream) if stream is not None else f"queue {queue}",
            device=device,
            stream=stream,
            correlation=corr,
            grid=_shape(_groups(gx, wx), _groups(gy, wy), _groups(gz, wz)),
            block=_shape(wx, wy, wz),
            shared_mem=lds,
        )
    if unnamed_count:
        ids = ", ".join(str(i) for i in sorted(unnamed)[:5]) + (" ..." if len(unnamed) > 5 else "")
        warnings.append(
            f"{unnamed_count:,} kernel dispatches name {len(unnamed):,} kernel ids that rocpd_info_kernel_symbol "
            f"does not hold ({ids}): named 'kernel id N (not in rocpd_info_kernel_symbol)'"
        )
    if unknown_agent:
        warnings.append(
            f"{unknown_agent:,} kernel dispatches ran on an agent the database does not list as a GPU: "
            "their device is unknown"
        )


def _read_copies(
    db: _Database,
    table: str,
    strings: dict[int, str],
    gpus: dict[int, int],
    linked: Any,
    columns: _Columns,
    warnings: list[str],
) -> None:
    """The memory copies, on the GPU end's device."""
    has_stream = "stream_id" in db.columns(table)
    rows = db.query(
        f'SELECT pid, start, "end", name_id, dst_agent_id, src_agent_id, size, event_id, '
        f'{"stream_id" if has_stream else "NULL"} FROM "{table}"'
    )
    unknown_agent = 0
    for process, start, end, name_id, dst, src, size, event_id, stream in rows:
        category, corr = linked(event_id, process)
        device = gpus.get(dst, gpus.get(src))
        unknown_agent += device is None
        columns.add(
            _span(start, end),
            ph="X",
            cat=category or "MEMORY_COPY",
            kind="memcpy",
            name=strings.get(name_id, f"string {name_id} (not in rocpd_string)"),
            pid="unknown device" if device is None else str(device),
            tid="copies" if stream is None else str(stream),
            device=device,
            stream=stream,
            correlation=corr,
            bytes=size,
        )
    if unknown_agent:
        warnings.append(
            f"{unknown_agent:,} memory copies name no GPU agent the database lists: their device is unknown"
        )


def _missing(counts: dict[str, int]) -> dict[str, str]:
    """The views a database without HIP API regions (or without kernel dispatches) cannot fill."""
    missing: dict[str, str] = {}
    if not counts["runtime"]:
        missing["launches"] = (
            "this rocpd database holds no HIP API calls, so no kernel is linked to a launching call "
            "(record with rocprofv3 --hip-trace)"
        )
        if not counts["markers"]:
            missing["ops"] = (
                "this rocpd database holds no HIP API calls, roctx ranges or RCCL calls: no operators "
                "(record with rocprofv3 --hip-trace --marker-trace)"
            )
    if not counts["kernels"]:
        missing["kernels"] = "this rocpd database holds no kernel dispatches (record with rocprofv3 --kernel-trace)"
    return missing
