"""The main screen: Overview, Kernels, Operators and Steps, switched with 1-4 or Tab."""

from __future__ import annotations

from profview.profile import Profile
from profview.sanitize import clean
from profview.tui.filter_bar import FilterBar
from profview.tui.messages import StepChosen
from profview.tui.overview import OverviewView
from profview.tui.steps_view import StepsView
from profview.tui.table_view import FrameView
from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Static

PANES = ("overview", "kernels", "ops", "steps")
TITLES = {"overview": "Overview", "kernels": "Kernels", "ops": "Operators", "steps": "Steps"}


class MainScreen(Screen):
    """The four views of one profile."""

    def __init__(self, profile: Profile) -> None:
        super().__init__()
        self.profile = profile
        self.pane = "overview"
        self.step: int | None = None
        self.by_shape = {"kernels": False, "ops": False}

    def compose(self) -> ComposeResult:
        yield Static(id="tabs")
        yield Static(id="context")
        with ContentSwitcher(initial="overview", id="panes"):
            yield OverviewView(self.profile, id="overview")
            for view in ("kernels", "ops"):
                if self.profile.available(view):
                    yield FrameView(view, self.frame_for(view), id=view)
                else:
                    yield Static(self.missing_text(view), id=view)
            if self.profile.available("steps"):
                yield StepsView(self.profile, id="steps")
            else:
                yield Static(self.missing_text("steps"), id="steps")
        yield FilterBar()
        yield Footer()

    def on_mount(self) -> None:
        self.update_header()

    def missing_text(self, view: str) -> Text:
        reason = self.profile.missing.get(view, f"a {self.profile.format} has no {TITLES[view].lower()} view")
        return Text(f"{TITLES[view]}: not available for this profile — {clean(reason)}", style="italic")

    def frame_for(self, view: str):  # type: ignore[no-untyped-def]
        if view == "kernels":
            return self.profile.kernels(by_shape=self.by_shape["kernels"], step=self.step)
        return self.profile.ops(by_shapes=self.by_shape["ops"], step=self.step)

    def update_header(self) -> None:
        tabs = Text()
        for index, pane in enumerate(PANES, 1):
            style = "bold reverse" if pane == self.pane else ""
            tabs.append(f" {index} {TITLES[pane]} ", style=style)
            tabs.append(" ")
        tabs.append(f"  {clean(self.profile.path)}", style="dim")
        self.query_one("#tabs", Static).update(tabs)
        context = []
        if self.step is not None:
            context.append(f"step {self.step} only (Steps: a = all steps)")
        if self.by_shape["kernels"]:
            context.append("kernels by launch shape")
        if self.by_shape["ops"]:
            context.append("operators by input shapes")
        self.query_one("#context", Static).update(Text(" · ".join(context) or "all steps", style="dim"))

    def show(self, pane: str) -> None:
        """Switch to a pane and focus its main widget."""
        self.pane = pane
        self.query_one(ContentSwitcher).current = pane
        self.update_header()
        self.refresh_bindings()
        widget = self.query_one(f"#{pane}")
        if isinstance(widget, FrameView):
            widget.focus_table()
        elif isinstance(widget, StepsView):
            widget.focus_main()
        else:
            widget.focus()

    def active_frame_view(self) -> FrameView | None:
        widget = self.query_one(f"#{self.pane}")
        return widget if isinstance(widget, FrameView) else None

    def refresh_tables(self) -> None:
        for view in ("kernels", "ops"):
            widget = self.query_one(f"#{view}")
            if isinstance(widget, FrameView):
                widget.set_frame(self.frame_for(view))
        self.update_header()

    def can_group(self) -> bool:
        """Whether b (by launch shape / by input shapes) applies to the pane on screen."""
        if self.pane not in self.by_shape or not self.profile.available(self.pane):
            return False
        return self.profile.events is not None or (self.pane == "ops" and "ops_by_shapes" in self.profile.tables)

    def toggle_grouping(self) -> None:
        if self.can_group():
            self.by_shape[self.pane] = not self.by_shape[self.pane]
            self.refresh_tables()

    def on_step_chosen(self, message: StepChosen) -> None:
        self.step = message.step
        self.refresh_tables()
        label = "all steps" if message.step is None else f"step {message.step}"
        self.notify(f"Kernels and Operators now show {label}")
