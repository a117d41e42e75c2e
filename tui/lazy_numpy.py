"""NumPy as the viewer's charts use it, imported at its first use rather than with the viewer.

The first screen (the Overview) draws no chart, and importing NumPy costs about 36 ms of the
interpreter's lock while the trace is read on other threads: the timeline, the step timeline
and the memory chart reach NumPy through :data:`np`, which imports it when an attribute is first
asked for and then holds NumPy's names itself, so later lookups cost what a module's do.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _NumpyOnFirstUse(ModuleType):
    """A stand-in for the ``numpy`` module: the first attribute looked up imports NumPy."""

    def __getattr__(self, name: str) -> Any:
        numpy = importlib.import_module("numpy")
        self.__dict__.update(numpy.__dict__)
        return getattr(numpy, name)


np = _NumpyOnFirstUse("numpy")
