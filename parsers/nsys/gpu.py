"""GPU work of an export: kernels, memory copies and memory sets, as rows of the events frame.

Each row keeps what nsys recorded (device, context, stream, correlation id, the launching
process) with times still in ns; :mod:`.reader` converts them and joins the names.  A kernel's
grid and block are written as Kineto writes them (``[x, y, z]``), its shared memory is the static
plus the dynamic allocation (Kineto's ``shared memory``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ...errors import ProfviewError
from .database import Export

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"

#: The OS process id's bits in a serialised ``globalPid``/``globalTid`` (above the thread's 24).
PID_MASK = 0xFFFFFF
#: Columns every GPU table needs: without them a row has no place in time.
REQUIRED = ("start", "end")
#: The columns read from every GPU table (null where the export lacks one).
COMMON = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "graphNodeId")
KERNEL_COLUMNS = (
    *COMMON,
    "demangledName",
    "shortName",
    "registersPerThread",
    "gridX",
    "gridY",
    "gridZ",
    "blockX",
    "blockY",
    "blockZ",
    "staticSharedMemory",
    "dynamicSharedMemory",
    "graphId",
)
MEMCPY_COLUMNS = (*COMMON, "bytes", "copyKind")
MEMSET_COLUMNS = (*COMMON, "bytes")

#: nsys's names of copy kinds (``ENUM_CUDA_MEMCPY_OPER``), for exports that lack that table.
COPY_KINDS: dict[int, str] = {
    0: "Unknown",
    1: "Host-to-Device",
    2: "Device-to-Host",
    3: "Host-to-Array",
    4: "Array-to-Host",
    5: "Array-to-Array",
    6: "Array-to-Device",
    7: "Device-to-Array",
    8: "Device-to-Device",
    9: "Host-to-Host",
    10: "Peer-to-Peer",
    11: "Unified Host-to-Device",
    12: "Unified Device-to-Host",
    13: "Unified Device-to-Device",
}


@dataclass
class GpuTables:
    """The GPU rows of an export (ns, ids unresolved) and the columns its tables lacked."""

    kernels: pl.DataFrame
    memcpy: pl.DataFrame
    memset: pl.DataFrame
    lacking: list[str] = field(default_factory=list)


def process_filter(column: str, process: int | None) -> str:
    """An SQL condition keeping the rows of OS process ``process`` (their ``column``, a serialised
    ``globalPid``/``globalTid``, holds it as ``(id >> 24) & 0xFFFFFF``); empty for every row."""
    if process is None:
        return ""
    return f'(("{column}" >> 24) & {PID_MASK}) = {int(process)}'


def read_table(
    export: Export,
    table: str,
    columns: tuple[str, ...],
    lacking: list[str],
    process: int | None = None,
    process_column: str = "globalPid",
    only: tuple[str, ...] | None = None,
) -> pl.DataFrame:
    """``columns`` of ``table`` (Int64; null where the table lacks the column, which is noted in
    ``lacking``), or an empty frame when the export has no such table; ``process``: only that OS
    process's rows (none where the table does not say the process, in ``process_column``).
    ``only``: just these of ``columns`` are read (what it lacks is noted of all ``columns``)."""
    schema: dict[str, pl.DataType] = {column: pl.Int64() for column in only or columns}
    held = export.tables.get(table)
    if held is None:
        return pl.DataFrame(schema=schema)
    absent = [column for column in REQUIRED if column not in held]
    if absent:
        raise ProfviewError(export.path, f"its {table} table lacks the column(s) {', '.join(absent)}")
    missing = [column for column in columns if column not in held]
    if missing:
        lacking.append(f"{table}: {', '.join(missing)}")
    selected = ", ".join(f'"{column}"' if column in held else "NULL" for column in schema)
    if process is not None and process_column not in held:
        return pl.DataFrame(schema=schema)  # no row of it can be told to be that process's
    where = f" WHERE {process_filter(process_column, process)}" if process is not None else ""
    return export.frame(f'SELECT {selected} FROM "{table}"{where}', schema, table)


def read_gpu(export: Export, process: int | None = None) -> GpuTables:
    """The kernel, memcpy and memset rows of ``export`` (``process``: only those that OS process launched)."""
    lacking: list[str] = []
    kernels = read_table(export, KERNEL_TABLE, KERNEL_COLUMNS, lacking, process)
    if export.has(KERNEL_TABLE) and not (
        export.has(KERNEL_TABLE, "demangledName") or export.has(KERNEL_TABLE, "shortName")
    ):
        raise ProfviewError(export.path, f"its {KERNEL_TABLE} table lacks the column(s) demangledName, shortName")
    memcpy = read_table(export, MEMCPY_TABLE, MEMCPY_COLUMNS, lacking, process)
    memset = read_table(export, MEMSET_TABLE, MEMSET_COLUMNS, lacking, process)
    return GpuTables(kernels, memcpy, memset, lacking)


@dataclass
class GpuProcess:
    """One OS process of an export that launched GPU work: its ``pid``, its name (``PROCESSES``;
    None where not named) and how many kernel, memcpy and memset rows name it."""

    pid: int
    name: str | None
    kernels: int = 0
    copies: int = 0
    sets: int = 0


def gpu_processes(export: Export) -> tuple[list[GpuProcess], int]:
    """The processes whose kernels, copies or sets the export holds, in pid order, and how many
    GPU rows name no process (no ``globalPid``: a stripped export), counted by SQL alone."""
    found: dict[int, GpuProcess] = {}
    unnamed = 0
    for table, field_name in ((KERNEL_TABLE, "kernels"), (MEMCPY_TABLE, "copies"), (MEMSET_TABLE, "sets")):
        held = export.tables.get(table)
        if held is None:
            continue
        if "globalPid" not in held:
            unnamed += int(export.scalar_rows(f'SELECT count(*) FROM "{table}"')[0][0] or 0)
            continue
        rows = export.scalar_rows(
            f'SELECT ("globalPid" >> 24) & {PID_MASK}, count(*) FROM "{table}" GROUP BY 1'
        )
        for pid, count in rows:
            if pid is None:
                unnamed += int(count)
                continue
            process = found.setdefault(int(pid), GpuProcess(int(pid), None))
            setattr(process, field_name, getattr(process, field_name) + int(count))
    if found and export.has("PROCESSES", "pid", "name"):
        for pid, name in export.scalar_rows("SELECT pid, name FROM PROCESSES WHERE pid IS NOT NULL"):
            if isinstance(pid, int) and pid in found and found[pid].name is None and isinstance(name, str):
                found[pid].name = name
    return [found[pid] for pid in sorted(found)], unnamed


def shape(x: str, y: str, z: str) -> pl.Expr:
    """A launch dimension as Kineto writes it, ``[x, y, z]`` (null when the export lacks it)."""
    return pl.concat_str([pl.lit("["), pl.col(x), pl.lit(", "), pl.col(y), pl.lit(", "), pl.col(z), pl.lit("]")])


def copy_names(export: Export) -> dict[int, str]:
    """Copy kind → nsys's memcpy name (``[CUDA memcpy Host-to-Device]``), from the export's own
    labels where it has them."""
    labels = dict(COPY_KINDS)
    if export.has("ENUM_CUDA_MEMCPY_OPER", "id", "label"):
        for kind, label in export.scalar_rows("SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER"):
            if isinstance(kind, int) and isinstance(label, str):
                labels[kind] = label
    return {kind: f"[CUDA memcpy {label}]" for kind, label in labels.items()}
