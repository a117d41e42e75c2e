"""The ? help screen: every key, from the keymap (:mod:`.keymap`)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keymap import bindings, help_lines


class HelpScreen(ModalScreen[None]):
    """Key reference; any of Esc, q or ? closes it."""

    BINDINGS = bindings("help")

    def compose(self) -> ComposeResult:
        table = Table(title="profview keys", box=None, show_header=False, expand=True)
        table.add_column(style="bold", ratio=2)
        table.add_column(ratio=3)
        for key, meaning in help_lines():
            table.add_row(Text(key), Text(meaning))
        with VerticalScroll(id="help-box"):
            yield Static(table)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
