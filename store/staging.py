"""Cache entries written whole or not at all, and old ones dropped: shared by every store.

An entry is a folder.  Its files are written into a staging folder beside it (``.tmp-…``) that is
then renamed into place, so a reader sees a whole entry or none; the staging folder is removed
on any failure, Ctrl+C included.  A staging folder left by a process killed mid-write is swept by
the next prune once it is :data:`STALE_STAGING_S` old (younger ones may still be being written).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .keys import make_folder

#: Prefix of the staging folders (and files) an entry is written through.
STAGING_PREFIX = ".tmp-"
#: Age after which a staging folder is taken to be a killed writer's, not one in progress.
STALE_STAGING_S = 3600.0


def write_entry(entry: Path, fill: Callable[[Path], None]) -> None:
    """Create the folder ``entry`` with the files ``fill`` writes into the staging folder it is
    given, atomically (``os.rename``).  Errors propagate; nothing half-written is left behind."""
    make_folder(entry.parent)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=entry.parent))
    try:
        fill(staging)
        os.rename(staging, entry)
    finally:  # also on Ctrl+C
        shutil.rmtree(staging, ignore_errors=True)


def is_staging(path: Path) -> bool:
    """Whether ``path`` is a staging folder (of a write in progress, or of a killed one)."""
    return path.name.startswith(STAGING_PREFIX)


def sweep_if_stale(path: Path) -> None:
    """Remove the staging folder ``path`` if a killed writer left it (older than :data:`STALE_STAGING_S`)."""
    if age(path) > STALE_STAGING_S:
        shutil.rmtree(path, ignore_errors=True)


def prune_oldest(folder: Path, limit: int) -> None:
    """Drop the oldest entries of ``folder`` past ``limit`` (by modification time), and the stale
    staging folders; silent when the folder cannot be read."""
    try:
        found = [e for e in folder.iterdir() if e.is_dir()]
    except OSError:
        return
    entries = []
    for entry in found:
        if is_staging(entry):
            sweep_if_stale(entry)
            continue
        try:
            entries.append((entry.stat().st_mtime, entry))
        except OSError:  # removed meanwhile
            continue
    for _mtime, entry in sorted(entries)[: max(0, len(entries) - limit)]:
        shutil.rmtree(entry, ignore_errors=True)


def age(path: Path) -> float:
    """Seconds since ``path`` was modified; 0 where it cannot be looked at."""
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0
