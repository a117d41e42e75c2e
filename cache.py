"""Cache of parsed trace events, so a trace opened once re-opens in a fraction of a second.

Entries live in the user's cache directory (``$PROFVIEW_CACHE_DIR`` overrides it), one folder
per trace version: the key hashes the trace's absolute path, size and modification time and
profview's version, so a changed trace never matches an old entry.  An entry is written to a
temporary folder and renamed into place, so a crash mid-write leaves no partial entry, and two
processes opening the same trace at once both succeed (the second rename simply loses).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from . import __version__
from .parsers.schema import EVENT_SCHEMA

#: Bump when the events frame changes shape, to ignore entries written by older code.
CACHE_FORMAT = 2
EVENTS_FILE = "events.arrow"
META_FILE = "meta.json"
MAX_ENTRIES = 20


def cache_root() -> Path:
    """The folder holding cache entries."""
    override = os.environ.get("PROFVIEW_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("profview")) / "traces"


def _identity(path: str) -> dict[str, Any]:
    stat = os.stat(path)
    return {
        "path": os.path.abspath(path),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "version": __version__,
        "format": CACHE_FORMAT,
    }


def _key(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]


def lookup(path: str) -> tuple[pl.DataFrame, dict[str, Any]] | None:
    """(events, saved fields) for an unchanged trace opened before, or None."""
    try:
        identity = _identity(path)
        entry = cache_root() / _key(identity)
        meta = json.loads((entry / META_FILE).read_text())
        if meta.get("identity") != identity:
            return None
        events = pl.read_ipc(entry / EVENTS_FILE)
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return None
    if dict(events.schema) != EVENT_SCHEMA:
        return None
    return events, meta["fields"]


def store(path: str, events: pl.DataFrame, fields: dict[str, Any]) -> None:
    """Save parsed events for ``path``; failures (read-only disk, full disk) are silent."""
    try:
        identity = _identity(path)
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        entry = root / _key(identity)
        if entry.exists():
            return
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
        try:
            events.write_ipc(staging / EVENTS_FILE, compression="zstd")  # smallest, and the fastest to read back
            (staging / META_FILE).write_text(json.dumps({"identity": identity, "fields": fields}, default=str))
            os.rename(staging, entry)
        except OSError:
            return
        finally:  # also on Ctrl+C: no half-written entry is left behind
            shutil.rmtree(staging, ignore_errors=True)
        _prune(root, identity["path"], entry.name)
    except OSError:
        return


def _prune(root: Path, trace_path: str, keep: str) -> None:
    """Drop older entries of the same trace, and the oldest entries past MAX_ENTRIES."""
    entries = []
    for entry in root.iterdir():
        if entry.name == keep or not entry.is_dir():
            continue
        try:
            meta = json.loads((entry / META_FILE).read_text())
        except (OSError, ValueError):
            if entry.name.startswith(".tmp-"):
                continue  # another process may be writing it
            shutil.rmtree(entry, ignore_errors=True)
            continue
        if meta.get("identity", {}).get("path") == trace_path:
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entries.append((entry.stat().st_mtime, entry))
    for _mtime, entry in sorted(entries)[: max(0, len(entries) + 1 - MAX_ENTRIES)]:
        shutil.rmtree(entry, ignore_errors=True)
