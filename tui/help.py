"""The ? help screen: every key."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = (
    ("1 2 3 4, Tab", "Overview, Kernels, Operators, Steps (Tab cycles)"),
    ("↑ ↓ ← →, j k, PgUp PgDn, g G", "move; g/G: first/last row"),
    ("Enter", "drill down: operator → kernels it launched; kernel → operators and Python stack"),
    ("J K (Shift+↓ ↑)", "in a kernel's drill-down: scroll its operator chain and Python stack"),
    ("Esc", "clear the table's filter, else back (close a drill-down)"),
    ("q", "close the current drill-down, or quit"),
    ("/", "filter the table by regex (live, case-insensitive); Enter keeps it, Esc clears"),
    ("s", "sort by the column under the cursor (again: reverse)"),
    ("b", "group kernels by launch shape / operators by input shapes (toggle)"),
    ("e", "export the table on screen (filter and sort applied; Steps: the step table) to CSV"),
    ("click a column header", "sort by it (the mouse is optional everywhere)"),
    ("Steps: Enter / a", "narrow Kernels and Operators to the highlighted step / all steps"),
    ("Steps: ↑ ↓ j k PgUp PgDn g G", "highlight a step: its totals and GPU timeline show below"),
    ("Steps timeline: ← → H L < > + - [ ] 0", "cursor (H/L ×10), lane, zoom in/out, pan, fit"),
    ("r", "next run (files holding several runs, e.g. TensorBoard-plugin JSON)"),
    ("?", "this help"),
    ("Ctrl+C", "quit at any time"),
)


class HelpScreen(ModalScreen[None]):
    """Key reference; any of Esc, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        table = Table(title="profview keys", box=None, show_header=False, expand=True)
        table.add_column(style="bold", ratio=2)
        table.add_column(ratio=3)
        for key, meaning in KEYS:
            table.add_row(Text(key), Text(meaning))
        with VerticalScroll(id="help-box"):
            yield Static(table)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
