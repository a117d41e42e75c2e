"""The profview viewer: a Textual app over the frames of one profile.

Loading runs in a thread worker that posts :class:`ProfileLoaded` or :class:`LoadFailed`; the
UI never parses and never blocks.  Keys are documented in :mod:`profview.tui.dialogs.help`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, work
from textual.app import App
from textual.widgets import Input
from textual.worker import get_current_worker

from ..errors import ProfviewError
from ..profiles.trace_profile import Profile
from ..report.export import write_table
from ..report.wording import plural
from ..sanitize import clean
from .compare.mode import CompareMode
from .dialogs.export import ExportDialog, name_parts, suggest_name
from .dialogs.help import HelpScreen, help_context
from .dialogs.loading import LoadingScreen
from .drill.routes import ROUTES
from .drill.screen import DrillScreen
from .drill.worker import DrillWorker
from .keymap import bindings, user_keymap
from .main.screen import PANES, TITLES, MainScreen
from .main.steps import StepList
from .main.timeline import TraceTimeline
from .messages import DrillRequested, LoadFailed, LoadPhase, ProfileLinked, ProfileLoaded
from .navigation import Navigation
from .widgets.filter_bar import FilterBar
from .widgets.message_line import MessageLine
from .widgets.no_color import no_color_filters
from .widgets.table_view import FrameView

if TYPE_CHECKING:
    from ..diff.comparison import Comparison
    from ..profiles.background import BackgroundLoad


class ProfviewApp(Navigation, DrillWorker, CompareMode, App[int]):
    """Kernel, operator and step views of one trace (or two compared: see compare_mode), by keyboard."""

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
        compare: dict[str, Any] | None = None,
        pending: BackgroundLoad | None = None,
    ) -> None:
        """``profile``: one already loaded from ``path`` (a notebook, the tests), shown without reading again;
        ``comm_pattern``: ``--comm-pattern``, for loads made here; ``compare``: compare mode, ``path``
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
        self.profile = None
        self.error: str | None = None
        self.loaded = False
        self.linked = False
        self.keys_held_for: FilterBar | None = None  # see on_event
        self.loader = None
        self.load_thread: threading.Thread | None = None
        self.notices: list[str] = []  # issue 13: every notice given, in the message line or as a toast

    def on_mount(self) -> None:
        self.set_keymap(user_keymap())
        self.push_screen(LoadingScreen(self.path))
        self.loader = self.load_profile()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load_profile(self) -> None:
        """Parse the file and build the tables in a daemon thread; post the outcome.

        The parse runs in a thread of its own, not in this worker's, so that quitting while it
        runs never waits for it: this worker stops waiting as soon as it is cancelled, and
        :func:`run` leaves the process at once if the thread is still busy.
        """
        worker = get_current_worker()
        outcome: list[ProfileLoaded | LoadFailed] = []
        target = self._load_compare if self.compare is not None else self._load
        thread = threading.Thread(target=target, args=(outcome,), name="profview-load", daemon=True)
        self.load_thread = thread
        thread.start()
        while thread.is_alive():
            thread.join(0.1)
            if worker.is_cancelled:
                return
        if outcome and not worker.is_cancelled:
            self.post_message(outcome[0])

    def _load(self, outcome: list[ProfileLoaded | LoadFailed | ProfileLinked]) -> None:
        from ..profiles.loading import load

        try:
            self.post_message(LoadPhase("reading and parsing"))
            preloaded, self.preloaded = self.preloaded, None  # "r" (next run) reads the file again
            pending, self.pending = self.pending, None
            if preloaded is None and pending is not None:
                preloaded = pending.result()
            profile = preloaded or load(
                self.path, use_cache=not self.no_cache, run=self.run_name, comm_pattern=self.comm_pattern
            )
            if is_large(profile):  # the kernel table first; the model (seconds) behind it
                self.post_message(LoadPhase("building the kernel table"))
                profile.kernels()
                self.post_message(ProfileLoaded(profile, linked=False))
                prepare(profile, lambda _phase: None)
                self.post_message(ProfileLinked())
                remember(profile)  # after the views are on screen: writing the cache is nobody's wait
                return
            prepare(profile, lambda phase: self.post_message(LoadPhase(phase)))
            remember(profile)
        except ProfviewError as exc:
            outcome.append(LoadFailed(str(exc)))
        except MemoryError:
            outcome.append(LoadFailed(f"{self.path}: not enough memory to load this trace"))
        except Exception as exc:  # a bug, not a bad input: still one line, never a hung loading screen
            outcome.append(LoadFailed(f"{self.path}: internal error while loading: {type(exc).__name__}: {exc}"))
        else:
            outcome.append(ProfileLoaded(profile))

    def on_load_phase(self, message: LoadPhase) -> None:
        if isinstance(self.screen, LoadingScreen):
            self.screen.phase = message.phase

    def on_profile_loaded(self, message: ProfileLoaded) -> None:
        self.profile = message.profile
        self.loaded = True
        self.linked = message.linked
        self.switch_screen(MainScreen(message.profile, linked=message.linked))
        for warning in message.profile.warnings:
            self.notify(clean(warning), title="warning", severity="warning", timeout=10)

    async def on_profile_linked(self, _message: ProfileLinked) -> None:
        main = self.main_screen()
        if main is not None:
            await main.link()
        self.linked = True
        self.notify("Overview, Operators and Steps are ready; Enter drills down", timeout=5)

    def on_load_failed(self, message: LoadFailed) -> None:
        self.error = message.reason
        self.exit(return_code=2)

    # -- navigation -------------------------------------------------------------------------
    def main_screen(self) -> MainScreen | None:
        screens = [s for s in self.screen_stack if isinstance(s, MainScreen)]
        return screens[0] if screens else None

    def frame_view(self) -> FrameView | None:
        screen = self.screen
        if isinstance(screen, DrillScreen):
            return screen.frame_view()
        if isinstance(screen, MainScreen):
            return screen.active_frame_view()
        compare = self.compare_screen()
        return compare.active_frame_view() if compare is not None else None

    def action_quit_now(self) -> None:
        self.exit(return_code=0 if self.loaded else 130)

    def action_back_or_quit(self) -> None:
        if isinstance(self.screen, DrillScreen):
            self.pop_screen()
        else:
            self.exit(return_code=0 if self.loaded else 130)

    def action_back(self) -> None:
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
            return self.search_target() is not None and not isinstance(self.focused, Input)
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
            self.push_screen(HelpScreen(*help_context(self.screen)))  # issue 22: this screen's keys first

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
        if table is None:
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
            found = screen.query(TraceTimeline)
            return found.first() if found else None
        return None

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
        self.run_name = profile.runs[(profile.runs.index(profile.run) + 1) % len(profile.runs)]
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.push_screen(LoadingScreen(self.path))
        self.loader = self.load_profile()

    # -- drill-down -------------------------------------------------------------------------
    async def on_drill_requested(self, message: DrillRequested) -> None:
        if message.view.startswith("diff_"):
            await self.drill_compare(message)
            return
        profile = getattr(self.screen, "side_profile", None) or self.profile
        if profile is None:
            return
        if not self.linked:
            self.notify("still linking kernels to the operators that launched them: a moment", timeout=4)
            return
        route = ROUTES.get(message.view)
        if route is None:
            return
        path = list(self.screen.path) if isinstance(self.screen, DrillScreen) else [TITLES.get(message.view, "")]
        # Issue 13: computed in a worker (tui/drill_worker.py); Esc cancels a slow one.
        what = str(message.row.get("name") or message.row.get("op") or message.row.get("path") or "")
        main = self.main_screen()
        one_event = message.view.startswith("timeline_")  # one event of the Timeline: no step to narrow to
        narrowed = main is not None and main.step is not None and profile is self.profile and profile.is_trace
        if narrowed and main is not None and not one_event:
            route = functools.partial(route, step=main.step)  # issue 13: the chosen step narrows drill-downs
            what = f"{what} (step {main.step} only)"
            if not isinstance(self.screen, DrillScreen):  # the first crumb says so (long names cut the last)
                path = [f"{path[0]} · step {main.step} only"]
        await self.start_drill(route, profile, message.row, path, f"the drill-down of {what}")

    # -- issue 13: notices in the header row, not over the table ------------------------------
    def notify(  # type: ignore[override]
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """An *information* notice goes to the screen's message line (tui/message_line.py) when it
        has one, so no toast covers the rows; warnings and errors stay toasts, to be seen."""
        self.notices = [*self.notices[-99:], f"{title}: {message}" if title else message]
        lines = list(self.screen.query(MessageLine)) if severity == "information" and self.screen_stack else []
        if lines:
            lines[0].show(message, title, timeout if timeout is not None else 5.0)
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    # -- export -----------------------------------------------------------------------------
    def steps_frame(self):  # type: ignore[no-untyped-def]
        """The steps table when the Steps view is on screen (what its bars and totals show)."""
        screen = self.screen
        profile = self.profile
        if isinstance(screen, MainScreen) and screen.pane == "steps" and profile and profile.available("steps"):
            listed = screen.query(StepList)  # issue 13: as listed: sorted, with the outlier flag
            return listed.first(StepList).steps if listed else profile.steps()
        return None

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
                written = write_table(frame, target, inputs=(self.path,), overwrite=True)
            except ProfviewError as exc:
                self.notify(clean(str(exc)), title="export failed", severity="error", timeout=10)
                return
            self.notify(f"wrote {plural(frame.height, 'row')} to {clean(written)}", title="exported", timeout=10)

        main = self.main_screen()
        named = name_parts(self.path, parts, main.step if main is not None else None)  # issue 13
        self.push_screen(ExportDialog(suggest_name(named), frame.height), write)


#: From this many events a trace opens on its kernel table while the model is built behind it.
#: From this many events a trace shows its first screen (the early Overview, Kernels) before the
#: model is linked (about 0.1 s of linking per 100,000 events on one core; issue 13).
LARGE_TRACE_EVENTS = 100_000


def is_large(profile: Profile) -> bool:
    """Whether ``profile`` is a trace large enough that linking it takes seconds."""
    return profile.is_trace and profile.event_count >= LARGE_TRACE_EVENTS and profile.available("kernels")


def prepare(profile, phase) -> None:  # type: ignore[no-untyped-def]
    """Build what the first screens show (the linked model, the tables) off the UI thread."""
    if profile.is_trace:
        phase("linking GPU work to operators and steps")
        profile.overview()
    phase("building tables")
    for view in ("kernels", "ops", "steps"):
        if profile.available(view):
            getattr(profile, view)()
    if profile.is_trace:  # memory and modules (issue 15): computed here, not on the UI thread
        for view in ("memory_ops", "memory_peaks", "modules"):  # the timeline is built when first shown
            with contextlib.suppress(ProfviewError):  # the pane says why
                getattr(profile, view)()


def remember(profile: Profile) -> None:
    """Save the views and the linked model: the next open reads them instead of linking again."""
    from ..profiles.loading import remember_views

    remember_views(profile, model=True)


def run(
    path: str,
    *,
    no_cache: bool = False,
    run: str | None = None,
    comm_pattern: str | None = None,
    pending: BackgroundLoad | None = None,
) -> int:
    """Open ``path`` in the viewer; return the exit code (2 with a one-line error on bad input).

    ``pending``: the load of ``path`` with these options, already started (see
    :mod:`profview.profiles.background`)."""
    if not Path(path).exists():
        print(f"profview: error: {clean(path)}: no such file", file=sys.stderr)
        return 2
    app = ProfviewApp(path, no_cache=no_cache, run=run, comm_pattern=comm_pattern, pending=pending)
    return finish_run(app, app.run())


def finish_run(app: ProfviewApp, code: int | None, *, workers: bool = False) -> int:
    """After ``app.run()``: print its one-line error; the exit code.

    A load still running in its thread (a parse, a large trace's linking) cannot be interrupted:
    leave at once.  ``workers``: the thread drives rank workers (a job), which are stopped first,
    and leaving then always means interrupted (130).
    """
    if app.error:
        print(f"profview: error: {clean(app.error)}", file=sys.stderr)
    if app.load_thread is not None and app.load_thread.is_alive():
        if workers:
            from ..jobs.executors import stop_workers

            stop_workers()
        if workers or not app.loaded:
            print("profview: interrupted", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130 if workers else (app.return_code if app.return_code is not None else (code or 130)))
    return app.return_code or code or 0




__all__ = ["ProfviewApp", "finish_run", "run"]
