"""The ? help screen: every key, from the keymap (:mod:`..keymap`), the current screen's first.

``/`` searches the lines (keys and meaning, case-insensitive); Esc, q or ? close it.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

from ..keymap import MAIN_TABS, bindings, help_sections

#: The keymap scopes of each pane of the main screen (its keys come first in the help).
PANE_SCOPES = {
    "overview": ("app",),
    "kernels": ("table", "app"),
    "ops": ("table", "app"),
    "steps": ("steps", "timeline"),
    "memory": ("memory", "table"),
    "modules": ("modules", "table"),
    "trace": ("trace_timeline",),
    "iterations": ("iterations", "table"),  # serving and decode loops
}
#: The keymap scopes of the other screens, by class name (no screen module is imported here).
SCREEN_SCOPES = {
    "DrillScreen": ("drill", "table"),
    "CompareScreen": ("compare", "table"),
    "JobScreen": ("job",),
    "JobCompareScreen": ("job_compare",),
}


def help_context(screen: Screen) -> tuple[str, tuple[str, ...]]:
    """(a title for the screen on display, the keymap scopes whose keys work there)."""
    pane = getattr(screen, "pane", None)
    name = type(screen).__name__
    if name == "MainScreen" and isinstance(pane, str):
        from ..main.screen import TITLES

        return TITLES.get(pane, pane), (*PANE_SCOPES.get(pane, ("app",)), MAIN_TABS)
    titles = {"DrillScreen": "drill-down", "CompareScreen": "compare", "JobScreen": "job"}
    return titles.get(name, "two jobs"), SCREEN_SCOPES.get(name, ())


class HelpScreen(ModalScreen[None]):
    """Key reference, the keys of ``where`` (the screen it was opened on) first; ``/`` searches."""

    BINDINGS = [*bindings("help"), *bindings("help_search")]

    def __init__(self, where: str = "", scopes: tuple[str, ...] = (), keymap: dict[str, str] | None = None) -> None:
        """``keymap``: the user's remapped keys (binding id → keys), which the lines name."""
        super().__init__()
        self.where = where
        self.sections = help_sections(scopes, where, keymap)
        self.query_text = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search the keys (Enter: keep, Esc: close)", id="help-search")
        with VerticalScroll(id="help-box"):
            yield Static(self.table(), id="help-table")

    def on_mount(self) -> None:
        self.query_one("#help-search", Input).display = False
        self.query_one("#help-box").focus()

    def table(self) -> Table:
        table = Table(title="profview keys", box=None, show_header=False, expand=True)
        table.add_column(style="bold", ratio=2)
        table.add_column(ratio=3)
        needle = self.query_text.lower()
        shown = 0
        for heading, lines in self.sections:
            found = [(k, m) for k, m in lines if needle in k.lower() or needle in m.lower()]
            if not found:
                continue
            table.add_row(Text(heading, style="bold reverse"), Text(""))
            for key, meaning in found:
                table.add_row(Text(key), Text(meaning))
                shown += 1
        if needle and not shown:
            table.add_row(Text(f"no key matches {self.query_text!r}", style="italic"), Text(""))
        return table

    def action_search(self) -> None:
        """/: a search box over the lines."""
        box = self.query_one("#help-search", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_text = event.value
        self.query_one("#help-table", Static).update(self.table())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#help-box").focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
