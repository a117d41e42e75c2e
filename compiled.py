"""The optional compiled modules (``native/*.c``): one answer to "may this run use them?".

None when the module was not built (no C compiler at install) or ``PROFVIEW_PURE_PYTHON`` is set
(benchmarks and tests of the pure-Python paths).  Imports nothing heavy, so the file reader can
ask before Polars or NumPy are loaded.
"""

from __future__ import annotations

import os
from importlib import import_module
from types import ModuleType


def compiled_module(name: str) -> ModuleType | None:
    """``profview.<name>`` (``_fastscan``, ``_calltree``) if it was built and may be used, else None."""
    if os.environ.get("PROFVIEW_PURE_PYTHON"):
        return None
    try:
        return import_module(f"profview.{name}")
    except ImportError:  # built without a C compiler: the Python paths do the work
        return None
