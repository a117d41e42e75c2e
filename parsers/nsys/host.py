"""Host work of an export: CUDA runtime and driver calls, NVTX ranges and marks, thread names.

Rows keep nsys's ns times and ``globalTid`` (the process is ``(globalTid >> 24) & 0xFFFFFF``, the
thread the low 24 bits); :mod:`.reader` turns them into events.
"""

from __future__ import annotations

import polars as pl

from ...errors import ProfviewError
from .database import Export
from .gpu import process_filter, read_table

RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX_TABLE = "NVTX_EVENTS"
RUNTIME_COLUMNS = ("start", "end", "globalTid", "correlationId", "nameId", "eventClass")
NVTX_NUMBER_COLUMNS = ("start", "end", "eventType", "globalTid", "textId")

#: NVTX event types (``ENUM_NSYS_EVENT_TYPE``): a mark, a push/pop range, a start/end range.
NVTX_MARK, NVTX_PUSH_POP, NVTX_START_END = 34, 59, 60
#: ``eventClass`` of a CUDA driver call in the runtime table (``ENUM_NSYS_EVENT_CLASS``).
DRIVER_CLASS = 1
#: nsys's version suffix of an API name (``cudaLaunchKernel_v7000``), which its reports strip.
VERSION_SUFFIX = r"_v[0-9]+$"


def read_runtime(export: Export, lacking: list[str], process: int | None = None) -> pl.DataFrame:
    """The runtime and driver calls (ns, name ids unresolved); ``process``: that OS process's only."""
    return read_table(export, RUNTIME_TABLE, RUNTIME_COLUMNS, lacking, process, "globalTid")


#: The runtime columns the GPU work needs of the calls (their times' check, threads and ids).
RUNTIME_KEY_COLUMNS = ("start", "end", "globalTid", "correlationId")


def read_runtime_keys(export: Export, lacking: list[str], process: int | None = None) -> pl.DataFrame:
    """:func:`read_runtime` of :data:`RUNTIME_KEY_COLUMNS` alone: no name or class of a call
    (what the table lacks is noted as :func:`read_runtime` notes it)."""
    return read_table(export, RUNTIME_TABLE, RUNTIME_COLUMNS, lacking, process, "globalTid", RUNTIME_KEY_COLUMNS)


def read_nvtx(export: Export, lacking: list[str], process: int | None = None) -> pl.DataFrame:
    """The NVTX events: numbers and the explicit ``text`` (null where a ``textId`` names it);
    ``process``: that OS process's only."""
    query = nvtx_query(export, lacking, process)
    if query is None:
        return pl.DataFrame(schema=NVTX_SCHEMA)
    return export.frame(query, NVTX_SCHEMA, NVTX_TABLE)


#: The columns :func:`read_nvtx` reads, in its query's order.
NVTX_SCHEMA: dict[str, pl.DataType] = {**{column: pl.Int64() for column in NVTX_NUMBER_COLUMNS}, "text": pl.String()}


def nvtx_query(export: Export, lacking: list[str], process: int | None = None) -> str | None:
    """The query of the NVTX events :func:`read_nvtx` reads (each column named as in
    :data:`NVTX_SCHEMA`, ``NULL`` where the table lacks it, which is noted in ``lacking``), or None
    where no event of the table can be read (no table, no start or type, no process to filter by)."""
    held = export.tables.get(NVTX_TABLE)
    if held is None:
        return None
    if "start" not in held or "eventType" not in held:
        absent = [column for column in ("start", "eventType") if column not in held]
        lacking.append(f"{NVTX_TABLE}: {', '.join(absent)} (its ranges are left out)")
        return None
    missing = [column for column in NVTX_SCHEMA if column not in held]
    if missing:
        lacking.append(f"{NVTX_TABLE}: {', '.join(missing)}")
    selected = ", ".join(f'"{column}"' if column in held else f'NULL AS "{column}"' for column in NVTX_SCHEMA)
    wanted = ", ".join(str(kind) for kind in (NVTX_MARK, NVTX_PUSH_POP, NVTX_START_END))
    where = f'"eventType" IN ({wanted})'
    if process is not None:
        if "globalTid" not in held:
            return None  # no range of it can be told to be that process's
        where += f" AND {process_filter('globalTid', process)}"
    return f'SELECT {selected} FROM "{NVTX_TABLE}" WHERE {where}'


def nvtx_threads(export: Export, query: str) -> pl.DataFrame:
    """Per ``globalTid`` and lane (``start_end``: a start/end range's) of the events ``query``
    (:func:`nvtx_query`) reads: how many (``events``), how many ranges have no end (``open``) and
    how many have one (``ranges``), counted by SQLite alone, so that no event is held (a few rows:
    one per thread). Its own connection: the export's stays free for the reads run beside it."""
    import sqlite3

    counted = (
        f'SELECT "globalTid", "eventType" = {NVTX_START_END}, count(*), '
        f'coalesce(sum("eventType" != {NVTX_MARK} AND "end" IS NULL), 0), '
        f'coalesce(sum("eventType" != {NVTX_MARK} AND "end" IS NOT NULL), 0) FROM ({query}) GROUP BY 1, 2'
    )
    try:
        connection = sqlite3.connect(export.uri, uri=True)
        try:
            rows = connection.execute(counted).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise export.error(exc) from None
    try:
        return pl.DataFrame(
            [(tid, bool(lane), int(n), int(unended), int(ended)) for tid, lane, n, unended, ended in rows],
            schema=NVTX_THREADS,
            orient="row",
        )
    except (OverflowError, TypeError, ValueError, pl.exceptions.PolarsError):  # a thread that is no number
        raise ProfviewError(
            export.path, f"holds a value of the wrong type for its column ({NVTX_TABLE}.globalTid)"
        ) from None


#: :func:`nvtx_threads`'s columns.
NVTX_THREADS: dict[str, pl.DataType] = {
    "globalTid": pl.Int64(),
    "start_end": pl.Boolean(),
    "events": pl.Int64(),
    "open": pl.Int64(),
    "ranges": pl.Int64(),
}


def process_names(export: Export) -> pl.DataFrame:
    """``pid`` (as text) → the process's name, from ``PROCESSES``."""
    schema = {"pid": pl.String(), "label": pl.String()}
    if not export.has("PROCESSES", "pid", "name"):
        return pl.DataFrame(schema=schema)
    rows = export.scalar_rows("SELECT DISTINCT pid, name FROM PROCESSES WHERE pid IS NOT NULL AND name IS NOT NULL")
    return pl.DataFrame([(str(pid), str(name)) for pid, name in rows], schema=schema, orient="row").unique(
        "pid", keep="first", maintain_order=True
    )


def thread_names(export: Export) -> pl.DataFrame:
    """``globalTid`` → the thread's name id, from ``ThreadNames``."""
    schema = {"globalTid": pl.Int64(), "nameId": pl.Int64()}
    if not export.has("ThreadNames", "globalTid", "nameId"):
        return pl.DataFrame(schema=schema)
    rows = export.scalar_rows("SELECT globalTid, nameId FROM ThreadNames WHERE globalTid IS NOT NULL")
    return pl.DataFrame(rows, schema=schema, orient="row").unique("globalTid", keep="last", maintain_order=True)
