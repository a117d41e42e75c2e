"""Cache of parsed trace events and the views computed from them, so a trace opened once
re-opens in a fraction of a second.

Entries live in the user's cache directory (``$PROFVIEW_CACHE_DIR`` overrides it), one folder
per trace version: the key hashes the trace's absolute path, size and modification time and
profview's version, so a changed trace never matches an old entry.  An entry is written to a
temporary folder and renamed into place, so a crash mid-write leaves no partial entry, and two
processes opening the same trace at once both succeed (the second rename simply loses).

Beside the events an entry keeps the views computed from them (:func:`store_views`): the kernel,
operator and step tables and the overview, in a folder per analysis setting, each file written
atomically.  A re-open reads only the views it shows; the events are read when a view needs them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ..parsers.source import BASE_MEMORY, LONG_NAME_COPIES, check_memory, long_name_bytes
from .keys import META_FILE, cache_root, make_folder
from .keys import identity as _identity
from .keys import key as _key
from .staging import STAGING_PREFIX, is_staging, sweep_if_stale, write_entry

EVENTS_FILE = "events.arrow"
#: Inside an entry, one folder of views per analysis setting (``views-<hash>``).
VIEWS_PREFIX = "views-"
#: The JSON document of a views folder (the overview and the model's time origin).
FACTS_FILE = "facts.json"
MAX_ENTRIES = 20
#: The linked model (host events with their call tree, GPU work with its launching operator):
#: a drill-down on a re-opened trace reads these instead of linking the events again (issue 13).
MODEL_HOST_FILE = "model-host.arrow"
MODEL_GPU_FILE = "model-gpu.arrow"
MODEL_FACTS_FILE = "model.json"
#: The launching path of every operator row that launched GPU work, and the paths' text
#: (``analysis.launch_index.LaunchIndex``): a kernel's launchers then read no host row (issue 25).
LAUNCH_ROWS_FILE = "launch-rows.arrow"
LAUNCH_PATHS_FILE = "launch-paths.arrow"
#: Peak memory of a cached load per byte of the stored events (the frame, then tables from it).
EVENTS_MEMORY_FACTOR = 3.6


@dataclass
class CachedTrace:
    """An unchanged trace found in the cache: its fields now, its events and views on demand."""

    entry: Path
    fields: dict[str, Any]
    path: str = ""  # the trace's own path, for messages

    def events(self) -> pl.DataFrame:
        """The parsed events (raises OSError/PolarsError if the entry was damaged since).

        The memory guard runs first, as for a parse: the frame and the tables built from it take
        about :data:`EVENTS_MEMORY_FACTOR` times the stored file.
        """
        stored = self.entry / EVENTS_FILE
        check_memory(self.path or str(stored), int(stored.stat().st_size * EVENTS_MEMORY_FACTOR) + BASE_MEMORY)
        events = pl.read_ipc(stored)
        # Compressed, the file is a fraction of the frame (3.9 MB on disk for 185 MB of events), and a
        # very long name takes no room on disk: what was read is checked, as after a parse.
        needed = (
            events.estimated_size() * EVENTS_MEMORY_FACTOR + long_name_bytes(events) * LONG_NAME_COPIES + BASE_MEMORY
        )
        check_memory(self.path or str(stored), int(needed), whole_process=True)
        return events

    def model_frames(
        self, columns: tuple[list[str], list[str]] | None = None
    ) -> tuple[pl.DataFrame, pl.DataFrame, tuple[float, float]] | None:
        """The stored model (host frame, GPU frame, span), or None when absent or unreadable;
        ``columns``: only these (host, GPU) columns (a drill-down needs a few of them)."""
        try:
            facts = orjson.loads((self.entry / MODEL_FACTS_FILE).read_bytes())
            stored = [self.entry / MODEL_HOST_FILE, self.entry / MODEL_GPU_FILE]
            size = sum(path.stat().st_size for path in stored)
            check_memory(self.path or str(stored[0]), int(size * EVENTS_MEMORY_FACTOR) + BASE_MEMORY)
            picks = columns or (None, None)
            host, gpu = (pl.read_ipc(path, columns=pick) for path, pick in zip(stored, picks, strict=True))
            return host, gpu, (float(facts["span"][0]), float(facts["span"][1]))
        except (OSError, ValueError, TypeError, KeyError, IndexError, pl.exceptions.PolarsError):
            return None

    def model_gpu(self, columns: list[str]) -> pl.DataFrame | None:
        """``columns`` of the stored model's GPU frame (GPU work and its links), in that order, or
        None when no model is stored or it is unreadable: GPU work without reading the events."""
        try:
            if not (self.entry / MODEL_FACTS_FILE).is_file():
                return None
            return pl.read_ipc(self.entry / MODEL_GPU_FILE, columns=columns).select(columns)
        except (OSError, pl.exceptions.PolarsError):
            return None

    def launch_index(self, gpu_columns: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame] | None:
        """The stored launch index: ``gpu_columns`` of the model's GPU frame, the launching rows'
        path numbers and the paths; None when absent or unreadable."""
        gpu = self.model_gpu(gpu_columns)  # the GPU frame is the stored model's
        if gpu is None:
            return None
        try:
            return gpu, pl.read_ipc(self.entry / LAUNCH_ROWS_FILE), pl.read_ipc(self.entry / LAUNCH_PATHS_FILE)
        except (OSError, pl.exceptions.PolarsError):
            return None

    def views(self, settings: dict[str, Any]) -> SavedViews:
        """The views saved for ``settings`` (maybe none yet)."""
        return SavedViews(self.entry / (VIEWS_PREFIX + _key(settings)))


@dataclass
class SavedViews:
    """A views folder: frames by name, and a small JSON document of facts."""

    folder: Path

    def frame(self, name: str) -> pl.DataFrame | None:
        """The saved view ``name``, or None (absent or unreadable)."""
        try:
            return pl.read_ipc(self.folder / f"{name}.arrow")
        except (OSError, pl.exceptions.PolarsError):
            return None

    def facts(self) -> dict[str, Any]:
        """The saved facts (empty when none)."""
        try:
            facts = orjson.loads((self.folder / FACTS_FILE).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return facts if isinstance(facts, dict) else {}


def lookup(path: str, schema: dict[str, pl.DataType]) -> CachedTrace | None:
    """The entry of an unchanged trace opened before whose events have ``schema``, or None.

    Only the metadata and the events' schema are read here; events and views load on demand.
    """
    try:
        identity = _identity(path)
        entry = cache_root() / _key(identity)
        if not entry.is_dir():
            return None
    except OSError:
        return None
    try:
        meta = orjson.loads((entry / META_FILE).read_bytes())
        valid = (
            isinstance(meta, dict)
            and meta.get("identity") == identity
            and isinstance(meta.get("fields"), dict)
            and dict(pl.read_ipc_schema(entry / EVENTS_FILE)) == schema
        )
    except (OSError, ValueError, pl.exceptions.PolarsError):
        valid = False
    if not valid:  # damaged, or written by other code: replaced by the next store
        discard(entry)
        return None
    return CachedTrace(entry, meta["fields"], path)


def discard(entry: Path) -> None:
    """Remove a cache entry (a damaged one, so that the next open writes a sound one)."""
    shutil.rmtree(entry, ignore_errors=True)


def store_views(path: str, settings: dict[str, Any], frames: dict[str, pl.DataFrame], facts: dict[str, Any]) -> None:
    """Add computed views of ``path`` to its entry (if it has one); each file is written atomically.

    Failures (no entry, read-only or full disk) are silent: the views are computed again next time.
    """
    try:
        entry = cache_root() / _key(_identity(path))
        if not (entry / META_FILE).is_file():
            return
        folder = entry / (VIEWS_PREFIX + _key(settings))
        folder.mkdir(exist_ok=True)
        for name, frame in frames.items():
            _write_atomically(folder / f"{name}.arrow", lambda fh, f=frame: f.write_ipc(fh, compression="zstd"))
        if facts:
            merged = SavedViews(folder).facts() | facts
            _write_atomically(folder / FACTS_FILE, lambda fh: fh.write(orjson.dumps(merged, default=str)))
    except (OSError, TypeError, pl.exceptions.PolarsError):
        return


def store_model(path: str, host: pl.DataFrame, gpu: pl.DataFrame, span: tuple[float, float]) -> None:
    """Add the linked model of ``path`` to its entry (if it has one); silent on failure.

    The facts file is written last: a model counts as stored only once all three files are there.
    """
    try:
        entry = cache_root() / _key(_identity(path))
        if not (entry / META_FILE).is_file() or (entry / MODEL_FACTS_FILE).is_file():
            return
        for name, frame in ((MODEL_HOST_FILE, host), (MODEL_GPU_FILE, gpu)):
            _write_atomically(entry / name, lambda fh, f=frame: f.write_ipc(fh, compression="zstd"))
        _write_atomically(entry / MODEL_FACTS_FILE, lambda fh: fh.write(orjson.dumps({"span": list(span)})))
    except (OSError, TypeError, pl.exceptions.PolarsError):
        return


def store_launch_paths(path: str, rows: pl.DataFrame, paths: pl.DataFrame) -> None:
    """Add the launch paths of ``path``'s stored model to its entry (if it has both); silent on failure.

    The paths file is written last: they count as stored only once both files are there.
    """
    try:
        entry = cache_root() / _key(_identity(path))
        if not (entry / MODEL_FACTS_FILE).is_file() or (entry / LAUNCH_PATHS_FILE).is_file():
            return
        for name, frame in ((LAUNCH_ROWS_FILE, rows), (LAUNCH_PATHS_FILE, paths)):
            _write_atomically(entry / name, lambda fh, f=frame: f.write_ipc(fh, compression="zstd"))
    except (OSError, pl.exceptions.PolarsError):
        return


def _write_atomically(target: Path, write: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=STAGING_PREFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, target)
    finally:  # also on Ctrl+C: no half-written file is left behind
        Path(tmp).unlink(missing_ok=True)


def store(path: str, events: pl.DataFrame, fields: Mapping[str, Any], *, version: Mapping[str, Any]) -> None:
    """Save parsed events for ``path``; failures (read-only disk, full disk) are silent.

    ``version`` is the trace's identity taken *before* it was read: if the file no longer has it
    (rewritten in place while it was parsed), nothing is stored, for the events may be the old
    file's and the identity the new one's.  Only regular files are cached: a pipe or a device
    cannot be opened again to match an entry.
    """
    try:
        if not os.path.isfile(path):
            return
        identity = _identity(path)
        if identity != dict(version):
            return
        root = cache_root()
        make_folder(root)
        entry = root / _key(identity)
        if entry.exists():
            return

        def fill(staging: Path) -> None:
            events.write_ipc(staging / EVENTS_FILE, compression="zstd")  # smallest, and the fastest to read back
            meta = {"identity": identity, "fields": fields}
            (staging / META_FILE).write_bytes(orjson.dumps(meta, default=str))

        try:
            write_entry(entry, fill)
        except (OSError, TypeError):  # TypeError: metadata JSON cannot hold (an integer above 64 bits)
            return
        _prune(root, identity["path"], entry.name)
    except OSError:
        return


def _prune(root: Path, trace_path: str, keep: str) -> None:
    """Drop older entries of the same trace, and the oldest entries past MAX_ENTRIES."""
    entries = []
    for entry in root.iterdir():
        if entry.name == keep or not entry.is_dir():
            continue
        if not _is_entry_name(entry.name):
            continue  # another kind of folder (job summaries, extracted archives) keeps its own rules
        if is_staging(entry):
            sweep_if_stale(entry)  # left by a process killed mid-write; else another may be writing it
            continue
        try:
            meta = orjson.loads((entry / META_FILE).read_bytes())
            owner = meta["identity"]["path"]
        except (OSError, ValueError, TypeError, KeyError):
            shutil.rmtree(entry, ignore_errors=True)
            continue
        if owner == trace_path:
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entries.append((entry.stat().st_mtime, entry))
    for _mtime, entry in sorted(entries)[: max(0, len(entries) + 1 - MAX_ENTRIES)]:
        shutil.rmtree(entry, ignore_errors=True)


def _is_entry_name(name: str) -> bool:
    """A trace entry (a key of 32 hex digits) or a staging folder of one."""
    return name.startswith(STAGING_PREFIX) or (len(name) == 32 and all(c in "0123456789abcdef" for c in name))
