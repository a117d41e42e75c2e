"""``profview summary``: the overview and top tables as plain terminal tables (Rich, no markup)."""

from __future__ import annotations

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .analysis.overview import Overview
from .analysis.steps import CATEGORIES
from .sanitize import clean
from .trace_profile import Profile

NAME_WIDTH = 60


def fmt_us(value: float | None) -> str:
    """A duration in µs, in the unit that reads best."""
    if value is None:
        return "-"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.3f} s"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.3f} ms"
    return f"{value:.3f} us"


def short(name: object, width: int = NAME_WIDTH) -> Text:
    """A sanitised, width-limited name as inert Text."""
    text = clean(name)
    return Text(text if len(text) <= width else text[: width - 1] + "…")


def rank_line(view: Overview) -> str | None:
    """``rank r of N (backend)`` for one rank's trace of a distributed job, else None."""
    if view.rank is None:
        return None
    of = f" of {view.world_size}" if view.world_size is not None else ""
    backend = f" ({view.backend})" if view.backend else ""
    return f"rank {view.rank}{of}{backend}"


def device_note(view: Overview) -> str | None:
    """Why fewer devices are listed than the trace's ``deviceProperties`` holds, if they are."""
    if view.devices_listed > len(view.devices) > 0:
        return f"(the GPU work ran on {len(view.devices)} of the {view.devices_listed} devices the trace lists)"
    return None


def communication_lines(view: Overview) -> list[str]:
    """Communication time on the GPU (share of GPU busy time, by backend and collective) and on the host."""
    lines = []
    if view.communication_us:
        kinds = ", ".join(
            f"{backend} {kind} {fmt_us(total)} ×{calls:,}" for backend, kind, calls, total in view.collectives[:4]
        )
        more = f", … {len(view.collectives) - 4} more" if len(view.collectives) > 4 else ""
        lines.append(
            f"communication {fmt_us(view.communication_us)}, {view.communication_pct:.1f}% of GPU busy time "
            f"({kinds}{more})"
        )
    if view.host_collective_us:
        host = fmt_us(view.host_collective_us)
        lines.append(f"host time in CPU collectives {host} (gloo/mpi work and the calls waiting on it)")
    return lines


SHORT_LABELS = {
    "kernel": "Kernel",
    "memcpy": "Memcpy",
    "memset": "Memset",
    "communication": "Comm",
    "runtime": "Runtime",
    "dataloader": "Data",
    "cpu_exec": "CPU",
    "other": "Other",
}


def _cell(column: str, value: object, unit_ms: bool) -> Text:
    if column == "name":
        return short(value)
    if column.endswith("_us"):
        return Text("-" if value is None else f"{value / 1e3:.1f}" if unit_ms else fmt_us(value))  # type: ignore[operator]
    if column == "pct":
        return Text("-" if value is None else f"{value:.1f}%")
    return Text(clean(value))


def _table(title: str, frame: pl.DataFrame, columns: dict[str, str], width: int, unit_ms: bool = False) -> Table:
    """A borderless table: numbers keep their full width, names give way with an ellipsis."""
    rows = [[_cell(c, row[c], unit_ms) for c in columns] for row in frame.iter_rows(named=True)]
    widths = [max([len(header), *(len(r[i]) for r in rows)]) for i, header in enumerate(columns.values())]
    names = [i for i, column in enumerate(columns) if column == "name"]
    spare = width - sum(w for i, w in enumerate(widths) if i not in names) - 2 * len(widths)
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None)
    for index, (column, header) in enumerate(columns.items()):
        if column == "name":
            size = max(16, min(widths[index], spare))
            table.add_column(header, no_wrap=True, overflow="ellipsis", width=size)
        else:
            justify = "left" if column == "step" else "right"
            table.add_column(header, justify=justify, no_wrap=True, min_width=widths[index])
    for cells in rows:
        table.add_row(*cells)
    return table


def print_summary(profile: Profile, top: int, console: Console | None = None) -> None:
    """Print what a user wants first about a profile."""
    console = console or Console(highlight=False, markup=False, emoji=False)
    console.print(Text(f"{clean(profile.path)}  ({profile.format})", style="bold"))
    if profile.events is not None:
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
                f"  span {fmt_us(view.span_us)}, {view.steps} steps, GPU busy {view.gpu_busy_pct:.1f}% "
                f"({view.gpu_events:,} GPU events)"
            )
        )
        for line in communication_lines(view):
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
        steps = steps.with_columns(pl.col("step").cast(pl.String))
        console.print(_table("Steps (ms)", steps, columns, console.width, unit_ms=True))
    if profile.available("kernels"):
        kernels = profile.kernels().head(top)
        cols = {"name": "kernel", "calls": "calls", "total_us": "total", "mean_us": "mean", "pct": "share"}
        console.print(_table(f"Top {top} kernels", kernels, cols, console.width))
    if profile.available("ops"):
        ops = profile.ops().head(top)
        cols = {
            "name": "operator",
            "calls": "calls",
            "host_self_us": "host self",
            "host_total_us": "host total",
            "device_self_us": "device self",
            "device_total_us": "device total",
        }
        console.print(_table(f"Top {top} operators", ops, cols, console.width))
    for view, reason in profile.missing.items():
        console.print(Text(f"  no {view} view: {clean(reason)}"))
