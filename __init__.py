"""profview: a terminal trace explorer for GPU profiles."""

from __future__ import annotations

__version__ = "0.1.0"

from .loading import load
from .trace_profile import Profile

__all__ = ["Profile", "__version__", "load"]
