"""``profview summary``: the overview and top tables as plain terminal tables (Rich, no markup)."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

import polars as pl
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..analysis.trace.scalars import as_float
from ..frames import (
    CATEGORIES,
    SHORT_LABELS,
    Overview,
    busy_text,
    communication_lines,
    device_note,
    fmt_fixed,
    fmt_us,
    rank_line,
    span_text,
)
from ..profiles.trace_profile import Profile
from ..sanitize import clean
from .console import ReportConsole
from .wording import middle_cut, plural, telling_cuts

NAME_WIDTH = 60


def short(name: object, width: int = NAME_WIDTH) -> Text:
    """A sanitised, width-limited name as inert Text, cut in the middle (issue 22: kernels that
    share a long prefix keep their telling ends: ``sm90_xmma_fprop…128x128_tn``)."""
    return Text(middle_cut(clean(name), width))


def _cell(column: str, value: object, unit_ms: bool) -> Text:
    if column == "name":
        return Text(clean(value))  # cut to the column's width in _table
    if column.endswith("_us"):
        us = as_float(value)
        return Text("-" if us is None else fmt_fixed(us / 1e3, 1) if unit_ms else fmt_us(us))
    if column == "pct":
        return Text("-" if value is None else f"{value:.1f}%")
    return Text(clean(value))


#: The narrowest a name column is cut to; where the figures leave less, each name gets a line of its own.
NAME_MIN = 16


def _table(
    title: str, frame: pl.DataFrame, columns: dict[str, str], width: int, unit_ms: bool = False, wide: bool = False
) -> Table | Group:
    """A borderless table: numbers keep their full width, names give way, cut in the middle
    (``wide``: names whole, folded over lines where the terminal is narrower).  Where the figures
    leave a name less than :data:`NAME_MIN` columns (a ``replayed`` column at 80), each row's name
    is a line of its own above its figures: figures are never cut to fit a name."""
    rows = [[_cell(c, row[c], unit_ms) for c in columns] for row in frame.iter_rows(named=True)]
    widths = [max([len(header), *(len(r[i]) for r in rows)]) for i, header in enumerate(columns.values())]
    names = [i for i, column in enumerate(columns) if column == "name"]
    spare = width - sum(w for i, w in enumerate(widths) if i not in names) - 2 * len(widths)
    if names and not wide and spare < NAME_MIN:
        return _stacked(title, rows, columns, widths, names[0], width)
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None)
    for index, (column, header) in enumerate(columns.items()):
        if column == "name" and wide:
            table.add_column(header, overflow="fold")
        elif column == "name":
            size = max(16, min(widths[index], spare))
            table.add_column(header, no_wrap=True, overflow="ellipsis", width=size)
            cut = telling_cuts([cells[index].plain for cells in rows], size)
            for cells, text in zip(rows, cut, strict=True):
                cells[index] = Text(text)
        else:
            justify: Literal["left", "right"] = "left" if column == "step" else "right"
            table.add_column(header, justify=justify, no_wrap=True, min_width=widths[index])
    for cells in rows:
        table.add_row(*cells)
    return table


def _stacked(
    title: str, rows: list[list[Text]], columns: dict[str, str], widths: list[int], name: int, width: int
) -> Group:
    """The table with each name on its own line (cut in the middle to the width), its figures on the
    line below, right-aligned under their headers."""
    headers = list(columns.values())
    figures = [i for i in range(len(headers)) if i != name]

    def line(cells: list[str]) -> Text:
        return Text("  " + "  ".join(cells[i].rjust(widths[i]) for i in figures))

    lines = [Text(title), Text(headers[name]), line(headers)]
    names = telling_cuts([cells[name].plain for cells in rows], max(8, width - 1))
    for cells, text in zip(rows, names, strict=True):
        lines.append(Text(text))
        lines.append(line([c.plain for c in cells]))
    return Group(*lines)


def _memory_lines(profile: Profile) -> list[str]:
    """The peak-memory line per device, for traces recorded with profile_memory (issue 15)."""
    from ..errors import ProfviewError
    from ..frames import peak_memory_lines

    if not profile.metadata.get("profile_memory"):
        return []
    try:
        return peak_memory_lines(profile.memory_peaks())
    except ProfviewError:
        return []


#: The version of ``summary --format json``'s document (docs/summary_json.md, its JSON Schema in
#: docs/schemas/summary.schema.json): raised when a key changes meaning or goes; a new key does not
#: raise it.
SUMMARY_SCHEMA = "profview.summary/2"
#: The columns of each table the summary shows (text and JSON alike), by its frame's column name.
KERNEL_COLUMNS = {"name": "kernel", "calls": "calls", "total_us": "total", "mean_us": "mean", "pct": "share"}
OP_COLUMNS = {
    "name": "operator",
    "calls": "calls",
    "host_self_us": "host self",
    "host_total_us": "host total",
    "device_self_us": "device self",
    "device_total_us": "device total",
}


def op_columns(ops: pl.DataFrame | None) -> dict[str, str]:
    """:data:`OP_COLUMNS`, with ``replayed`` (the GPU time attributed through graph captures) after
    ``calls`` where the operators carry it."""
    if ops is None or "graph_device_us" not in ops.columns:
        return OP_COLUMNS
    columns = dict(OP_COLUMNS)
    items = list(columns.items())
    items.insert(2, ("graph_device_us", "replayed"))
    return dict(items)


@dataclass
class SummaryFigures:
    """Every figure ``profview summary`` shows, read once from the profile: the text and the JSON
    are two renderings of this one object, so they cannot disagree.  Lines are as printed (not
    yet sanitised); frames are the profile's own, cut to ``top`` rows."""

    path: str
    format: str
    top: int
    overview: Overview | None = None
    rank: str | None = None
    device_note: str | None = None
    #: an Nsight Systems export of several processes: one line each (:func:`process_lines`)
    processes: list[str] = field(default_factory=list)
    communication: list[str] = field(default_factory=list)
    efficiency: list[str] = field(default_factory=list)
    graphs: list[str] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    memory: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    environments: dict[str, object] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    steps: pl.DataFrame | None = None
    outliers: Outliers | None = None
    kernels: pl.DataFrame | None = None
    ops: pl.DataFrame | None = None
    missing: dict[str, str] = field(default_factory=dict)
    #: the figures of the lines as numbers (``summary --format json``): report/summary_numbers.py
    numbers: dict[str, object] = field(default_factory=dict)


def summary_figures(profile: Profile, top: int, numbers: bool = False) -> SummaryFigures:
    """The summary's figures: the overview and its lines, the steps, the top kernels and operators
    (``numbers``: the lines' figures as typed numbers too, and each step's critical path, for the
    JSON document; the text does not pay for them)."""
    from ..profiles.efficiency_views import efficiency_text

    figures = SummaryFigures(path=profile.path, format=profile.format, top=top)
    if profile.is_trace:
        view = figures.overview = profile.overview()
        figures.rank = rank_line(view)
        figures.device_note = device_note(view)
        figures.processes = process_lines(profile.metadata)
        figures.communication = communication_lines(view)
        efficiency = profile.efficiency_figures()  # kernel categories, model FLOPs, MFU
        figures.efficiency = [] if efficiency is None else efficiency_text(efficiency)
        figures.graphs = profile.graph_lines()  # graph replays, attributed or why not
        figures.phases = profile.phase_lines()  # issue 31: serving and decode loops, per phase
        figures.memory = _memory_lines(profile)
        as_job = as_job_hint(profile.metadata, profile.path)  # an export of several processes: a job
        figures.hints = [*([as_job] if as_job else []), *view.hints]
    else:
        figures.environments = dict(profile.metadata.get("environments") or {})
        figures.hints = list(profile.metadata.get("hints") or [])
    figures.runs = list(profile.runs) if len(profile.runs) > 1 else []
    if profile.available("steps"):
        figures.steps = profile.steps()
        figures.outliers = outlier_figures(figures.steps)  # the steps slower than median + 3×1.4826×MAD
    if profile.available("kernels"):
        figures.kernels = profile.kernels().head(top)
    if profile.available("ops"):
        from ..profiles.views import with_graph_time

        # where graphs replay, operators rank by the time attributed to them through the capture
        # too (the ops view's order), so a replayed operator is not left out of the top
        figures.ops = with_graph_time(profile, profile.ops()).head(top)
    figures.missing = dict(profile.missing)
    if numbers:
        figures.numbers = summary_numbers(profile, figures, efficiency if profile.is_trace else None)
    return figures


def summary_numbers(
    profile: Profile, figures: SummaryFigures, efficiency: dict[str, object] | None
) -> dict[str, object]:
    """The typed blocks of the JSON document (each null where the trace has no such figures)."""
    from . import summary_numbers as blocks

    trace = profile.is_trace
    return {
        "communication": blocks.communication_block(figures.overview) if figures.overview is not None else None,
        "categories": blocks.categories_block(efficiency),  # type: ignore[arg-type]
        "efficiency": blocks.efficiency_block(efficiency),  # type: ignore[arg-type]
        "graphs": blocks.graphs_block(profile.graph_summary()) if trace else None,
        "phases": blocks.phases_block(profile),
        "memory": blocks.memory_block(profile),
        "critical_path": blocks.critical_path_block(profile),
        "launches": blocks.launches_block(profile),
        "tensor_cores": blocks.tensor_cores_block(profile),
        "processes": blocks.processes_block(profile.metadata),
    }


def as_job_hint(metadata: dict[str, Any], path: str, command: str = "profview summary") -> str | None:
    """For an export of several processes that launched kernels (one per GPU of a ``torchrun``),
    the command that shows them as the ranks of a job (``--as-job``); None for any other profile,
    and for one process of an export already read as a rank."""
    nsys = metadata.get("nsys")
    processes = nsys.get("processes") if isinstance(nsys, dict) else None
    if not isinstance(processes, list) or (isinstance(nsys, dict) and nsys.get("process") is not None):
        return None
    launching = [p for p in processes if p.get("pid") is not None and (p.get("kernels") or 0) > 0]
    if len(launching) < 2:
        return None
    return (
        f"{len(launching)} processes launched kernels: {command} {shlex.quote(path)} --as-job shows them as the "
        "ranks of a job (ranks table, straggler, collectives matched across ranks)"
    )


def process_lines(metadata: dict[str, Any]) -> list[str]:
    """For an Nsight Systems export that holds several processes (one per GPU of a job), how many,
    then each one's pid, name, GPUs, kernels and kernel time: the tables below sum them all (the
    command that makes them a job is the first hint, :func:`as_job_hint`)."""
    nsys = metadata.get("nsys")
    processes = nsys.get("processes") if isinstance(nsys, dict) else None
    if not isinstance(processes, list) or len(processes) < 2:
        return []
    named = sum(1 for process in processes if process.get("pid") is not None)
    unnamed = " and kernels naming no process" if named < len(processes) else ""
    who = f"{named} {'process' if named == 1 else 'processes'}{unnamed}"
    lines = [f"{who} in this export; every figure below sums them:"]
    for process in processes:
        pid = process.get("pid")
        who = "kernels naming no process" if pid is None else f"pid {pid}"
        if process.get("name"):
            who += f" ({process['name']})"
        devices = process.get("devices") or []
        where = f"on GPU {', '.join(str(d) for d in devices)}" if devices else "no GPU work"
        lines.append(
            f"  {who} {where}: {process.get('kernels', 0):,} kernels, "
            f"{fmt_us(float(process.get('kernel_us') or 0.0))} of kernel time"
        )
    return lines


def print_summary(profile: Profile, top: int, console: Console | None = None, wide: bool = False) -> None:
    """Print what a user wants first about a profile (``wide``: names whole, not cut to the width)."""
    print_figures(summary_figures(profile, top), console, wide)


def print_figures(figures: SummaryFigures, console: Console | None = None, wide: bool = False) -> None:
    """The summary as text (``wide``: names whole, not cut to the width)."""
    console = console or ReportConsole()
    top = figures.top
    console.print(Text(f"{clean(figures.path)}  ({figures.format})", style="bold"))
    view = figures.overview
    if view is not None:
        if figures.rank:
            console.print(Text(f"  {clean(figures.rank)}"))
        for device in view.devices:
            console.print(Text(f"  device {clean(device)}"))
        if figures.device_note:
            console.print(Text(f"  {figures.device_note}"))
        for line in figures.processes:
            console.print(Text(f"  {clean(line)}"))
        console.print(
            Text(
                f"  span {span_text(view.span_us)}, "
                f"{plural(view.steps, 'step') if view.steps else 'no ProfilerStep ranges'}, "
                f"GPU busy {busy_text(view.gpu_busy_pct)} "
                f"({view.gpu_events:,} GPU events)"
            )
        )
        for line in [*figures.communication, *figures.efficiency, *figures.graphs, *figures.phases, *figures.memory]:
            console.print(Text(f"  {clean(line)}"))
        for hint in figures.hints:
            console.print(Text(f"  hint: {clean(hint)}"))
        for note in view.notes:
            console.print(Text(f"  note: {clean(note)}"))
    elif figures.hints or figures.environments:
        for key, value in figures.environments.items():
            console.print(Text(f"  {clean(key)}: {clean(value)}"))
        for hint in figures.hints:
            console.print(Text(f"  hint: {clean(hint)}"))
    if figures.runs:
        console.print(Text(f"  runs: {', '.join(figures.runs)} (choose with --run)"))
    if figures.steps is not None:
        columns = {"step": "step", "duration_us": "total"} | {f"{c}_us": SHORT_LABELS[c] for c in CATEGORIES}
        # issue 13: a trace without steps has one row for the whole trace (step -1): say so
        step = pl.when(pl.col("step") < 0).then(pl.lit("whole")).otherwise(pl.col("step").cast(pl.String))
        shown = shown_steps(figures.steps, top, figures.outliers)
        steps = shown.with_columns(step.alias("step"))
        console.print(_table("Steps (ms)", steps, columns, console.width, unit_ms=True))
        if shown.height < figures.steps.height:
            left = figures.steps.height - shown.height
            console.print(Text(f"  … {plural(left, 'more step')} (all: export --view steps, or --format json)"))
        if figures.outliers is not None:
            console.print(Text(f"  {outlier_text(figures.outliers)}"))
    if figures.kernels is not None:
        console.print(_table(f"Top {top} kernels", figures.kernels, KERNEL_COLUMNS, console.width, wide=wide))
    if figures.ops is not None:
        console.print(_table(f"Top {top} operators", figures.ops, op_columns(figures.ops), console.width, wide=wide))
    for missing, reason in figures.missing.items():
        console.print(Text(f"  no {missing} view: {clean(reason)}"))


def shown_steps(steps: pl.DataFrame, top: int, outliers: Outliers | None) -> pl.DataFrame:
    """The step rows ``summary -n N`` prints: the first ``top`` steps, and every outlier step after
    them (in step order), so a long trace's slow steps are never among those left out."""
    if steps.height <= top or "step" not in steps.columns:
        return steps
    slow = {s for s, _ in outliers.steps} if outliers is not None else set()
    keep = pl.int_range(pl.len()).lt(top) | pl.col("step").is_in(list(slow))
    return steps.filter(keep)


def json_rows(frame: pl.DataFrame | None, columns: list[str]) -> list[dict[str, object]] | None:
    """A frame's rows as JSON objects (the shown columns it has; NaN and infinities as null)."""
    if frame is None:
        return None
    picked = frame.select([c for c in columns if c in frame.columns])
    picked = picked.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))
    floats = [c for c, dtype in picked.schema.items() if dtype.is_float()]
    picked = picked.with_columns(pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c) for c in floats)
    return picked.to_dicts()


def summary_document(figures: SummaryFigures) -> dict[str, object]:
    """The summary as a JSON document (``summary --format json``; its keys are in docs/query.md):
    the same figures as the text, in their frames' units (µs, %), rows not cut to the width."""
    import math
    from dataclasses import asdict

    overview = None
    if figures.overview is not None:
        overview = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in asdict(figures.overview).items()
        }
    step_columns = ["step", "duration_us", *(f"{c}_us" for c in CATEGORIES)]
    outliers = None
    if figures.outliers is not None:
        outliers = {
            "threshold_us": figures.outliers.threshold_us,
            "steps": [{"step": s, "duration_us": d} for s, d in figures.outliers.steps],
        }
    numbers = figures.numbers or dict.fromkeys(NUMBER_BLOCKS)
    return {
        "schema": SUMMARY_SCHEMA,
        "path": figures.path,
        "format": figures.format,
        "overview": overview,
        **{name: numbers.get(name) for name in NUMBER_BLOCKS},
        "lines": {
            "rank": figures.rank,
            "device_note": figures.device_note,
            "processes": figures.processes,
            "communication": figures.communication,
            "efficiency": figures.efficiency,
            "graphs": figures.graphs,
            "phases": figures.phases,
            "memory": figures.memory,
            "hints": figures.hints,
        },
        "environments": figures.environments,
        "runs": figures.runs,
        "steps": json_rows(figures.steps, step_columns),
        "outlier_steps": outliers,
        "top": figures.top,
        "kernels": json_rows(figures.kernels, list(KERNEL_COLUMNS)),
        "ops": json_rows(figures.ops, list(op_columns(figures.ops))),
        "missing": figures.missing,
    }


#: The typed blocks of the document, in its order (report/summary_numbers.py).
NUMBER_BLOCKS = (
    "communication", "categories", "efficiency", "graphs", "phases", "memory", "critical_path", "launches",
    "tensor_cores", "processes",
)


def dump_json(document: dict[str, object]) -> str:
    """A summary document as JSON text, by the one JSON writer (:func:`profview.sanitize.json_text`):
    ASCII, no NaN or huge number at any depth (``null``), indented, with a final newline."""
    from ..sanitize import json_text

    return json_text(document)


def print_summary_json(profile: Profile, top: int, stream: TextIO | None = None) -> None:
    """The summary as one JSON document on stdout."""
    (stream or sys.stdout).write(dump_json(summary_document(summary_figures(profile, top, numbers=True))))


@dataclass
class Outliers:
    """The outlier steps: the threshold (median + 3×1.4826×MAD, at least +5%) and each (step, µs)."""

    threshold_us: float
    steps: list[tuple[int, float]]


def outlier_figures(steps: pl.DataFrame) -> Outliers | None:
    """The outlier steps of a step table, or None where none is."""
    from ..analysis.tables.step_outliers import outlier_threshold, step_outliers

    if "duration_us" not in steps.columns or "step" not in steps.columns:
        return None
    flagged = step_outliers(steps).filter(pl.col("outlier"))
    if flagged.height == 0:
        return None
    threshold = outlier_threshold(steps.filter(pl.col("step") >= 0)["duration_us"])
    listed = [(int(s), float(d)) for s, d in flagged.select("step", "duration_us").iter_rows()]
    return Outliers(threshold or 0.0, listed)


def outlier_text(outliers: Outliers) -> str:
    """ "outlier steps (duration > 116.3 ms: median + 3×1.4826×MAD, at least +5%): 17 (123.4 ms)"."""
    listed = ", ".join(f"{s} ({fmt_us(d)})" for s, d in outliers.steps)
    return f"outlier steps (duration > {fmt_us(outliers.threshold_us)}: median + 3×1.4826×MAD, at least +5%): {listed}"


def outlier_line(steps: pl.DataFrame) -> str | None:
    """The outlier line of a step table, or None."""
    outliers = outlier_figures(steps)
    return None if outliers is None else outlier_text(outliers)
