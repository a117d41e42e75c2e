"""The main screen of one profile: its ten tabs (1 Overview … 9 Graphs, 0 Iterations; Tab cycles), the
context line, the message line, the filter bar and the footer.

Over ~400 lines because it is where a chosen step or iteration reaches every pane (each pane's
narrowing is one call here, its own logic in its module): splitting it would scatter that one rule.
"""

from __future__ import annotations

import contextlib
import functools

import polars as pl
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Static

from ...errors import ProfviewError
from ...profiles.iteration_views import IterationScope
from ...profiles.trace_profile import NO_RUNTIME, Profile
from ...profiles.views import ON_PATH_COLUMNS, with_efficiency, with_graph_time, with_on_path
from ...sanitize import clean
from ..keymap import bindings
from ..messages import IterationChosen, StepChosen
from ..widgets.filter_bar import FilterBar
from ..widgets.footer import WholeFooter
from ..widgets.message_line import MessageLine
from ..widgets.table_view import FrameView
from .efficiency import EfficiencyView, efficiency_pane
from .graphs import GraphsView, graphs_pane
from .iterations import IterationsView
from .memory import MemoryView, memory_pane
from .modules import ModulesView, modules_pane
from .overview import OverviewView
from .steps import StepList, StepsView
from .timeline import TimelinePane, mounted_timelines

PANES: tuple[str, ...] = ("overview", "kernels", "ops", "steps", "memory", "modules", "trace", "efficiency")
PANES += ("graphs", "iterations")  # graph replays and serving loops: tabs 9 and 0
TITLES = {"overview": "Overview", "kernels": "Kernels", "ops": "Operators", "steps": "Steps"}
# Memory, modules, the timeline.  The timeline pane is "trace": the Steps view already holds a widget #timeline.
TITLES |= {"memory": "Memory", "modules": "Modules", "trace": "Timeline"}
TITLES |= {"efficiency": "Efficiency"}  # the perf model and its roofline
TITLES |= {"iterations": "Iterations"}  # serving and decode loops
#: Tab titles when the full ones do not fit (ten tabs on an 80-column terminal): the README's names,
#: shortened, never a new word (the Overview stays "Overview").
SHORT_TITLES = {"overview": "Overview", "kernels": "Kern", "ops": "Ops", "memory": "Mem", "modules": "Mods"}
SHORT_TITLES |= {"trace": "Time", "efficiency": "Eff"}
TITLES |= {"graphs": "Graphs"}  # graph replays through their capture
SHORT_TITLES |= {"graphs": "Grph"}
SHORT_TITLES |= {"iterations": "Iter"}
#: The first crumb of a drill-down from one event of the Timeline (tui/drill/routes.py).
TITLES |= {"timeline_gpu": "Timeline", "timeline_host": "Timeline"}
#: The first crumb of a table a pane's key opens (Graphs' o: operators through the capture).
TITLES |= {"graph_ops_all": "Graphs", "timeline_range": "Timeline"}


def tab_line(current: str, width: int, path: str = "", empty: frozenset[str] = frozenset()) -> Text:
    """The tabs that fit ``width`` (the current one always), ``…`` where some do not; then the path.
    ``empty``: the panes this profile cannot fill, drawn dim (issue 34)."""
    titles = dict(TITLES)
    labels = [f" {index % 10} {titles[pane]} " for index, pane in enumerate(PANES, 1)]
    if sum(len(label) + 1 for label in labels) > width:
        titles["ops"] = "Ops"  # seven tabs on an 80-column terminal
        labels = [f" {index % 10} {titles[pane]} " for index, pane in enumerate(PANES, 1)]
    if sum(len(label) + 1 for label in labels) > width:
        titles.update(SHORT_TITLES)  # more tabs than fit whole: every title short
        labels = [f" {index % 10} {titles[pane]} " for index, pane in enumerate(PANES, 1)]
    if sum(len(label) + 1 for label in labels) > width:  # issue 34: at 60 columns, no padding (8 Eff stays)
        labels = [f"{index % 10} {titles[pane]}" for index, pane in enumerate(PANES, 1)]
    first, last = 0, len(PANES)  # the tabs shown: PANES[first:last]
    at = PANES.index(current) if current in PANES else 0

    def used(lo: int, hi: int) -> int:
        return sum(len(label) + 1 for label in labels[lo:hi]) + (2 if lo > 0 else 0) + (1 if hi < len(PANES) else 0)

    while used(first, last) > width and last - first > 1:
        if last - 1 > at:
            last -= 1
        else:
            first += 1
    tabs = Text()
    if first > 0:
        tabs.append("… ", style="bold")
    for index in range(first, last):
        style = "bold reverse" if PANES[index] == current else "dim" if PANES[index] in empty else ""
        tabs.append(labels[index], style=style)
        tabs.append(" ")
    if last < len(PANES):
        tabs.append("…", style="bold")  # issue 22: tabs that do not fit say so
    if path and tabs.cell_len + 2 < width:
        tabs.append(f"  {path}", style="dim")
    return tabs


def reserve_path_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with empty on-path columns where :func:`with_on_path` will fill them (after the total):
    the path arrives a second later, and the columns under the cursor must not move then."""
    after = next((c for c in ("total_us", "host_self_us") if c in frame.columns), None)
    if after is None or any(c in frame.columns for c in ON_PATH_COLUMNS):
        return frame
    order = list(frame.columns)
    at = order.index(after) + 1
    empty = [pl.lit(None, dtype=pl.Float64).alias(c) for c in ON_PATH_COLUMNS]
    return frame.select(*order[:at], *empty, *order[at:])


#: Columns the header's context line leaves for a notice of the message line ("now: step 12").
NOTICE_ROOM = 18


class MainScreen(Screen[None]):
    """The four views of one profile."""

    BINDINGS = bindings("main")

    def __init__(
        self, profile: Profile, *, linked: bool = True, title: str | None = None, scope: str | None = None
    ) -> None:
        """``title``: what the tab line names (default: the profile's path); ``scope``: what this
        profile is part of (``rank 7`` of a job), leading the context line and every breadcrumb."""
        super().__init__()
        self.profile = profile
        self.title_text = title or profile.path
        self.scope = scope
        self.linked = linked  # False: a large trace's model is still being built (Kernels first)
        self.pane = "overview"  # unlinked: the early Overview (the kernel table's figures) until link()
        self.step: int | None = None
        #: Issue 31: the iteration chosen in Iterations (it narrows the views as a step does; one or the other).
        self.iteration: IterationScope | None = None
        self.by_shape = {"kernels": False, "ops": False}
        #: ``(step,)``: the step whose critical path the Kernels and Operators tables show (issue 26:
        #: their on-path column); None while it is being computed.
        self.path_shown: tuple[int | None] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="tabs")
        with Horizontal(id="context-row"):  # issue 13: notices at the right of the context line
            yield Static(id="context")
            yield MessageLine()
        with ContentSwitcher(initial=self.pane, id="panes"):
            for pane in PANES:
                if self.linked or pane == "kernels":
                    yield self.pane_widget(pane)
                elif pane == "overview":
                    yield OverviewView(self.profile, id="overview", early=True, title=self.title_text)
                else:
                    yield self.waiting(pane)
        yield FilterBar()
        yield WholeFooter()

    def pane_widget(self, pane: str) -> Widget:
        """The widget of one pane (the model must be built for all but Kernels)."""
        if pane == "overview":
            return OverviewView(self.profile, id="overview", title=self.title_text)
        if not self.profile.available(pane):
            return Static(self.missing_text(pane), id=pane)
        hidden = pane != self.pane  # issue 32: a hidden pane's table is made when the pane is first shown
        if pane == "memory":
            return memory_pane(self.profile, pane, deferred=hidden)
        if pane == "modules":
            return modules_pane(self.profile, pane, deferred=hidden)
        if pane == "efficiency":
            return efficiency_pane(self.profile, pane, deferred=hidden)
        if pane == "graphs":
            return graphs_pane(self.profile, pane, deferred=hidden)
        if pane == "trace":  # its lanes are built when first shown (they need the linked model)
            return TimelinePane(self.profile, id=pane)
        if pane == "steps":
            return StepsView(self.profile, id="steps", deferred=hidden)
        if pane == "iterations":  # issue 31: computed when first shown
            return IterationsView(self.profile, id=pane)
        if hidden:  # its frame too
            return FrameView(pane, id=pane, deferred=True, source=functools.partial(self.frame_for, pane))
        return FrameView(pane, self.frame_for(pane), id=pane)

    def waiting(self, pane: str) -> Static:
        text = f"{TITLES[pane]}: linking GPU work to the operators and steps of this large trace…"
        return Static(Text(text, style="italic"), id=pane)

    async def link(self) -> None:
        """The model is ready: the waiting panes get their views (Kernels stays as it is)."""
        try:
            switcher = self.query_one(ContentSwitcher)
            kernels = self.query_one("#kernels")
            self.query_one("#overview", OverviewView).complete()  # kept in place: it may be on screen
            later = [pane for pane in PANES if pane not in ("overview", "kernels")]
            await self.query(", ".join(f"#{pane}" for pane in later)).remove()
            views = {pane: self.pane_widget(pane) for pane in later}
            for pane, widget in views.items():
                widget.display = pane == self.pane  # as the switcher shows its children
            await switcher.mount_all([views[pane] for pane in later], after=kernels)
        except NoMatches:  # the viewer is closing: nothing left to fill
            return
        self.linked = True
        kernels_view = self.query_one("#kernels")
        if isinstance(kernels_view, FrameView):  # issue 24: now with category and TFLOP/s
            kernels_view.set_frame(self.frame_for("kernels"))
        if self.is_attached and self.app.screen is self:
            self.show(self.pane)  # focus the new view if it is the one on screen
        self.ask_for_path()

    def on_mount(self) -> None:
        try:
            self.update_header()
        except NoMatches:  # the viewer closed before this screen was laid out
            return
        self.ask_for_path()

    def on_resize(self) -> None:
        """The tab titles follow the width (abbreviated at 80 columns, whole again wider)."""
        with contextlib.suppress(NoMatches):
            self.update_header()

    # -- the on-path column of Kernels and Operators (issue 26) ------------------------------------
    def path_known(self) -> bool:
        """Whether the critical path of the chosen step (or all steps) is known, or known to be absent."""
        return self.profile.is_trace and self.linked and self.profile.has_step_paths(self.step)

    def path_settled(self) -> bool:
        """Whether the tables show what is known of the path (tests wait for it); before the model is
        linked there is no path to wait for (it is asked for when linked)."""
        if not self.profile.is_trace or not self.linked:
            return True
        return self.path_known() and self.path_shown == (self.step,)

    def ask_for_path(self) -> None:
        """Compute the path of the chosen step off the UI thread; the tables gain the column when it arrives."""
        if not self.profile.is_trace or not self.linked:
            return
        if not self.path_known():
            self.path_shown = None
            self.path_in_background(self.step)
        elif self.path_shown != (self.step,):  # known already (the Overview computed it)
            self.refresh_tables()

    @work(thread=True, group="on-path", exit_on_error=False)
    def path_in_background(self, step: int | None) -> None:
        """The names on the critical path of ``step`` (seconds on a large trace), then a redraw."""
        with contextlib.suppress(ProfviewError):  # no path: the context line says why
            self.profile.critical_path_names(step)
        self.app.call_from_thread(self.path_arrived, step)

    def path_arrived(self, step: int | None) -> None:
        if step == self.step and self.is_attached:
            with contextlib.suppress(NoMatches):  # the viewer is closing
                self.refresh_tables()

    def narrowed(self) -> int | IterationScope | None:
        """What the views are narrowed to: the chosen iteration (issue 31), else the chosen step."""
        return self.iteration if self.iteration is not None else self.step

    def with_path(self, view: str, frame):  # type: ignore[no-untyped-def]
        """``frame`` with the on-path column where the path is known (per name: not by shape; per
        step, so not under an iteration)."""
        if self.by_shape.get(view) or self.iteration is not None or not self.profile.is_trace:
            return frame
        if not self.path_known():  # issue 34: the columns are there from the start, so none shifts later
            return reserve_path_columns(frame)
        try:
            return with_on_path(self.profile, view, frame, self.step)
        except ProfviewError:
            return frame

    def path_phrase(self) -> str | None:
        """The context line's word on the on-path column of Kernels and Operators."""
        if not self.profile.is_trace or not self.linked or self.pane not in ("kernels", "ops"):
            return None
        if self.by_shape[self.pane]:
            return "on-path column: per name only"
        if self.iteration is not None:
            return "on-path column: per step, not per iteration"
        if not self.path_known():
            return "on path: computing…"
        try:
            self.profile.critical_path_names(self.step)
        except ProfviewError as exc:
            return "no on-path column: " + ("no runtime events" if exc.problem == NO_RUNTIME else "no critical path")
        if self.step is not None:
            return f"on path: step {self.step}'s critical path"
        if self.profile.step_numbers():
            return "on path: all steps' critical paths"
        return "on path: the whole trace's critical path"

    def missing_text(self, view: str) -> Text:
        reason = self.profile.missing.get(view, f"a {self.profile.format} has no {TITLES[view].lower()} view")
        return Text(f"{TITLES[view]}: not available for this profile — {clean(reason)}", style="italic")

    def frame_for(self, view: str):  # type: ignore[no-untyped-def]
        if view == "kernels":
            frame = self.profile.kernels(by_shape=self.by_shape["kernels"], step=self.narrowed())
        else:
            frame = self.profile.ops(by_shapes=self.by_shape["ops"], step=self.narrowed())
        if not self.linked and view == "ops":  # issue 24: the operators' TFLOP/s needs the linked model
            return frame
        frame = with_efficiency(self.profile, view, frame, self.by_shape.get(view, False))  # kernels: by name
        if view == "ops" and not self.by_shape["ops"]:  # issue 36: replayed time through the capture
            frame = with_graph_time(self.profile, frame, self.step)
        return self.with_path(view, frame) if self.linked else frame

    def update_header(self) -> None:
        empty = frozenset(p for p in PANES if p != "overview" and not self.profile.available(p))
        self.query_one("#tabs", Static).update(tab_line(self.pane, self.app.size.width, clean(self.title_text), empty))
        context = []
        if self.by_shape["kernels"]:
            context.append("kernels by launch shape")
        if self.by_shape["ops"]:
            context.append("operators by input shapes")
        phrase = self.path_phrase()
        if phrase:
            context.append(phrase)
        if self.step is not None:
            # The long form names what a step narrows; where it would not fit beside a notice of the
            # message line (80 columns), the short one.
            full = f"step {self.step} only: Overview, Kernels, Operators, Modules, Efficiency, drill-downs (a: all)"
            short = f"step {self.step} only (a: all steps)"
            fits = len(" · ".join([full, *context])) <= self.app.size.width - NOTICE_ROOM
            context.insert(0, full if fits else short)
        if self.iteration is not None:  # an iteration chosen in Iterations, said as a step is
            views = "Overview, Kernels, Operators, Modules, Efficiency, drill-downs"
            full = f"{self.iteration.label()} only: {views} (a: all)"
            step = self.iteration.name.removeprefix("ProfilerStep#")  # a training trace's iteration is a step
            named = f" (step {step})" if step.isdigit() and step != self.iteration.name else ""
            short = f"iteration {self.iteration.iteration}{named} only (a: all)"
            fits = len(" · ".join([full, *context])) <= self.app.size.width - NOTICE_ROOM
            context.insert(0, full if fits else short)
        line = Text(" · ".join(context) or self.whole_phrase(), style="dim")
        if self.scope:  # issue 34: an opened rank says which, on every pane
            line = Text(f"{clean(self.scope)} › ", style="bold") + line
        self.query_one("#context", Static).update(line)

    def whole_phrase(self) -> str:
        """What the views show with nothing chosen: ``all steps``, or ``whole trace`` where the trace
        has no steps to choose among (known once linked: a large trace's steps come with its model)."""
        if not self.linked or not self.profile.available("steps"):
            return "all steps" if self.linked else "whole trace"
        return "all steps" if self.profile.step_numbers() else "whole trace"

    def crumb(self, title: str) -> str:
        """The first crumb of a drill-down from this screen: ``rank 7 › Kernels`` inside a job."""
        return f"{self.scope} › {title}" if self.scope else title

    def show(self, pane: str) -> None:
        """Switch to a pane and focus its main widget."""
        timeline = self.query_one("#trace")
        if pane == "trace" and self.linked and isinstance(timeline, TimelinePane):
            timeline.start()
        iterations = self.query("#iterations")  # issue 31: computed when first shown
        if pane == "iterations" and iterations and isinstance(iterations.first(), IterationsView):
            iterations.first(IterationsView).start()
        self.pane = pane
        self.query_one(ContentSwitcher).current = pane
        self.update_header()
        self.refresh_bindings()
        widget = self.query_one(f"#{pane}")
        tables = (FrameView, MemoryView, ModulesView, TimelinePane, EfficiencyView, GraphsView, IterationsView)
        if isinstance(widget, tables):
            widget.focus_table()
        elif isinstance(widget, StepsView):
            widget.start()
            widget.focus_main()
        else:
            widget.focus()

    def active_frame_view(self) -> FrameView | None:
        try:
            widget = self.query_one(f"#{self.pane}")
        except NoMatches:  # the pane is being replaced (link)
            return None
        if isinstance(widget, (MemoryView, ModulesView, EfficiencyView, GraphsView)):  # a pane with a table inside
            return widget.query_one(FrameView)
        if isinstance(widget, IterationsView):  # issue 31: its table, once computed
            tables = widget.query(FrameView)
            return tables.first() if tables else None
        return widget if isinstance(widget, FrameView) else None

    def refresh_tables(self) -> None:
        for view in ("kernels", "ops"):
            widget = self.query_one(f"#{view}")
            if isinstance(widget, FrameView):  # a hidden one: made from the state it is shown in
                widget.set_frame_source(functools.partial(self.frame_for, view))
        if self.path_known():
            self.path_shown = (self.step,)
        self.update_header()
        self.ask_for_path()

    def can_group(self) -> bool:
        """Whether b (by launch shape / by input shapes; Modules: by source line) applies here."""
        if self.pane == "modules":
            return self.linked and isinstance(self.query_one("#modules"), ModulesView)
        if self.pane not in self.by_shape or not self.profile.available(self.pane):
            return False
        if not self.linked and self.pane != "kernels":
            return False
        return self.profile.is_trace or (self.pane == "ops" and "ops_by_shapes" in self.profile.tables)

    def toggle_grouping(self) -> None:
        if self.pane == "modules" and self.can_group():
            self.query_one("#modules", ModulesView).toggle_sources()
            return
        if self.can_group():
            self.by_shape[self.pane] = not self.by_shape[self.pane]
            self.refresh_tables()

    def on_step_chosen(self, message: StepChosen) -> None:
        self.step = message.step
        self.iteration = None  # issue 31: a step or an iteration, not both
        self.refresh_tables()
        # Issue 13: the Overview follows the step too (drill-downs read self.step when opened).
        overview = self.query("#overview")
        if overview and isinstance(overview.first(), OverviewView):
            overview.first(OverviewView).set_step(message.step)
        for efficiency in self.query(EfficiencyView):  # issue 33: the Efficiency tab too
            efficiency.set_step(message.step)
        self.scope_panes(message.step)
        timelines = mounted_timelines(self)  # the Timeline shows the chosen step (built later: it opens on it)
        if timelines:
            timelines[0].show_step(message.step)
        # Short: it shows beside the header's context line, which names the views a step narrows.
        self.notify(f"now: {self.whole_phrase()}" if message.step is None else f"now: step {message.step}")

    def on_iteration_chosen(self, message: IterationChosen) -> None:
        """Enter on an iteration narrows every view to it, as a step does (``a``: all)."""
        self.iteration = message.scope
        self.step = None
        self.refresh_tables()
        overview = self.query("#overview")
        if overview and isinstance(overview.first(), OverviewView):
            overview.first(OverviewView).set_iteration(message.scope)
        for efficiency in self.query(EfficiencyView):  # issue 40: Efficiency, Modules, Graphs too
            efficiency.set_step(message.scope)
        self.scope_panes(message.scope)
        timelines = mounted_timelines(self)
        if timelines:
            timelines[0].show_iteration(message.scope)
        self.notify("now: all iterations" if message.scope is None else f"now: iteration {message.scope.iteration}")

    def action_all_scopes(self) -> None:
        """a (issue 40): the chosen step or iteration let go, as ``a`` in Steps or Iterations does,
        from any tab (the context line offers it on every one)."""
        if self.step is not None:
            steps = self.query(StepList)
            if steps:
                steps.first().action_all()
            else:
                self.post_message(StepChosen(None))
        if self.iteration is not None:
            iterations = self.query(IterationsView)
            if iterations:
                iterations.first().action_all()
            else:
                self.post_message(IterationChosen(None))

    def scope_panes(self, scope: int | IterationScope | None) -> None:
        """Issue 40: the Modules pane narrowed to the chosen step or iteration, the Graphs and
        Memory panes' captions saying they are the whole trace's (None: all as for the whole trace)."""
        for modules in self.query(ModulesView):
            modules.set_scope(scope)
        for memory in self.query(MemoryView):
            memory.set_scope(scope is not None)
        for graphs in self.query(GraphsView):
            graphs.set_scope(scope is not None)

    def sort_steps(self) -> bool:
        """s in Steps (issue 13): the next sort of the step list; False where there is none."""
        steps = self.query("#steps")
        if not steps or not isinstance(steps.first(), StepsView):
            return False
        steps.first(StepsView).query_one(StepList).action_sort()
        return True
