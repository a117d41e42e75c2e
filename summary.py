"""``profview summary``: the overview and top tables as plain terminal tables (Rich, no markup)."""

from __future__ import annotations

import polars as pl
from profview.analysis.steps import CATEGORIES, CATEGORY_LABELS
from profview.profile import Profile
from profview.sanitize import clean
from rich.console import Console
from rich.table import Table
from rich.text import Text

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


def _table(title: str, frame: pl.DataFrame, columns: dict[str, str]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for column, header in columns.items():
        table.add_column(header, justify="left" if column in ("name", "step") else "right", overflow="fold")
    for row in frame.iter_rows(named=True):
        cells = []
        for column in columns:
            value = row[column]
            if column == "name":
                cells.append(short(value))
            elif column.endswith("_us"):
                cells.append(Text(fmt_us(value)))
            elif column == "pct":
                cells.append(Text(f"{value:.1f}%"))
            else:
                cells.append(Text(clean(value)))
        table.add_row(*cells)
    return table


def print_summary(profile: Profile, top: int, console: Console | None = None) -> None:
    """Print what a user wants first about a profile."""
    console = console or Console(highlight=False, markup=False, emoji=False)
    console.print(Text(f"{clean(profile.path)}  ({profile.format})", style="bold"))
    if profile.events is not None:
        view = profile.overview()
        for device in view.devices:
            console.print(Text(f"  device {clean(device)}"))
        console.print(
            Text(
                f"  span {fmt_us(view.span_us)}, {view.steps} steps, GPU busy {view.gpu_busy_pct:.1f}% "
                f"({view.gpu_events:,} GPU events)"
            )
        )
        for hint in view.hints:
            console.print(Text(f"  hint: {clean(hint)}"))
    if profile.available("steps"):
        steps = profile.steps()
        columns = {"step": "step", "duration_us": "duration"} | {f"{c}_us": CATEGORY_LABELS[c] for c in CATEGORIES}
        console.print(_table("Steps", steps.with_columns(pl.col("step").cast(pl.String)), columns))
    if profile.available("kernels"):
        kernels = profile.kernels().head(top)
        cols = {"name": "kernel", "calls": "calls", "total_us": "total", "mean_us": "mean", "pct": "share"}
        console.print(_table(f"Top {top} kernels", kernels, cols))
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
        console.print(_table(f"Top {top} operators", ops, cols))
    for view, reason in profile.missing.items():
        console.print(Text(f"  no {view} view: {clean(reason)}"))
