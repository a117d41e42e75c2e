"""The job screen: a Ranks tab (rank × step grid and the ranks table) and a Collectives tab.

The header says which rank the others wait for and why (the line ``profview summary`` prints:
:func:`profview.report.job_summary.straggler_line`).  Collectives: one row per collective matched
across ranks (longest wait first); Enter shows its per-rank rows.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Static

from ...jobs.job import Job
from ...report.job_summary import matching_line, straggler_line
from ...sanitize import clean
from ..drill.screen import DrillScreen
from ..keymap import bindings
from ..messages import DrillRequested
from ..widgets.filter_bar import FilterBar
from ..widgets.footer import WholeFooter
from ..widgets.message_line import MessageLine
from ..widgets.table_view import FrameView
from .grid import SHADE_BY, RankGrid, shade_label

JOB_TABS = ("ranks", "collectives")
JOB_TITLES = {"ranks": "Ranks", "collectives": "Collectives"}


class JobScreen(Screen[None]):
    """Every rank of a job; Enter (or o) on a rank opens its own views."""

    BINDINGS = bindings("job")
    DEFAULT_CSS = "#job-reason { height: auto; max-height: 3; }"

    def __init__(self, job: Job) -> None:
        super().__init__()
        self.job = job
        self.tab = "ranks"

    def compose(self) -> ComposeResult:
        with Horizontal(id="context-row"):  # notices at the right of the tabs, not toasts over the rows
            yield Static(id="tabs")
            yield MessageLine()
        yield Static(id="job-reason")
        with ContentSwitcher(initial="ranks", id="panes"):
            with Vertical(id="ranks"):
                yield RankGrid(grid_steps(self.job), self.job.stragglers(), id="rank-grid")
                yield FrameView("ranks", ranks_table(self.job), id="ranks-table")
            yield FrameView("collectives", self.job.collective_instances(), id="collectives")
        yield FilterBar()
        yield WholeFooter()

    def on_mount(self) -> None:
        self.update_header()
        self.focus_table()
        self.call_after_refresh(self.open_on_straggler)

    def open_on_straggler(self) -> None:
        """The cursor starts on the straggler the header names, so the grid shows its row."""
        view = self.query_one("#ranks-table", FrameView)
        stragglers = self.job.stragglers()
        ranks = view.displayed["rank"].to_list() if "rank" in view.displayed.columns else []
        if view.table is not None and stragglers and stragglers[0] in ranks:
            view.table.move_cursor(row=ranks.index(stragglers[0]))

    def update_header(self) -> None:
        tabs = Text(no_wrap=True, overflow="ellipsis")
        for index, tab in enumerate(JOB_TABS, 1):
            style = "reverse bold" if tab == self.tab else ""
            tabs.append(f" {index} {JOB_TITLES[tab]} ", style=style)
        job = self.job
        ranks = job.notes[0] if job.notes else f"{len(job.ranks)} of {job.world_size} ranks"
        name = f"  {clean(Path(job.source.rstrip('/')).name)} · "
        room = (self.app.size.width if self.is_attached else 80) - tabs.cell_len - len(name) - 1
        tabs.append(name + fit_missing(clean(ranks), room), style="dim")
        self.query_one("#tabs", Static).update(tabs)
        reason = straggler_line(job)
        if self.tab == "collectives" and job.collective_instances().height == 0:
            reason = matching_line(job) or reason  # an empty tab says why: the calls left unmatched, and on what
        self.query_one("#job-reason", Static).update(Text(clean(reason)))

    def frame_view(self) -> FrameView | None:
        """The table on screen."""
        return self.query_one("#ranks-table" if self.tab == "ranks" else "#collectives", FrameView)

    def focus_table(self) -> None:
        view = self.frame_view()
        if view is not None:
            view.focus_table()

    def action_tab(self, tab: str) -> None:
        self.tab = tab
        self.query_one(ContentSwitcher).current = tab
        self.update_header()
        self.call_after_refresh(self.focus_table)

    def action_next_tab(self) -> None:
        self.action_tab(JOB_TABS[(JOB_TABS.index(self.tab) + 1) % len(JOB_TABS)])

    def on_data_table_cell_highlighted(self) -> None:
        self.call_after_refresh(self.sync_grid)

    def on_table_shown(self) -> None:  # the ranks table was filtered or sorted
        self.call_after_refresh(self.sync_grid)

    def sync_grid(self) -> None:
        """The grid shows the ranks table's rows, in its order (sorted, filtered), around its cursor."""
        view = self.query_one("#ranks-table", FrameView)
        row = view.current_row()
        cursor = row.get("rank") if row else None
        self.query_one(RankGrid).follow(view.displayed["rank"].to_list(), cursor if isinstance(cursor, int) else None)

    def action_next_shade(self) -> None:
        grid = self.query_one(RankGrid)
        column = SHADE_BY[(SHADE_BY.index(grid.column) + 1) % len(SHADE_BY)]
        grid.show(column)
        self.notify(f"grid shaded by {shade_label(column)}", timeout=2)

    def action_open_rank(self) -> None:
        """o: as Enter on the highlighted row (the app opens its rank)."""
        view = self.frame_view()
        row = view.current_row() if view is not None else None
        if row is not None:
            self.post_message(DrillRequested(view.view if view is not None else "ranks", row))


def fit_missing(note: str, room: int) -> str:
    """``7 of 64 ranks (missing: 2, 3, 5, …)`` shortened to ``room`` cells by dropping missing ranks
    from the end, never cutting one (issue 34: the header was cut inside a rank's number)."""
    head, found, rest = note.partition(" (missing: ")
    if not found or len(note) <= room:
        return note
    ids = [i for i in rest.rstrip(")").split(", ") if i != "…"]
    while ids:
        shorter = f"{head} (missing: {', '.join(ids)}, …)"
        if len(shorter) <= room:
            return shorter
        ids.pop()
    return head


def collective_ranks(job: Job, row: dict[str, object]) -> DrillScreen:
    """One collective's per-rank rows (Enter on the Collectives tab), longest wait first; Enter on
    a rank there opens its views."""
    collective = row.get("collective")
    frame = (
        job.collectives()
        .filter(pl.col("collective") == collective)
        .sort(["wait_us", "rank"], descending=[True, False])
        .select(
            "rank", "wait_us", "start_us", "duration_us",
            pl.when(pl.col("last")).then(pl.lit("◀ last")).otherwise(pl.lit("")).alias("arrival"),
            "busbw_gbps", "algbw_gbps", "bytes", "dtype",
            pl.when(pl.col("mismatch")).then(pl.lit("differs")).otherwise(pl.lit("")).alias("signature"),
            "name", "process_group", "match",
        )
    )
    return DrillScreen("collective_ranks", frame, ["Collectives", f"collective {collective} {row.get('name')}"])


def ranks_table(job: Job) -> pl.DataFrame:
    """The ranks view as the Ranks tab lists it: led by a ``name`` (``rank 7``) that ``/`` filters
    and the details line names, ``straggler`` in words (``yes`` or blank, not a boolean), the rank's number last."""
    view = job.ranks_view()
    name = pl.format("rank {}", pl.col("rank"))
    if "pid" in view.columns:  # the ranks of one export are its processes: each named by its pid too
        name = pl.format("rank {} · pid {}", pl.col("rank"), pl.col("pid"))
    name = name.alias("name")
    marked = pl.when(pl.col("straggler")).then(pl.lit("yes")).otherwise(pl.lit("")).alias("straggler")
    return view.select(name, pl.exclude("rank", "straggler"), marked, pl.col("rank"))


def grid_steps(job: Job) -> pl.DataFrame:
    """Every rank's steps with its wait at collectives in each (what the grid is shaded by by default)."""
    return job.steps().join(job.step_waits(), on=["rank", "step"], how="left")


def rank_of(row: dict[str, object]) -> int | None:
    """The rank of a table row of the job screen."""
    value = row.get("rank")
    return int(value) if isinstance(value, int) else None


__all__ = ["JOB_TABS", "JobScreen", "rank_of"]
