"""Which files make a distributed job: the rank traces named by a directory, a glob, several
paths or an archive (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``), and each one's rank.

A rank's file is a Kineto trace, an rocprofv3 JSON document or an Nsight Systems SQLite export
(``.sqlite``, one per rank: a directory of them is found like a directory of traces; a raw
``.nsys-rep`` found there is skipped with a note saying how to convert it).

A rank is read from the trace's ``distributedInfo`` (``rank``, ``world_size``) when the worker
parses it; until then, and for traces without it, from a number in the file name (``rank-3``,
``rank3``, ``worker3``).  A file with neither (an export names no rank of its own) takes a rank by
its place in file-name order, and the job says so (:func:`profview.jobs.job.place_ranks`).
:func:`check_ranks` turns the ranks found into one-line errors (two traces of one rank, traces of
jobs of different sizes) or a note of the ranks missing.
"""

from __future__ import annotations

import glob
import gzip
import itertools
import os
import re
import shutil
import stat
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ProfviewError
from ..parsers.rocprof.sniff import TOOL_KEY
from .archives import ARCHIVE_NAME, extract, make_temp_dir

#: A rank in a file name: ``rank-3``, ``rank_3``, ``rank3``, ``worker3``.
RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)
GLOB_CHARS = re.compile(r"[*?\[]")
#: The files a job's directory is searched for: traces (and rocprofv3 documents), Nsight Systems
#: SQLite exports, and raw Nsight Systems reports (skipped with a note: only ``nsys`` reads them).
JOB_FILE_NAME = re.compile(r"\.(json(\.gz)?|sqlite|nsys-rep)$", re.IGNORECASE)
REPORT_NAME = re.compile(r"\.nsys-rep$", re.IGNORECASE)
#: Ranks (and world sizes) at or above this are refused as implausible: no job has a million
#: ranks, and a forged ``rank1000000000.json`` must not make profview count to it.
MAX_RANKS = 1 << 20
#: How much of a file found in a job's folder is read to tell a trace from other JSON.
SNIFF_BYTES = 64 << 10
_TRACE_KEYS = (b'"traceEvents"', b'"ph"', b'"schemaVersion"', b'"distributedInfo"', b'"deviceProperties"',
               f'"{TOOL_KEY}"'.encode())


@dataclass
class JobInputs:
    """The rank traces of a job; ``temp_dir`` holds an extracted archive until :meth:`cleanup`.

    ``labels``: what messages call a trace extracted from an archive (``ARCHIVE:member``);
    ``unreadable``: (name, why) of traces that could not even be extracted; ``notes``: files
    skipped, damage found.
    """

    source: str
    paths: list[str]
    temp_dir: str | None = None
    notes: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)
    #: Removes ``temp_dir`` when these inputs are dropped, or at exit, if :meth:`cleanup` was not
    #: called (a ``profview.load(ARCHIVE)`` never closed left its extracted traces behind).
    _remover: weakref.finalize | None = field(default=None, repr=False, compare=False)

    def extraction_dir(self) -> str:
        """The folder archives are extracted into, made on first use."""
        if self.temp_dir is None:
            self.temp_dir = make_temp_dir()
            self._remover = weakref.finalize(self, _remove_own_folder, self.temp_dir, os.getpid())
        return self.temp_dir

    def cleanup(self) -> None:
        """Remove the extracted archive, if any."""
        if self._remover is not None:
            self._remover()  # once: a finalizer that ran is dead
            self._remover = None
        elif self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        self.temp_dir = None

    def label(self, path: str) -> str:
        """The name to show for ``path`` (its archive member, or the path itself)."""
        return self.labels.get(path, path)


def _remove_own_folder(folder: str, owner: int) -> None:
    """Remove ``folder`` in the process that made it (a forked child's exit must not)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


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


@dataclass
class Listing:
    """What ``args`` name, before anything is read: ``files`` named one by one, ``found`` in a
    directory or by a glob (to be told from other JSON by :func:`looks_like_trace`), ``archives``.
    Cheap (names and ``stat`` only), so a re-open can find the saved job from it."""

    source: str
    files: list[str] = field(default_factory=list)
    found: list[tuple[str, list[str]]] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)

    def all_files(self) -> list[str]:
        """Every file named, found or archived, in a stable order."""
        return [*self.files, *(p for _where, paths in self.found for p in paths), *self.archives]


#: The tables an Nsight Systems export is made of (``nsys export --type parquetdir`` or
#: ``arrowdir`` writes one file per table, named after it).
NSYS_TABLE_FILE = re.compile(
    r"^(CUPTI_ACTIVITY_KIND_\w+|StringIds|NVTX_EVENTS|TARGET_INFO_\w+|META_DATA_\w+)\.(parquet|arrow)$"
)
PARQUETDIR_REFUSAL = (
    "holds an Nsight Systems export as one file per table (nsys export --type parquetdir/arrowdir), "
    "which profview does not read: export SQLite instead (nsys export --type sqlite -o run.sqlite run.nsys-rep)"
)


def nsys_table_files(folder: str) -> list[str]:
    """The files directly in ``folder`` named as an Nsight Systems export's tables (names only)."""
    try:
        return sorted(name for name in os.listdir(folder) if NSYS_TABLE_FILE.match(name))
    except OSError:
        return []


def list_inputs(args: Sequence[str]) -> Listing:
    """The files ``args`` name (see :class:`Listing`); one-line errors for names that are none."""
    listing = Listing(source_of(args))
    for arg in args:
        if os.path.isdir(arg):
            found = traces_below(arg)
            if not found:
                if nsys_table_files(arg):
                    raise ProfviewError(arg, PARQUETDIR_REFUSAL)
                raise ProfviewError(arg, "no trace files (*.json, *.json.gz) nor Nsight Systems exports (*.sqlite) "
                                    "in this directory")
            listing.found.append((arg, found))
        elif ARCHIVE_NAME.search(arg) and os.path.isfile(arg):
            listing.archives.append(arg)
        elif os.path.isfile(arg):
            listing.files.append(arg)
        elif os.path.exists(arg):
            raise ProfviewError(arg, f"is {_kind(arg)}, not a trace file: a job's traces must be regular files")
        elif GLOB_CHARS.search(arg):
            found = sorted(p for p in glob.glob(arg, recursive=True) if os.path.isfile(p))
            if not found:
                raise ProfviewError(arg, "no file matches this pattern")
            listing.found.append((arg, found))
        else:
            raise ProfviewError(arg, "no such file or directory")
    return listing


def traces_below(folder: str) -> list[str]:
    """The trace files and Nsight Systems exports and reports (by name, :data:`JOB_FILE_NAME`) under
    ``folder`` and its subfolders, as ``Path(folder).rglob("*")``
    lists them sorted (hidden ones included, symlinked folders not entered, symlinks to files
    kept): one ``scandir`` per folder and no path object per file, so a folder of 10,000 ranks is
    listed in a few milliseconds."""
    root = str(Path(folder))
    prefix = "" if root == "." else root if root.endswith(os.sep) else root + os.sep
    found: list[tuple[tuple[str, ...], str]] = []
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parts = pending.pop()
        try:
            with os.scandir(prefix + os.sep.join(parts) if parts else root) as listing:
                entries = list(listing)
        except PermissionError:
            continue
        for entry in entries:
            here = (*parts, entry.name)
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(here)
                elif JOB_FILE_NAME.search(entry.name) and entry.is_file():
                    found.append((here, prefix + os.sep.join(here)))
            except OSError:
                continue
    found.sort()
    return [path for _parts, path in found]


def find_inputs(args: Sequence[str] | Listing) -> JobInputs:
    """The rank traces ``args`` name, sorted by the rank in their names (then by name).

    Files found in a directory or by a glob that are not traces (a ``config.json``, a JSON
    export) are skipped with a note; archives are extracted (:mod:`profview.jobs.archives`).
    Raises :class:`ProfviewError` (one line) when nothing there is a trace; an extraction
    folder is removed on any failure.
    """
    listing = args if isinstance(args, Listing) else list_inputs(args)
    inputs = JobInputs(listing.source, list(listing.files))
    try:
        for where, found in listing.found:
            inputs.paths += _traces_only(found, inputs.notes, where)
        for archive in listing.archives:
            got = extract(archive, inputs.extraction_dir())
            inputs.archives.append(os.path.abspath(archive))
            inputs.paths += got.paths
            inputs.labels.update(got.labels)
            inputs.unreadable += got.unreadable
            inputs.notes += got.notes
        if not inputs.paths and not inputs.unreadable:
            reports = [note for note in inputs.notes if "raw Nsight Systems report" in note]
            raise ProfviewError(listing.source, f"no trace files among these files ({reports[0]})" if reports
                                else "no trace files among these files")
    except BaseException:
        inputs.cleanup()
        raise
    unique = list(dict.fromkeys(p if p in inputs.labels else os.path.abspath(p) for p in inputs.paths))
    unique.sort(key=lambda p: (rank_from_name(p) is None, rank_from_name(p) or 0, os.path.basename(p)))
    inputs.paths = unique
    return inputs


def source_of(args: Sequence[str]) -> str:
    return args[0] if len(args) == 1 else f"{args[0]} (+{len(args) - 1} more)"


def _kind(path: str) -> str:
    mode = os.stat(path).st_mode
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _traces_only(paths: list[str], notes: list[str], where: str) -> list[str]:
    """``paths`` without the files that are not traces and the raw Nsight Systems reports (each
    kind skipped with a note; a report's says how to convert it)."""
    kept: list[str] = []
    skipped: list[str] = []
    reports: list[str] = []
    for path in paths:
        if REPORT_NAME.search(path):
            reports.append(path)
        else:
            (kept if looks_like_trace(path) else skipped).append(path)
    if skipped:
        notes.append(f"skipped {len(skipped)} file(s) in {where} that are not traces: {_listed(skipped)}")
    if reports:
        notes.append(
            f"skipped {len(reports)} raw Nsight Systems report(s) (.nsys-rep) in {where}, which only nsys reads: "
            f"{_listed(reports)}; convert each with `nsys export --type sqlite -o NAME.sqlite NAME.nsys-rep`"
        )
    return kept


def _listed(paths: list[str]) -> str:
    return ", ".join(os.path.basename(p) for p in paths[:5]) + (" …" if len(paths) > 5 else "")


def looks_like_trace(path: str) -> bool:
    """Whether the first 64 KiB of ``path`` look like a Chrome trace (unreadable ones count as
    traces: their rank's worker says what is wrong with them)."""
    try:
        with open(path, "rb") as raw:
            head = raw.read(2)
            raw.seek(0)
            if head == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=raw) as fh:
                    head = fh.read(SNIFF_BYTES)
            else:
                head = raw.read(SNIFF_BYTES)
    except (OSError, EOFError):
        return True
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text[:1] not in (b"{", b"["):
        return True  # not JSON at all: a damaged trace, for the worker to name
    return any(key in head for key in _TRACE_KEYS)


def check_ranks(
    found: Sequence[tuple[str, int | None, int | None]], unreadable: Sequence[int] = ()
) -> tuple[list[int], int, list[str]]:
    """Validate (path, rank, world size) of each trace; return (ranks, world size, notes).

    ``unreadable``: the ranks (from their names) of traces that could not be read: they count
    in the world size when no trace says it.

    A trace without a rank anywhere gets the lowest rank not taken.  Raises
    :class:`ProfviewError` naming the files for duplicate ranks, disagreeing world sizes, a rank
    outside the world size, and implausible ranks or sizes (:data:`MAX_RANKS` or more).  Bounded
    by the number of traces, whatever the ranks say.
    """
    for path, rank, size in found:
        for what, value in (("rank", rank), ("world size", size)):
            if value is not None and value >= MAX_RANKS:
                raise ProfviewError(
                    path,
                    f"{what} {value:,} is implausible for a job of {len(found):,} trace(s) "
                    f"(profview reads jobs of fewer than {MAX_RANKS:,} ranks)",
                )
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
    spare = (r for r in itertools.count() if r not in taken)
    for _path, rank, _size in found:
        ranks.append(rank if rank is not None else next(spare))
    known = [r for r in (*ranks, *unreadable) if r < MAX_RANKS]
    world = next(iter(sizes), None) or (max(known) + 1 if known else 0)
    for (path, _rank, _size), rank in zip(found, ranks, strict=True):
        if rank >= world:
            raise ProfviewError(path, f"rank {rank} is outside the job's world size {world}")
    notes = []
    present = set(ranks)
    if len(present) < world:
        missing = list(itertools.islice((r for r in range(world) if r not in present), 10))  # lazy: no set of the range
        shown = ", ".join(map(str, missing)) + (", …" if world - len(present) > 10 else "")
        notes.append(f"{len(ranks)} of {world} ranks (missing: {shown})")
    return ranks, world, notes


def _names(paths: Sequence[str]) -> str:
    return ", ".join(os.path.basename(p) for p in paths[:4]) + (" …" if len(paths) > 4 else "")
