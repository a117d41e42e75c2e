"""The job screen: a Ranks tab (rank × step grid and the ranks table) and a Collectives tab."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Static

from ...jobs.job import Job
from ...sanitize import clean
from ..keymap import bindings
from ..widgets.filter_bar import FilterBar
from ..widgets.table_view import FrameView
from .grid import SHADE_BY, RankGrid, shade_label

JOB_TABS = ("ranks", "collectives")
JOB_TITLES = {"ranks": "Ranks", "collectives": "Collectives"}


class JobScreen(Screen):
    """Every rank of a job; Enter (or o) on a rank opens its own views."""

    BINDINGS = bindings("job")

    def __init__(self, job: Job) -> None:
        super().__init__()
        self.job = job
        self.tab = "ranks"

    def compose(self) -> ComposeResult:
        yield Static(id="tabs")
        yield Static(id="context")
        with ContentSwitcher(initial="ranks", id="panes"):
            with Vertical(id="ranks"):
                yield RankGrid(self.job.steps(), self.job.stragglers(), id="rank-grid")
                yield FrameView("ranks", self.job.ranks_view(), id="ranks-table")
            yield FrameView(
                "collectives",
                self.job.collectives().sort(["wait_us", "collective", "rank"], descending=[True, False, False]),
                id="collectives",
            )
        yield FilterBar()
        yield Footer()

    def on_mount(self) -> None:
        self.update_header()
        self.focus_table()

    def update_header(self) -> None:
        tabs = Text()
        for index, tab in enumerate(JOB_TABS, 1):
            style = "reverse bold" if tab == self.tab else ""
            tabs.append(f" {index} {JOB_TITLES[tab]} ", style=style)
        self.query_one("#tabs", Static).update(tabs)
        job = self.job
        stragglers = job.stragglers()
        who = f"straggler: rank {', '.join(map(str, stragglers))}" if stragglers else "no straggler found"
        ranks = job.notes[0] if job.notes else f"{len(job.ranks)} of {job.world_size} ranks"
        self.query_one("#context", Static).update(Text(f"{clean(ranks)} · {who} · {clean(job.source)}", style="dim"))

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

    def action_next_shade(self) -> None:
        grid = self.query_one(RankGrid)
        column = SHADE_BY[(SHADE_BY.index(grid.column) + 1) % len(SHADE_BY)]
        grid.show(column)
        self.notify(f"grid shaded by {shade_label(column)}", timeout=2)

    def highlighted_rank(self) -> int | None:
        row = self.frame_view().current_row() if self.frame_view() else None
        return int(row["rank"]) if row and row.get("rank") is not None else None

    def action_open_rank(self) -> None:
        rank = self.highlighted_rank()
        if rank is not None:
            self.app.open_rank(rank)  # type: ignore[attr-defined]


def rank_of(row: dict) -> int | None:
    """The rank of a table row of the job screen."""
    value = row.get("rank")
    return int(value) if isinstance(value, int) else None


__all__ = ["JOB_TABS", "JobScreen", "rank_of"]
