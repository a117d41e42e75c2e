"""The arithmetic of a visible time window over a trace's span: zoom about the cursor, pan, clamp, fit.

Pure (no Textual, no NumPy): the two timelines (``tui/timeline.py``, the Steps view's GPU lanes;
``tui/trace_timeline.py``, the Timeline tab) keep their own state and ask here for the next one.
Times are µs on one clock; a window or a span is ``(start, end)``; the window is drawn in
``cells`` equal cells, and the cursor is a cell index (``0 .. cells - 1``).
"""

from __future__ import annotations

Window = tuple[float, float]


def clip(value: float, low: float, high: float) -> float:
    """``value`` limited to [low, high]; ``high`` wins where ``low > high`` (as ``numpy.clip``)."""
    return min(max(value, low), high)


def cell_span(window: Window, cells: int) -> float:
    """The time one cell covers (1.0 for an empty window, so that callers never divide by zero)."""
    start, end = window
    return (end - start) / cells if end > start else 1.0


def instant(window: Window, cells: int, cursor: int) -> float:
    """The time at the middle of the cursor's cell."""
    return window[0] + (cursor + 0.5) * cell_span(window, cells)


def cell_at(window: Window, cells: int, at: float) -> int:
    """The last cell whose middle is at or before ``at`` (clamped to the window's cells)."""
    return int(clip((at - window[0]) / cell_span(window, cells) - 0.5, 0, cells - 1))


def clamp_start(start: float, width: float, span: Window) -> float:
    """The start nearest ``start`` of a window ``width`` wide that stays inside ``span`` (the
    span's start when the window is wider than the span)."""
    return float(clip(start, span[0], max(span[1] - width, span[0])))


def zoom(window: Window, span: Window, cells: int, cursor: int, factor: float, min_width: float) -> tuple[Window, int]:
    """The window ``factor`` times as wide (< 1: zoom in), at least ``min_width`` and at most the
    span, placed so that the instant under the cursor stays under it unless the span's ends stop
    it; and the cursor cell of that instant in the new window."""
    at = instant(window, cells, cursor)
    fraction = (cursor + 0.5) / cells
    width = min(max((window[1] - window[0]) * factor, min_width), span[1] - span[0])
    start = clamp_start(at - fraction * width, width, span)
    zoomed = (start, start + width)
    return zoomed, cell_at(zoomed, cells, at)


def pan(window: Window, span: Window, fraction: float) -> Window:
    """The window moved by ``fraction`` of its width (< 0: earlier), stopping at the span's ends."""
    start, end = window
    shift = float(clip((end - start) * fraction, span[0] - start, span[1] - end))
    return start + shift, end + shift


def fit(span: Window, min_width: float = 0.0) -> Window:
    """The whole span, at least ``min_width`` wide."""
    return span[0], max(span[1], span[0] + min_width)


__all__ = ["Window", "cell_at", "cell_span", "clamp_start", "clip", "fit", "instant", "pan", "zoom"]
