"""profview: a terminal trace explorer for GPU profiles."""

from __future__ import annotations

__version__ = "0.1.0"

# Absolute, unlike the rest of the package: the checkout's root is this package, and pytest
# imports this file as a plain module when the checkout's folder name is no Python identifier.
import os
import sys
from typing import Any

# Polars' allocator returns freed memory at once (see ALLOCATOR_CONF): only if Polars is not
# loaded yet (jemalloc reads it once), the variable is not set (a user's own setting wins) and the
# compiled scanner reads traces (the pure-Python reader's NDJSON windows free so often that
# returning each page took it from 3.0 s to 5.0 s on gpt2_train_big).
if "polars" not in sys.modules:
    from profview.compiled import compiled_module
    from profview.parsers.source import ALLOCATOR_CONF

    if compiled_module("_fastscan") is not None:
        os.environ.setdefault("_RJEM_MALLOC_CONF", ALLOCATOR_CONF)

#: Names served on first use (module ``__getattr__``): a CLI run that opens one trace does not
#: pay for importing the job and diff machinery (the cached re-open is measured against
#: ``import polars``), and the CLI starts reading a trace before Polars is imported at all.
_LAZY = {"Comparison": "profview.diff.comparison", "load_comparison": "profview.diff.comparison"}
_LAZY |= {"Job": "profview.jobs.job"}
_LAZY |= {"Profile": "profview.profiles.trace_profile"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'profview' has no attribute {name!r}")


def load(path, **options):  # type: ignore[no-untyped-def]
    """A :class:`Profile` of one trace or table, or a :class:`Job` when ``path`` names a job.

    A job is a directory, a glob, a list of paths or an archive of rank traces (see
    :func:`profview.jobs.job.open_job`, whose options it takes), or with ``as_job=True`` one Nsight
    Systems export whose processes are its ranks (:func:`profview.jobs.process_job.open_process_job`);
    anything else goes to :func:`profview.profiles.loading.load` with ``options``.
    """
    from os import fspath

    from profview.jobs.inputs import is_job

    names = [fspath(p) for p in path] if isinstance(path, (list, tuple)) else [fspath(path)]
    if options.pop("as_job", False):
        from profview.errors import ProfviewError
        from profview.jobs.process_job import open_process_job

        if len(names) != 1:
            raise ProfviewError(None, "as_job makes one Nsight Systems export a job of its processes: name one")
        return open_process_job(names[0], **options)
    if is_job(names):  # the job machinery (and NumPy with it) only for a job
        from profview.jobs.job import open_job

        return open_job(names, **options)
    from profview.profiles.loading import load as _load_one

    return _load_one(names[0], **options)


__all__ = ["Comparison", "Job", "Profile", "__version__", "load", "load_comparison"]
