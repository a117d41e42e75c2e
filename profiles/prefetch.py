"""Read (decompress and scan) a trace file on a thread while the libraries import.

A cold ``profview export TRACE`` spends its first quarter second importing Polars and NumPy and
the next reading, decompressing and scanning the file; the two need not wait for each other: the
chunked read (:func:`profview.parsers.trace_file.read_trace_file`: inflate and the compiled
scanner, chunk by chunk) needs neither.  The CLI calls :func:`start` before it imports anything
heavy; :func:`profview.profiles.loading.load` then takes the read file with :func:`take` (issues 13, 25).
Nothing is read for a trace that has a cache entry (a re-open reads the cache, not the file), nor
for anything but a regular file.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from ..store.keys import has_entry, identity

if TYPE_CHECKING:
    from ..parsers.trace_file import TraceFile


class _Read:
    """One file read on a daemon thread; ``stamp`` says which version of the file it read (its
    cache identity, taken before the read began)."""

    def __init__(self, path: str, stamp: dict[str, Any]) -> None:
        self.path = path
        self.stamp = stamp
        self.source: TraceFile | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="profview-prefetch", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        try:
            from ..parsers.trace_file import read_trace_file

            self.source = read_trace_file(self.path)
        except BaseException as exc:  # handed to the thread that takes it
            self.error = exc


_reads: dict[str, _Read] = {}
_lock = threading.Lock()


def _stamp(path: str) -> dict[str, Any] | None:
    """The file's cache identity (size, times, inode: a rewrite in place changes its ctime), or None."""
    try:
        return identity(path)
    except OSError:
        return None


def _memory_limited() -> bool:
    """Under ``ulimit -v``/``-d`` the read waits for the libraries: its memory check must see them."""
    try:
        import resource
    except ImportError:  # not POSIX
        return False
    limits = (resource.getrlimit(kind)[0] for kind in (resource.RLIMIT_AS, resource.RLIMIT_DATA))
    return any(limit != resource.RLIM_INFINITY for limit in limits)


def start(path: str, *, use_cache: bool = True) -> None:
    """Start reading ``path`` if it is a regular file that the load will have to parse."""
    name = os.path.abspath(path)
    stamp = _stamp(name)
    if stamp is None or not os.path.isfile(name) or (use_cache and has_entry(name)) or _memory_limited():
        return
    from ..parsers.nsys.magic import is_nsys_report, is_sqlite

    if is_sqlite(name) or is_nsys_report(name):  # a database is queried, not read whole ahead of time
        return
    from ..parsers.source import tune_allocator_for

    tune_allocator_for(name)  # before Polars loads: its allocator reads the setting once
    with _lock:
        if name not in _reads:
            _reads[name] = _Read(name, stamp)


def take(path: str) -> TraceFile | None:
    """The file :func:`start` read for ``path`` (waiting for it), or None if it read none or the
    file changed since; raises what reading raised (a one-line :class:`ProfviewError`)."""
    name = os.path.abspath(path)
    with _lock:
        read = _reads.pop(name, None)
    if read is None:
        return None
    read.thread.join()
    if read.stamp != _stamp(name):
        return None  # rewritten meanwhile: read it again
    if read.error is not None:
        raise read.error
    if read.source is not None:
        read.source.identity = read.stamp  # unchanged from before the read to now
        read.source.path = os.fspath(path)  # messages name the file as the user wrote it
        if read.source.source is not None:
            read.source.source.path = read.source.path
    return read.source
