"""Keys that do nothing where you are say why: no dead keys, a key acts or explains.

The app offers a key only where it acts (``check_action``; the footer follows).  A key pressed
where it is not offered would otherwise do nothing at all; :func:`dead_key_reason` gives the one
line the app shows instead.  Pure text, as data: no widget here.
"""

from __future__ import annotations

#: The main screen's tabs with a table (Kernels, Operators, Memory, Modules, Efficiency, Graphs,
#: Iterations), by their keys: where a table key acts (a trace lacking one says so on its tab).
TABLE_TABS = "2 3 5 6 8 9 0"
#: Why an app key does nothing, by action, where no table is on screen.
REASONS = {
    "export": f"e exports the table on screen (or the Steps list) to CSV: open one ({TABLE_TABS}, 4, a drill-down)",
    "group": "b groups Kernels by launch shape, Operators by input shapes, Modules by source line",
    "goto": f": goes to a row of a table (or searches it): open one ({TABLE_TABS})",
    "copy_name": "y copies the name of a table row, or of the Timeline's selected event",
    "search": f"n N go to the next / previous row matching a : search: open a table ({TABLE_TABS})",
    "filter": f"/ filters a table ({TABLE_TABS}), or marks matching events on the Timeline (7)",
    "next_run": "r shows the next run of a file holding several; this one holds one",
}
#: The same on the Timeline, where the reason is more precise.
TIMELINE_REASONS = {
    "export": "the Timeline has no table to export: profview export TRACE --view gpu_idle (or gaps) writes its figures",
    "group": "b groups Kernels (2), Operators (3) and Modules (6); the Timeline draws every event",
    "goto": "on the Timeline / marks the events whose name matches, n N jump between them (: is for tables)",
}
#: Enter on the Overview (its top rows are no table).
OVERVIEW_ENTER = "Enter drills down from a table: the top kernels lead 2 Kernels, the top operators 3 Operators"


def dead_key_reason(action: str, pane: str | None) -> str | None:
    """The line for ``action`` (a binding's action, without arguments) pressed where it is not offered;
    ``pane``: the main screen's pane on display (None: another screen)."""
    if pane == "trace" and action in TIMELINE_REASONS:
        return TIMELINE_REASONS[action]
    return REASONS.get(action)


__all__ = ["OVERVIEW_ENTER", "TABLE_TABS", "dead_key_reason"]
