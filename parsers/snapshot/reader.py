"""A memory snapshot file, read: detected by its content, loaded safely, turned into frames."""

from __future__ import annotations

import gc
import os

import polars as pl

from ...errors import ProfviewError
from . import columns
from .frames import SnapshotFrames, describe, is_snapshot, snapshot_frames
from .unpickle import load_snapshot_pickle, pickle_protocol, read_head

FORMAT = "PyTorch CUDA memory snapshot"


def looks_like_snapshot(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (plain or gzipped) starts as a pickle of protocol 2-5 does (its PROTO
    opcode): every other input profview reads is text, so a pickle is read as a snapshot, and one
    whose top level is not a snapshot is refused as such."""
    name = os.fspath(path)
    return os.path.isfile(name) and pickle_protocol(read_head(name)) is not None


def read_snapshot(path: str | os.PathLike[str]) -> SnapshotFrames:
    """The frames of the snapshot at ``path``; a refused, damaged or foreign pickle is a one-line
    :class:`ProfviewError` naming the file."""
    name = os.fspath(path)
    if not os.path.exists(name):
        raise ProfviewError(name, "no such file")
    head = read_head(name)
    if pickle_protocol(head) is None:
        raise ProfviewError(name, "is not a pickle of protocol 2-5 (a memory snapshot starts with the PROTO opcode)")
    if columns.available():
        fast = _read_compiled(name)
        if fast is not None:
            return fast
    collecting = gc.isenabled()
    gc.disable()  # millions of new dicts and lists, none in a cycle: the collector would only rescan them
    try:
        snapshot = load_snapshot_pickle(name)
        if not is_snapshot(snapshot):
            raise ProfviewError(name, f"is a pickle of {describe(snapshot)}: not a memory snapshot")
        try:
            return snapshot_frames(snapshot)
        except ProfviewError as exc:
            raise ProfviewError(name, exc.problem) from None
    finally:
        snapshot = None
        if collecting:
            gc.enable()


def _read_compiled(name: str) -> SnapshotFrames | None:
    """The frames by the compiled opcode reader, or None where it hands the file back (then the
    no-globals unpickler reads it, and gives the answer or the refusal it always gave)."""
    try:
        raw = columns.read_raw(name)
    except (OSError, ValueError):
        return None  # the unpickler's path says what is wrong with the file
    if isinstance(raw, tuple) or not (raw["has_segments"] or raw["has_traces"]):
        return None
    try:
        return columns.frames_from_raw(raw)
    except ProfviewError as exc:
        raise ProfviewError(name, exc.problem) from None
    except (UnicodeEncodeError, OverflowError, TypeError, pl.exceptions.PolarsError):
        return None  # a lone surrogate a String column cannot hold, a sum past int64: the unpickler's path decides
