"""The profview viewer: a Textual app over the frames of one profile.

Over ~400 lines: it holds the app-wide keys (filter, sort, export, help, dead-key reasons) that every
screen shares; navigation, drill-downs and compare mode are already mixins of their own
(:mod:`.navigation`, :mod:`.drill`, :mod:`.compare.mode`).

Loading runs in a thread worker (tui/workers.py) that posts :class:`ProfileLoaded` or
:class:`LoadFailed`; the UI never parses and never blocks.  Keys are documented in
:mod:`profview.tui.dialogs.help`.  Opened through :mod:`profview.tui.launch`.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from textual import events, work
from textual.app import App
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Input

from ..collector import VIEWER_LIMIT_S
from ..collector import resume as resume_collection
from ..errors import ProfviewError
from ..profiles.iteration_scope import IterationScope
from ..profiles.trace_profile import Profile
from ..report.export import write_table
from ..report.wording import plural
from ..sanitize import clean
from . import lifecycle
from .compare.mode import CompareMode
from .dead_keys import OVERVIEW_ENTER, dead_key_reason
from .dialogs.export import ExportDialog, name_parts, suggest_name
from .dialogs.help import HelpScreen, help_context
from .dialogs.loading import LoadingScreen
from .drill.routes import ROUTES
from .drill.screen import DrillScreen
from .drill.worker import DrillWorker
from .keymap import bindings, user_keymap
from .main.screen import PANES, TITLES, MainScreen
from .main.steps import StepList
from .main.timeline import mounted_timelines
from .messages import DrillRequested, IterationChosen, LoadFailed, LoadPhase, ProfileLinked, ProfileLoaded, StepChosen
from .navigation import Navigation
from .widgets.filter_bar import FilterBar
from .widgets.message_line import MessageLine
from .widgets.no_color import no_color_filters
from .widgets.table_view import FrameView
from .workers import Cancelled, DetachedThreads, detached, load_failed

if TYPE_CHECKING:
    from ..diff.comparison import Comparison
    from ..profiles.background import BackgroundLoad
    from .main.timeline.widget import TraceTimeline


class ProfviewApp(Navigation, DrillWorker, CompareMode, App[int]):
    """Kernel, operator and step views of one trace (or two compared: see compare/mode.py), by keyboard."""

    CSS_PATH = str(Path(__file__).with_name("profview.tcss"))  # absolute: subclasses live in other folders
    TITLE = "profview"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = bindings("app")

    def __init__(
        self,
        path: str,
        *,
        no_cache: bool = False,
        run: str | None = None,
        profile: Profile | None = None,
        comm_pattern: str | None = None,
        step_range: str | None = None,
        compare: dict[str, Any] | None = None,
        pending: BackgroundLoad | None = None,
        capture: list[str] | None = None,
        iteration: int | None = None,
        step: int | None = None,
    ) -> None:
        """``iteration`` (issue 40: ``--iteration N``): open narrowed to that iteration (its number in
        the Iterations tab); ``profile``: one already loaded from ``path`` (a notebook, the tests),
        shown without reading again;
        ``comm_pattern``: ``--comm-pattern``, for loads made here; ``step_range``: ``--step-range``,
        likewise; ``compare``: compare mode, ``path``
        is BEFORE and this holds ``after`` and the :func:`profview.diff.comparison.load_comparison` options;
        ``pending``: the load of ``path`` already started (the CLI starts it before importing Textual)."""
        super().__init__()
        if self.no_color:  # issue 22: bold, underline and reverse only; not Textual's greyscale
            self._filters = no_color_filters(self._filters)
        self.pending = pending
        self.compare = compare
        self.comparison: Comparison | None = None
        self.path = path
        self.preloaded = profile
        self.no_cache = no_cache
        self.run_name = run
        self.comm_pattern = comm_pattern
        self.step_range = step_range
        self.capture = capture  # issue 36: --capture, attributing graph replays
        self.iteration = iteration
        self.start_step = step  # --step N: the step the views open narrowed to
        self.start_scope: IterationScope | None = None  # the iteration the views open narrowed to
        self.profile: Profile | None = None
        self.error: str | None = None
        self.loaded = False
        self.linked = False
        self.keys_held_for: Widget | None = None  # see on_event
        self.threads = DetachedThreads()  # the uninterruptible work started (tui/workers.py)
        self.notices: list[str] = []  # issue 13: every notice given, in the message line or as a toast
        self.keymap: dict[str, str] = {}  # the user's remapped keys (binding id → keys), for the help

    def set_keymap(self, keymap: dict[str, str]) -> None:  # type: ignore[override]
        """Textual's, and kept for the help screen (issue 34: ``?`` names the remapped keys)."""
        self.keymap = dict(keymap)
        super().set_keymap(keymap)

    def on_mount(self, _event: events.Mount) -> None:
        self.set_timer(VIEWER_LIMIT_S, resume_collection)  # at the latest: a load that fails, a comparison
        self.set_keymap(user_keymap())
        self.push_screen(LoadingScreen(self.path))
        self.load_profile()

    @property
    def load_thread(self) -> threading.Thread | None:
        """The thread of the newest slow work (quitting while it runs leaves without waiting)."""
        return self.threads.newest

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load_profile(self) -> None:
        """Parse the file and build the tables (compare mode: both files, and the diff); post the outcome."""
        load = self._load_compare if self.compare is not None else self._load
        try:
            outcome = detached(self.threads, load, "profview-load")
        except Cancelled:
            return
        if outcome is not None:
            self.post_message(outcome)

    def _load(self) -> Message | None:
        """The profile loaded and prepared: ProfileLoaded or LoadFailed (None: a large trace, whose
        ProfileLoaded and ProfileLinked are posted as they happen)."""
        from ..profiles.loading import load

        try:
            self.post_message(LoadPhase("reading and parsing"))
            preloaded, self.preloaded = self.preloaded, None  # "r" (next run) reads the file again
            pending, self.pending = self.pending, None
            prepared = False  # the read's thread prepared the first screen already (a re-open: lifecycle.prepare_early)
            if preloaded is None and pending is not None:
                preloaded = pending.result()
                prepared = pending.prepared and not self.capture
            profile = preloaded or load(
                self.path,
                use_cache=not self.no_cache,
                run=self.run_name,
                comm_pattern=self.comm_pattern,
                step_range=self.step_range,
            )
            if self.capture:
                profile.use_capture(self.capture, use_cache=not self.no_cache)
                profile.check_captures()  # a bad capture fails the load with its one line
            if prepared:
                self.find_start_scope(profile)
                return ProfileLoaded(profile)
            if lifecycle.is_large(profile):  # the kernel table first; the model (seconds) behind it
                self.post_message(LoadPhase("building the kernel table"))
                profile.kernels()
                self.post_message(ProfileLoaded(profile, linked=False))
                lifecycle.prepare(profile, lambda _phase: None)
                self.find_start_scope(profile)
                self.post_message(ProfileLinked())
                lifecycle.remember(profile)  # after the views are on screen: writing the cache is nobody's wait
                return None
            lifecycle.prepare(profile, lambda phase: self.post_message(LoadPhase(phase)))
            self.find_start_scope(profile)
            lifecycle.remember(profile)
        except Exception as exc:
            return load_failed(exc, self.path, "load this trace", "loading")
        return ProfileLoaded(profile)

    def find_start_scope(self, profile: Profile) -> None:
        """``--iteration N`` / ``--step N``: the iteration or step the views open narrowed to (an unknown
        one fails the load with its one line, naming those there are)."""
        if self.iteration is not None:
            self.start_scope = profile.iteration_scope(self.iteration)
        if self.start_step is not None and self.start_step not in profile.step_numbers():
            raise ProfviewError(profile.path, f"no step {self.start_step} (steps: {profile.step_numbers()})")

    def narrow_to_start(self) -> None:
        """Once the views are linked: narrow them to ``--iteration N``'s iteration or ``--step N``'s
        step, as Enter on it does."""
        main = self.main_screen()
        if self.start_scope is not None and main is not None:
            scope, self.start_scope = self.start_scope, None
            main.post_message(IterationChosen(scope))
        if self.start_step is not None and main is not None:
            step, self.start_step = self.start_step, None
            main.post_message(StepChosen(step))

    def on_load_phase(self, message: LoadPhase) -> None:
        if isinstance(self.screen, LoadingScreen):
            self.screen.phase = message.phase

    def on_profile_loaded(self, message: ProfileLoaded) -> None:
        self.profile = message.profile
        self.loaded = True
        self.linked = message.linked
        self.switch_screen(MainScreen(message.profile, linked=message.linked))
        self.call_after_refresh(resume_collection)  # the first screen is up: the start is over
        if message.linked:
            self.call_after_refresh(self.narrow_to_start)
        for warning in message.profile.warnings:  # the Overview lists them too; issue 34: no toast over the rows
            self.notify(clean(warning), title="warning", timeout=10)

    async def on_profile_linked(self, _message: ProfileLinked) -> None:
        main = self.main_screen()
        if main is not None:
            await main.link()
        self.linked = True
        self.narrow_to_start()
        self.notify("Overview, Operators and Steps are ready; Enter drills down", timeout=5)

    def on_load_failed(self, message: LoadFailed) -> None:
        self.error = message.reason
        self.exit(return_code=2)

    # -- navigation -------------------------------------------------------------------------
    def main_screen(self) -> MainScreen | None:
        screens = [s for s in self.screen_stack if isinstance(s, MainScreen)]
        return screens[0] if screens else None

    def frame_view(self) -> FrameView | None:
        """The table on screen, if there is one."""
        screen = self.screen
        if isinstance(screen, DrillScreen):
            return screen.frame_view()
        if isinstance(screen, MainScreen):
            return screen.active_frame_view()
        compare = self.compare_screen()
        return compare.active_frame_view() if compare is not None else None

    def action_quit_now(self) -> None:
        """Ctrl+C: interrupted, at any point (130, as the README says; q quits with 0 once loaded)."""
        self.exit(return_code=130)

    def action_back_or_quit(self) -> None:
        if isinstance(self.screen, DrillScreen):
            self.pop_screen()
        else:
            self.exit(return_code=0 if self.loaded else 130)

    async def action_back(self) -> None:
        """Esc: clear the table's filter if it has one (as k9s does), else close a drill-down."""
        view = self.search_target()
        if view is not None and view.pattern:
            view.set_filter("")
            self.notify("filter cleared", timeout=2)
        elif isinstance(self.screen, DrillScreen):
            self.pop_screen()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer (and show in the footer) only the keys that do something where you are."""
        screen = self.screen
        if action == "filter":  # in a text box (the filter itself, a file name) "/" is typed
            return self.frame_view() is not None and not isinstance(self.focused, Input)
        if action == "search_events":  # "/" on the Timeline marks events: the footer says "search"
            target = self.search_target()  # the table on screen, else the Timeline
            return target is not None and not isinstance(target, FrameView) and not isinstance(self.focused, Input)
        if action == "sort":
            return self.frame_view() is not None
        if action == "nothing_to_sort":  # issue 13: s is never silent (a text box keeps its "s")
            return self.frame_view() is None and not isinstance(self.focused, Input)
        if action == "export":
            return self.frame_view() is not None or self.steps_frame() is not None
        if action == "cycle":
            return isinstance(screen, MainScreen) or self.compare_screen() is not None
        if action == "group":
            return isinstance(screen, MainScreen) and screen.can_group()
        if action == "goto":  # issue 13: priority, so ":" typed in a text box stays there
            return self.frame_view() is not None and not isinstance(self.focused, Input)
        if action in ("copy_name", "search"):  # issue 13: a table is on screen
            return self.frame_view() is not None
        if action == "next_run":
            return self.profile is not None and len(self.profile.runs) > 1
        return True

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            # issue 22: this screen's keys first; issue 34: as the user's keymap binds them
            self.push_screen(HelpScreen(*help_context(self.screen), keymap=self.keymap))

    def action_pane(self, pane: str) -> None:
        main = self.main_screen()
        if main is None:
            return
        while isinstance(self.screen, DrillScreen):
            self.pop_screen()
        main.show(pane)

    def action_cycle(self) -> None:
        compare = self.compare_screen()
        if compare is not None:
            compare.cycle()
            return
        main = self.main_screen()
        if main is not None and self.screen is main:
            main.show(PANES[(PANES.index(main.pane) + 1) % len(PANES)])

    def action_cursor(self, where: str) -> None:
        view = self.frame_view()
        table = view.table if view else None
        if view is None or table is None:
            self.scroll_pane(where)
            return
        if where == "down":
            table.action_cursor_down()
        elif where == "up":
            table.action_cursor_up()
        elif where == "top":
            table.move_cursor(row=0)
        else:
            table.move_cursor(row=max(view.displayed.height - 1, 0))

    def scroll_pane(self, where: str) -> None:
        """j/k/g/G on a pane without a table (the Overview) scroll it."""
        screen = self.screen
        if not isinstance(screen, MainScreen):
            return
        pane = screen.query_one(f"#{screen.pane}")
        if where == "down":
            pane.scroll_down(animate=False)
        elif where == "up":
            pane.scroll_up(animate=False)
        elif where == "top":
            pane.scroll_home(animate=False)
        else:
            pane.scroll_end(animate=False)

    def search_target(self) -> FrameView | TraceTimeline | None:
        """What "/" works on: the table on screen, else the Timeline (it marks matching events)."""
        view = self.frame_view()
        if view is not None:
            return view
        screen = self.screen
        if isinstance(screen, MainScreen) and screen.pane == "trace":
            found = mounted_timelines(screen)
            return found[0] if found else None
        return None

    def action_search_events(self) -> None:
        """/ on the Timeline: the filter bar marks the events whose name matches."""
        self.action_filter()

    def on_key(self, event: events.Key) -> None:
        """A key that does nothing where you are says why (issue 34: no dead keys)."""
        if isinstance(self.focused, Input) or not self.screen_stack:
            return
        screen = self.screen
        active = screen.active_bindings.get(event.key)
        if active is not None and active.enabled:  # a binding took the key (the event still bubbles here)
            return
        pane = screen.pane if isinstance(screen, MainScreen) else None
        if event.key == "enter" and pane == "overview":
            self.notify(OVERVIEW_ENTER, timeout=4)
            return
        for binding in self._bindings.key_to_bindings.get(event.key, []):
            action = binding.action.split("(")[0]
            if self.check_action(action, ()) is False and (reason := dead_key_reason(action, pane)):
                self.notify(reason, timeout=4)
                return

    def action_filter(self) -> None:
        view = self.search_target()
        if view is not None:
            bar = self.screen.query_one(FilterBar)
            bar.open(view)
            self.keys_held_for = bar

    async def on_event(self, event: events.Event) -> None:
        """Keys typed straight after "/" (a fast typist, a paste) arrive before the filter bar has
        focus: they are held and replayed once it has, instead of reaching the table ("g" would
        jump to the top, "e" open the export)."""
        bar = self.keys_held_for
        if isinstance(event, events.Key) and bar is not None:
            if self.focused is bar or not bar.display:
                self.keys_held_for = None
            else:
                self.call_after_refresh(self._replay_key, event.key, event.character, bar)
                return
        await super().on_event(event)

    def _replay_key(self, key: str, character: str | None, bar: FilterBar) -> None:
        if self.focused is not bar:  # the bar never got focus: the key goes where focus is
            self.keys_held_for = None
        self.post_message(events.Key(key, character))

    def action_sort(self) -> None:
        view = self.frame_view()
        if view is not None:
            view.sort_by_cursor()

    def action_nothing_to_sort(self) -> None:
        """s with no table on screen (issue 13): Steps sorts its list; elsewhere a message says why not."""
        screen = self.screen
        if isinstance(screen, MainScreen) and screen.pane == "steps" and screen.sort_steps():
            return
        if isinstance(screen, MainScreen):
            where = TITLES.get(screen.pane, "this view")
            self.notify(f"{where}: nothing to sort here — s sorts tables (2 3 5 6) and Steps (4)", timeout=4)
        else:
            self.notify("nothing to sort on this screen (s sorts a table by the column under the cursor)", timeout=4)

    def action_group(self) -> None:
        if isinstance(self.screen, MainScreen):
            self.screen.toggle_grouping()

    def action_next_run(self) -> None:
        """Files with several runs (TensorBoard-plugin JSON): show the next one."""
        profile = self.profile
        if profile is None or len(profile.runs) < 2:
            self.notify("This file holds a single run", severity="information")
            return
        current = profile.runs.index(profile.run) if profile.run in profile.runs else -1
        self.run_name = profile.runs[(current + 1) % len(profile.runs)]
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(LoadingScreen(self.path))
        self.load_profile()

    # -- drill-down -------------------------------------------------------------------------
    def drill_profile(self) -> Profile | None:
        """The profile Enter drills into: a drill-down's own (one side of a comparison), else the app's."""
        screen = self.screen
        if isinstance(screen, DrillScreen) and screen.profile is not None:
            return screen.profile
        return self.profile

    async def on_drill_requested(self, message: DrillRequested) -> None:
        if message.view.startswith("diff_"):
            await self.drill_compare(message)
            return
        profile = self.drill_profile()
        if profile is None:
            return
        if not self.linked:
            self.notify("still linking kernels to the operators that launched them: a moment", timeout=4)
            return
        route = ROUTES.get(message.view)
        if route is None:
            return
        main = self.main_screen()
        title = TITLES.get(message.view) or (TITLES.get(main.pane, "") if main is not None else "")  # never rootless
        first = main.crumb(title) if main is not None else title  # issue 34: "rank 7 › Kernels" in a job
        path = list(self.screen.path) if isinstance(self.screen, DrillScreen) else [first]
        # Issue 13: computed in a worker (tui/drill/worker.py); Esc cancels a slow one.
        what = str(message.row.get("name") or message.row.get("op") or message.row.get("path") or "")
        one_event = message.view.startswith("timeline_")  # one event of the Timeline: no step to narrow to
        scope = main.narrowed() if main is not None else None  # issue 31: or the chosen iteration
        narrowed = scope is not None and profile is self.profile and profile.is_trace
        if narrowed and main is not None and not one_event:
            route = functools.partial(route, step=scope)  # issue 13: the chosen step narrows drill-downs
            label = f"iteration {main.iteration.iteration}" if main.iteration is not None else f"step {main.step}"
            what = f"{what} ({label} only)"
            if not isinstance(self.screen, DrillScreen):  # the first crumb says so (long names cut the last)
                path = [f"{path[0]} · {label} only"]
        row = message.row
        await self.start_drill(lambda: route(profile, row, path), f"the drill-down of {what}")

    # -- issue 13: notices in the header row, not over the table ------------------------------
    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notice goes to the screen's message line in the header row (tui/message_line.py),
        so no toast covers the rows, the details or the tab bar; a warning or error is marked as
        one and shows longer.  A notice made while no screen with a message line is up (the trace's
        warnings, posted as the loading screen gives way) waits for the next screen; a dialog's notice
        goes to the header line of the screen under it."""
        self.notices = [*self.notices[-99:], f"{title}: {message}" if title else message]
        self.show_notice(message, title, severity, timeout, markup, wait=50)

    def show_notice(
        self, message: str, title: str, severity: Any, timeout: float | None, markup: bool, wait: int
    ) -> None:
        """The notice on the current screen's message line; else once the next screen is up (looked
        for ``wait`` more times, a tenth of a second apart)."""
        lines = self.message_lines()
        if lines:
            if severity != "information" and not title:
                title = str(severity)
            seconds = timeout if timeout is not None else 5.0 if severity == "information" else 8.0
            lines[0].show(message, title, seconds)
            return
        if wait and self.screen_stack and not isinstance(self.screen, ModalScreen):  # a screen not up yet
            later = functools.partial(self.show_notice, message, title, severity, timeout, markup, wait - 1)
            self.set_timer(0.1, later)
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def message_lines(self) -> list[MessageLine]:
        """The message lines a notice may go to: the current screen's; under a dialog (help, export,
        a progress screen drawn over its screen), the header line of the screen it is drawn over."""
        for screen in reversed(self.screen_stack):
            lines = list(screen.query(MessageLine))
            if lines or not isinstance(screen, ModalScreen):
                return lines
        return []

    # -- export -----------------------------------------------------------------------------
    def steps_frame(self) -> pl.DataFrame | None:
        """The steps table when the Steps view is on screen (what its bars and totals show)."""
        screen = self.screen
        profile = self.profile
        if isinstance(screen, MainScreen) and screen.pane == "steps" and profile and profile.available("steps"):
            listed = screen.query(StepList)  # issue 13: as listed: sorted, with the outlier flag
            return listed.first(StepList).steps if listed else profile.steps()
        return None

    def export_subject(self) -> str:
        """What an export's suggested name starts with: the trace's file name (a job: the job's)."""
        return self.path

    def action_export(self) -> None:
        if self._exit or not self.screen_stack:  # issue 13: "q" then "e" quickly: the viewer is closing
            return
        view = self.frame_view()
        if view is not None:
            title = TITLES.get(view.view, view.view)
            parts = list(self.screen.path) if isinstance(self.screen, DrillScreen) else [title]
            frame = view.displayed
        elif (steps := self.steps_frame()) is not None:
            parts, frame = ["Steps"], steps
        else:
            self.notify("Nothing to export here: open a table (2, 3, 4) or a drill-down", severity="warning")
            return

        def write(target: str | None) -> None:
            if not target:
                return
            try:
                from ..profiles.graph_views import capture_inputs  # every file --capture reads is an input too

                inputs = (self.path, *capture_inputs(self.capture))
                written = write_table(frame, target, inputs=inputs, overwrite=True)
            except ProfviewError as exc:
                self.notify(clean(str(exc)), title="export failed", severity="error", timeout=10)
                return
            self.notify(f"wrote {plural(frame.height, 'row')} to {clean(written)}", title="exported", timeout=10)

        main = self.main_screen()
        if main is not None and main.scope and parts:  # the subject names the rank already
            parts = [parts[0].removeprefix(f"{main.scope} › "), *parts[1:]]
        chosen = main.iteration if main is not None else None
        step = main.step if main is not None else None
        named = name_parts(self.export_subject(), parts, step, chosen.iteration if chosen is not None else None)
        self.push_screen(ExportDialog(suggest_name(named), frame.height), write)


__all__ = ["ProfviewApp"]
