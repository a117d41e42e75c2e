"""The export dialog: propose a file name, confirm an overwrite, return the chosen path."""

from __future__ import annotations

import re
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ...report.wording import plural
from ..keymap import bindings


def suggest_name(parts: list[str], folder: Path | None = None) -> str:
    """A file name from the view path, e.g. ``profview-operators-aten-conv2d.csv``."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", "-".join(parts)).strip("-").lower()[:100] or "view"
    return str((folder or Path.cwd()) / f"profview-{slug}.csv")


TRACE_SUFFIXES = (".gz", ".json", ".trace", ".pt", ".txt", ".jsonl", ".tar", ".tgz", ".zip")


def trace_stem(path: str) -> str:
    """The file name without its trace suffixes: ``job.tar.gz`` → ``job``."""
    stem = Path(path).name
    while stem.endswith(TRACE_SUFFIXES):
        stem = stem[: stem.rfind(".")]
    return stem


def name_parts(trace: str, parts: list[str], step: int | None, iteration: int | None = None) -> list[str]:
    """What the suggested export name says: the trace, the view path, and the step or iteration the
    views are narrowed to, if one (a file from "iteration 5 only" must not read as the whole trace's)."""
    scope = [f"step {step}"] if step is not None else [f"iteration {iteration}"] if iteration is not None else []
    return [trace_stem(trace), *parts, *scope]


class ExportDialog(ModalScreen[str | None]):
    """Asks where to write; a second Enter confirms overwriting an existing file."""

    BINDINGS = bindings("export_dialog")
    AUTO_FOCUS = "#export-path"  # issue 13: focused when shown (no query in on_mount that could miss)

    def __init__(self, suggestion: str, rows: int) -> None:
        super().__init__()
        self.suggestion = suggestion
        self.rows = rows
        self.confirming: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static(Text(f"Export {plural(self.rows, 'row')} (as on screen) to CSV:", style="bold"))
            yield Input(value=self.suggestion, id="export-path")
            yield Static("Enter: write · Esc: cancel", id="export-note")

    def on_input_changed(self) -> None:
        self.confirming = None
        for note in self.query("#export-note").results(Static):  # none while the dialog is being built
            note.update("Enter: write · Esc: cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        path = event.value.strip()
        if not path:
            return
        target = Path(path).expanduser()
        if target.exists() and self.confirming != path:
            self.confirming = path
            self.query_one("#export-note", Static).update(
                Text(f"{target} exists: Enter again to overwrite it, Esc to cancel", style="bold yellow")
            )
            return
        self.dismiss(str(target))

    def action_cancel(self) -> None:
        self.dismiss(None)
