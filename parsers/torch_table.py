"""PyTorch ``key_averages().table()`` text → operator (and kernel) frames.

Tables are found anywhere in a text (logs, markdown fences, under banners): a dashed separator
gives the column spans, the line after it the headers.  Every variant torch prints is read by
header name: with or without device, memory, FLOPs, ``Input Shapes`` and multi-line ``Source
Location`` columns; units s/ms/us and b/Kb/Mb/Gb/B/KB/MB/GB.  A file that prints the same run
twice (sorted two ways) counts each row once; distinct rows that share a truncated name stay
distinct.  Negative values are kept as written and flagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from ..frames import OPERATOR_COLUMNS, conform_kernels, with_share
from .units import number, percent, size_bytes, time_us

SEPARATOR = re.compile(r"^(?P<indent>.*?)(?P<dashes>-{3,}(?: {1,3}-{3,})+)\s*$")
FOOTER = re.compile(r"Self (\w+) time total:\s*(\S+)")
#: Header → (column, parser).  Device columns are named after the backend (CUDA, XPU, ...).
_DEVICE = r"(?:CUDA|XPU|MTIA|HPU|Device|PrivateUse1|MPS)"
COLUMNS: tuple[tuple[str, str, str], ...] = (
    (r"Name", "name", "text"),
    (r"Self CPU %", "host_self_pct", "pct"),
    (r"Self CPU", "host_self_us", "time"),
    (r"CPU total %", "host_total_pct", "pct"),
    (r"CPU total", "host_total_us", "time"),
    (r"CPU time avg", "host_avg_us", "time"),
    (rf"Self {_DEVICE} %", "device_self_pct", "pct"),
    (rf"Self {_DEVICE}", "device_self_us", "time"),
    (rf"{_DEVICE} total", "device_total_us", "time"),
    (rf"{_DEVICE} time avg", "device_avg_us", "time"),
    (r"CPU Mem", "cpu_mem_bytes", "size"),
    (r"Self CPU Mem", "self_cpu_mem_bytes", "size"),
    (rf"{_DEVICE} Mem", "device_mem_bytes", "size"),
    (rf"Self {_DEVICE} Mem", "self_device_mem_bytes", "size"),
    (r"# of Calls", "calls", "count"),
    (r"Input Shapes", "input_dims", "text"),
    (r"Source Location", "source_location", "text"),
    (r"Total [KMGTP]?FLOPs", "flops", "flops"),
    (r"Node ID", "node_id", "number"),
)
GROUPING_COLUMNS = ("input_dims", "source_location")
#: torch names the FLOPs column after the unit it chose ("Total GFLOPs"); the frame holds FLOPs.
FLOPS_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


@dataclass
class RawTable:
    """One table as printed: header names and rows of cell texts."""

    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    footer: dict[str, float] = field(default_factory=dict)


def _spans(dashes: str, offset: int) -> list[tuple[int, int]]:
    return [(offset + m.start(), offset + m.end()) for m in re.finditer(r"-+", dashes)]


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    cells = []
    for index, (start, _end) in enumerate(spans):
        stop = len(line) if index == len(spans) - 1 else spans[index + 1][0]
        cells.append(line[start:stop].strip() if index else line[:stop].strip())
    return cells


def _is_torch_header(headers: list[str]) -> bool:
    """A key_averages header: Name plus at least two of torch's own time/count columns."""
    known = {found[0] for h in headers if (found := _column_for(h))}
    return "name" in known and len(known & {"host_self_us", "host_total_us", "device_self_us", "calls"}) >= 2


def find_tables(text: str) -> list[RawTable]:
    """Every key_averages table in ``text``."""
    lines = text.splitlines()
    tables: list[RawTable] = []
    i = 0
    while i + 2 < len(lines):
        top, header, under = SEPARATOR.match(lines[i]), lines[i + 1], SEPARATOR.match(lines[i + 2])
        spans = _spans(top.group("dashes"), len(top.group("indent"))) if top else []
        headers = _cells(header, spans) if top else []
        if not (top and under and _is_torch_header(headers)):
            i += 1
            continue
        table = RawTable(headers)
        # torch prints each further stack frame on a line of its own, in the last column's place
        # (even when Total FLOPs follows Source Location): it belongs to the row above.
        stack = headers.index("Source Location") if "Source Location" in headers else None
        i += 3
        while i < len(lines) and not SEPARATOR.match(lines[i]):
            line = lines[i]
            i += 1
            if not line.strip():
                continue
            cells = _cells(line, spans)
            if not cells[0] and table.rows and stack is not None and any(cells):
                table.rows[-1][stack] += "\n" + line.strip()
            elif cells[0]:
                table.rows.append(cells)
        for footer_line in lines[i + 1 : i + 4]:
            for match in FOOTER.finditer(footer_line):
                value = time_us(match.group(2))
                if value is not None:
                    table.footer[match.group(1)] = value
        tables.append(table)
    return tables


def _column_for(header: str) -> tuple[str, str] | None:
    for pattern, column, kind in COLUMNS:
        if re.fullmatch(pattern, header):
            return column, kind
    return None


def _value(text: str, kind: str, header: str = "") -> object:
    if kind == "text":
        return text
    if text in ("", "-", "--"):
        return None
    if kind == "flops":
        value = number(text)
        prefix = header.removeprefix("Total ").removesuffix("FLOPs")
        return None if value is None else value * FLOPS_SCALE.get(prefix, 1.0)
    if kind == "time":
        return time_us(text)
    if kind == "size":
        return size_bytes(text)
    if kind == "pct":
        return percent(text)
    value = number(text)
    return int(value) if kind == "count" and value is not None else value


def table_frame(table: RawTable) -> pl.DataFrame:
    """A table's rows as typed columns (ops-frame names where they exist)."""
    columns: dict[str, list[object]] = {}
    kinds: dict[str, str] = {}
    for index, header in enumerate(table.headers):
        found = _column_for(header)
        column, kind = found if found else (re.sub(r"\W+", "_", header.strip().lower()).strip("_"), "text")
        kinds[column] = kind
        columns[column] = [_value(row[index] if index < len(row) else "", kind, header) for row in table.rows]
    dtypes = {"text": pl.String, "count": pl.Int64}
    return pl.DataFrame(
        {c: pl.Series(c, v, dtype=dtypes.get(kinds[c], pl.Float64), strict=False) for c, v in columns.items()}
    )


@dataclass
class TorchTables:
    """The frames read from key_averages tables."""

    ops: pl.DataFrame
    ops_by_shapes: pl.DataFrame | None
    ops_by_stack: pl.DataFrame | None
    kernels: pl.DataFrame
    footer: dict[str, float]
    tables: int
    duplicates: int
    negative_rows: int


def _ops_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Standard ops columns first (null where the table lacks them), the table's extras after."""
    out = frame.with_columns(pl.lit("operator").alias("kind")) if "kind" not in frame.columns else frame
    for column in OPERATOR_COLUMNS:
        if column not in out.columns:
            out = out.with_columns(pl.lit(None, dtype=pl.Int64 if column == "calls" else pl.Float64).alias(column))
    times = [c for c in out.columns if c.endswith("_us")]
    negative = pl.any_horizontal([pl.col(c) < 0 for c in times]).fill_null(False) if times else pl.lit(False)
    out = out.with_columns(negative.alias("negative"))
    extras = [c for c in out.columns if c not in OPERATOR_COLUMNS]
    return out.select([*OPERATOR_COLUMNS, *extras])


def label_gpu_rows(ops: pl.DataFrame) -> pl.DataFrame:
    """``kind`` of the rows that are GPU activities (device time, no CPU time): ``kernel``,
    ``memcpy`` or ``memset`` by name, and ``gpu_annotation`` for a GPU-side range whose name also
    has a row with CPU time (``ProfilerStep*``, ``record_function`` ranges)."""
    host_names = ops.filter(pl.col("host_total_us").fill_null(0) != 0)["name"].implode()
    on_gpu = (pl.col("device_self_us").fill_null(0) != 0) & (pl.col("host_total_us").fill_null(0) == 0)
    return ops.with_columns(
        pl.when(~on_gpu)
        .then(pl.col("kind"))
        .when(pl.col("name").is_in(host_names))
        .then(pl.lit("gpu_annotation"))
        .when(pl.col("name").str.starts_with("Memcpy"))
        .then(pl.lit("memcpy"))
        .when(pl.col("name").str.starts_with("Memset"))
        .then(pl.lit("memset"))
        .otherwise(pl.lit("kernel"))
        .alias("kind")
    )


def _print_step(us: pl.Expr) -> pl.Expr:
    """The last printed digit of a key_averages time of ``us`` µs, in µs (3 decimals of its unit)."""
    size = us.abs()
    return pl.when(size < 1e3).then(1e-3).when(size < 1e6).then(1.0).otherwise(1e3)


def kernel_rows(ops: pl.DataFrame) -> pl.DataFrame:
    """GPU activities among the rows (kernels, memcpy, memset: device time, no CPU time) as a
    kernel table; ``pct`` is the share of all of them.  GPU-side annotations are left out."""
    gpu = label_gpu_rows(ops).filter(pl.col("kind").is_in(["kernel", "memcpy", "memset"]))
    calls = pl.col("calls").cast(pl.Float64)
    # torch prints each time with 3 decimals in the unit it picks for it (us below 1 ms, ms below
    # 1 s, s above), so the total is rounded to 1 ns, 1 µs or 1 ms, and total ÷ calls is only
    # that fine divided by the calls: where the printed average is finer (21.976 us against
    # 21.972 from a total printed in ms), it is the mean; otherwise the division is.
    printed = pl.col("device_avg_us") if "device_avg_us" in gpu.columns else pl.lit(None, dtype=pl.Float64)
    divided = pl.col("device_self_us") / calls
    finer = _print_step(printed) < _print_step(pl.col("device_self_us")) / calls
    frame = gpu.select(
        "name",
        "calls",
        pl.col("device_self_us").alias("total_us"),
        pl.when(printed.is_not_null() & finer).then(printed).otherwise(divided).alias("mean_us"),
    )
    return conform_kernels(with_share(frame)).sort("total_us", descending=True, nulls_last=True)


def parse_torch_tables(text: str) -> TorchTables | None:
    """All key_averages tables of a text, merged without double counting; None if there are none."""
    tables = find_tables(text)
    if not tables:
        return None
    plain: list[pl.DataFrame] = []
    by_shapes: list[pl.DataFrame] = []
    by_stack: list[pl.DataFrame] = []
    seen: set[tuple[str, ...]] = set()
    duplicates = 0
    footer: dict[str, float] = {}
    for table in tables:
        footer.update(table.footer)
        signature = tuple(table.headers)
        fresh = []
        for row in table.rows:
            key = (*signature, *row)
            if key in seen:
                duplicates += 1
                continue
            seen.add(key)
            fresh.append(row)
        frame = table_frame(RawTable(table.headers, fresh))
        if frame.height == 0:
            continue
        if "input_dims" in frame.columns:
            by_shapes.append(frame)
        elif "source_location" in frame.columns:
            by_stack.append(frame)
        else:
            plain.append(frame)
    primary = plain or by_stack or by_shapes
    ops = label_gpu_rows(_ops_frame(pl.concat(primary, how="diagonal_relaxed")))
    shapes = label_gpu_rows(_ops_frame(pl.concat(by_shapes, how="diagonal_relaxed"))) if by_shapes else None
    stacks = label_gpu_rows(_ops_frame(pl.concat(by_stack, how="diagonal_relaxed"))) if by_stack else None
    return TorchTables(
        ops=ops,
        ops_by_shapes=shapes,
        ops_by_stack=stacks,
        kernels=kernel_rows(ops),
        footer=footer,
        tables=len(tables),
        duplicates=duplicates,
        negative_rows=int(ops["negative"].sum()),
    )
