"""NumPy for the modules the viewer imports at its start, imported at its first use instead.

The first screen (the Overview) draws no chart and computes nothing with NumPy, and importing it
costs about 36 ms of the interpreter's lock while the trace is read on other threads. The
timeline, step timeline and memory chart, and the analysis modules their panes import at start
(the call tree, the trace model, lanes, instances, launches), name NumPy as :data:`np`: a stand-in
module that imports NumPy when a name is first looked up and keeps each name it handed out, so a
later lookup costs what a module attribute costs. Type checkers see NumPy itself.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _NumpyOnFirstUse(ModuleType):
    """A stand-in for the ``numpy`` module: a name's first lookup imports NumPy and keeps the name."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module("numpy"), name)
        setattr(self, name, value)
        return value


np = _NumpyOnFirstUse("numpy")
