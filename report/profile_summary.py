"""``profview summary``: the overview and top tables as plain terminal tables (Rich, no markup)."""

from __future__ import annotations

from typing import Literal

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.trace.scalars import as_float
from ..frames import CATEGORIES, SHORT_LABELS, communication_lines, device_note, fmt_fixed, fmt_us, rank_line
from ..profiles.trace_profile import Profile
from ..sanitize import clean
from .console import ReportConsole
from .wording import middle_cut, plural

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


def _table(
    title: str, frame: pl.DataFrame, columns: dict[str, str], width: int, unit_ms: bool = False, wide: bool = False
) -> Table:
    """A borderless table: numbers keep their full width, names give way, cut in the middle
    (``wide``: names whole, folded over lines where the terminal is narrower)."""
    rows = [[_cell(c, row[c], unit_ms) for c in columns] for row in frame.iter_rows(named=True)]
    widths = [max([len(header), *(len(r[i]) for r in rows)]) for i, header in enumerate(columns.values())]
    names = [i for i, column in enumerate(columns) if column == "name"]
    spare = width - sum(w for i, w in enumerate(widths) if i not in names) - 2 * len(widths)
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None)
    for index, (column, header) in enumerate(columns.items()):
        if column == "name" and wide:
            table.add_column(header, overflow="fold")
        elif column == "name":
            size = max(16, min(widths[index], spare))
            table.add_column(header, no_wrap=True, overflow="ellipsis", width=size)
            for cells in rows:
                cells[index] = Text(middle_cut(cells[index].plain, size))
        else:
            justify: Literal["left", "right"] = "left" if column == "step" else "right"
            table.add_column(header, justify=justify, no_wrap=True, min_width=widths[index])
    for cells in rows:
        table.add_row(*cells)
    return table


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


def print_summary(profile: Profile, top: int, console: Console | None = None, wide: bool = False) -> None:
    """Print what a user wants first about a profile (``wide``: names whole, not cut to the width)."""
    console = console or ReportConsole()
    console.print(Text(f"{clean(profile.path)}  ({profile.format})", style="bold"))
    if profile.is_trace:
        view = profile.overview()
        rank = rank_line(view)
        if rank:
            console.print(Text(f"  {clean(rank)}"))
        for device in view.devices:
            console.print(Text(f"  device {clean(device)}"))
        note = device_note(view)
        if note:
            console.print(Text(f"  {note}"))
        console.print(
            Text(
                f"  span {fmt_us(view.span_us)}, "
                f"{plural(view.steps, 'step') if view.steps else 'no ProfilerStep ranges'}, "
                f"GPU busy {view.gpu_busy_pct:.1f}% "
                f"({view.gpu_events:,} GPU events)"
            )
        )
        for line in communication_lines(view):
            console.print(Text(f"  {clean(line)}"))
        for line in profile.efficiency_lines():  # issue 24
            console.print(Text(f"  {clean(line)}"))
        for line in profile.graph_lines():  # issue 36
            console.print(Text(f"  {clean(line)}"))
        for line in profile.phase_lines():  # issue 31: serving and decode loops, per phase
            console.print(Text(f"  {clean(line)}"))
        for line in _memory_lines(profile):
            console.print(Text(f"  {clean(line)}"))
        for hint in view.hints:
            console.print(Text(f"  hint: {clean(hint)}"))
    elif profile.metadata.get("hints") or profile.metadata.get("environments"):
        for key, value in (profile.metadata.get("environments") or {}).items():
            console.print(Text(f"  {clean(key)}: {clean(value)}"))
        for hint in profile.metadata.get("hints") or []:
            console.print(Text(f"  hint: {clean(hint)}"))
    if len(profile.runs) > 1:
        console.print(Text(f"  runs: {', '.join(profile.runs)} (choose with --run)"))
    if profile.available("steps"):
        steps = profile.steps()
        columns = {"step": "step", "duration_us": "total"} | {f"{c}_us": SHORT_LABELS[c] for c in CATEGORIES}
        # issue 13: a trace without steps has one row for the whole trace (step -1): say so
        step = pl.when(pl.col("step") < 0).then(pl.lit("whole")).otherwise(pl.col("step").cast(pl.String))
        steps = steps.with_columns(step.alias("step"))
        console.print(_table("Steps (ms)", steps, columns, console.width, unit_ms=True))
        outliers = outlier_line(profile.steps())  # issue 13
        if outliers:
            console.print(Text(f"  {outliers}"))
    if profile.available("kernels"):
        kernels = profile.kernels().head(top)
        cols = {"name": "kernel", "calls": "calls", "total_us": "total", "mean_us": "mean", "pct": "share"}
        console.print(_table(f"Top {top} kernels", kernels, cols, console.width, wide=wide))
    if profile.available("ops"):
        from ..profiles.views import with_graph_time

        # issue 40: where graphs replay, operators rank by the time attributed to them through the
        # capture too (the ops view's order), so a replayed operator is not left out of the top
        ops = with_graph_time(profile, profile.ops()).head(top)
        graph = {"graph_device_us": "replayed"} if "graph_device_us" in ops.columns else {}
        cols = {
            "name": "operator",
            "calls": "calls",
            **graph,
            "host_self_us": "host self",
            "host_total_us": "host total",
            "device_self_us": "device self",
            "device_total_us": "device total",
        }
        console.print(_table(f"Top {top} operators", ops, cols, console.width, wide=wide))
    for missing, reason in profile.missing.items():
        console.print(Text(f"  no {missing} view: {clean(reason)}"))


def outlier_line(steps: pl.DataFrame) -> str | None:
    """"outlier steps (duration > 116.3 ms: median + 3×1.4826×MAD, at least +5%): 17 (123.4 ms)", or None."""
    from ..analysis.tables.step_outliers import outlier_threshold, step_outliers

    if "duration_us" not in steps.columns or "step" not in steps.columns:
        return None
    flagged = step_outliers(steps).filter(pl.col("outlier"))
    if flagged.height == 0:
        return None
    threshold = outlier_threshold(steps.filter(pl.col("step") >= 0)["duration_us"])
    listed = ", ".join(f"{s} ({fmt_us(d)})" for s, d in flagged.select("step", "duration_us").iter_rows())
    return f"outlier steps (duration > {fmt_us(threshold or 0.0)}: median + 3×1.4826×MAD, at least +5%): {listed}"
