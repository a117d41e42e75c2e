"""``profview summary`` on a job, and the progress line of a job being opened (stderr)."""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from typing import TextIO

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.trace.scalars import as_float
from ..frames import fmt_fixed, fmt_us
from ..jobs.job import Job
from ..sanitize import clean
from .console import ReportConsole
from .wording import telling_cuts


class ProgressLine:
    """``ranks 12/64 done, ~8 s left`` on one rewritten stderr line (only on a terminal)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.shown = False

    def __call__(self, done: int, total: int, elapsed: float) -> None:
        if not self.stream.isatty():
            return
        left = elapsed / done * (total - done) if done else 0.0
        self.stream.write(f"\rprofview: ranks {done}/{total} done, ~{left:.0f} s left \033[K")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        """Erase the line."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def ranks_phrase(ranks: list[int]) -> str:
    """Ranks in few words: ``rank 7``, ``ranks 2, 5, 9``, or for many that tie
    ``rank 7 and 127 more ranks tie (every 8th from 7)`` (``(7-134)`` when they are consecutive)."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) <= 3:
        return "ranks " + ", ".join(map(str, ranks))
    ordered = sorted(ranks)
    steps = {b - a for a, b in itertools.pairwise(ordered)}
    phrase = f"rank {ordered[0]} and {len(ordered) - 1} more ranks tie"
    if steps == {1}:
        return f"{phrase} ({ordered[0]}-{ordered[-1]})"
    if len(steps) == 1:
        every = steps.pop()
        return f"{phrase} (every {every}{_ordinal(every)} from {ordered[0]})"
    return phrase


def matching_line(job: Job) -> str | None:
    """How the collective calls were matched across ranks, how many were not and why, and how many
    instances the clock offsets rest on (None for a job without collective calls)."""
    from ..analysis.distributed.collectives import UNMATCHED, anchor_count, match_counts

    view = job.collectives()
    counts = match_counts(view)
    if not counts:
        return None
    ways = {
        "peer": "the peer each side names",
        "seq": "process group and Seq",
        "comms_id": "Comms Id",
        "group_order": "order in the process group",
        "stream_order": "order on the stream",
    }
    matched = view.filter(pl.col("ranks") > 1)
    on = ", ".join(f"{counts[k]:,} by {label}" for k, label in ways.items() if counts.get(k))
    line = f"collectives: {matched['collective'].n_unique():,} matched across ranks"
    line += f" ({matched.height:,} calls: {on})" if matched.height else ""
    left = [f"{counts[k]:,} {label}" for k, label in UNMATCHED.items() if counts.get(k)]
    single = view.filter(pl.col("ranks") == 1).height - sum(counts.get(k, 0) for k in UNMATCHED)
    if single > 0:
        left.append(f"{single:,} on one rank only")
    if left:
        line += "; calls left unmatched: " + ", ".join(left)
    anchors = anchor_count(view)
    if job.one_clock:
        line += "; clock offsets: none (every rank timed on one capture's clock)"
    else:
        line += f"; clock offsets from {plural_instances(anchors)}" if anchors else "; clock offsets: none estimated"
    return line


def plural_instances(count: int) -> str:
    """``1 instance`` / ``3 instances``."""
    return f"{count:,} instance" + ("" if count == 1 else "s")


def _ordinal(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def straggler_figures(job: Job) -> dict[str, object] | None:
    """Which rank the others wait for, as numbers: the straggler ranks, the collectives it arrives
    last at of those matched across ranks, its wait and the other ranks' mean wait (µs; None where
    no rank is not a straggler); None where no collective matched across ranks."""
    stragglers = job.stragglers()
    if not stragglers:
        return None
    view = job.ranks_view()
    row = view.filter(pl.col("rank") == stragglers[0]).row(0, named=True)
    matched = job.collectives().filter(pl.col("ranks") > 1)["collective"].n_unique()
    others = as_float(view.filter(~pl.col("straggler"))["wait_us"].mean())
    return {
        "ranks": [int(r) for r in stragglers],
        "last_arrivals": int(row["last_arrivals"]),
        "collectives_matched": int(matched),
        "wait_us": as_float(row["wait_us"]),
        "others_mean_wait_us": others,
    }


def straggler_line(job: Job, figures: dict[str, object] | None = None) -> str:
    """Which rank the others wait for, and why, in words (the line ``summary`` prints and the job
    screen's header shows): :func:`straggler_figures` (given, or read from ``job``) in words."""
    found = figures if figures is not None else straggler_figures(job)
    if found is None:
        return "straggler: none found (no collective matched across ranks on evidence the traces hold)"
    others = found["others_mean_wait_us"]
    waits = f"; the other ranks wait {fmt_us(others)} on average" if isinstance(others, float) else ""
    ranks: list[int] = found["ranks"]  # type: ignore[assignment]
    wait = found["wait_us"]
    return (
        f"straggler: {ranks_phrase(ranks)}, named by the least total wait at matched collectives "
        f"({fmt_us(wait if isinstance(wait, float) else 0.0)}{waits}); it arrives last at "
        f"{found['last_arrivals']} of {found['collectives_matched']} collectives{arrivals_note(job, ranks)}"
    )


def arrivals_note(job: Job, stragglers: list[int]) -> str:
    """What the ranks table's ``last`` column shows beside the straggler, so the name is not read
    against it: the other ranks that arrive last as often (``, as do ranks 4, 7``), or more often
    (``; rank 2 arrives last more often, at 2``)."""
    view = job.ranks_view().select("rank", "last_arrivals").drop_nulls()
    if view.height == 0:
        return ""
    mine = view.filter(pl.col("rank").is_in(stragglers))["last_arrivals"].max()
    others = view.filter(~pl.col("rank").is_in(stragglers))
    more = others.filter(pl.col("last_arrivals") > mine).sort("last_arrivals", descending=True)
    if more.height:
        most = int(more["last_arrivals"][0])
        ranks = more.filter(pl.col("last_arrivals") == most)["rank"].to_list()
        return f"; {ranks_phrase(ranks)} {'arrives' if len(ranks) == 1 else 'arrive'} last more often, at {most}"
    same = others.filter((pl.col("last_arrivals") == mine) & (pl.col("last_arrivals") > 0))["rank"].to_list()
    return f", as {'does' if len(same) == 1 else 'do'} {ranks_phrase(same)}" if same else ""


#: The version of ``summary JOB --format json``'s document (docs/query.md).
JOB_SUMMARY_SCHEMA = "profview.job-summary/1"
#: The ranks table's columns the summary shows (text and JSON), and their headers.
RANK_COLUMNS = {
    "rank": "rank",
    "steps": "steps",
    "step_us": "step",
    "kernel_us": "kernel",
    "communication_us": "comm",
    "exposed_communication_us": "exposed",
    "overlap_pct": "overlap",
    "wait_us": "wait",
    "last_arrivals": "last",
    "clock_offset_us": "offset µs",
}
COLLECTIVE_COLUMNS = ("collective", "name", "ranks", "max_wait_us", "last_rank", "duration_us")
JOB_KERNEL_COLUMNS = ("name", "calls", "total_us", "median_rank_us", "max_rank_us", "max_rank")


@dataclass
class JobSummaryFigures:
    """Every figure ``profview summary JOB`` shows, read once from the job: the text and the JSON
    render this one object.  Lines are as printed (not yet sanitised); frames cut to ``top`` rows."""

    source: str
    top: int
    lines: list[str]
    backends: list[str]
    straggler: str
    straggler_figures: dict[str, object] | None
    rank_count: int
    world_size: int | None
    ranks: pl.DataFrame
    ranks_title: str
    collectives: pl.DataFrame
    kernels: pl.DataFrame
    #: What the job was read from, in words (:attr:`Job.format`)
    format: str = "distributed job"


def job_summary_figures(job: Job, top: int) -> JobSummaryFigures:
    """The job summary's figures: its rank count and notes, the straggler, ranks, collectives, kernels."""
    backends = sorted({s.backend for s in job.summaries if s.backend})
    # The backend belongs to the line that counts the ranks (the notes may start with another).
    count = f"{len(job.ranks)} of {job.world_size} ranks"
    lines = list(job.notes)
    if not (lines and lines[0].startswith(count)):
        lines.insert(0, count)
    matching = matching_line(job)
    if matching:
        lines.append(matching)
    ranks, title = shown_ranks(job.ranks_view(), top)
    straggler = straggler_figures(job)
    return JobSummaryFigures(
        source=job.source,
        top=top,
        lines=lines,
        backends=backends,
        straggler=straggler_line(job, straggler),
        straggler_figures=straggler,
        rank_count=len(job.ranks),
        world_size=job.world_size,
        ranks=ranks,
        ranks_title=title,
        collectives=job.collective_instances().head(top),
        kernels=job.kernels().head(top),
        format=job.format,
    )


def print_job_summary(job: Job, top: int, console: Console | None = None) -> None:
    """The job's ranks, its straggler, the longest-waiting collectives and the top kernels."""
    print_job_figures(job_summary_figures(job, top), console)


def print_job_figures(figures: JobSummaryFigures, console: Console | None = None) -> None:
    """The job summary as text."""
    console = console or ReportConsole()
    top = figures.top
    console.print(Text(f"{clean(figures.source)}  ({figures.format})", style="bold"))
    backends = [clean(b) for b in figures.backends]  # trace text: made inert
    backend = f" ({', '.join(backends)})" if backends else ""
    for number, line in enumerate(figures.lines):
        console.print(Text(f"  {clean(line)}{backend if number == 0 else ''}"))
    console.print(Text(f"  {figures.straggler}"))
    table = Table(
        title=figures.ranks_title,
        title_justify="left",
        show_edge=False,
        pad_edge=False,
        box=None,
        padding=(0, 1),
    )
    columns = dict(RANK_COLUMNS)
    if "pid" in figures.ranks.columns:  # the ranks of one export are its processes: each one's pid
        columns = {"rank": "rank", "pid": "pid", **columns}
    for header in columns.values():
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for row in figures.ranks.iter_rows(named=True):
        cells = [Text(str(row[c])) if c == "pid" else _cell(c, row[c]) for c in columns]
        table.add_row(*cells, Text("◀" if row["straggler"] else ""))
    console.print(table)
    instances = figures.collectives
    if instances.height:
        table = Table(title=f"Top {top} collectives by wait", title_justify="left", show_edge=False, box=None)
        for header in ("id", "collective", "ranks", "longest wait", "last rank", "longest"):
            table.add_column(header, justify="right", no_wrap=True)
        for row in instances.iter_rows(named=True):
            table.add_row(
                Text(str(row["collective"])),
                Text(clean(row["name"])),
                Text(str(row["ranks"])),
                Text(fmt_us(row["max_wait_us"])),
                Text("-" if row["last_rank"] is None else str(row["last_rank"])),
                Text(fmt_us(row["duration_us"])),
            )
        console.print(table)
    kernels = figures.kernels
    if kernels.height == 0:
        return
    headers = ("calls", "total", "median/rank", "max/rank", "max rank")
    rows = [
        [
            f"{row['calls']:,}",
            fmt_us(row["total_us"]),
            fmt_us(row["median_rank_us"]),
            fmt_us(row["max_rank_us"]),
            str(row["max_rank"]),
        ]
        for row in kernels.iter_rows(named=True)
    ]
    # the figures and their headers whole (each column as wide as its widest), the name cut in the middle
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    name_width = max(16, console.width - sum(widths) - 2 * (len(headers) + 1))
    table = Table(title=f"Top {top} kernels (all ranks)", title_justify="left", show_edge=False, box=None)
    table.add_column("kernel", no_wrap=True, overflow="ellipsis", max_width=name_width)
    for header, width in zip(headers, widths, strict=True):
        table.add_column(header, justify="right", no_wrap=True, min_width=width)
    names = telling_cuts([clean(name) for name in kernels["name"]], name_width)
    for name, shown in zip(names, rows, strict=True):
        table.add_row(Text(name), *(Text(c) for c in shown))
    console.print(table)


def job_summary_document(figures: JobSummaryFigures) -> dict[str, object]:
    """The job summary as a JSON document (``summary JOB --format json``; keys in docs/query.md):
    the same figures as the text, in their frames' units (µs, %)."""
    from .profile_summary import json_rows

    return {
        "schema": JOB_SUMMARY_SCHEMA,
        "path": figures.source,
        "format": "distributed job",
        "lines": figures.lines,
        "backends": figures.backends,
        "straggler": figures.straggler,
        "rank_count": figures.rank_count,
        "world_size": figures.world_size,
        "straggler_figures": figures.straggler_figures,
        "top": figures.top,
        "ranks_title": figures.ranks_title,
        "ranks": json_rows(
            figures.ranks,
            ["rank", *(["pid"] if "pid" in figures.ranks.columns else []), *list(RANK_COLUMNS)[1:], "straggler"],
        ),
        "collectives": json_rows(figures.collectives, list(COLLECTIVE_COLUMNS)),
        "kernels": json_rows(figures.kernels, list(JOB_KERNEL_COLUMNS)),
    }


def print_job_summary_json(job: Job, top: int, stream: TextIO | None = None) -> None:
    """The job summary as one JSON document on stdout (ASCII, as :func:`print_summary_json`)."""
    from .profile_summary import dump_json

    (stream or sys.stdout).write(dump_json(job_summary_document(job_summary_figures(job, top))))


def shown_ranks(ranks: pl.DataFrame, top: int) -> tuple[pl.DataFrame, str]:
    """The rows of the ranks table ``summary`` prints, and its title: every rank of a job of at most
    ``top`` ranks; of a larger job, the straggler(s) and then the slowest mean steps, ``top`` rows in
    all, in rank order (1,024 rows read as a list, not a summary)."""
    title = "Ranks (ms, mean per step; wait: total)"
    if top <= 0 or ranks.height <= top:
        return ranks, title
    order = ranks.with_row_index("_row").sort(
        [pl.col("straggler"), pl.col("step_us")], descending=[True, True], nulls_last=True
    )
    picked = order.head(top).sort("rank").drop("_row")
    return picked, (
        f"Ranks: {top} of {ranks.height:,} (the straggler, then the slowest steps; export --view ranks has all) "
        "(ms, mean per step; wait: total)"
    )


def _cell(column: str, value: object) -> Text:
    if value is None:
        return Text("-")
    if column == "clock_offset_us":
        return Text(fmt_fixed(float(value), 1))  # type: ignore[arg-type]
    if column.endswith("_us"):
        return Text(fmt_fixed(float(value) / 1e3, 2))  # type: ignore[arg-type]
    if column == "overlap_pct":
        return Text(f"{value:.1f}%")
    return Text(str(value))
