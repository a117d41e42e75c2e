"""The viewer on a memory snapshot: the snapshot screen, opened in a worker behind the loading
screen; Enter drills from a site to its blocks and from a block (or a row of the peak or an
OOM) to its whole stack."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
from textual import events, work
from textual.message import Message

from ...profiles.snapshot_profile import SnapshotProfile, load_snapshot
from ..app import ProfviewApp
from ..dialogs.loading import LoadingScreen
from ..drill.screen import DrillScreen
from ..keymap import user_keymap
from ..messages import DrillRequested
from ..widgets.table_view import FrameView
from ..workers import open_detached
from .screen import SnapshotScreen, site_first


@dataclass
class SnapshotOpened(Message):
    """The snapshot is read and its views computed."""

    profile: SnapshotProfile


def prepared_snapshot(path: str) -> SnapshotProfile:
    """The snapshot opened, with every view the screen shows computed (off the UI thread)."""
    profile = load_snapshot(path)
    profile.summary(5)
    for view in ("sites", "peak", "timeline", "ooms", "annotations", "segments", "blocks"):
        profile.view(view)
    return profile


class SnapshotApp(ProfviewApp):
    """:class:`ProfviewApp` over a :class:`SnapshotProfile` (``snapshot``: one opened already)."""

    def __init__(self, path: str, snapshot: SnapshotProfile | None = None) -> None:
        super().__init__(path)
        self.snapshot = snapshot
        self.linked = True
        self.loaded = snapshot is not None

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # ProfviewApp.on_mount would load a trace next
        self.set_keymap(user_keymap())
        if self.snapshot is not None:
            self.push_screen(SnapshotScreen(self.snapshot))
            return
        self.push_screen(LoadingScreen(self.path))
        self.open_snapshot()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def open_snapshot(self) -> None:
        """Read the snapshot and compute its views; post it, or why it cannot open."""
        path = self.path
        open_detached(
            self, lambda: prepared_snapshot(path), SnapshotOpened, path, "open the snapshot", "opening the snapshot"
        )

    def on_snapshot_opened(self, message: SnapshotOpened) -> None:
        self.snapshot = message.profile
        self.loaded = True
        self.switch_screen(SnapshotScreen(message.profile))
        for warning in message.profile.warnings:
            self.notify(warning, title="warning", severity="warning", timeout=10)

    def frame_view(self) -> FrameView | None:
        if isinstance(self.screen, SnapshotScreen):
            return self.screen.frame_view()
        return super().frame_view()

    async def on_drill_requested(self, message: DrillRequested) -> None:
        message.prevent_default()
        snapshot = self.snapshot
        if snapshot is None:
            return
        row = message.row
        trail = list(self.screen.path) if isinstance(self.screen, DrillScreen) else []
        if message.view == "snapshot_sites":
            site = row.get("site")
            blocks = snapshot.view("blocks").filter(
                (pl.col("site") == site) & pl.col("state").is_in(["active_allocated", "active_pending_free"])
            ).sort("size", descending=True)
            self.push_screen(DrillScreen("snapshot_blocks", site_first(blocks), ["Sites", f"{site}"]))
            return
        if message.view in ("snapshot_blocks", "snapshot_peak", "snapshot_ooms"):
            stack = row.get("stack")
            frames = snapshot.view("stacks").filter(pl.col("stack") == stack).sort("depth") if stack is not None \
                else pl.DataFrame()
            if frames.is_empty():
                self.notify("no stack was recorded for this allocation", severity="warning", timeout=4)
                return
            what = f"block {row['address']:#x}" if "address" in row else f"{row.get('site')}"
            shown = frames.select("depth", "filename", "line", "name")
            first = trail or [{"snapshot_peak": "Peak", "snapshot_ooms": "OOMs"}.get(message.view, "Sites")]
            self.push_screen(DrillScreen("snapshot_stack", shown, [*first, f"stack of {what}"]))

    def action_back_or_quit(self) -> None:
        if isinstance(self.screen, DrillScreen):
            self.pop_screen()
        else:
            self.exit(return_code=0 if self.loaded else 130)

    async def action_back(self) -> None:
        view = self.frame_view()
        if view is not None and view.pattern:
            await super().action_back()
        elif isinstance(self.screen, DrillScreen):
            self.pop_screen()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("cycle", "group", "next_run", "pane", "search_events", "step", "narrow"):
            return False
        return super().check_action(action, parameters)


__all__ = ["SnapshotApp"]
