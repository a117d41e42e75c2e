"""One iteration chosen to narrow the views, passed where a step number goes.  Its own
module so that the views' Protocol (:mod:`.host`) and the iteration views both import it without
importing each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IterationScope:
    """One iteration chosen to narrow the views (Enter on an iteration in the viewer): passed where a
    step number goes (``Profile.kernels(step=…)`` and the other narrowed views), it narrows them to
    the GPU work the iteration launched and the operators that started in its host range.  ``start``
    and ``end``: its host range, ``window_end``: the end of its window, in the trace's µs;
    ``pattern``: the ``--iteration`` regex it was found by (None: the default rules)."""

    iteration: int
    name: str
    start: float
    end: float
    window_end: float
    pattern: str | None = None

    def label(self) -> str:
        """``iteration 3 (decode)``: how the viewer names it."""
        return f"iteration {self.iteration} ({self.name[:40]})"
