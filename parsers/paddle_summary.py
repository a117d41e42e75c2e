"""The PaddlePaddle profiler summary (as printed into a training log) → frames.

Sections open with a banner (``----Operator Summary----``), a ``Time unit`` line, and a table
whose columns come from the dashed separator.  Cells such as ``441.72 / 0.39 / 2.61 / 0.10 /
14.83`` are total / avg / max / min / ratio; ``-`` means none.  The Operator Summary is a tree
by indentation (operator → phases → kernels): top-level rows are the operator view, and the
kernel rows under each operator are its drill-down (``launches``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from ..frames import OP_LAUNCH_COLUMNS, OPERATOR_COLUMNS, conform_kernels

BANNER = re.compile(r"^-{3,}\s*([A-Za-z ]+ Summary)\s*-{3,}\s*$|^={3,}\s*([A-Za-z ]+ Summary)\s*={3,}\s*$")
SEPARATOR = re.compile(r"^(-{3,}(?: {1,3}-{3,})+)\s*$")
THREAD = re.compile(r"^-{3,}Thread:")
UNIT = re.compile(r"Time unit:\s*(\w+)")
UNIT_US = {"s": 1e6, "ms": 1e3, "us": 1.0, "ns": 1e-3}
STATS = ("total", "avg", "max", "min", "ratio")
_STAT = r"(?:-?[\d.]+|-)(?: / (?:-?[\d.]+|-)){4}"
#: A stats row read by its shape, for names that overflow their column and shift the others.
STATS_ROW = re.compile(rf"^\s*(?P<name>.+?)\s+(?P<calls>\d+|-)\s+(?P<cpu>{_STAT})(?:\s+(?P<gpu>{_STAT}))?")


@dataclass
class Section:
    """One summary table: its headers and, per row, (depth, cells)."""

    title: str
    unit_us: float = 1e3
    headers: list[str] = field(default_factory=list)
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def looks_like_paddle(text: str) -> bool:
    return "Operator Summary" in text and "CPU Total / Avg / Max / Min / Ratio(%)" in text


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    out = []
    for index, (start, _end) in enumerate(spans):
        stop = len(line) if index == len(spans) - 1 else spans[index + 1][0]
        out.append(line[start:stop].strip())
    return out


def sections(text: str) -> dict[str, Section]:
    """The tables of every summary section, by title."""
    found: dict[str, Section] = {}
    current: Section | None = None
    spans: list[tuple[int, int]] = []
    state = "banner"
    for line in text.splitlines():
        banner = BANNER.match(line)
        if banner:
            current = Section(banner.group(1) or banner.group(2))
            found.setdefault(current.title, current)
            state, spans = "unit", []
            continue
        if current is None:
            continue
        unit = UNIT.search(line)
        if unit and state == "unit":
            current.unit_us = UNIT_US.get(unit.group(1), 1e3)
            continue
        separator = SEPARATOR.match(line)
        if separator:
            if state in ("unit", "banner"):
                spans = [(m.start(), m.end()) for m in re.finditer(r"-+", separator.group(1))]
                state = "header"
            elif state == "header_done":
                state = "rows"
            elif state == "rows":
                state, current = "banner", None
            continue
        if state == "header" and spans:
            current.headers = _cells(line, spans)
            state = "header_done"
        elif state == "rows" and line.strip() and not THREAD.match(line):
            depth = (len(line) - len(line.lstrip(" "))) // 2
            current.rows.append((depth, _cells(line, spans)))
            current.lines.append(line)
    return found


def _stats(cell: str, unit_us: float) -> dict[str, float | None]:
    parts = [p.strip() for p in cell.split("/")]
    values: dict[str, float | None] = {}
    for name, part in zip(STATS, parts + ["-"] * (len(STATS) - len(parts)), strict=False):
        try:
            number = float(part)
        except ValueError:
            values[name] = None
            continue
        values[name] = number if name == "ratio" else number * unit_us
    return values


def _column(section: Section, prefix: str) -> int | None:
    for index, header in enumerate(section.headers):
        if header.startswith(prefix):
            return index
    return None


def operator_frames(section: Section) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(ops, launches): top-level operators, and the GPU rows under each one."""
    cpu, gpu = _column(section, "CPU Total"), _column(section, "GPU Total")
    ops, launches = [], []
    current: str | None = None
    for (depth, cells), line in zip(section.rows, section.lines, strict=True):
        shaped = STATS_ROW.match(line)
        if shaped:  # by shape: robust to names that overflow their column
            name, calls_text = shaped.group("name"), shaped.group("calls")
            host = _stats(shaped.group("cpu"), section.unit_us)
            device = _stats(shaped.group("gpu") or "-", section.unit_us)
        else:
            name, calls_text = cells[0], cells[1] if len(cells) > 1 else ""
            host = _stats(cells[cpu], section.unit_us) if cpu is not None and cpu < len(cells) else {}
            device = _stats(cells[gpu], section.unit_us) if gpu is not None and gpu < len(cells) else {}
        calls = int(calls_text) if calls_text.isdigit() else 0
        if depth == 0:
            current = name
            ops.append(
                {
                    "name": name,
                    "kind": "operator",
                    "calls": calls,
                    "host_self_us": None,
                    "host_total_us": host.get("total"),
                    "device_self_us": None,
                    "device_total_us": device.get("total"),
                }
            )
        elif current is not None and host.get("total") is None and device.get("total") is not None:
            launches.append(
                {
                    "op": current,
                    "name": name,
                    "kind": "memset" if name == "MEMSET" else "kernel",
                    "calls": calls,
                    "direct_calls": None,
                    "total_us": device["total"],
                    "mean_us": device.get("avg"),
                    "min_us": device.get("min"),
                    "max_us": device.get("max"),
                }
            )
    ops_frame = pl.DataFrame(
        ops,
        schema={
            "name": pl.String,
            "kind": pl.String,
            "calls": pl.Int64,
            "host_self_us": pl.Float64,
            "host_total_us": pl.Float64,
            "device_self_us": pl.Float64,
            "device_total_us": pl.Float64,
        },
    )
    launch_schema = {
        "op": pl.String,
        "name": pl.String,
        "kind": pl.String,
        "calls": pl.Int64,
        "direct_calls": pl.Int64,
        "total_us": pl.Float64,
        "mean_us": pl.Float64,
        "min_us": pl.Float64,
        "max_us": pl.Float64,
    }
    launch_frame = pl.DataFrame(launches, schema=launch_schema)
    launch_frame = launch_frame.with_columns(
        (pl.col("total_us") / pl.col("total_us").sum().over("op") * 100.0).alias("pct")
    ).select("op", *OP_LAUNCH_COLUMNS)
    return ops_frame.select(OPERATOR_COLUMNS), launch_frame


def kernel_frame(section: Section) -> pl.DataFrame:
    gpu = _column(section, "GPU Total")
    rows = []
    for _depth, cells in section.rows:
        stats = _stats(cells[gpu], section.unit_us) if gpu is not None else {}
        rows.append(
            {
                "name": cells[0],
                "calls": int(float(cells[1] or 0)),
                "total_us": stats.get("total"),
                "mean_us": stats.get("avg"),
                "max_us": stats.get("max"),
                "min_us": stats.get("min"),
                "pct": stats.get("ratio"),
            }
        )
    schema = {"name": pl.String, "calls": pl.Int64} | {
        c: pl.Float64 for c in ("total_us", "mean_us", "max_us", "min_us", "pct")
    }
    return conform_kernels(pl.DataFrame(rows, schema=schema))


def extra_operator_rows(found: dict[str, Section], known: set[str]) -> list[pl.DataFrame]:
    """User-defined ranges and memory copies as operator rows (those not already listed)."""
    frames = []
    for title, kind in (("UserDefined Summary", "user_annotation"), ("Memory Manipulation Summary", "memcpy")):
        if title in found:
            ops, _launches = operator_frames(found[title])
            frames.append(ops.filter(~pl.col("name").is_in(list(known))).with_columns(pl.lit(kind).alias("kind")))
    return frames


def environment(found: dict[str, Section], text: str) -> dict[str, str]:
    """Device utilisation, the model phases, event-type totals and the perf summary, as lines."""
    lines: dict[str, str] = {}
    for _depth, cells in found.get("Device Summary", Section("")).rows:
        lines[f"{cells[0]} utilization"] = f"{cells[1]} %"
    model = found.get("Model Summary")
    if model is not None:
        cpu, gpu = _column(model, "CPU Total"), _column(model, "GPU Total")
        for _depth, cells in model.rows:
            host = _stats(cells[cpu], model.unit_us) if cpu is not None else {}
            device = _stats(cells[gpu], model.unit_us) if gpu is not None else {}
            lines[f"model {cells[0]}"] = (
                f"CPU {(host.get('total') or 0) / 1e3:.2f} ms ({host.get('ratio') or 0:.2f}%), "
                f"GPU {(device.get('total') or 0) / 1e3:.2f} ms ({device.get('ratio') or 0:.2f}%)"
            )
    overview = found.get("Overview Summary")
    if overview is not None:
        for _depth, cells in overview.rows:
            if len(cells) >= 4:
                lines[f"event type {cells[0]}"] = f"{cells[1]} calls, {cells[2]} ms ({cells[3]}%)"
    for match in re.finditer(r"^\|\s*(\w+)\s*\|\s*([\d.]+)\s*\|", text, re.MULTILINE):
        lines[f"perf {match.group(1)} (avg)"] = match.group(2)
    return lines


def parse_paddle_summary(text: str) -> tuple[dict[str, pl.DataFrame], dict[str, object]]:
    """(tables, metadata) of a Paddle summary: ops, kernels, launches, and the other sections."""
    found = sections(text)
    tables: dict[str, pl.DataFrame] = {}
    if "Operator Summary" in found:
        tables["ops"], tables["launches"] = operator_frames(found["Operator Summary"])
    if "Kernel Summary" in found:
        tables["kernels"] = kernel_frame(found["Kernel Summary"])
    known = set(tables["ops"]["name"]) if "ops" in tables else set()
    extra = extra_operator_rows(found, known)
    if extra:
        tables["ops"] = pl.concat([tables["ops"], *extra]) if "ops" in tables else pl.concat(extra)
    metadata: dict[str, object] = {
        "sections": {title: len(section.rows) for title, section in found.items()},
        "environments": environment(found, text),
    }
    return tables, metadata
