"""NumPy for the modules the viewer imports at its start, imported at its first use instead.

The first screen (the Overview) draws no chart and computes nothing with NumPy, and importing it
costs about 36 ms of the interpreter's lock while the trace is read on other threads. The
timeline, step timeline and memory chart, and the analysis modules their panes import at start
(the call tree, the trace model, lanes, instances, launches), import this module as ``np``: a
name looked up here for the first time imports NumPy (:func:`__getattr__`, PEP 562) and is kept as
this module's own, so a later lookup costs what any module attribute costs. Type checkers see
NumPy itself.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    """NumPy's ``name``, importing NumPy on the first lookup; kept here for the next one."""
    value = getattr(importlib.import_module("numpy"), name)
    globals()[name] = value
    return value
