"""Shown while the trace loads in a worker: file, size, elapsed time, a spinner."""

from __future__ import annotations

import os
import time

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import LoadingIndicator, Static

from ..sanitize import clean


class LoadingScreen(Screen):
    """Progress while parsing; q or Ctrl+C quits at once."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.started = time.monotonic()
        self.phase = "starting"
        try:
            self.file_size = os.path.getsize(path)
        except OSError:
            self.file_size = 0

    def compose(self) -> ComposeResult:
        yield Static(id="loading-text")
        yield LoadingIndicator()

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(0.2, self.tick)

    def tick(self) -> None:
        elapsed = time.monotonic() - self.started
        text = Text(f"Loading {clean(self.path)} ({self.file_size / 1e6:,.1f} MB)", style="bold")
        text.append(f"\n{self.phase} … {elapsed:.1f} s")
        text.append("\nq or Ctrl+C to quit", style="dim")
        self.query_one("#loading-text", Static).update(text)
