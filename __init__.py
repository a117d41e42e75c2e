"""profview: a terminal trace explorer for GPU profiles."""

from __future__ import annotations

__version__ = "0.1.0"

# Absolute, unlike the rest of the package: the checkout's root is this package, and pytest
# imports this file as a plain module when the checkout's folder name is no Python identifier.
from profview.comparison import Comparison, load_comparison
from profview.loading import load
from profview.trace_profile import Profile

__all__ = ["Comparison", "Profile", "__version__", "load", "load_comparison"]
