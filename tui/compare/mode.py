"""Compare mode of the viewer (``profview diff BEFORE AFTER``): the app's loading, screen and
drill-down for two profiles, as a mixin of :class:`profview.tui.app.ProfviewApp`.

The app keeps ``compare`` (``after`` and the :func:`profview.diff.comparison.load_comparison`
options; None for one profile) and ``comparison`` once loaded; its own loader, navigation and
drill-down hand over to these methods when a compare screen is on.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ProfviewError
from ...sanitize import clean
from ..drill.routes import ROUTES
from ..main.screen import TITLES
from ..messages import ComparisonLoaded, DrillRequested, LoadFailed, LoadPhase

if TYPE_CHECKING:
    from ...diff.comparison import Comparison


class CompareMode:
    """Methods of the app for two profiles compared (mixed into ProfviewApp)."""

    compare: dict[str, Any] | None
    comparison: Comparison | None

    def _load_compare(self, outcome: list[Any]) -> None:
        """Load BEFORE and AFTER, link both and build the diff frames (a view a side lacks: its reason)."""
        from ...diff.comparison import DIFF_VIEWS, load_comparison, remember
        from ..app import prepare

        assert self.compare is not None
        try:
            self.post_message(LoadPhase("reading and parsing both profiles"))
            comparison = load_comparison(self.path, use_cache=not self.no_cache, comm_pattern=self.comm_pattern,
                                         **self.compare)
            for which in ("before", "after"):
                self.post_message(LoadPhase(f"linking {which.upper()}"))
                prepare(comparison.side(which), lambda _phase: None)
            self.post_message(LoadPhase("comparing"))
            frames: dict[str, Any] = {}
            for view in (*DIFF_VIEWS, "moved"):
                try:
                    frames[view] = comparison.view(view)
                except ProfviewError as exc:
                    frames[view] = str(exc)
            remember(comparison)
        except ProfviewError as exc:
            outcome.append(LoadFailed(str(exc)))
        except MemoryError:
            outcome.append(LoadFailed(f"{self.path}: not enough memory to compare these profiles"))
        except Exception as exc:  # a bug, not a bad input: still one line
            outcome.append(LoadFailed(f"{self.path}: internal error while comparing: {type(exc).__name__}: {exc}"))
        else:
            outcome.append(ComparisonLoaded(comparison, frames))

    def on_comparison_loaded(self, message: ComparisonLoaded) -> None:
        from .screen import CompareScreen

        self.comparison = message.comparison
        self.loaded = self.linked = True
        self.switch_screen(CompareScreen(message.comparison, message.frames))
        for profile in (message.comparison.before, message.comparison.after):
            for warning in profile.warnings:
                self.notify(f"{clean(profile.path)}: {clean(warning)}", title="warning", severity="warning", timeout=10)
        repeated = message.comparison.repeated()
        if repeated:
            self.notify(f"names repeated in a table are one row, figures summed: {repeated}", title="note", timeout=8)

    def compare_screen(self):  # type: ignore[no-untyped-def]
        """The compare screen when it is the one on screen, else None."""
        from .screen import CompareScreen

        return self.screen if isinstance(self.screen, CompareScreen) else None

    async def drill_compare(self, message: DrillRequested) -> None:
        """Enter on a compare row: the drill-down of one side (see CompareScreen.drill_target),
        computed in the drill worker as every drill-down (a progress screen; Esc cancels)."""
        screen = self.compare_screen()
        if screen is None or self.comparison is None:
            return
        target = screen.drill_target(message.row)
        if isinstance(target, str):
            self.notify(target, severity="warning")
            return
        side, name = target
        profile = self.comparison.side(side)
        view = message.view.removeprefix("diff_")
        view = "ops" if view == "moved" else view  # a moved row: the operator's launches
        route = ROUTES.get(view)
        if route is None:
            return

        def side_route(profile: Any, row: dict[str, Any], path: list[str]) -> Any:
            drill = route(profile, row, path)
            if not isinstance(drill, str):
                drill.side_profile = profile  # further Enter on this screen stays on this side
            return drill

        path = [f"{side.upper()} {TITLES.get(view, view)}"]
        what = f"the drill-down of {name} in {side.upper()}"
        await self.start_drill(side_route, profile, {"name": name}, path, what)  # type: ignore[attr-defined]



def run_compare(before: str, after: str, *, no_cache: bool = False, comm_pattern: str | None = None,
                **options: Any) -> int:
    """Open the viewer in compare mode on BEFORE and AFTER; ``options``: ``per_step``, ``match``,
    ``tolerance_pct`` (see :func:`profview.diff.comparison.load_comparison`)."""
    from ..app import ProfviewApp, finish_run

    for path in (before, after):
        if not Path(path).exists():
            print(f"profview: error: {clean(path)}: no such file", file=sys.stderr)
            return 2
    app = ProfviewApp(before, no_cache=no_cache, comm_pattern=comm_pattern, compare={"after": after, **options})
    return finish_run(app, app.run())
