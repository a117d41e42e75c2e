"""The viewer on a directory of per-rank memory snapshots (``profview runs/oom/``): one row per
rank with its peak and OOMs, the rank that ran out of memory first and the one that peaked
highest said above the table; Enter opens that rank's snapshot on its own screen, q comes back."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from ...frames import fmt_bytes
from ...jobs.snapshot_job import job_verdict, numbering_note, rank_rows, ranks_frame
from ...sanitize import clean
from ..dialogs.loading import LoadingScreen
from ..drill.screen import DrillScreen
from ..keymap import user_keymap
from ..messages import DrillRequested
from ..widgets.filter_bar import FilterBar
from ..widgets.footer import WholeFooter
from ..widgets.table_view import FrameView
from ..workers import open_detached
from .app import SnapshotApp, SnapshotOpened, prepared_snapshot
from .screen import SnapshotScreen

#: The ranks table's FrameView name (what Enter and exports see).
RANKS_VIEW = "snapshot_ranks"


def verdict_line(rows: list[dict[str, Any]]) -> str:
    """The job's answer in one line: the first OOM's rank (each rank's own clock) and the highest peak."""
    verdict = job_verdict(rows)
    by_rank = {r["rank"]: r for r in rows}
    first = verdict["first_oom_rank"]
    highest = verdict["highest_peak_rank"]
    oom = (
        f"first OOM: rank {first} (asked {fmt_bytes(by_rank[first]['first_oom_requested_bytes'])}; each rank's "
        "own clock)"
        if first is not None
        else "no rank recorded an OOM event"
    )
    peak = (
        f"highest peak: rank {highest}, {fmt_bytes(by_rank[highest]['peak_active_bytes'])}"
        if highest is not None
        else "no rank has a peak"
    )
    return f"{len(rows)} ranks · {oom} · {peak}"


@dataclass
class RanksRead(Message):
    """Every rank's snapshot is read and summed up."""

    rows: list[dict[str, Any]]


class SnapshotJobScreen(Screen[None]):
    """The ranks of a snapshot directory: the verdict line and the ranks table."""

    DEFAULT_CSS = """
    #job-title, #job-verdict, #job-note { height: 1; }
    """

    def __init__(self, path: str, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.path = path
        self.rows = rows

    def compose(self) -> ComposeResult:
        yield Static(
            Text(
                clean(
                    f"{os.path.basename(os.path.normpath(self.path))}/: memory snapshots, one per rank "
                    "(Enter: open the rank)"
                ),
                no_wrap=True,
                overflow="ellipsis",
            ),
            id="job-title",
        )
        yield Static(Text(clean(verdict_line(self.rows)), no_wrap=True, overflow="ellipsis"), id="job-verdict")
        note = numbering_note(self.rows)
        if note:
            yield Static(Text(note, no_wrap=True, overflow="ellipsis"), id="job-note")
        yield FrameView(RANKS_VIEW, ranks_frame(self.rows), id="ranks")
        yield FilterBar()
        yield WholeFooter()

    def on_mount(self) -> None:
        self.call_after_refresh(self.query_one(FrameView).focus_table)

    def frame_view(self) -> FrameView:
        """The ranks table."""
        return self.query_one(FrameView)


class SnapshotJobApp(SnapshotApp):
    """:class:`SnapshotApp` over a directory of snapshots: its ranks first, one rank's snapshot on Enter."""

    def __init__(self, path: str, snapshots: list[str]) -> None:
        super().__init__(path)
        self.snapshots = snapshots
        self.loaded = False

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()
        self.set_keymap(user_keymap())
        self.push_screen(LoadingScreen(self.path))
        self.read_ranks()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def read_ranks(self) -> None:
        """Read every rank's snapshot (one at a time) into its row; post the rows, or why not."""
        snapshots = self.snapshots
        open_detached(
            self, lambda: rank_rows(snapshots), RanksRead, self.path, "open the snapshots", "opening the snapshots"
        )

    def on_ranks_read(self, message: RanksRead) -> None:
        self.loaded = True
        self.switch_screen(SnapshotJobScreen(self.path, message.rows))

    @work(thread=True, exclusive=True, group="rank", exit_on_error=False)
    def open_rank(self, path: str) -> None:
        """One rank's snapshot opened with its views computed, posted as :class:`SnapshotOpened`."""
        try:
            profile = prepared_snapshot(path)
        except Exception as exc:
            self.call_from_thread(self.notify, clean(str(exc)), severity="error", timeout=8)
            return
        self.post_message(SnapshotOpened(profile))

    def on_snapshot_opened(self, message: SnapshotOpened) -> None:
        self.snapshot = message.profile
        self.push_screen(SnapshotScreen(message.profile))
        for warning in message.profile.warnings:
            self.notify(warning, title="warning", severity="warning", timeout=10)

    def frame_view(self) -> FrameView | None:
        if isinstance(self.screen, SnapshotJobScreen):
            return self.screen.frame_view()
        return super().frame_view()

    async def on_drill_requested(self, message: DrillRequested) -> None:
        if message.view == RANKS_VIEW:
            message.prevent_default()
            self.notify(f"opening rank {message.row.get('rank')}…", timeout=2)
            self.open_rank(os.path.join(self.path, str(message.row["file"])))
            return
        await super().on_drill_requested(message)

    def _leave(self) -> bool:
        """Close a drill-down or a rank's snapshot (back to the ranks); False on the ranks screen."""
        if isinstance(self.screen, DrillScreen):
            self.pop_screen()
            return True
        if isinstance(self.screen, SnapshotScreen):
            self.snapshot = None
            self.pop_screen()
            return True
        return False

    def action_back_or_quit(self) -> None:
        if not self._leave():
            self.exit(return_code=0 if self.loaded else 130)

    async def action_back(self) -> None:
        view = self.frame_view()
        if view is not None and view.pattern:
            await super().action_back()
        else:
            self._leave()


__all__ = ["RANKS_VIEW", "SnapshotJobApp", "SnapshotJobScreen", "verdict_line"]
