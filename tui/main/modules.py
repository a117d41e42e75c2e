"""The Modules pane: GPU time by ``nn.Module`` as an indented tree table, or by source line.

Each row holds both passes (``self_us``, ``total_us``) and the split, ``fwd_total_us`` and
``bwd_total_us``; optimizer annotations are rows of their own after the model.
The tree shows modules down to a depth (``x`` one level deeper, ``z`` one shallower, from the
whole model down to every leaf); ``b`` switches to source lines; Enter on a module opens the
GPU work launched under it.  The table is a :class:`FrameView`, so filter, sort and export work
as everywhere (the filter matches the module path).
"""

from __future__ import annotations

import polars as pl
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from ...errors import ProfviewError
from ...profiles.iteration_scope import IterationScope
from ...profiles.trace_profile import Profile
from ...sanitize import clean
from ..keymap import bindings
from ..widgets.table_view import FrameView

INDENT = "  "


def tree_frame(modules: pl.DataFrame, max_depth: int | None) -> pl.DataFrame:
    """The modules view as the table shows it: the module indented by depth, then the figures and
    the full path; only modules down to ``max_depth`` (None: all)."""
    shown = modules if max_depth is None else modules.filter(pl.col("depth") < max_depth)
    return shown.select(
        (pl.lit(INDENT).repeat_by(pl.col("depth")).list.join("") + pl.col("module")).alias("module"),
        "total_us",
        "fwd_total_us",
        "bwd_total_us",
        "pct",
        "self_us",
        "kernels",
        "calls",
        "path",
    )


class ModulesView(Vertical):
    """A caption and the module (or source-line) table."""

    BINDINGS = bindings("modules")
    DEFAULT_CSS = "#modules-caption { height: auto; max-height: 2; padding: 0 1; }"

    def __init__(self, profile: Profile, *, id: str | None = None, deferred: bool = False) -> None:
        super().__init__(id=id)
        self.deferred = deferred  # issue 32: its table is built when the pane is first shown
        self.profile = profile
        self.modules = profile.modules()
        self.deepest = int(self.modules.select(pl.col("depth").max()).item() or 0) + 1
        self.max_depth: int | None = min(3, self.deepest)
        self.by_source = False
        self.scope: int | IterationScope | None = None  # issue 40: the chosen step or iteration

    def compose(self) -> ComposeResult:
        yield Static(id="modules-caption")
        yield FrameView("modules", tree_frame(self.modules, self.max_depth), id="modules-table", deferred=self.deferred)

    def on_mount(self) -> None:
        self.update_caption()

    def update_caption(self) -> None:
        if self.by_source:
            text = Text("GPU time by source line (self: innermost frame; total: anywhere in the stack)", style="bold")
            if self.scope is not None:  # the source lines are not narrowed: said, not implied
                text.append(" · whole trace (not narrowed)", style="bold")
            text.append("   Enter: its kernels · b: modules", style="dim")
        else:
            depth = "all levels" if self.max_depth is None else f"{self.max_depth} of {self.deepest} levels"
            text = Text(f"GPU time by module ({depth}){scope_words(self.scope)}", style="bold")
            text.append("   x/z: deeper/shallower · Enter: its kernels · b: source lines", style="dim")
        self.query_one("#modules-caption", Static).update(text)

    def set_scope(self, scope: int | IterationScope | None) -> None:
        """Issue 40: a chosen step or iteration narrows the module table to its GPU work (``calls``
        left empty: the module frames on the host are not narrowed); None: the whole trace again."""
        self.scope = scope
        try:
            self.modules = self.profile.modules(scope)
        except ProfviewError as exc:
            self.notify(clean(exc.problem), severity="warning")
            return
        if not self.by_source:
            self.table().set_frame(tree_frame(self.modules, self.max_depth))
        self.update_caption()

    def table(self) -> FrameView:
        return self.query_one(FrameView)

    def action_depth(self, delta: int) -> None:
        """x / z: show one level more / fewer of the module tree."""
        if self.by_source:
            return
        current = self.deepest if self.max_depth is None else self.max_depth
        wanted = max(1, min(self.deepest, current + delta))
        self.max_depth = None if wanted >= self.deepest else wanted
        self.table().set_frame(tree_frame(self.modules, self.max_depth))
        self.update_caption()

    def toggle_sources(self) -> None:
        """b: source lines instead of modules, and back."""
        try:
            frame = self.profile.sources() if not self.by_source else None
        except ProfviewError as exc:
            self.notify(clean(exc.problem), severity="warning")
            return
        self.by_source = not self.by_source
        self.table().set_frame(frame if frame is not None else tree_frame(self.modules, self.max_depth))
        self.update_caption()

    def focus_table(self) -> None:
        self.table().focus_table()


def scope_words(scope: int | IterationScope | None) -> str:
    """`` · step 3 only`` / `` · iteration 7 only`` for a pane's caption ('' for the whole trace)."""
    if scope is None:
        return ""
    return f" · iteration {scope.iteration} only" if isinstance(scope, IterationScope) else f" · step {scope} only"


def modules_pane(profile: Profile, pane_id: str, deferred: bool = False) -> Widget:
    """The Modules pane, or the reason this profile has none."""
    try:
        return ModulesView(profile, id=pane_id, deferred=deferred)
    except ProfviewError as exc:
        return Static(Text(f"Modules: not available — {clean(exc.problem)}", style="italic"), id=pane_id)
