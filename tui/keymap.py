"""Every key of the viewer, as data: one table drives the bindings, the footer and the help screen.

Each :class:`Key` belongs to a *scope* (the widget or screen that binds it) and has an ``id``, so a
user can remap it: ``~/.config/profview/keymap.json`` (or ``$PROFVIEW_KEYMAP``) maps ids to keys,
e.g. ``{"export": "x", "filter": "slash,f"}``; Textual's keymap applies it everywhere.
No Textual widget is imported here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class Key:
    """One binding: ``keys`` (Textual key names, comma-separated) run ``action`` in ``scope``.

    ``label`` is the footer's word (``show``: whether the footer offers it); ``help_keys`` and
    ``help`` are the help screen's line (several keys may share one line: only the first of them
    carries ``help``).
    """

    scope: str
    id: str
    keys: str
    action: str
    label: str
    help_keys: str = ""
    help: str = ""
    show: bool = False
    priority: bool = False
    key_display: str | None = None


KEYMAP: tuple[Key, ...] = (
    # -- everywhere (the app) ------------------------------------------------------------------
    Key("app", "quit_now", "ctrl+c", "quit_now", "quit", "Ctrl+C", "quit at any time", priority=True),
    Key("app", "back_or_quit", "q", "back_or_quit", "quit/back", "q", "close the current drill-down, or quit",
        show=True),
    Key("app", "back", "escape", "back", "back/clear", "Esc",
        "clear the table's filter, else back (close a drill-down)"),
    Key("app", "help", "question_mark", "help", "help", "?", "this help", show=True),
    Key("app", "pane.overview", "1", "pane('overview')", "overview", "1 2 3 4, Tab",
        "Overview, Kernels, Operators, Steps (Tab cycles)"),
    Key("app", "pane.kernels", "2", "pane('kernels')", "kernels"),
    Key("app", "pane.ops", "3", "pane('ops')", "operators"),
    Key("app", "pane.steps", "4", "pane('steps')", "steps"),
    Key("app", "cycle", "tab", "cycle", "views", show=True, priority=True),
    # Priority: "/" is handled before the keys typed after it reach the table, so "/gemm" typed
    # fast (or pasted) filters instead of jumping to the top ("g") and exporting ("e").
    Key("app", "filter", "slash", "filter", "filter", "/",
        "filter the table by regex (live, case-insensitive); Enter keeps it, Esc clears", show=True, priority=True),
    # issue 34: on the Timeline "/" marks events: the footer says "search", as the Timeline's caption
    Key("app", "search_events", "slash", "search_events", "search", show=True, priority=True),
    Key("app", "sort", "s", "sort", "sort", "s", "sort by the column under the cursor (again: reverse)", show=True),
    # issue 13: where no table is on screen, s says why nothing sorts (hidden from the footer)
    Key("app", "sort_none", "s", "nothing_to_sort", "sort"),
    Key("app", "export", "e", "export", "export", "e",
        "export the table on screen (filter and sort applied; Steps: the step table) to CSV", show=True),
    Key("app", "group", "b", "group", "by shape", "b",
        "group kernels by launch shape / operators by input shapes (toggle)", show=True),
    Key("app", "next_run", "r", "next_run", "next run", "r",
        "next run (files holding several runs, e.g. TensorBoard-plugin JSON)"),
    Key("app", "cursor.down", "j", "cursor('down')", "down", "↑ ↓ ← →, j k, PgUp PgDn, g G",
        "move; g/G: first/last row"),
    Key("app", "cursor.up", "k", "cursor('up')", "up"),
    Key("app", "cursor.top", "g", "cursor('top')", "top"),
    Key("app", "cursor.bottom", "G", "cursor('bottom')", "bottom"),
    # -- every table (issue 22: columns from the keyboard) -----------------------------------
    Key("table", "table.hide", "minus", "hide_column", "hide col", "Tables: - + < >",
        "hide the column under the cursor; + shows hidden columns again; < > move it left / right"),
    Key("table", "table.show", "plus", "show_columns", "show cols"),
    Key("table", "table.left", "less_than_sign", "move_column(-1)", "col ◀"),
    Key("table", "table.right", "greater_than_sign", "move_column(1)", "col ▶"),
    # -- a drill-down -------------------------------------------------------------------------
    Key("drill", "drill.back", "escape", "app.back", "back", show=True),
    Key("drill", "drill.stack_down", "J,shift+down", "scroll_detail(3)", "stack", "J K (Shift+↓ ↑)",
        "in a kernel's drill-down: scroll its operator chain and Python stack", show=True, key_display="J/K"),
    Key("drill", "drill.stack_up", "K,shift+up", "scroll_detail(-3)", "stack up"),
    Key("drill", "drill.stack_toggle", "v", "toggle_stack", "stack pane", "v",
        "in a kernel's drill-down: hide the operator chain and stack pane (more rows), or show it", show=True),
    # -- the step list ------------------------------------------------------------------------
    Key("steps", "steps.up", "up,k", "move(-1)", "up", "Steps: ↑ ↓ j k PgUp PgDn g G",
        "highlight a step: its totals and GPU timeline show below"),
    Key("steps", "steps.down", "down,j", "move(1)", "down"),
    Key("steps", "steps.page_up", "pageup", "move(-10)", "page up"),
    Key("steps", "steps.page_down", "pagedown", "move(10)", "page down"),
    Key("steps", "steps.first", "g,home", "jump(0)", "first"),
    Key("steps", "steps.last", "G,end", "jump(-1)", "last"),
    Key("steps", "steps.choose", "enter", "choose", "this step", "Steps: Enter / a",
        "narrow every view (Overview, tables, drill-downs) to the highlighted step / all steps", show=True),
    Key("steps", "steps.all", "a", "all", "all steps", show=True),
    # issue 40: wherever the context line offers "a: all", a works (the whole trace again)
    Key("main", "main.all", "a", "all_scopes", "all", "a",
        "with a step or iteration chosen, on any tab: every view back to the whole trace"),
    # issue 13: sort the steps; "!" marks outliers (median + 3×1.4826×MAD)
    Key("steps", "steps.sort", "s", "sort", "sort", "Steps: s",
        "sort: duration ↓, then each category ↓, then step order again; ! marks outliers", show=True),
    # -- the GPU timeline (bound on the step list, which keeps focus, and on the timeline) ------
    Key("timeline", "timeline.left", "left,h", "timeline('move', -1)", "◀", "Steps timeline: ← → H L < > + - [ ] 0",
        "cursor (H/L ×10), lane, zoom in/out, pan, fit"),
    Key("timeline", "timeline.right", "right,l", "timeline('move', 1)", "▶"),
    Key("timeline", "timeline.left10", "H", "timeline('move', -10)", "◀◀"),
    Key("timeline", "timeline.right10", "L", "timeline('move', 10)", "▶▶"),
    Key("timeline", "timeline.lane_up", "less_than_sign", "timeline('lane', -1)", "lane up"),
    Key("timeline", "timeline.lane_down", "greater_than_sign", "timeline('lane', 1)", "lane down"),
    Key("timeline", "timeline.zoom_in", "plus,equals_sign", "timeline('zoom', 0.5)", "zoom", show=True,
        key_display="+/-"),
    Key("timeline", "timeline.zoom_out", "minus", "timeline('zoom', 2.0)", "zoom out"),
    Key("timeline", "timeline.pan_left", "left_square_bracket", "timeline('pan', -0.5)", "pan"),
    Key("timeline", "timeline.pan_right", "right_square_bracket", "timeline('pan', 0.5)", "pan"),
    Key("timeline", "timeline.fit", "0", "timeline('reset')", "fit"),
    # -- a distributed job (tui/job/screen.py) ------------------------------------------------
    Key("job", "job.ranks", "1", "tab('ranks')", "ranks", "Job: 1 2",
        "Ranks (grid and table: s and / sort and filter both) / Collectives (one row each)"),
    Key("job", "job.collectives", "2", "tab('collectives')", "collectives"),
    Key("job", "job.tab", "tab", "next_tab", "tabs", show=True, priority=True),
    Key(
        "job",
        "job.shade",
        "c",
        "next_shade",
        "shade by",
        "Job: c",
        "shade the grid by wait (the straggler waits least), step time, each category",
        show=True,
    ),
    Key(
        "job",
        "job.open",
        "o",
        "open_rank",
        "open rank",
        "Job: Enter / o",
        "a rank: its own views (q or Esc: back); a collective: its per-rank rows",
        show=True,
    ),
    # -- a memory snapshot (tui/snapshot/) ----------------------------------------------------------
    Key("snapshot", "snapshot.summary", "1", "tab('summary')", "summary", "snapshot: 1-6, Tab",
        "Summary / Sites (live at the snapshot) / Peak (live at the peak) / Timeline / OOMs / Segments"),
    Key("snapshot", "snapshot.sites", "2", "tab('sites')", "sites"),
    Key("snapshot", "snapshot.peak", "3", "tab('peak')", "peak"),
    Key("snapshot", "snapshot.timeline", "4", "tab('timeline')", "timeline"),
    Key("snapshot", "snapshot.ooms", "5", "tab('ooms')", "ooms"),
    Key("snapshot", "snapshot.segments", "6", "tab('segments')", "segments"),
    Key("snapshot", "snapshot.tab", "tab", "next_tab", "tabs", show=True, priority=True),
    # -- compare mode (profview diff BEFORE AFTER) ----------------------------------------------
    Key("compare", "compare.kernels", "1", "show('kernels')", "kernels", "compare: 1 2 3 4 5, Tab",
        "compare mode: Kernels, Operators, Steps (before / after / delta); Moved (one step aligned by "
        "operator: kernels that changed under the same operator); Phases (GPU µs per token per phase)"),
    Key("compare", "compare.ops", "2", "show('ops')", "operators"),
    Key("compare", "compare.steps", "3", "show('steps')", "steps"),
    Key("compare", "compare.moved", "4", "show('moved')", "moved"),
    Key("compare", "compare.phases", "5", "show('phases')", "phases"),
    Key("compare", "compare.side", "w", "switch_side", "drill side", "compare: w",
        "Enter drills into both sides (before/after/delta); w: AFTER, BEFORE, both", show=True),
    # -- compare mode of two jobs (profview diff JOB_A JOB_B; tui/job_compare.py) ---------------
    Key("job_compare", "job_compare.ranks", "1", "show('ranks')", "ranks", "two jobs: 1 2 3, Tab",
        "two jobs compared: Ranks (medians across ranks), Stragglers (wait per rank), Kernels (all ranks)"),
    Key("job_compare", "job_compare.stragglers", "2", "show('stragglers')", "stragglers"),
    Key("job_compare", "job_compare.kernels", "3", "show('kernels')", "kernels"),
    Key("job_compare", "job_compare.tab", "tab", "next_tab", "tabs", show=True, priority=True),
    # -- memory and modules (issue 15) ---------------------------------------------------------
    Key("app", "pane.memory", "5", "pane('memory')", "memory", "5 6",
        "Memory (allocated/reserved over time, the peak, operators by bytes), Modules (GPU time by nn.Module)"),
    Key("app", "pane.modules", "6", "pane('modules')", "modules"),
    Key("memory", "memory.device", "d", "next_device", "device", "Memory: d",
        "chart the next device (cuda:0, cpu ...)", show=True),
    Key("modules", "modules.deeper", "x", "depth(1)", "deeper", "Modules: x z, b",
        "show one level deeper / shallower of the module tree; b: GPU time by source line", show=True,
        key_display="x/z"),
    Key("modules", "modules.shallower", "z", "depth(-1)", "shallower"),
    # -- the trace timeline (issue 15) --------------------------------------------------------
    Key("app", "pane.trace", "7", "pane('trace')", "timeline", "7",
        "Timeline: CPU thread lanes (operators by depth) and GPU stream lanes of the whole trace"),
    Key("trace_timeline", "tl.left", "left,h", "move(-1)", "◀", "Timeline: ← → h l H L, ↑ ↓ j k",
        "move the cursor (H/L ×10), change lane"),
    Key("trace_timeline", "tl.right", "right,l", "move(1)", "▶"),
    Key("trace_timeline", "tl.left10", "H", "move(-10)", "◀◀"),
    Key("trace_timeline", "tl.right10", "L", "move(10)", "▶▶"),
    Key("trace_timeline", "tl.up", "up,k", "lane(-1)", "lane up"),
    Key("trace_timeline", "tl.down", "down,j", "lane(1)", "lane down"),
    Key("trace_timeline", "tl.zoom_in", "plus,equals_sign", "zoom(0.5)", "zoom", "Timeline: + - [ ] 0",
        "zoom in/out about the cursor, pan, fit the whole trace", show=True, key_display="+/-"),
    Key("trace_timeline", "tl.zoom_out", "minus", "zoom(2.0)", "zoom out"),
    Key("trace_timeline", "tl.pan_left", "left_square_bracket", "pan(-0.5)", "pan"),
    Key("trace_timeline", "tl.pan_right", "right_square_bracket", "pan(0.5)", "pan"),
    Key("trace_timeline", "tl.fit", "0", "fit", "fit"),
    Key("trace_timeline", "tl.next", "n", "search(1)", "next", "Timeline: n p",
        "next / previous event on the lane (after a / search, n goes to the next match)", show=True,
        key_display="n/p"),
    Key("trace_timeline", "tl.prev", "p", "step_event(-1)", "previous"),
    Key("trace_timeline", "tl.match_prev", "N", "search(-1)", "previous match", "Timeline: / n N",
        "mark the events whose name matches a regex; n / N: the next / previous match on any lane; Esc clears"),
    Key("trace_timeline", "tl.inspect", "i", "inspect", "inspect", "Timeline: i",
        "the inspector below the lanes: the selected event's launch arguments, inputs, origin and stack, "
        "or one line", show=True),
    Key("trace_timeline", "tl.follow", "f", "follow", "launch↔kernel", "Timeline: f",
        "from a kernel to the runtime call that launched it, and back (the trace's flow links)", show=True),
    Key("trace_timeline", "tl.step_next", "t", "next_step(1)", "step", "Timeline: t T c C",
        "step after / before, whole; critical path (◆) next / previous",
        show=True, key_display="t/T"),
    Key("trace_timeline", "tl.step_prev", "T", "next_step(-1)", "previous step"),
    Key("trace_timeline", "tl.path_next", "c", "critical_path(1)", "critical path"),  # help: on t T's line
    Key("trace_timeline", "tl.path_prev", "C", "critical_path(-1)", "previous on the critical path"),
    # issue 34: no dead key on the Timeline: y copies the selected event's name, g G the first / last lane
    Key("trace_timeline", "tl.copy", "y", "copy", "copy name", "Timeline: y g G",
        "copy the selected event's full name (OSC 52); first / last lane"),
    Key("trace_timeline", "tl.first_lane", "g,home", "edge(-1)", "first lane"),
    Key("trace_timeline", "tl.last_lane", "G,end", "edge(1)", "last lane"),
    Key("trace_timeline", "tl.drill", "enter", "drill", "drill", "Timeline: Enter",
        "this event's drill-down: a kernel's launch path and Python stack; an operator call's GPU work",
        show=True),
    Key("trace_timeline", "tl.range_start", "left_curly_bracket", "mark_range(0)", "range from",
        "Timeline: { }",
        "a range's start / end (selected event, else cursor); } opens its per-name aggregates"),
    Key("trace_timeline", "tl.range_end", "right_curly_bracket", "mark_range(1)", "range to"),
    # -- efficiency (issue 24) ------------------------------------------------------------------
    Key("app", "pane.efficiency", "8", "pane('efficiency')", "efficiency", "8, c",
        "Efficiency: TFLOP/s and % of roofline per operator and shapes, under a roofline chart (c: hide/show)"),
    Key("efficiency", "efficiency.chart", "c", "toggle_chart", "chart", show=True),
    Key("efficiency", "efficiency.tensor_cores", "t", "peer('tensor_cores_all')", "cores/launch/queue",
        "Efficiency: t l u",
        "Tensor Cores per GEMM kernel (yes/no/unknown from its name); launch delay per kernel and queue length "
        "per stream (HTA's launch statistics); e exports each", show=True, key_display="t/l/u"),
    Key("efficiency", "efficiency.launches", "l", "peer('launch_names_all')", "launches"),
    Key("efficiency", "efficiency.queue", "u", "peer('queue_length_all')", "queues"),
    # -- graph replays (issue 36) ---------------------------------------------------------------
    Key("app", "pane.graphs", "9", "pane('graphs')", "graphs", "9",
        "Graphs: the CUDA/HIP graphs the trace replays, how much of their GPU time is attributed through a "
        "capture; Enter: a graph's nodes, then a node's captured operator chain and stack"),
    Key("graphs", "graphs.ops", "o", "graph_ops", "operators", "Graphs: o",
        "every GPU µs by operator and module, replays charged through their capture (graph_ops; e exports it)",
        show=True),
    # -- serving and decode loops (issue 31) ----------------------------------------------------
    Key("app", "pane.iterations", "0", "pane('iterations')", "iterations", "0",
        "Iterations: one row per serving or decode-loop iteration (phase, tokens, GPU µs per token, ! outliers)"),
    Key("iterations", "iterations.all", "a", "all", "all iterations", "Iterations: Enter / a",
        "narrow every view (Overview, tables, drill-downs, Timeline) to the highlighted iteration / all",
        show=True),
    # -- navigation and details (issue 13) ----------------------------------------------------
    Key("app", "copy", "y", "copy_name", "copy name", "y",
        "copy the full name of the row under the cursor (OSC 52: works over SSH)", show=True),
    # Priority, as "/": the keys typed straight after ":" go to its box, not to the table.
    Key("app", "goto", "colon", "goto", "go to", ":",
        "go to a row number, or search for a regex without filtering", priority=True),
    Key("app", "search.next", "n", "search(1)", "next match", "n N",
        "next / previous row matching the : search (else the filter bar's text)"),
    Key("app", "search.prev", "N", "search(-1)", "previous match"),
    Key("app", "history_back", "backspace", "history_back", "back", "Backspace", "back one drill-down"),
    Key("goto", "goto.cancel", "escape", "cancel", "cancel", show=True),
    Key("drill_progress", "drill.cancel", "escape", "cancel", "cancel", show=True),
    # -- small screens ------------------------------------------------------------------------
    Key("help", "help.close", "escape,q,question_mark", "dismiss", "close", show=True),
    Key("help_search", "help.search", "slash", "search", "search", "? then /",
        "search the help (keys and meaning); the keys of the screen you are on come first", show=True),
    Key("export_dialog", "export.cancel", "escape", "cancel", "cancel", show=True),
    Key("filter_bar", "filter.clear", "escape", "clear_filter", "clear filter"),
)

#: Help lines that are no binding of their own (the mouse).
EXTRA_HELP: tuple[tuple[str, str], ...] = (
    ("Enter", "drill down: operator → kernels it launched; kernel → operators and Python stack"),
    ("click a column header", "sort by it (the mouse is optional everywhere)"),
    # -- issue 13: tables and history (branch nav) --
    ("← →", "the column s sorts by; the row stays marked, the name column stays; top line: path, notices"),
)


def bindings(*scopes: str) -> list[BindingType]:
    """The Textual bindings of ``scopes``, each with its id (so that a user keymap can remap it)."""
    return [
        Binding(
            k.keys,
            k.action,
            k.label,
            show=k.show,
            priority=k.priority,
            key_display=k.key_display,
            id=f"profview.{k.id}",
        )
        for k in KEYMAP
        if k.scope in scopes
    ]


def help_lines() -> list[tuple[str, str]]:
    """(keys, meaning) for the help screen: the keymap's lines, then those of no binding."""
    return [(k.help_keys, k.help) for k in KEYMAP if k.help] + list(EXTRA_HELP)


#: How the help writes a few keys whose Textual name reads badly (the rest: Textual's ``format_key``).
KEY_WORDS = {"escape": "Esc", "enter": "Enter", "backspace": "Backspace", "tab": "Tab", "ctrl+c": "Ctrl+C"}


def key_words(keys: str) -> list[str]:
    """Textual key names (comma-separated) as the help writes them: ``slash,f`` → ``["/", "f"]``."""
    from textual.keys import format_key

    return [KEY_WORDS.get(k.strip(), format_key(k.strip())) for k in keys.split(",") if k.strip()]


def remapped_help_keys(owner: Key, keymap: dict[str, str]) -> str:
    """The help line's keys of ``owner`` (and the keys without a line of their own that follow it in
    its scope), as the user's ``keymap`` (binding id → keys) binds them (issue 34: ``?`` followed
    the defaults)."""
    import re

    text = owner.help_keys
    at = KEYMAP.index(owner)
    group = [owner]
    for key in KEYMAP[at + 1 :]:
        if key.help or key.scope != owner.scope:
            break
        group.append(key)
    for key in group:
        new = keymap.get(f"profview.{key.id}")
        if not new:
            continue
        shown = ", ".join(key_words(new))
        replaced = False
        for old in key_words(key.keys):
            pattern = rf"(?<![^\s,/(]){re.escape(old)}(?![^\s,/)])"
            found = re.search(pattern, text)
            if found:
                text, replaced = text[: found.start()] + shown + text[found.end() :], True
                break
        if not replaced:
            text += f" ({key.label}: {shown})"
    return text


#: Given in the main screen's help scopes: the one-trace viewer's tab keys (``1`` … ``0``) work there.
MAIN_TABS = "main_tabs"


def help_sections(
    scopes: tuple[str, ...], where: str = "", keymap: dict[str, str] | None = None
) -> list[tuple[str, list[tuple[str, str]]]]:
    """The help screen's sections: the keys of ``scopes`` (the screen on display, called ``where``)
    first, then everywhere, then every other scope, then the lines of no binding; ``keymap``: the
    user's (binding id → keys), whose keys the lines name instead of the defaults."""
    first: list[tuple[str, str]] = []
    everywhere: list[tuple[str, str]] = []
    others: list[tuple[str, str]] = []
    def scope_of(key: Key) -> str:
        # The one-trace viewer's tab keys are bound app-wide but name its tabs: on another screen
        # (compare, a job, a drill-down) they are listed with the other screens, not everywhere.
        if key.id.startswith("pane.") and MAIN_TABS not in scopes:
            return MAIN_TABS
        return key.scope

    ranked = sorted(KEYMAP, key=lambda k: scopes.index(scope_of(k)) if scope_of(k) in scopes else len(scopes))
    for key in ranked:
        if not key.help:
            continue
        line = (remapped_help_keys(key, keymap) if keymap else key.help_keys, key.help)
        if scope_of(key) == MAIN_TABS:
            line = (f"one trace: {line[0]}", line[1])
        if scope_of(key) in scopes and scope_of(key) != MAIN_TABS:
            first.append(line)
        elif scope_of(key) == "app" or key.scope.startswith("help"):
            everywhere.append(line)
        else:
            others.append(line)
    sections = []
    if first:
        sections.append((f"This screen: {where}" if where else "This screen", first))
    sections += [("Everywhere", everywhere + list(EXTRA_HELP)), ("Other screens", others)]
    return [(title, lines) for title, lines in sections if lines]


def user_keymap() -> dict[str, str]:
    """The user's remapped keys (binding id → keys), from ``$PROFVIEW_KEYMAP`` or the config folder.

    A missing or unreadable file is no keymap; ids are given without the ``profview.`` prefix.
    """
    override = os.environ.get("PROFVIEW_KEYMAP")
    if override:
        path = Path(override)
    else:
        from platformdirs import user_config_dir

        path = Path(user_config_dir("profview")) / "keymap.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    known = {k.id for k in KEYMAP}
    return {f"profview.{key}": str(value) for key, value in data.items() if key in known}
