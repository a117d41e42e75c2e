"""``profview diff --summary``: each side's facts, the mean step, and the biggest regressions and
improvements of kernels and operators, as plain terminal tables (Rich, no markup).

Regressions and improvements carry ▲ and ▼ (``▲ new``, ``▼ gone`` for rows on one side only), so
they read without colour.
"""

from __future__ import annotations

import math

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.diff.compare import GLYPHS
from ..diff.comparison import SIDES, Comparison
from ..frames import SCIENTIFIC_FROM, fmt_fixed, fmt_us
from ..sanitize import clean
from .console import ReportConsole
from .profile_summary import short

STYLE = {"increased": "red", "added": "red", "decreased": "green", "removed": "green", "unchanged": "dim"}


def _signed(value: float | None) -> str:
    if value is None:
        return "-"
    return ("+" if value > 0 else "") + fmt_us(value)


def _number(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) >= SCIENTIFIC_FROM:
            return fmt_fixed(value, 2)
        return f"{value:,.2f}".rstrip("0").rstrip(".") if not value.is_integer() else f"{int(value):,}"
    return f"{value:,}"


def _cell(column: str, value: object, status: str) -> Text:
    if column == "delta_us":
        return Text(_signed(value), style=STYLE[status])  # type: ignore[arg-type]
    if column == "delta_pct":
        return Text("-" if value is None else f"{value:+.1f}%")
    if "_us" in column:
        return Text(fmt_us(value))  # type: ignore[arg-type]
    return Text(_number(value))


def steps_title(comparison: Comparison) -> tuple[str, str]:
    """The step table's title and name header: ``Mean step`` where both sides have steps; a side
    without ProfilerStep ranges is one row, its whole trace, and the title says so."""

    def stepped(which: str) -> bool:
        profile = comparison.side(which)
        return not profile.is_trace or bool(profile.step_numbers())

    before, after = stepped("before"), stepped("after")
    if before and after:
        return "Mean step", "mean step"
    if not before and not after:
        return "Whole trace (no steps on either side)", "whole trace"
    return f"Mean step against the whole trace ({'BEFORE' if not before else 'AFTER'} has no steps)", "time"


def _diff_table(title: str, frame: pl.DataFrame, columns: dict[str, str], width: int) -> Table:
    """A borderless table of diff rows: a change glyph, the name (gives way), then the figures (full width)."""
    rows = []
    for row in frame.iter_rows(named=True):
        status = row["status"]
        cells = [Text(GLYPHS[status], style=STYLE[status])]
        for column in columns:
            absent = (status == "added" and column.endswith("_before")) or (
                status == "removed" and column.endswith("_after")
            )
            if column == "name":
                cells.append(Text(clean(row[column])))
            elif column == "calls":
                cells.append(Text(f"{_number(row['calls_before'])}→{_number(row['calls_after'])}"))
            else:
                cells.append(Text("-") if absent else _cell(column, row[column], status))
        rows.append(cells)
    headers = ["", *columns.values()]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    name_index = 1 + list(columns).index("name")
    spare = width - sum(w for i, w in enumerate(widths) if i != name_index) - 2 * (len(widths) - 1)
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None)
    for index, header in enumerate(headers):
        if index == name_index:
            table.add_column(header, no_wrap=True, overflow="ellipsis", width=max(12, min(widths[index], spare)))
        else:
            table.add_column(header, justify="left" if index == 0 else "right", no_wrap=True, min_width=widths[index])
    for cells in rows:
        table.add_row(*cells)
    return table


def _moved(frame: pl.DataFrame, top: int, worse: bool) -> pl.DataFrame:
    """The ``top`` rows that grew (``worse``) or shrank the most."""
    rows = frame.filter(pl.col("status").is_in(["increased", "added"] if worse else ["decreased", "removed"]))
    return rows.sort([pl.col("delta_us"), pl.col("name")], descending=[worse, False]).head(top)


def _moved_table(comparison: Comparison, top: int, width: int) -> Table | Text:
    """Kernels that changed under the same operator in one step of each side (renamed, fused, split)."""
    steps = comparison.steps_phrase()
    moved = comparison.moved()
    title = f"Kernels that changed under the same operator ({steps}, aligned by operator)"
    if not moved.height:
        return Text(f"{title}: none")
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None)
    name_width = max(12, (width - 30) // 3)
    for header in ("operator", "kernels before", "kernels after"):
        table.add_column(header, no_wrap=True, overflow="ellipsis", max_width=name_width)
    table.add_column("calls", justify="right", no_wrap=True)
    table.add_column("delta", justify="right", no_wrap=True)
    for row in moved.head(top).iter_rows(named=True):
        style = "red" if row["delta_us"] > 0 else "green"
        table.add_row(
            Text(clean(row["op"])), Text(clean(row["kernels_before"])), Text(clean(row["kernels_after"])),
            Text(f"{row['calls']:,}"), Text(_signed(row["delta_us"]), style=style),
        )
    return table


def phase_lines(comparison: Comparison) -> list[Text]:
    """Two serving runs per phase, two short lines each (80 columns): GPU per token (per
    iteration where a side does not know its tokens) before → after with the change, then the median
    host time per iteration before → after."""
    from ..profiles.iteration_views import short_us

    lines = [Text("Per phase (GPU per token where both sides count tokens, else per iteration)", style="italic")]
    for row in comparison.phases().iter_rows(named=True):
        status, per_token = row["status"], row["compared"] == "gpu_us_per_token"
        figure, unit = ("gpu_us_per_token", "token") if per_token else ("median_gpu_us", "iteration")
        delta = row["delta_us"] or 0.0
        pct = "" if row["delta_pct"] is None else f" ({row['delta_pct']:+.1f}%)"
        first = Text(f"{GLYPHS[status]} ", style=STYLE[status])
        counts = f"{_number(row['iterations_before'])}→{_number(row['iterations_after'])}"
        first.append(
            f"{clean(row['name'])} ({counts} iterations): "
            f"GPU/{unit} {short_us(row[f'{figure}_before'])} → {short_us(row[f'{figure}_after'])}, "
            f"{'+' if delta > 0 else '-' if delta < 0 else '±'}{short_us(abs(delta))}{pct}"
        )
        host = f"    host/iteration {short_us(row['median_host_us_before'])} → {short_us(row['median_host_us_after'])}"
        lines += [first, Text(host + " (medians)")]
    return lines


def print_diff_summary(comparison: Comparison, top: int, console: Console | None = None) -> None:
    """Print what changed between BEFORE and AFTER, biggest first."""
    console = console or ReportConsole()
    for which in SIDES:
        console.print(Text(short(comparison.header(which), 400).plain, style="bold"))
    console.print(Text(f"  {comparison.settings_line()}"))
    if comparison.before.available("steps") and comparison.after.available("steps"):
        steps = comparison.steps()
        title, head = steps_title(comparison)
        cols = {"name": head, "mean_us_before": "before", "mean_us_after": "after", "delta_us": "delta",
                "delta_pct": "%"}
        console.print(_diff_table(title, steps, cols, console.width))
    if comparison.serving():  # issue 31: serving runs per phase
        for line in phase_lines(comparison):
            console.print(line)
    scale = " per step" if comparison.per_step else ""
    for view, label, total in (("kernels", "kernels", "total_us"), ("ops", "operators", "self_us")):
        if not (comparison.before.available(view) and comparison.after.available(view)):
            console.print(Text(f"  no {label} comparison: one side has no {label} view"))
            continue
        frame = comparison.view(view)
        if view == "kernels":
            cols = {"name": "kernel", "calls": "calls", "total_us_before": "before", "total_us_after": "after",
                    "delta_us": "delta", "delta_pct": "%"}
        else:
            frame = frame.with_columns(
                (pl.col("host_self_us_before") + pl.col("device_self_us_before")).alias("self_us_before"),
                (pl.col("host_self_us_after") + pl.col("device_self_us_after")).alias("self_us_after"),
            )
            cols = {"name": "operator", "calls": "calls", "self_us_before": "self before",
                    "self_us_after": "self after", "delta_us": "delta", "delta_pct": "%"}
        for worse, word in ((True, "regressions"), (False, "improvements")):
            moved = _moved(frame, top, worse)
            title = f"Biggest {label} {word}{scale} ({total.removesuffix('_us')} time)"
            if moved.height:
                console.print(_diff_table(title, moved, cols, console.width))
            else:
                console.print(Text(f"{title}: none"))
        counts = frame["status"].value_counts()
        seen = dict(zip(counts["status"].to_list(), counts["count"].to_list(), strict=True))
        console.print(Text("  " + ", ".join(f"{seen.get(s, 0)} {s}" for s in GLYPHS) + f" ({label})"))
    if comparison.before.is_trace and comparison.after.is_trace:
        console.print(_moved_table(comparison, top, console.width))
