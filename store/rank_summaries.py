"""The cache of rank summaries: what re-opening a job reads instead of any trace.

Beside the trace cache (:mod:`profview.store.trace_cache`), in its own folder ``ranks/`` with its own limit
(:data:`MAX_SUMMARIES`, far above the trace cache's: a summary is a few tens of KB), one folder
per (trace identity, analysis settings): the steps, kernels and collective-call frames, and a
JSON document of the rank, world size, backend, warnings and figures.  Written atomically (a
staging folder renamed into place).  An entry that cannot be read, or whose document has the
wrong shape (:func:`valid_info`), is removed when found, so the next open writes a sound one.
Failures are silent.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from .keys import cache_root, identity, key
from .staging import prune_oldest, write_entry

FOLDER = "ranks"
MAX_SUMMARIES = 20_000
FRAMES = ("steps", "kernels", "calls")
INFO_FILE = "info.json"


#: Bump when a summary's content changes (2: no critical path in it; it has its own entry, issue 32).
SUMMARY_FORMAT = 2
PATH_FILE = "path.json"


def _entry(path: str, settings: dict[str, Any], part: str = "summary") -> Path:
    trace = identity(path)  # size, times, inode, version and cache format of the trace
    return cache_root() / FOLDER / key({"trace": trace, "settings": settings, part: SUMMARY_FORMAT})


#: Columns a saved frame must have for a re-open to use it.
REQUIRED_COLUMNS = {"steps": ("start_us", "duration_us"), "kernels": ("name", "calls", "total_us"), "calls": ()}


def load(path: str, settings: dict[str, Any]) -> tuple[dict[str, pl.DataFrame], dict[str, Any]] | None:
    """(frames, info) saved for ``path`` with ``settings``, or None (a damaged entry is removed)."""
    try:
        entry = _entry(path, settings)
    except OSError:
        return None
    if not entry.is_dir():
        return None
    try:
        info = orjson.loads((entry / INFO_FILE).read_bytes())
        frames = {name: pl.read_ipc(entry / f"{name}.arrow") for name in FRAMES}
    except (OSError, ValueError, TypeError, pl.exceptions.PolarsError):
        info, frames = None, {}
    if not (isinstance(info, dict) and valid_frames(frames)):
        shutil.rmtree(entry, ignore_errors=True)
        return None
    return frames, info


def valid_frames(frames: dict[str, pl.DataFrame]) -> bool:
    """Whether saved frames have the columns a job reads."""
    return all(name in frames and set(cols) <= set(frames[name].columns) for name, cols in REQUIRED_COLUMNS.items())


def valid_info(info: Any) -> bool:
    """Whether a saved document has the shape :func:`profview.jobs.rank_summary.summarise_rank` writes
    (checked for every rank of a re-opened job: exact types, mapped in C, no call per fact)."""
    if type(info) is not dict:
        return False
    facts, warnings = info.get("facts"), info.get("warnings")
    rank, size, backend = info.get("rank"), info.get("world_size"), info.get("backend")
    return (
        type(facts) is dict
        and _STRINGS.issuperset(map(type, facts))
        and _NUMBERS.issuperset(map(type, facts.values()))
        and type(warnings) is list
        and _STRINGS.issuperset(map(type, warnings))
        and type(rank) in _OPTIONAL_INT
        and type(size) in _OPTIONAL_INT
        and (backend is None or type(backend) is str)
    )


#: The types a saved document's facts and optional counts have: exact types, so True is no number.
_NUMBERS = frozenset({int, float})
_STRINGS = frozenset({str})
_OPTIONAL_INT = frozenset({int, type(None)})


def discard(path: str, settings: dict[str, Any]) -> None:
    """Remove the entry of ``path`` with ``settings`` (a damaged one)."""
    try:
        shutil.rmtree(_entry(path, settings), ignore_errors=True)
    except OSError:
        return


def save(path: str, settings: dict[str, Any], frames: dict[str, pl.DataFrame], info: dict[str, Any]) -> None:
    """Save one rank's summary (silently nothing on a read-only or full disk)."""

    def fill(staging: Path) -> None:
        for name in FRAMES:
            frames[name].write_ipc(staging / f"{name}.arrow", compression="zstd")
        (staging / INFO_FILE).write_bytes(orjson.dumps(info, default=str))

    try:
        entry = _entry(path, settings)
        if entry.exists() and load(path, settings) is not None:
            return  # a sound entry (an unsound one was just removed by load)
        write_entry(entry, fill)
    except (OSError, TypeError, pl.exceptions.PolarsError):
        return


def load_path(path: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The critical paths saved for ``path`` with ``settings`` (``facts``, ``collectives``,
    ``problem``), or None (a damaged entry is removed)."""
    try:
        entry = _entry(path, settings, "path")
        doc = orjson.loads((entry / PATH_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    if not _valid_path(doc):
        shutil.rmtree(entry, ignore_errors=True)
        return None
    return {"facts": doc["facts"], "collectives": [float(t) for t in doc["collectives"]], "problem": doc["problem"]}


def _valid_path(doc: Any) -> bool:
    def number(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    return (
        isinstance(doc, dict)
        and isinstance(doc.get("facts"), dict)
        and all(isinstance(k, str) and number(v) for k, v in doc["facts"].items())
        and isinstance(doc.get("collectives"), list)
        and all(number(t) for t in doc["collectives"])
        and (doc.get("problem") is None or isinstance(doc.get("problem"), str))
    )


def save_path(path: str, settings: dict[str, Any], doc: dict[str, Any]) -> None:
    """Save one rank's critical paths (silently nothing on a read-only or full disk)."""
    try:
        entry = _entry(path, settings, "path")
        if entry.exists():
            return

        def fill(staging: Path) -> None:
            (staging / PATH_FILE).write_bytes(orjson.dumps(doc))

        write_entry(entry, fill)
    except (OSError, TypeError):
        return


def prune(limit: int = MAX_SUMMARIES) -> None:
    """Drop the oldest summaries past ``limit``."""
    prune_oldest(cache_root() / FOLDER, limit)
