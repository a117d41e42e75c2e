"""The cache of whole jobs: one saved job summary that a re-open reads at once.

A job of 1,024 ranks re-opened rank by rank reads 1,024 folders of :mod:`profview.store.rank_summaries`;
this keeps every rank's frames in a few files instead: the ranks' steps, kernels and collective
calls, concatenated per group of :class:`~profview.store.rank_frames.RankFrames` (ranks of one
schema, :data:`~profview.store.rank_frames.BATCH` at a time) with an ``_index`` column (so each
rank's frame comes back exactly: its own columns and dtypes), and one JSON document of the ranks' facts, the traces that
could not be read and the job's notes.

The key is made from names and ``stat`` only (:func:`job_key`): every file the job's arguments name
(path, size, times, inode), for an archive also its members (name, size, and time or CRC, read
from its headers without extracting anything), and the analysis settings.  So a job from an
archive is found again without extracting it, and any change to any file misses.  Entries are
written atomically, validated when read (a damaged one is removed), and pruned past
:data:`MAX_JOBS`.  Failures are silent: the job is summarised again.
"""

from __future__ import annotations

import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ..errors import ProfviewError
from .keys import cache_root, code_identity, file_stat, identity, key
from .rank_frames import INDEX, RankFrames
from .rank_summaries import FRAMES, REQUIRED_COLUMNS, SUMMARY_FORMAT, valid_info
from .staging import prune_oldest, write_entry

FOLDER = "jobs"
MAX_JOBS = 200
INFO_FILE = "job.json"
#: The job's own views saved beside its ranks (``summary`` shows them): a re-open that shows only
#: these reads no rank's frames (:class:`SavedFrames`).
VIEW_FRAMES = ("collectives", "ranks", "kernels")


def job_key(files: list[str], archives: list[str], settings: dict[str, Any]) -> str | None:
    """The key of the job these files make with ``settings``, or None when one cannot be looked at."""
    try:
        parts: list[Any] = [file_stat(path) for path in files]
        for archive in archives:
            parts.append({"archive": identity(archive), "members": archive_members(archive)})
    except (OSError, EOFError, zlib.error, tarfile.TarError, zipfile.BadZipFile):
        return None
    return key({"job": parts, "code": code_identity(), "settings": settings, "summary": SUMMARY_FORMAT})


def archive_members(archive: str) -> list[list[Any]]:
    """Each member's name, size and CRC (zip) or time (tar), read from the headers."""
    if archive.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            return [[i.filename, i.file_size, i.CRC, i.header_offset] for i in z.infolist()]
    with tarfile.open(archive) as t:
        return [[m.name, m.size, m.mtime, m.type.decode("latin-1")] for m in t]


def _entry(job: str) -> Path:
    return cache_root() / FOLDER / job


def load(job: str) -> tuple[list[dict[str, Any]], SavedFrames, dict[str, Any]] | None:
    """(per-rank documents, the ranks' frames, job document) saved under ``job``, or None.

    The documents and the job's views are read now; the ranks' frames only when first asked for
    (:class:`SavedFrames`, which checks their columns then).  A re-open of 1,024 ranks that shows
    the saved views reads no per-rank frame (it used to split every frame file into 1,024 frames
    per kind and build the job's kernels view from them again)."""
    entry = _entry(job)
    if not entry.is_dir():
        return None
    try:
        doc = orjson.loads((entry / INFO_FILE).read_bytes())
        ranks = doc["ranks"]
        if not (isinstance(ranks, list) and all(valid_info(r) and isinstance(r.get("path"), str) for r in ranks)):
            raise ValueError("ranks")
        for name in FRAMES:  # the files' columns are checked when they are read (SavedFrames)
            files, members = doc["groups"][name], doc["members"][name]
            every = sorted(index for group in members for index in group)
            if len(files) != len(members) or every != list(range(len(ranks))):
                raise ValueError("members")  # each rank in exactly one group of each frame
            if not all(isinstance(f, str) and f == Path(f).name and (entry / f).is_file() for f in files):
                raise ValueError("file")
        if not isinstance(doc.get("failures"), list) or not isinstance(doc.get("notes"), list):
            raise ValueError("job")
        if "views" in doc:
            offsets = doc["views"]["offsets"]
            if not (isinstance(offsets, dict) and all(isinstance(v, int | float) for v in offsets.values())):
                raise ValueError("views")
            doc["views"].update({name: pl.read_ipc(entry / f"view-{name}.arrow") for name in VIEW_FRAMES})
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, pl.exceptions.PolarsError):
        shutil.rmtree(entry, ignore_errors=True)
        return None
    return ranks, SavedFrames(entry, doc["groups"], doc["members"], len(ranks)), doc


class SavedFrames:
    """The steps, kernels and collective-call frames of every rank of a saved job, read from the
    entry's files the first time one rank's is asked for (all at once, into one
    :class:`~profview.store.rank_frames.RankFrames`: a rank's frame is a slice of its group).

    :func:`load` checks the entry's document and that its files are there; their columns are
    checked here, as they are read (reading every file's schema at each re-open cost a file read
    per group).  A damaged entry is removed, and the read ends in a one-line
    :class:`~profview.errors.ProfviewError` that says to open the job again.
    """

    def __init__(self, entry: Path, groups: dict[str, list[str]], members: dict[str, list[list[int]]], count: int):
        self.entry = entry
        self._groups = groups
        self._members = members
        self._count = count
        self._held: RankFrames | None = None

    def frame(self, index: int, kind: str) -> pl.DataFrame:
        """The ``kind`` frame (``steps``, ``kernels``, ``calls``) of the ``index``-th rank saved."""
        return self.held().frame(index, kind)

    def held(self) -> RankFrames:
        """Every rank's frames, read now if they were not yet."""
        if self._held is None:
            self._held = self._read()
        return self._held

    def _read(self) -> RankFrames:
        held = RankFrames()
        try:
            for name in FRAMES:
                for file, members in zip(self._groups[name], self._members[name], strict=True):
                    held.add_group(name, pl.read_ipc(self.entry / file), members)
            if not all(index in held for index in range(self._count)):
                raise ValueError("members")
            if not all(
                set(cols) <= set(group.frame.columns)
                for name, cols in REQUIRED_COLUMNS.items()
                for group in held.groups(name)
            ):
                raise ValueError("frames")
        except (OSError, ValueError, TypeError, KeyError, IndexError, pl.exceptions.PolarsError):
            shutil.rmtree(self.entry, ignore_errors=True)
            raise ProfviewError(
                str(self.entry), "this saved job summary is damaged (now removed); open the job again"
            ) from None
        return held


def save(
    job: str,
    ranks: list[dict[str, Any]],
    frames: RankFrames,
    keys: list[int],
    failures: list[tuple[str, str]],
    notes: list[str],
    views: dict[str, Any] | None = None,
) -> None:
    """Save a job (silently nothing on a read-only or full disk): ``ranks[i]``'s frames are those
    ``frames`` holds under ``keys[i]``; ``views``: its collectives and ranks views and clock
    offsets, read back into the job's ``views`` document entry.  Each group of ``frames`` is one
    file (its text decoded again), so neither the save nor a re-open holds every rank's text at once."""

    def fill(staging: Path) -> None:
        doc: dict[str, Any] = {"ranks": ranks, "failures": failures, "notes": notes, "groups": {}, "members": {}}
        position = {held: index for index, held in enumerate(keys)}
        for name in FRAMES:
            doc["groups"][name], doc["members"][name] = [], []
            for number, group in enumerate(frames.groups(name)):
                members = sorted(position[held] for held in group.rows if held in position)
                if not members:
                    continue
                file = f"{name}-{number}.arrow"
                table = group.decoded().filter(pl.col(INDEX).is_in(list(position)))
                table = table.with_columns(pl.col(INDEX).replace_strict(position, return_dtype=pl.Int32))
                table.write_ipc(staging / file, compression="zstd")
                doc["groups"][name].append(file)
                doc["members"][name].append(members)
        if views is not None:
            for name in VIEW_FRAMES:
                views[name].write_ipc(staging / f"view-{name}.arrow", compression="zstd")
            doc["views"] = {"offsets": {str(rank): value for rank, value in views["offsets"].items()}}
        (staging / INFO_FILE).write_bytes(orjson.dumps(doc, default=str))

    try:
        entry = _entry(job)
        if entry.exists():
            return
        write_entry(entry, fill)
    except (OSError, TypeError, pl.exceptions.PolarsError):
        return
    prune()


def prune(limit: int = MAX_JOBS) -> None:
    """Drop the oldest saved jobs past ``limit``."""
    prune_oldest(cache_root() / FOLDER, limit)
