"""The cache of rank summaries: what re-opening a job reads instead of any trace.

Beside the trace cache (:mod:`profview.store.trace_cache`), in its own folder ``ranks/`` with its own limit
(:data:`MAX_SUMMARIES`, far above the trace cache's: a summary is a few tens of KB), one folder
per (trace identity, analysis settings): the steps, kernels and collective-call frames, and a
JSON document of the rank, world size, backend, warnings and figures.  Written atomically (a
staging folder renamed into place); an unreadable entry is no entry.  Failures are silent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from .keys import cache_root, identity, key

FOLDER = "ranks"
MAX_SUMMARIES = 20_000
FRAMES = ("steps", "kernels", "calls")
INFO_FILE = "info.json"


def _entry(path: str, settings: dict[str, Any]) -> Path:
    trace = identity(path)  # size, times, inode, version and cache format of the trace
    return cache_root() / FOLDER / key({"trace": trace, "settings": settings})


def load(path: str, settings: dict[str, Any]) -> tuple[dict[str, pl.DataFrame], dict[str, Any]] | None:
    """(frames, info) saved for ``path`` with ``settings``, or None."""
    try:
        entry = _entry(path, settings)
        info = orjson.loads((entry / INFO_FILE).read_bytes())
        frames = {name: pl.read_ipc(entry / f"{name}.arrow") for name in FRAMES}
    except (OSError, ValueError, TypeError, pl.exceptions.PolarsError):
        return None
    return (frames, info) if isinstance(info, dict) else None


def save(path: str, settings: dict[str, Any], frames: dict[str, pl.DataFrame], info: dict[str, Any]) -> None:
    """Save one rank's summary (silently nothing on a read-only or full disk)."""
    try:
        entry = _entry(path, settings)
        if entry.exists():
            return
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
        try:
            for name in FRAMES:
                frames[name].write_ipc(staging / f"{name}.arrow", compression="zstd")
            (staging / INFO_FILE).write_bytes(orjson.dumps(info, default=str))
            os.rename(staging, entry)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except (OSError, TypeError, pl.exceptions.PolarsError):
        return


def prune(limit: int = MAX_SUMMARIES) -> None:
    """Drop the oldest summaries past ``limit``."""
    try:
        folder = cache_root() / FOLDER
        entries = [(e.stat().st_mtime, e) for e in folder.iterdir() if e.is_dir()]
    except OSError:
        return
    for _mtime, entry in sorted(entries)[: max(0, len(entries) - limit)]:
        shutil.rmtree(entry, ignore_errors=True)
