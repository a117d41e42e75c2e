"""Host work of an export: CUDA runtime and driver calls, NVTX ranges and marks, thread names.

Rows keep nsys's ns times and ``globalTid`` (the process is ``(globalTid >> 24) & 0xFFFFFF``, the
thread the low 24 bits); :mod:`.reader` turns them into events.
"""

from __future__ import annotations

import polars as pl

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


def read_nvtx(export: Export, lacking: list[str], process: int | None = None) -> pl.DataFrame:
    """The NVTX events: numbers and the explicit ``text`` (null where a ``textId`` names it);
    ``process``: that OS process's only."""
    held = export.tables.get(NVTX_TABLE)
    schema: dict[str, pl.DataType] = {column: pl.Int64() for column in NVTX_NUMBER_COLUMNS}
    schema["text"] = pl.String()
    if held is None:
        return pl.DataFrame(schema=schema)
    if "start" not in held or "eventType" not in held:
        absent = [column for column in ("start", "eventType") if column not in held]
        lacking.append(f"{NVTX_TABLE}: {', '.join(absent)} (its ranges are left out)")
        return pl.DataFrame(schema=schema)
    missing = [column for column in schema if column not in held]
    if missing:
        lacking.append(f"{NVTX_TABLE}: {', '.join(missing)}")
    selected = ", ".join(f'"{column}"' if column in held else "NULL" for column in schema)
    wanted = ", ".join(str(kind) for kind in (NVTX_MARK, NVTX_PUSH_POP, NVTX_START_END))
    where = f'"eventType" IN ({wanted})'
    if process is not None:
        if "globalTid" not in held:
            return pl.DataFrame(schema=schema)  # no range of it can be told to be that process's
        where += f" AND {process_filter('globalTid', process)}"
    return export.frame(f'SELECT {selected} FROM "{NVTX_TABLE}" WHERE {where}', schema, NVTX_TABLE)


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
