"""Compare mode of the viewer (``profview diff BEFORE AFTER``): the app's loading, screen and
drill-down for two profiles, as a mixin of :class:`profview.tui.app.ProfviewApp`.

The app keeps ``compare`` (``after`` and the :func:`profview.diff.comparison.load_comparison`
options; None for one profile) and ``comparison`` once loaded; its own loader, navigation and
drill-down hand over to these methods when a compare screen is on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.message import Message

from ...errors import ProfviewError
from ...sanitize import clean
from .. import lifecycle
from ..drill.routes import ROUTES
from ..host import ViewerApp
from ..main.screen import TITLES
from ..messages import ComparisonLoaded, DrillRequested, LoadPhase
from ..workers import load_failed

if TYPE_CHECKING:
    from ...diff.comparison import Comparison
    from ..drill.screen import DrillScreen
    from .screen import CompareScreen


class CompareMode:
    """Methods of the app for two profiles compared (mixed into ProfviewApp)."""

    compare: dict[str, Any] | None
    comparison: Comparison | None

    def _load_compare(self: ViewerApp) -> Message:
        """Load BEFORE and AFTER, link both and build the diff frames (a view a side lacks: its reason);
        ComparisonLoaded, or LoadFailed."""
        from ...diff.comparison import DIFF_VIEWS, load_comparison, remember

        assert self.compare is not None
        try:
            self.post_message(LoadPhase("reading and parsing both profiles"))
            comparison = load_comparison(self.path, use_cache=not self.no_cache, comm_pattern=self.comm_pattern,
                                         step_range=self.step_range, **self.compare)
            for which in ("before", "after"):
                self.post_message(LoadPhase(f"linking {which.upper()}"))
                lifecycle.prepare(comparison.side(which), lambda _phase: None)
            self.post_message(LoadPhase("comparing"))
            frames: dict[str, Any] = {}
            for view in (*DIFF_VIEWS, "moved", "phases"):
                try:
                    frames[view] = comparison.view(view)
                except ProfviewError as exc:
                    frames[view] = str(exc)
            remember(comparison)
        except Exception as exc:
            return load_failed(exc, self.path, "compare these profiles", "comparing")
        return ComparisonLoaded(comparison, frames)

    def on_comparison_loaded(self: ViewerApp, message: ComparisonLoaded) -> None:
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

    def compare_screen(self: ViewerApp) -> CompareScreen | None:
        """The compare screen when it is the one on screen, else None."""
        from .screen import CompareScreen

        return self.screen if isinstance(self.screen, CompareScreen) else None

    async def drill_compare(self: ViewerApp, message: DrillRequested) -> None:
        """Enter on a compare row, or on a row of a both-sides drill-down: the drill-down of both
        sides (before / after / delta per row), or of the one side chosen with ``w``; computed in the
        drill worker as every drill-down (a progress screen; Esc cancels)."""
        from ..drill.screen import DrillScreen

        comparison = self.comparison
        if comparison is None:
            return
        screen = self.screen
        row = message.row
        if isinstance(screen, DrillScreen) and screen.profile is None:  # deeper into both sides
            path = list(screen.path)
            if message.view in ("diff_kernel_launches", "diff_moved_calls"):  # a path, or an aligned call
                kind, before, after = "ops", row.get("op"), row.get("op")
            else:
                status = row.get("status")
                before = None if status == "added" else row.get("name")
                after = None if status == "removed" else row.get("name_after") or row.get("name")
                kind = "kernels"
            await self.start_drill(both_sides(comparison, kind, before, after, path), _what(kind, before, after))
            return
        compare = self.compare_screen()
        if compare is None:
            return
        target = compare.drill_target(row)
        if isinstance(target, str):
            self.notify(target, severity="warning")
            return
        side, before, after = target
        view = message.view.removeprefix("diff_")
        if view == "moved":  # issue 34: the aligned calls the row is about, not the whole trace's operator
            await self.drill_moved(side, row)
            return
        if side == "both":
            path = [f"{TITLES.get(view, view)} · before → after"]
            await self.start_drill(both_sides(comparison, view, before, after, path), _what(view, before, after))
            return
        route = ROUTES.get(view)
        name = before if side == "before" else after
        if route is None or name is None:
            return
        profile = comparison.side(side)
        path = [f"{side.upper()} {TITLES.get(view, view)}"]
        # its screen keeps its side's profile: further Enter stays on this side
        what = f"the drill-down of {name} in {side.upper()}"
        await self.start_drill(lambda: route(profile, {"name": name}, path), what)


    async def drill_moved(self: ViewerApp, side: str, row: dict[str, Any]) -> None:
        """Enter on a Moved row: the aligned calls of the compared steps it sums (both sides), or, with
        ``w``, the operator's launches in that side's compared step; the breadcrumb starts at Moved."""
        comparison = self.comparison
        assert comparison is not None
        op, before, after = str(row.get("op")), str(row.get("kernels_before")), str(row.get("kernels_after"))
        steps = tuple(comparison.representative_step(w) for w in ("before", "after"))
        if side == "both":
            path = [f"Moved · {comparison.steps_phrase()}", f"op {op}: {before} → {after}"]

            def build() -> DrillScreen:
                from ..drill.screen import DrillScreen
                from .screen import CompareView, compare_frame

                frame = compare_frame("moved_calls", comparison.moved_calls(op, before, after))
                return DrillScreen("diff_moved_calls", frame, path, table=CompareView)

            await self.start_drill(build, f"the aligned calls of {op}")
            return
        profile = comparison.side(side)
        step = steps[0] if side == "before" else steps[1]
        path = [f"{side.upper()} Moved · step {step}", f"op {op}"]
        route = ROUTES["ops"]
        await self.start_drill(lambda: route(profile, {"name": op}, path, step), f"{op} in {side.upper()} step {step}")


def _what(kind: str, before: object, after: object) -> str:
    name = after or before
    return f"the drill-down of {name} on both sides"


def both_sides(
    comparison: Comparison, kind: str, before: object, after: object, path: list[str]
) -> Callable[[], DrillScreen | str]:
    """What Enter opens on both sides: a kernel (``kind`` kernels) → its launch paths, an operator
    (``ops``) → the GPU work it launched; before / after / delta per row."""
    from ..drill.screen import DrillScreen
    from .screen import CompareView, compare_frame

    def build() -> DrillScreen | str:
        b = str(before) if before else None
        a = str(after) if after else None
        if kind == "kernels":
            label = f"{b} → {a}" if a and b and a != b else (a or b)
            frame = comparison.kernel_launches(b, a)
            return DrillScreen("diff_kernel_launches", compare_frame("kernel_launches", frame),
                               [*path, f"kernel {label}"], table=CompareView)
        if kind == "ops":
            frame = comparison.op_launches(b, a)
            return DrillScreen("diff_op_launches", compare_frame("op_launches", frame),
                               [*path, f"op {a or b}"], table=CompareView)
        return f"no drill-down from the {kind} rows"

    return build
