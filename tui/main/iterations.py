"""The Iterations pane: one row per serving or decode-loop iteration, its phase lines above.

The table is ``Profile.iterations()`` (sort with ``s`` or a header click, filter with ``/``, export
with ``e``, as every table; ``!`` in the ``outlier`` column's place marks an iteration slower than its
phase's others); Enter narrows every view (Overview, Kernels, Operators, drill-downs, the Timeline)
to the highlighted iteration, ``a`` back to all.  Computed when the pane is first shown, off the UI
thread: the views the user did not open pay nothing for it.
"""

from __future__ import annotations

import polars as pl
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ...analysis.tables.step_outliers import MAD_FACTOR, MAD_SCALE
from ...errors import ProfviewError
from ...profiles.trace_profile import Profile
from ...sanitize import clean
from ..keymap import bindings
from ..messages import DrillRequested, IterationChosen
from ..widgets.table_view import FrameView

#: The table's columns on screen, the figures read first (the export keeps the same order).
SCREEN_ORDER = (
    "iteration", "phase", "outlier", "tokens", "gpu_us_per_token", "gpu_us", "wall_us", "gpu_busy_pct", "name",
    "host_us", "idle_us", "kernels", "launches", "graph_launches", "requests", "context_tokens", "tokens_from",
    "step", "start_us", "found_by",
)  # fmt: skip
FOUND_BY = {
    "annotation": "found by their annotations",
    "regex": "found by --iteration",
    "repeated": "the annotation repeated in each step",
    "steps": "no serving annotation: one iteration per ProfilerStep",
}


#: A training trace's iterations are its ProfilerSteps: the step names each, and the serving columns
#: (phase, tokens, per token: empty) go after the figures.
STEP_ORDER = ("iteration", "step", "outlier", "gpu_us", "wall_us", "gpu_busy_pct", "host_us", "idle_us", "kernels")


def screen_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """The iterations in :data:`SCREEN_ORDER` (the serving figure, GPU µs per token, before the wide
    columns).  ``outlier`` stays a boolean, so the export writes ``true``/``false`` as the CLI does;
    the table shows it as ``!`` (:data:`profview.tui.widgets.cells.MARK_COLUMNS`)."""
    order: tuple[str, ...] = SCREEN_ORDER
    if frame.height and "found_by" in frame.columns and (frame["found_by"] == "steps").all():
        order = STEP_ORDER + tuple(c for c in SCREEN_ORDER if c not in STEP_ORDER)
    return frame.select([c for c in order if c in frame.columns])


class IterationsView(Vertical):
    """The phase lines and the iterations table; Enter chooses an iteration, ``a`` all of them."""

    BINDINGS = bindings("iterations")
    DEFAULT_CSS = "IterationsView { padding: 0 1; } #iterations-title { height: auto; max-height: 6; }"

    def __init__(self, profile: Profile, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.profile = profile
        self.started = False
        self.chosen: int | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("finding the iterations…", style="italic"), id="iterations-title")

    def start(self) -> None:
        """Compute the iterations (once), off the UI thread."""
        if not self.started:
            self.started = True
            self.build()

    @work(thread=True, exit_on_error=False, group="iterations")
    def build(self) -> None:
        try:
            frame = self.profile.iterations()
            lines = self.profile.phase_lines()
        except ProfviewError as exc:
            self.app.call_from_thread(self.failed, exc.problem)
            return
        self.app.call_from_thread(self.ready, frame, lines)  # type: ignore[arg-type]  # Textual's hint: no async

    def failed(self, problem: str) -> None:
        self.query_one("#iterations-title", Static).update(Text(f"Iterations: not available — {clean(problem)}"))

    async def ready(self, frame: pl.DataFrame, lines: list[str]) -> None:
        found = str(frame["found_by"][0]).split(";")[0] if frame.height else ""  # the rule; a row may add more
        title = Text(f"Iterations · {frame.height} · {FOUND_BY.get(found, found)}", style="bold")
        title.append(
            f" · ! slower than median + {MAD_FACTOR:g}×{MAD_SCALE}×MAD of its phase · Enter: narrow all views to it"
            " · a: all",
            style="dim",
        )
        for line in lines:
            title.append(f"\n{clean(line)}", style="")
        self.query_one("#iterations-title", Static).update(title)
        table = FrameView("iterations", screen_frame(frame), id="iterations-table")
        await self.mount(table)
        if self.display:
            table.focus_table()

    def on_drill_requested(self, message: DrillRequested) -> None:
        """Enter on an iteration narrows the views to it (not a drill-down)."""
        if message.view != "iterations":
            return
        message.stop()
        iteration = message.row.get("iteration")
        if not isinstance(iteration, int):
            return
        self.chosen = iteration
        self.post_message(IterationChosen(self.profile.iteration_scope(iteration)))

    def action_all(self) -> None:
        """a: every iteration again (the views are no longer narrowed)."""
        self.chosen = None
        self.post_message(IterationChosen(None))

    def focus_table(self) -> None:
        tables = self.query(FrameView)
        if tables:
            tables.first().focus_table()
        else:
            self.focus()
