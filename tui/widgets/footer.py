"""The footer of every screen: Textual's, less the keys that do not fit whole.

Textual's footer draws its keys in one row and cuts the last one where the terminal ends (at 80
columns ``e exp``, ``b by sh``: a key whose meaning is lost).  This one drops the keys that do not
fit, whole, from the end of the row (the first ones are the screen's own and ``q``/``?``; ``?`` lists
every key), and lays them out again when the terminal is resized.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


def key_width(key: FooterKey) -> int:
    """Cells one key takes: its key with a space either side, its description and a space."""
    return len(key.key_display) + 2 + (len(key.description) + 1 if key.description else 0)


class WholeFooter(Footer):
    """A footer whose keys are each shown whole, or not at all."""

    def compose(self) -> ComposeResult:
        room = self.size.width or (self.app.size.width if self.is_attached else 80)
        used = 0
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                used += key_width(widget)
                if used > room:
                    continue
            yield widget

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.recompose)


__all__ = ["WholeFooter", "key_width"]
