"""Which files make a distributed job: the rank traces named by a directory, a glob, several
paths or an archive (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``), and each one's rank.

A rank is read from the trace's ``distributedInfo`` (``rank``, ``world_size``) when the worker
parses it; until then, and for traces without it, from a number in the file name (``rank-3``,
``rank3``, ``worker3``).  :func:`check_ranks` turns the ranks found into one-line errors (two
traces of one rank, traces of jobs of different sizes) or a note of the ranks missing.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..errors import ProfviewError

#: File names that are traces (a Kineto trace, plain or gzipped).
TRACE_NAME = re.compile(r"\.json(\.gz)?$", re.IGNORECASE)
ARCHIVE_NAME = re.compile(r"\.(tar|tar\.gz|tgz|zip)$", re.IGNORECASE)
#: A rank in a file name: ``rank-3``, ``rank_3``, ``rank3``, ``worker3``.
RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)
GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass
class JobInputs:
    """The rank traces of a job; ``temp_dir`` holds an extracted archive until :meth:`cleanup`."""

    source: str
    paths: list[str]
    temp_dir: str | None = None
    notes: list[str] = field(default_factory=list)

    def member_name(self, path: str) -> str:
        """The name ``path`` had in the job (an extracted member: its base name, without the prefix
        that kept it unique); what a user recognises, never the temporary path."""
        name = os.path.basename(path)
        if self.temp_dir and os.path.dirname(path) == self.temp_dir:
            name = re.sub(r"^\d{5}-", "", name)
        return name

    def cleanup(self) -> None:
        """Remove the extracted archive, if any."""
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None


def is_job(args: Sequence[str]) -> bool:
    """Whether the command-line inputs name a job (several traces) rather than one file."""
    if len(args) != 1:
        return len(args) > 1
    name = args[0]
    if os.path.isdir(name) or ARCHIVE_NAME.search(name):
        return True
    return not os.path.exists(name) and bool(GLOB_CHARS.search(name))


def rank_from_name(path: str) -> int | None:
    """The rank a file name says (the last ``rank3``/``worker3`` in its base name), or None."""
    found = RANK_IN_NAME.findall(os.path.basename(path))
    return int(found[-1]) if found else None


def find_inputs(args: Sequence[str]) -> JobInputs:
    """The rank traces ``args`` name, sorted by the rank in their names (then by name).

    Raises :class:`ProfviewError` (one line) when nothing there is a trace.
    """
    source = args[0] if len(args) == 1 else f"{args[0]} (+{len(args) - 1} more)"
    temp_dir: str | None = None
    paths: list[str] = []
    for arg in args:
        if os.path.isdir(arg):
            found = [str(p) for p in sorted(Path(arg).rglob("*")) if p.is_file() and TRACE_NAME.search(p.name)]
            if not found:
                raise ProfviewError(arg, "no trace files (*.json, *.json.gz) in this directory")
            paths += found
        elif ARCHIVE_NAME.search(arg) and os.path.isfile(arg):
            temp_dir = temp_dir or tempfile.mkdtemp(prefix="profview-job-")
            paths += _extract(arg, temp_dir)
        elif os.path.isfile(arg):
            paths.append(arg)
        elif GLOB_CHARS.search(arg):
            found = sorted(p for p in glob.glob(arg, recursive=True) if os.path.isfile(p))
            if not found:
                raise ProfviewError(arg, "no file matches this pattern")
            paths += found
        else:
            raise ProfviewError(arg, "no such file or directory")
    unique = list(dict.fromkeys(os.path.abspath(p) for p in paths))
    unique.sort(key=lambda p: (rank_from_name(p) is None, rank_from_name(p) or 0, os.path.basename(p)))
    return JobInputs(source, unique, temp_dir)


def _extract(archive: str, into: str) -> list[str]:
    """Write the trace members of ``archive`` into ``into`` (flat, under safe names)."""
    written: list[str] = []
    try:
        if archive.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                for info in z.infolist():
                    if not info.is_dir() and TRACE_NAME.search(info.filename):
                        with z.open(info) as data:
                            written.append(_write(into, len(written), info.filename, data))
        else:
            with tarfile.open(archive) as t:
                for member in t:
                    if member.isfile() and TRACE_NAME.search(member.name):
                        data = t.extractfile(member)
                        if data is not None:
                            written.append(_write(into, len(written), member.name, data))
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        shutil.rmtree(into, ignore_errors=True)
        raise ProfviewError(archive, f"cannot read this archive ({exc})") from None
    if not written:
        shutil.rmtree(into, ignore_errors=True)
        raise ProfviewError(archive, "no trace files (*.json, *.json.gz) in this archive")
    return written


def _write(into: str, index: int, member: str, data: IO[bytes]) -> str:
    """One member under ``into`` (streamed): its base name made safe, prefixed to stay unique."""
    base = re.sub(r"[^A-Za-z0-9._+-]", "_", os.path.basename(member)) or "trace.json"
    target = os.path.join(into, f"{index:05d}-{base}")
    with open(target, "wb") as out:
        shutil.copyfileobj(data, out, 1 << 20)
    return target


def check_ranks(found: Sequence[tuple[str, int | None, int | None]]) -> tuple[list[int], int, list[str]]:
    """Validate (path, rank, world size) of each trace; return (ranks, world size, notes).

    A trace without a rank anywhere gets the lowest rank not taken.  Raises
    :class:`ProfviewError` naming the files for duplicate ranks or disagreeing world sizes.
    """
    sizes: dict[int, list[str]] = {}
    for path, _rank, size in found:
        if size is not None:
            sizes.setdefault(size, []).append(path)
    if len(sizes) > 1:
        parts = [f"{size} in {_names(paths)}" for size, paths in sorted(sizes.items())]
        raise ProfviewError(None, "traces of different jobs: world sizes disagree (" + "; ".join(parts) + ")")
    taken: dict[int, str] = {}
    for path, rank, _size in found:
        if rank is not None:
            if rank in taken:
                raise ProfviewError(None, f"two traces of rank {rank}: {_names([taken[rank], path])}")
            taken[rank] = path
    ranks: list[int] = []
    spare = (r for r in range(10**9) if r not in taken)
    for _path, rank, _size in found:
        ranks.append(rank if rank is not None else next(spare))
    world = next(iter(sizes), None) or (max(ranks) + 1 if ranks else 0)
    notes = []
    if len(set(ranks)) < world:
        missing = sorted(set(range(world)) - set(ranks))
        shown = ", ".join(map(str, missing[:10])) + (", …" if len(missing) > 10 else "")
        notes.append(f"{len(ranks)} of {world} ranks (missing: {shown})")
    return ranks, world, notes


def _names(paths: Sequence[str]) -> str:
    return ", ".join(os.path.basename(p) for p in paths[:4]) + (" …" if len(paths) > 4 else "")
