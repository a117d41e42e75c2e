"""Shown while the trace loads in a worker: file, size, elapsed time, a spinner."""

from __future__ import annotations

import os
import time

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import LoadingIndicator, Static

from ...sanitize import clean


def size_text(path: str) -> str:
    """'172.4 MB', or for a gzip file '23.1 MB compressed, 172.4 MB of JSON' (from the gzip trailer).

    The trailer holds the size modulo 4 GiB: when that is smaller than the file itself it has
    wrapped, and only 'compressed' is said.
    """
    try:
        size = os.path.getsize(path)
    except OSError:
        return "size unknown"
    if not path.endswith((".gz", ".zst", ".bz2", ".xz")):
        return f"{size / 1e6:,.1f} MB"
    if path.endswith(".gz") and size >= 18:
        try:
            with open(path, "rb") as fh:
                fh.seek(-4, os.SEEK_END)
                inflated = int.from_bytes(fh.read(4), "little")
        except OSError:
            inflated = 0
        if inflated >= size:
            return f"{size / 1e6:,.1f} MB compressed, {inflated / 1e6:,.1f} MB of JSON"
    return f"{size / 1e6:,.1f} MB compressed"


class LoadingScreen(Screen[None]):
    """Progress while parsing; q or Ctrl+C quits at once."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.started = time.monotonic()
        self.phase = "starting"
        self.size_label = size_text(path)

    def compose(self) -> ComposeResult:
        yield Static(id="loading-text")
        yield LoadingIndicator()

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(0.2, self.tick)

    def tick(self) -> None:
        elapsed = time.monotonic() - self.started
        text = Text(f"Loading {clean(self.path)}", style="bold")
        text.append(f"\n{self.size_label}")  # issue 34: its own line, so a long path never cuts it off
        text.append(f"\n{self.phase} … {elapsed:.1f} s")
        text.append("\nq or Ctrl+C to quit", style="dim")
        self.query_one("#loading-text", Static).update(text)
