"""The zoom, pan and fit keys of both timelines, over the arithmetic of :mod:`.time_window`.

Mixed into a widget that keeps ``start``/``end`` (the span), ``view_start``/``view_end`` (the
window shown), ``cursor`` (a cell) and a ``cells`` count; the widget supplies ``refresh``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from . import time_window


class ZoomPan:
    """Zoom about the cursor, pan by a fraction of the window, fit the span."""

    #: The deepest zoom, in µs a cell; the narrowest fitted window, in µs.
    MIN_CELL_US: ClassVar[float] = 0.01
    MIN_WIDTH_US: ClassVar[float] = 0.0

    start: float
    end: float
    view_start: float
    view_end: float
    cursor: int

    if TYPE_CHECKING:

        @property
        def cells(self) -> int: ...  # how many cells the window is drawn in (the widget's width)

        def refresh(self, *args: Any, **kwargs: Any) -> Any: ...

    def window_span(self) -> tuple[time_window.Window, time_window.Window]:
        return (self.view_start, self.view_end), (self.start, self.end)

    def cell_span(self) -> float:
        return time_window.cell_span((self.view_start, self.view_end), self.cells)

    def action_zoom(self, factor: float) -> None:
        """Zoom about the cursor, keeping the instant under it where it is."""
        window, span = self.window_span()
        zoomed, self.cursor = time_window.zoom(window, span, self.cells, self.cursor, factor,
                                               self.MIN_CELL_US * self.cells)
        self.view_start, self.view_end = zoomed
        self.refresh()

    def action_pan(self, fraction: float) -> None:
        """Move the window by ``fraction`` of its width, not past the span's ends."""
        self.view_start, self.view_end = time_window.pan(*self.window_span(), fraction)
        self.refresh()

    def fit_view(self) -> None:
        """Show the whole span."""
        self.view_start, self.view_end = time_window.fit((self.start, self.end), self.MIN_WIDTH_US)
        self.refresh()


__all__ = ["ZoomPan"]
