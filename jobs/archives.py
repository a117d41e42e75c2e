"""Rank traces out of an archive (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``), within bounds.

Each trace member is streamed into a temporary folder (``profview-job-<pid>-*``) under checks made
while it is written, never after: its first 4 KiB must look like a trace (text, or a gzip stream),
it may not grow past what this machine could load (:func:`profview.parsers.source.memory_budget`)
or past the free disk space, and all members together may not grow past :data:`MAX_EXPANSION`
times the archive.  A member that cannot be read (bad deflate data, an unsupported method,
encryption, a CRC error) is named and left out; the damage that ends a ``.tar.gz`` early is
named too, never taken for the end of the archive.  A zip that lists one entry several times
is extracted once.  Folders left behind by a killed profview are swept by the next one.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from ..errors import ProfviewError

if TYPE_CHECKING:  # tarfile, zipfile and tempfile load for an archive only (2-4 ms a command)
    import tarfile

#: File names that are traces (a Kineto trace, plain or gzipped).
TRACE_NAME = re.compile(r"\.json(\.gz)?$", re.IGNORECASE)
ARCHIVE_NAME = re.compile(r"\.(tar|tar\.gz|tgz|zip)$", re.IGNORECASE)
#: All members together may expand to at most this many times the archive's size (plus
#: :data:`EXPANSION_FLOOR`): a gzipped Kineto trace is 5-30x smaller than its JSON; gigabytes of
#: spaces or zeros in a few megabytes are a bomb.  ``$PROFVIEW_ARCHIVE_EXPANSION`` overrides.
MAX_EXPANSION = 200
EXPANSION_FLOOR = 64 << 20
#: Disk space extraction always leaves free.
DISK_RESERVE = 256 << 20
SNIFF_BYTES = 4096
CHUNK = 1 << 20
TEMP_PREFIX = "profview-job-"
#: An extraction folder of another user's profview, or of an older version without a pid in its
#: name, is swept only after this long.
STALE_S = 3600.0
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]")
_GZIP_MAGIC = b"\x1f\x8b"


class ArchiveLimit(Exception):
    """The archive as a whole went past a limit: nothing of it is used."""


class MemberUnreadable(Exception):
    """One member cannot be read: the job goes on without it."""


@dataclass
class Extracted:
    """What an archive gave: trace files written, their member names, and what was left out."""

    paths: list[str] = field(default_factory=list)
    #: path written → ``ARCHIVE:member`` (what messages show instead of the temporary path)
    labels: dict[str, str] = field(default_factory=dict)
    #: (``ARCHIVE:member``, why) of each trace member left out
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def make_temp_dir() -> str:
    """A fresh extraction folder whose name carries this process's id (for :func:`sweep_stale`)."""
    import tempfile

    sweep_stale()
    return tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-")


def sweep_stale(root: str | None = None) -> list[str]:
    """Remove extraction folders whose profview is gone (killed before it could clean up)."""
    import tempfile

    root = root or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(root) if n.startswith(TEMP_PREFIX)]
    except OSError:
        return removed
    for name in names:
        folder = os.path.join(root, name)
        try:
            info = os.lstat(folder)
        except OSError:
            continue
        if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.getuid():
            continue
        owner = name[len(TEMP_PREFIX) :].split("-", 1)[0]
        if owner.isdigit():
            if _alive(int(owner)):
                continue
        elif time.time() - info.st_mtime < STALE_S:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def extract(archive: str, into: str) -> Extracted:
    """Write the trace members of ``archive`` into ``into`` (flat, under safe names).

    Raises :class:`ProfviewError` (one line, naming the archive) for an archive that cannot be
    opened, that goes past a limit, or that holds no trace.
    """
    import tarfile
    import zipfile

    label = os.path.basename(archive)
    limit = _expansion_limit(os.path.getsize(archive))
    out = Extracted()
    try:
        if archive.lower().endswith(".zip"):
            _from_zip(archive, label, into, limit, out)
        else:
            _from_tar(archive, label, into, limit, out)
    except ArchiveLimit as exc:
        raise ProfviewError(archive, str(exc)) from None
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        raise ProfviewError(archive, f"cannot read this archive ({_first_line(exc)})") from None
    if not out.paths and not out.unreadable:
        raise ProfviewError(archive, "no trace files (*.json, *.json.gz) in this archive")
    return out


def _expansion_limit(archive_size: int) -> int:
    ratio = float(os.environ.get("PROFVIEW_ARCHIVE_EXPANSION") or MAX_EXPANSION)
    return int(archive_size * ratio) + EXPANSION_FLOOR


class _Budget:
    """What all members of one archive may still write."""

    def __init__(self, limit: int, into: str) -> None:
        self.limit = limit
        self.into = into
        self.written = 0
        self._checked_at = 0

    def add(self, count: int) -> None:
        self.written += count
        if self.written > self.limit:
            raise ArchiveLimit(
                f"expands to more than {_size(self.limit)} ({MAX_EXPANSION}x its size): refused as an archive bomb "
                "(PROFVIEW_ARCHIVE_EXPANSION raises the ratio)"
            )
        if self.written - self._checked_at >= 64 << 20:
            self._checked_at = self.written
            free = shutil.disk_usage(self.into).free
            if free < DISK_RESERVE:
                raise ArchiveLimit(f"extracting it would fill the disk of {self.into} ({_size(free)} left)")


def _from_zip(archive: str, label: str, into: str, limit: int, out: Extracted) -> None:
    import zipfile

    budget = _Budget(limit, into)
    with zipfile.ZipFile(archive) as z:
        seen: set[int] = set()
        repeats = 0
        for info in z.infolist():
            if info.is_dir() or not TRACE_NAME.search(info.filename):
                continue
            if info.header_offset in seen:  # the same bytes listed again: a zip bomb's trick
                repeats += 1
                continue
            seen.add(info.header_offset)
            name = f"{label}:{info.filename}"
            if info.flag_bits & 0x1:
                out.unreadable.append((name, "encrypted (profview reads no password-protected member)"))
                continue
            try:
                with z.open(info) as data:
                    _keep(into, out, name, info.filename, data, budget)
            except MemberUnreadable as exc:
                out.unreadable.append((name, str(exc)))
            except (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError, OSError) as exc:
                out.unreadable.append((name, f"cannot be read ({_first_line(exc)})"))
        if repeats:
            out.notes.append(f"{label}: {repeats} zip entries repeat the data of another entry; read once")


def _from_tar(archive: str, label: str, into: str, limit: int, out: Extracted) -> None:
    import tarfile

    budget = _Budget(limit, into)
    members: list[tarfile.TarInfo] = []
    damage: BaseException | None = None
    with tarfile.open(archive) as t:
        try:  # the headers first, to the end: damage is found here, not taken for the end
            members.extend(_members(t))
            _check_end(t)
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            if not members:
                raise
            damage = exc
        for member in members:
            if not TRACE_NAME.search(member.name):
                continue
            name = f"{label}:{member.name}"
            if not (member.isfile() or member.islnk() or member.issym()):
                kind = "FIFO" if member.isfifo() else "device" if member.isdev() else "directory"
                out.notes.append(f"{name}: a {kind}, not a file: left out")
                continue
            try:
                data = t.extractfile(member)  # a link: the member it names, inside the archive
            except KeyError:
                out.unreadable.append((name, f"a link to {member.linkname!r}, which is not in the archive"))
                continue
            except RecursionError:  # tarfile follows a link to a link ... without end
                out.unreadable.append((name, f"a link to {member.linkname!r} that leads back to itself (a loop)"))
                continue
            if data is None:
                continue
            try:
                _keep(into, out, name, member.name, data, budget)
            except MemberUnreadable as exc:
                out.unreadable.append((name, str(exc)))
            except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                out.unreadable.append((name, f"damaged ({_first_line(exc)})"))
    if damage is not None:
        out.notes.append(
            f"{label}: damaged after {members[-1].name} ({_first_line(damage)}): the members after the damage are lost"
        )


def _members(t: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    while True:
        member = t.next()
        if member is None:
            return
        yield member


def _check_end(t: tarfile.TarFile) -> None:
    """Read the archive to its end: a damaged header (which ``tarfile`` takes for the end) or a
    gzip stream whose checksum fails is an error, not a shorter archive."""
    import tarfile

    fileobj = t.fileobj
    assert fileobj is not None
    fileobj.seek(t.offset)
    while chunk := fileobj.read(CHUNK):
        if chunk.strip(b"\x00"):
            raise tarfile.ReadError(f"a damaged member header at byte {t.offset:,} of the tar stream")


def _keep(into: str, out: Extracted, label: str, member: str, data: IO[bytes], budget: _Budget) -> None:
    path = _write(into, len(out.paths) + len(out.unreadable), member, data, budget)
    out.paths.append(path)
    out.labels[path] = label


def _write(into: str, index: int, member: str, data: IO[bytes], budget: _Budget) -> str:
    """One member under ``into``, streamed and checked as it is written (see the module doc)."""
    base = _SAFE_NAME.sub("_", os.path.basename(member)) or "trace.json"
    target = os.path.join(into, f"{index:05d}-{base}")
    room = _member_room()
    written = 0
    try:
        with open(target, "wb") as fh:
            head = data.read(SNIFF_BYTES)
            _sniff(head)
            while head:
                fh.write(head)
                written += len(head)
                budget.add(len(head))
                if room is not None and written > room:
                    raise MemberUnreadable(f"larger than this machine could load ({_size(room)} of trace at most)")
                head = data.read(CHUNK)
    except BaseException:
        os.unlink(target)
        raise
    return target


def _sniff(head: bytes) -> None:
    if head[:2] == _GZIP_MAGIC:
        return
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if b"\x00" in head or text[:1] not in (b"{", b"["):
        raise MemberUnreadable("not a trace (its first bytes are not JSON)")


def _member_room() -> int | None:
    """The largest member a worker could load (the memory a load needs is a factor of its size)."""
    from ..parsers.source import BASE_MEMORY, memory_budget, memory_factor

    budget = memory_budget()
    return None if budget is None else max(0, int((budget[0] - BASE_MEMORY) / memory_factor()))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _size(count: int) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:,.0f} MiB"
