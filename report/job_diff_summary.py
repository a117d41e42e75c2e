"""``profview diff JOB_A JOB_B --summary``: each job's ranks and straggler, the per-rank medians,
the straggler tables rank by rank, and the kernels across ranks that moved most (plain Rich
tables, no markup; changes carry ▲ ▼ so they read without colour)."""

from __future__ import annotations

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.diff.compare import GLYPHS
from ..diff.job_comparison import SIDES, JobComparison
from ..frames import fmt_us
from ..sanitize import clean
from .console import ReportConsole
from .diff_summary import STYLE, _signed
from .profile_summary import short


def _status(status: str) -> Text:
    return Text(GLYPHS.get(status, status), style=STYLE.get(status, ""))


def _count(value: int | None) -> str:
    """A count, or ``-`` where it is unknown (a rank matched no collective, or is not on that side)."""
    return "-" if value is None else str(value)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def _table(title: str, headers: list[str], rows: list[list[Text]], name_width: int | None = None) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None)
    for index, header in enumerate(headers):
        if index == 1 and name_width is not None:
            table.add_column(header, no_wrap=True, overflow="ellipsis", max_width=name_width)
        else:
            table.add_column(header, justify="left" if index <= 1 else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def _medians(comparison: JobComparison) -> Table:
    rows = [
        [
            _status(r["status"]), Text(r["name"]), Text(fmt_us(r["median_us_before"])),
            Text(fmt_us(r["median_us_after"])), Text(_signed(r["delta_us"]), style=STYLE.get(r["status"], "")),
            Text(_pct(r["delta_pct"])),
        ]
        for r in comparison.ranks().iter_rows(named=True)
    ]
    title = "Median across ranks (step and categories: mean per step; wait: total)"
    return _table(title, ["", "figure", "before", "after", "delta", "%"], rows)


def _stragglers(comparison: JobComparison) -> Table:
    def straggler(before: bool | None, after: bool | None) -> str:
        return {(True, True): "both", (True, False): "before", (False, True): "after"}.get(
            (bool(before), bool(after)), ""
        )

    rows = [
        [
            _status(r["status"]), Text(str(r["rank"])),
            Text("-" if r["status"] == "added" else fmt_us(r["wait_us_before"])),
            Text("-" if r["status"] == "removed" else fmt_us(r["wait_us_after"])),
            Text(_signed(r["delta_us"]), style=STYLE.get(r["status"], "")),
            Text(_pct(r["delta_pct"])), Text(f"{_count(r['last_arrivals_before'])}→{_count(r['last_arrivals_after'])}"),
            Text(straggler(r["straggler_before"], r["straggler_after"])),
        ]
        for r in comparison.stragglers().iter_rows(named=True)
    ]
    headers = ["", "rank", "wait before", "wait after", "delta", "%", "last", "straggler"]
    return _table("Stragglers: wait at matched collectives per rank (last: arrived last)", headers, rows)


def _kernels(comparison: JobComparison, top: int, width: int) -> Table | Text:
    frame = comparison.kernels().filter(pl.col("status") != "unchanged").head(top)
    title = "Kernels across ranks that moved most (total of all ranks)"
    if not frame.height:
        return Text(f"{title}: none")
    rows = [
        [
            _status(r["status"]), Text(clean(r["name"])), Text(f"{r['ranks_before']}→{r['ranks_after']}"),
            Text(f"{r['calls_before']:,}→{r['calls_after']:,}"), Text(fmt_us(r["total_us_before"])),
            Text(fmt_us(r["total_us_after"])), Text(_signed(r["delta_us"]), style=STYLE.get(r["status"], "")),
            Text(_pct(r["delta_pct"])),
        ]
        for r in frame.iter_rows(named=True)
    ]
    headers = ["", "kernel", "ranks", "calls", "before", "after", "delta", "%"]
    return _table(title, headers, rows, name_width=max(12, width - 66))


def print_job_diff_summary(comparison: JobComparison, top: int, console: Console | None = None) -> None:
    """Print what changed between two jobs: medians, stragglers, kernels (biggest change first)."""
    console = console or ReportConsole()
    for which in SIDES:
        console.print(Text(short(clean(comparison.header(which)), 400).plain, style="bold"))
    console.print(Text(f"  {comparison.settings_line()}"))
    console.print(_medians(comparison))
    console.print(_stragglers(comparison))
    console.print(_kernels(comparison, top, console.width))
    counts = comparison.kernels()["status"].value_counts()
    seen = dict(zip(counts["status"].to_list(), counts["count"].to_list(), strict=True))
    console.print(Text("  " + ", ".join(f"{seen.get(s, 0)} {s}" for s in GLYPHS) + " (kernels)"))
