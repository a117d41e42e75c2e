"""Read an input file's bytes: plain or gzip, whole or truncated.

A plain file of at least :data:`MAP_BYTES` is memory-mapped (private, copy-on-write) instead of
copied: the parser reads the page cache directly, and pages it is done with can be dropped.
A gzip stream that ends early (a killed job, a half-copied file) is decompressed as far as it
goes and reported through ``warnings``; a file that cannot be read raises :class:`ProfviewError`.
"""

from __future__ import annotations

import mmap
import os
import stat
import threading
import zlib
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, cast

from ..errors import ProfviewError
from .foreign import refuse_foreign
from .resources import scan_threads, thread_count, usable_cpus

if TYPE_CHECKING:
    import gzip

    import polars as pl

#: Polars' allocator (jemalloc) gives the pages it frees back to the system after 50 ms (dirty)
#: and at once (muzzy), instead of the 0.5 s and 1 s Polars configures: reading gpt2_train_big
#: peaks at 187 MB instead of 194 MB, its cold kernel export at about 390 MB instead of 415 MB, in
#: the same time with the compiled scanner (issue 25, docs/performance.md; ``dirty_decay_ms:0``
#: gives 320 MB for that export, 9% slower).  profview's ``__init__`` sets it before Polars loads
#: (Polars appends it to its own setting; jemalloc reads it once).
ALLOCATOR_CONF = "dirty_decay_ms:50,muzzy_decay_ms:0"
#: Under an address-space limit: freed address space returned at once (see economise_address_space).
LIMITED_ALLOCATOR_CONF = "retain:false,dirty_decay_ms:0,muzzy_decay_ms:0"
#: For a large trace, every page freed goes back at once: the cold kernel export of a 1 GB trace
#: peaks 6-10% lower (0.94x the JSON instead of 1.0-1.05x in the one-line layout) for 10-20% more
#: time, where a 172 MB trace would pay 9% for memory it does not need (issue 25).
LARGE_TRACE_ALLOCATOR_CONF = "dirty_decay_ms:0,muzzy_decay_ms:0"
#: A trace whose JSON is at least this large (a gzip file: :data:`GZIP_RATIO_GUESS` times its size)
#: is read with :data:`LARGE_TRACE_ALLOCATOR_CONF`.
LARGE_TRACE_BYTES = 512 * 2**20
GZIP_RATIO_GUESS = 8
GZIP_MAGIC = b"\x1f\x8b"
SALVAGE_PIECE = 64 * 1024
#: Peak memory of a load read whole (a pipe, or a document only the whole-document code can
#: answer for), and of the viewer's model, is at most about this many times the decompressed JSON
#: with the compiled scanner (measured 1.5-2.5x from 172 MB to 1 GB), plus the interpreter and
#: libraries; the general reader alone (no C compiler at install) needs up to 3.4x.
MEMORY_FACTOR = 2.6
MEMORY_FACTOR_GENERAL_READER = 3.5
#: The same for a Chrome trace read in chunks (issue 25), beyond the libraries: the events frame
#: and the tables of an export (measured 0.96x on a 1.0 GB Kineto-layout trace, 1.15x on an
#: 855 MB one-event-per-line trace; the general reader 2.2x on 173 MB).
CHUNKED_MEMORY_FACTOR = 1.2
CHUNKED_MEMORY_FACTOR_GENERAL_READER = 2.4
#: Plain files from this size on are memory-mapped rather than read into memory.
MAP_BYTES = 32 * 2**20
BASE_MEMORY = 200 * 2**20
#: Address space a reading thread reserves (its stack; one malloc arena, see economise_address_space).
THREAD_ADDRESS_SPACE = 16 * 2**20
#: Bytes of (decompressed) data looked at before reading on.
SNIFF_BYTES = 4096
#: glibc's mallopt parameter for the number of malloc arenas.
M_ARENA_MAX = -8
#: Deflate's largest possible expansion (a long run of one byte): 1032 to 1.
DEFLATE_MAX_RATIO = 1032


@dataclass
class SourceBytes:
    """The decompressed content of one input file."""

    path: str
    data: bytearray | mmap.mmap  # an mmap for large plain files (see MAP_BYTES)
    compressed: bool
    warnings: list[str] = field(default_factory=list)

    def release(self) -> bytearray | mmap.mmap:
        """The content, handed over: this object keeps none of it, so it can be freed early."""
        data, self.data = self.data, bytearray()
        return data


def _gzip_reader(fileobj: BinaryIO) -> gzip.GzipFile:
    """A gzip reader over ``fileobj``: ISA-L's (about 3x faster than zlib), else the standard library's."""
    try:
        from isal.igzip import IGzipFile  # a gzip.GzipFile subclass whose constructor is unannotated
    except ImportError:  # pragma: no cover - isal is a declared dependency
        from gzip import GzipFile

        return GzipFile(fileobj=fileobj)
    opener = cast("Callable[..., gzip.GzipFile]", IGzipFile)
    return opener(fileobj=fileobj)


def _gunzip_fast(raw: bytes | bytearray, path: str) -> bytearray:
    """Decompress a complete gzip stream straight into one buffer (no intermediate copies).

    ISA-L's reader decompresses into the buffer without holding the GIL (measured: a Python loop
    on another thread runs at full speed beside it; a decompressobj loop here halved it), so the
    CLI can read a trace while Polars imports (:mod:`profview.profiles.prefetch`).
    """
    import io

    # The gzip trailer holds the decompressed size modulo 2**32: a good first guess, unless the
    # file is cut or forged (then the last 4 bytes are anything: never trust them past what
    # deflate can expand to).
    _sniff(zlib.decompressobj(wbits=31).decompress(bytes(raw[:SNIFF_BYTES]), SNIFF_BYTES), path)
    guess = min(max(int.from_bytes(raw[-4:], "little"), 1 << 20), _max_expansion(raw))
    if not _fits(guess):
        guess = len(raw) * 4  # a forged or cut trailer must not refuse a small file: grow instead
    out = bytearray(guess)
    filled = 0
    with _gzip_reader(io.BytesIO(raw)) as stream:
        while True:
            if filled == len(out):  # the guess was short (or exact): grow only if data remains
                more = stream.read(8 << 20)
                if not more:
                    break
                check_memory(path, _needed(len(out) * 2, raw))  # a gzip bomb fails here, early
                out += more
                filled += len(more)
                out.extend(bytes(len(out)))
                continue
            with memoryview(out) as view:  # bounded reads: the stream buffers what it returns
                count = stream.readinto(view[filled : filled + (8 << 20)])
            if not count:
                break
            filled += count
    del out[filled:]
    return out


def _max_expansion(raw: bytes | bytearray) -> int:
    """An upper bound of what ``raw`` can decompress to (deflate expands at most ~1032x)."""
    return max(len(raw) * DEFLATE_MAX_RATIO, 1 << 20)


def _needed(decompressed: int, raw: bytes | bytearray) -> int:
    return int(decompressed * memory_factor()) + len(raw) + BASE_MEMORY


def _fits(decompressed: int) -> bool:
    available = available_memory()
    return available is None or _needed(decompressed, b"") <= available


def _gunzip_partial(raw: bytes | bytearray, path: str) -> tuple[bytearray, str | None]:
    """Decompress as much of a damaged gzip stream as possible; return (data, problem).

    The stream is fed in small pieces so that everything before a corrupt block (or a cut)
    is kept.
    """
    out = bytearray()
    problem: str | None = None
    for piece, said in _inflate_pieces(bytes(raw)):
        out += piece
        problem = said
        if len(out) > 2 * len(raw) * 8 + (64 << 20):  # check now and then, not per piece
            check_memory(path, _needed(len(out), raw))
    return out, problem


def tune_allocator_for(path: str) -> None:
    """Before Polars loads: a large trace (:data:`LARGE_TRACE_BYTES`) is read with
    :data:`LARGE_TRACE_ALLOCATOR_CONF` instead of profview's default, unless the user set their own."""
    import sys

    if "polars" in sys.modules or os.environ.get("_RJEM_MALLOC_CONF") != ALLOCATOR_CONF:
        return
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            gzipped = fh.read(2) == GZIP_MAGIC
    except OSError:
        return
    if size * (GZIP_RATIO_GUESS if gzipped else 1) >= LARGE_TRACE_BYTES:
        os.environ["_RJEM_MALLOC_CONF"] = LARGE_TRACE_ALLOCATOR_CONF


#: Polars' threads in a profview command, at most (``POLARS_MAX_THREADS`` set by the user wins).
#: On a 16-core node a cold kernel export of gpt2_train_big took 1.75 s and 381 MB with Polars
#: and the scanner on 16 threads, 1.24 s and 302 MB on 4 (benchmarks/threads.py, docs/performance.md):
#: the frames of one trace are too small to share among 16 threads, and each thread keeps its own
#: allocator arena.
POLARS_THREADS = 4
#: Environment variables that profview set itself (not the user's): a job's workers get their share
#: of the cores instead (:mod:`profview.jobs.executors`).
SET_BY_PROFVIEW: set[str] = set()


def cap_polars_threads() -> list[str]:
    """Before Polars loads (the command line and the viewer): Polars on at most
    :data:`POLARS_THREADS` threads, unless the user set ``POLARS_MAX_THREADS``.

    A thread setting that is not a whole number above 0 (``POLARS_MAX_THREADS=0`` made Polars
    panic at its first query, issue 35) is replaced by the default; the warnings say so."""
    import sys

    warnings: list[str] = []
    for name in ("POLARS_MAX_THREADS", "PROFVIEW_THREADS"):
        configured = os.environ.get(name)
        if configured is not None and not thread_count(configured) and "polars" not in sys.modules:
            del os.environ[name]
            warnings.append(f"{name}={configured!r} is not a number of threads above 0: the default is used")
    if "polars" in sys.modules or os.environ.get("POLARS_MAX_THREADS"):  # loaded already, or the user's
        return warnings
    os.environ["POLARS_MAX_THREADS"] = str(min(usable_cpus(), POLARS_THREADS))
    SET_BY_PROFVIEW.add("POLARS_MAX_THREADS")
    return warnings


def economise_address_space() -> None:
    """Under an address-space limit (``ulimit -v``), keep glibc to one malloc arena.

    Each thread that allocates otherwise reserves its own 64 MiB arena: Polars' pool and the
    scanner's threads took 850 MiB of address space on a 2-core machine (255 MiB with one arena),
    which leaves a 1 GiB limit no room for a trace.  Call before Polars starts its threads.
    """
    try:
        import ctypes
        import resource

        if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
            return
        # Polars' allocator (jemalloc) otherwise keeps the address space of memory it freed, for a
        # while or for good (0.7 GiB after reading a 1 GB trace): a 1 GB trace then opens within
        # 3 GiB.  Read when Polars loads, so only before it is imported.
        if os.environ.get("_RJEM_MALLOC_CONF", ALLOCATOR_CONF) == ALLOCATOR_CONF:  # unset, or profview's
            os.environ["_RJEM_MALLOC_CONF"] = LIMITED_ALLOCATOR_CONF
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, 1)
    except (ImportError, OSError, AttributeError):  # not glibc: nothing to economise this way
        return


class _HeldTogether:
    """The traces one command holds at once (both sides of a diff, every capture of a gate):
    what each whole-process check passed with, beyond the libraries, so the next one counts it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.needs: list[int] | None = None  # None: each trace is checked on its own


_HELD = _HeldTogether()


@contextmanager
def held_together() -> Iterator[None]:
    """Within the block, each trace's whole-process check (:func:`check_memory`) counts what
    the traces checked before it in the block need: a diff of two traces that each fit, but not
    together, is one line (it was Polars' allocation abort, exit 134, under ``ulimit -v``).
    A block inside another is part of it."""
    with _HELD.lock:
        outer = _HELD.needs is not None
        if not outer:
            _HELD.needs = []
    try:
        yield
    finally:
        if not outer:
            with _HELD.lock:
                _HELD.needs = None


def check_memory(path: str, needed: int, *, whole_process: bool = False) -> None:
    """Fail early, with a clear message, when a trace needs more memory than is available.

    ``whole_process``: ``needed`` is this process's whole peak (the events frame and the
    libraries it already holds included), compared with the room left plus what it holds;
    within :func:`held_together`, plus what the other traces held with it need.
    """
    with _HELD.lock:
        others = list(_HELD.needs or []) if whole_process else []
        beside = sum(others)
        budget = memory_budget(held=whole_process)
        if budget is not None and needed + beside > budget[0]:
            available, source = budget
            with_others = ","
            if len(others) == 1:
                with_others = f", and the other trace this command holds {_size(beside)},"
            elif others:
                with_others = f", and the {len(others)} other traces this command holds {_size(beside)},"
            raise ProfviewError(
                path,
                f"needs about {_size(needed)} of memory to load{with_others} but only {_size(available)} "
                f"is available ({source}; open the trace on a larger machine or raise the limit)",
                out_of_memory=True,
            )
        if whole_process and _HELD.needs is not None:
            _HELD.needs.append(max(0, needed - BASE_MEMORY))


#: Names at least this long are counted again (:data:`LONG_NAME_COPIES`) by the memory checks.
LONG_NAME_BYTES = 64 * 1024
#: Copies of a very long name the views make beyond the frame's factor (the GPU and host frames
#: of the model, the kernel and operator tables, their sorted and summed forms): a kernel name of
#: 256 MB peaked at 3.85 GB in ``summary`` (15x), 32 MB at 647 MB, where the frame's factor
#: counted it 3.6 times (issue 35).  No real name comes near: gpt2_train_big's longest is 1,118 bytes.
LONG_NAME_COPIES = 12


def long_name_bytes(events: pl.DataFrame) -> int:
    """Bytes of the events' names of at least :data:`LONG_NAME_BYTES` (one pass over the lengths)."""
    lengths = events.get_column("name").str.len_bytes()
    return int(lengths.filter(lengths >= LONG_NAME_BYTES).sum() or 0)


def _size(count: int) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:,.0f} MiB"


def memory_factor(chunked: bool = False) -> float:
    """Memory needed per byte of JSON: less where the compiled scanner reads it, less in chunks.

    Asked without importing the scanner (which brings NumPy and Polars): the file may be read
    while they import (see :mod:`profview.profiles.prefetch`).
    """
    from ..compiled import compiled_module

    compiled = compiled_module("_fastscan") is not None
    if chunked:
        return CHUNKED_MEMORY_FACTOR if compiled else CHUNKED_MEMORY_FACTOR_GENERAL_READER
    return MEMORY_FACTOR if compiled else MEMORY_FACTOR_GENERAL_READER


def available_memory() -> int | None:
    """Bytes this process may still allocate (see :func:`memory_budget`), or None if unknown."""
    budget = memory_budget()
    return None if budget is None else budget[0]


def memory_budget(held: bool = False) -> tuple[int, str] | None:
    """The tightest of the limits on this process's memory, and what sets it.

    ``$PROFVIEW_MEMORY_LIMIT`` (bytes) overrides; otherwise the least of: free memory
    (MemAvailable), the address-space and data-segment rlimits (``ulimit -v``/``-d``, as SLURM
    sets them) less what the process already uses, and the memory cgroup's limit (v2 ``memory.max``
    or v1 ``memory.limit_in_bytes``, containers and SLURM) less its current usage.  ``held``: each
    room plus what this process already holds by that limit's measure (its address space for
    ``ulimit -v``, its data segment for ``-d``, its resident memory otherwise).
    """
    override = os.environ.get("PROFVIEW_MEMORY_LIMIT")
    if override:
        return _bytes_setting("PROFVIEW_MEMORY_LIMIT", override), "PROFVIEW_MEMORY_LIMIT"
    resident = (_proc_field("/proc/self/status", "VmRSS:") or 0) if held else 0
    found = [
        (room + resident, what)
        for budget in (_mem_available(), _cgroup_room())
        if budget is not None
        for room, what in [budget]
    ]
    rlimit = _rlimit_room(held)
    if rlimit is not None:
        found.append(rlimit)
    return min(found) if found else None


def _mem_available() -> tuple[int, str] | None:
    value = _proc_field("/proc/meminfo", "MemAvailable:")
    return None if value is None else (value, "free memory")


def _rlimit_room(held: bool = False) -> tuple[int, str] | None:
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    rooms = []
    for limit, field_name, what in (
        (resource.RLIMIT_AS, "VmSize:", "the address-space limit, ulimit -v"),
        (resource.RLIMIT_DATA, "VmData:", "the data-segment limit, ulimit -d"),
    ):
        soft = resource.getrlimit(limit)[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        reserved = 0
        if limit == resource.RLIMIT_AS:
            # Address space, not memory, is what counts: each thread reserves its stack (and,
            # unless economise_address_space ran, a malloc arena) before it touches any of it.
            reserved = (_polars_threads() + scan_threads()) * THREAD_ADDRESS_SPACE
        used = _proc_field("/proc/self/status", field_name) or 0
        rooms.append((max(0, soft - used - reserved) + (used if held else 0), what))
    return min(rooms) if rooms else None


def _bytes_setting(name: str, text: str) -> int:
    """A number of bytes from the environment (``4000000000`` or ``4e9``), or a one-line error."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ProfviewError(None, f"{name}={text!r} is not a number of bytes (e.g. 4000000000 or 4e9)")
    return int(value)


def _polars_threads() -> int:
    """Threads in Polars' pool (``POLARS_MAX_THREADS``, else one per CPU), without starting it."""
    return thread_count(os.environ.get("POLARS_MAX_THREADS", "")) or os.cpu_count() or 1


def _cgroup_room() -> tuple[int, str] | None:
    """Room left under the memory cgroup limits of this process (and its parent groups)."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    rooms = []
    for line in lines:
        _hierarchy, controllers, group = line.split(":", 2)
        if controllers == "":  # v2
            folders = _ancestors("/sys/fs/cgroup", group)
            files = ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):  # v1
            folders = [*_ancestors("/sys/fs/cgroup/memory", group), "/sys/fs/cgroup/memory"]
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        for folder in folders:
            limit = _read_int(os.path.join(folder, files[0]))
            if limit is not None and limit < 2**60:
                used = _read_int(os.path.join(folder, files[1])) or 0
                rooms.append((max(0, limit - used), "the memory cgroup's limit"))
    return min(rooms) if rooms else None


def _ancestors(root: str, group: str) -> list[str]:
    """``root/group`` and its parent folders up to (and without) ``root``."""
    parts = [part for part in group.strip("/").split("/") if part]
    return [os.path.join(root, *parts[:depth]) for depth in range(len(parts), 0, -1)]


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):  # absent, or "max"
        return None


def _proc_field(path: str, name: str) -> int | None:
    """A ``Name: N kB`` field of a /proc file, in bytes."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(name):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _sniff(head: bytes | bytearray, path: str) -> None:
    """Refuse, before reading on, data whose first bytes are binary: every input profview reads is text.

    A gzip bomb (gigabytes of zeros in a small file) or ``<(cat /dev/zero)`` is refused after a
    few kilobytes instead of being read to the memory limit.
    """
    if b"\x00" in head[:SNIFF_BYTES]:
        refuse_foreign(path, head[:SNIFF_BYTES], compressed=True)  # a profile of another tool: name it
        raise ProfviewError(path, "starts with binary data (NUL bytes), not a trace or profiler table")


#: Seconds a named pipe may go without a program opening it to write (``mkfifo F; profview
#: summary F`` with nothing writing blocked for ever, issue 35).  A program that opened it is
#: waited for as long as it takes to write.
FIFO_WAIT_S = 10.0


class _Prefixed:
    """A pipe's reader whose first bytes were read already (to tell a writer was there)."""

    def __init__(self, first: bytes, fh: BinaryIO) -> None:
        self.first, self.fh = first, fh

    def read(self, size: int) -> bytes:
        if self.first:
            piece, self.first = self.first[:size], self.first[size:]
            return piece
        return self.fh.read(size)


def read_fifo(name: str) -> bytearray:
    """All of a named pipe, once a program opens it to write; a one-line error when none does
    within :data:`FIFO_WAIT_S` seconds (a plain open waits for a writer for ever)."""
    import select
    import time

    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)  # returns at once, writer or not
    with os.fdopen(fd, "rb", buffering=0) as fh:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        deadline = time.monotonic() + FIFO_WAIT_S
        while True:
            try:
                first: bytes | None = os.read(fd, 1 << 16)
            except BlockingIOError:  # a writer is there and has not written yet
                first = None
            if first or first is None:
                break
            # Nothing: no writer yet, or one that left without writing (the pipe hung up).
            if any(event & select.POLLHUP for _fd, event in poller.poll(0)):
                break
            if time.monotonic() > deadline:
                raise ProfviewError(name, f"is a named pipe that no program opened to write within {FIFO_WAIT_S:g} s")
            poller.poll(50)
        os.set_blocking(fd, True)
        return _read_stream(_Prefixed(first or b"", fh), name)  # type: ignore[arg-type]


def _read_stream(fh: BinaryIO, name: str) -> bytearray:
    """All of a pipe, checking memory as it grows."""
    raw = bytearray()
    while piece := fh.read(8 << 20):
        if not raw:
            _sniff(piece if piece[:2] != GZIP_MAGIC else b"", name)
        raw += piece
        if len(raw) % (256 << 20) < len(piece):
            check_memory(name, _needed(len(raw), b""))
    return raw


#: Decompressed bytes per chunk when a trace is read in chunks (see :class:`SourceStream`).
STREAM_CHUNK_BYTES = 8 * 2**20


class SourceStream:
    """The decompressed content of one input file, as a sequence of bounded chunks.

    A regular file is read (and inflated, ISA-L without the GIL) a chunk at a time: the whole
    document is never in memory.  A gzip stream that ends early or is corrupt goes on as far as
    zlib can read it (the same bytes as :func:`read_source`), with the problem in ``warnings``
    once the chunks are exhausted.  Pipes and devices are read whole first (they cannot be read
    twice), then handed out in chunks.  ``decompressed`` counts the bytes handed out so far.
    """

    def __init__(self, path: str | os.PathLike[str], chunk_bytes: int = STREAM_CHUNK_BYTES) -> None:
        self.path = os.fspath(path)
        self.chunk_bytes = max(1, chunk_bytes)
        self.warnings: list[str] = []
        self.decompressed = 0
        self.whole: SourceBytes | None = None
        name = self.path
        _check_exists(name)
        try:
            mode = os.stat(name).st_mode
            self.size = os.stat(name).st_size
            if not stat.S_ISREG(mode) or self.size == 0:  # a pipe, /proc, a device: read_source decides
                self.whole = read_source(name)
                self.compressed = self.whole.compressed
                self.warnings = list(self.whole.warnings)
                return
            with open(name, "rb") as fh:
                self.compressed = fh.read(2) == GZIP_MAGIC
            # Refused now rather than part-way: a plain file's size is known; a gzip file's is taken
            # as a typical 4x (as read_source does), and checked as it decompresses.
            expected = self.size * 4 if self.compressed else self.size
            check_memory(name, int(expected * memory_factor(chunked=True)) + BASE_MEMORY)
        except PermissionError:
            raise ProfviewError(name, "permission denied") from None
        except OSError as exc:
            raise ProfviewError(name, f"cannot read ({exc.strerror or exc})") from None

    def chunks(self) -> Generator[bytes, None, None]:  # a generator: callers close it early
        """The decompressed content, ``chunk_bytes`` at a time (the last chunk may be shorter)."""
        if self.whole is not None:
            data = self.whole.data
            for start in range(0, len(data), self.chunk_bytes):
                piece = bytes(data[start : start + self.chunk_bytes])
                self.decompressed += len(piece)
                yield piece
            return
        pieces = self._gunzip_chunks() if self.compressed else self._plain_chunks()
        head = b""
        for piece in pieces:
            if self.compressed and len(head) < SNIFF_BYTES:  # as read_source: a gzip bomb is refused early
                head += piece[: SNIFF_BYTES - len(head)]
                _sniff(head, self.path)
            self.decompressed += len(piece)
            if self.decompressed % CHECK_EVERY < len(piece):  # a gzip bomb stops here, early
                check_memory(self.path, int(self.decompressed * memory_factor(chunked=True)) + BASE_MEMORY)
            yield piece
        if self.decompressed == 0 and not self.compressed:
            raise ProfviewError(self.path, "the file is empty")

    def _plain_chunks(self) -> Iterator[bytes]:
        try:
            with open(self.path, "rb") as fh:
                while piece := fh.read(self.chunk_bytes):
                    yield piece
        except OSError as exc:
            raise ProfviewError(self.path, f"cannot read ({exc.strerror or exc})") from None

    def _gunzip_chunks(self) -> Iterator[bytes]:
        """ISA-L's reader while the stream is sound; zlib, from where it stopped, when it is not."""
        delivered = 0
        try:
            with open(self.path, "rb") as raw, _gzip_reader(raw) as stream:
                while piece := stream.read(self.chunk_bytes):
                    delivered += len(piece)
                    yield piece
            return
        except ProfviewError:
            raise
        except Exception as exc:  # a damaged stream (isal, zlib and gzip each raise their own)
            if isinstance(exc, OSError) and exc.errno is not None:  # the disk, not the data
                raise ProfviewError(self.path, f"cannot read ({exc.strerror or exc})") from None
        yield from self._salvage(delivered)

    def _salvage(self, skip: int) -> Iterator[bytes]:
        """What zlib can read of a damaged gzip file, from byte ``skip`` of its decompressed content."""
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise ProfviewError(self.path, f"cannot read ({exc.strerror or exc})") from None
        total, problem = 0, None
        for piece, said in _inflate_pieces(raw):
            problem = said
            if piece:
                total += len(piece)
                if total > skip:
                    fresh = piece[max(0, len(piece) - (total - skip)) :]
                    for start in range(0, len(fresh), self.chunk_bytes):
                        yield fresh[start : start + self.chunk_bytes]
        if total == 0:
            raise ProfviewError(self.path, problem or "not a readable gzip file")
        self.warnings.append(f"{problem or UNREADABLE_END}; read {total:,} decompressed bytes")


#: How often (in decompressed bytes) a chunked read checks the memory it will need: often enough that a
#: gzip bomb is refused within a few chunks of crossing the budget (a check reads /proc, it is cheap).
CHECK_EVERY = 16 * 2**20


#: What a gzip stream the fast reader refused and zlib read whole is said to have.
UNREADABLE_END = "the gzip stream could not be read to its end by the fast reader"


def _inflate_pieces(raw: bytes) -> Iterator[tuple[bytes, str | None]]:
    """(decompressed piece, problem so far) of every gzip member of ``raw``, as far as zlib can go.

    The same pieces as :func:`_gunzip_partial`: everything before a corrupt block or a cut is kept.
    """
    rest = raw
    count = 0
    while rest[:2] == GZIP_MAGIC:
        dec = zlib.decompressobj(wbits=31)
        offset = 0
        try:
            while offset < len(rest) and not dec.eof:
                piece = dec.decompress(rest[offset : offset + SALVAGE_PIECE])
                count += len(piece)
                yield piece, None
                offset += SALVAGE_PIECE
        except zlib.error as exc:
            yield b"", f"corrupt gzip data after {count:,} bytes ({exc})"
            return
        if not dec.eof:
            yield b"", "the gzip stream ends early (truncated file)"
            return
        rest = dec.unused_data
    if rest:  # text after the last gzip member (gzip -d warns of "trailing garbage" too)
        yield b"", f"ignored {len(rest):,} bytes after the end of the gzip stream"


def _check_exists(name: str) -> None:
    """A missing path or a directory is one line, before anything is opened."""
    if not os.path.exists(name):
        raise ProfviewError(name, "no such file")
    if os.path.isdir(name):
        raise ProfviewError(name, "is a directory, not a trace file")


def _read_file(name: str) -> bytearray | SourceBytes:
    """A file's raw bytes (a large plain one: mapped, as its :class:`SourceBytes`)."""
    with open(name, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            # A file whose size the system does not know (/proc): read to its end.
            return _read_stream(fh, name)
        size = os.fstat(fh.fileno()).st_size
        if size >= MAP_BYTES and fh.read(2) != GZIP_MAGIC:
            check_memory(name, int(size * memory_factor()) + BASE_MEMORY)
            return SourceBytes(name, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY), compressed=False)
        fh.seek(0)
        check_memory(name, size + BASE_MEMORY)
        raw = bytearray(size)
        with memoryview(raw) as view:
            count = fh.readinto(view)
        del raw[count:]
        return raw


def read_source(path: str | os.PathLike[str]) -> SourceBytes:
    """Read ``path`` and return its decompressed bytes, or raise a one-line ProfviewError."""
    name = os.fspath(path)
    _check_exists(name)
    try:
        mode = os.stat(name).st_mode
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
            raise ProfviewError(name, "is a device or socket, not a trace file")
        # A named pipe is waited on a bounded time for a writer (<(zcat trace.json.gz) has one).
        read = read_fifo(name) if stat.S_ISFIFO(mode) else _read_file(name)
        if isinstance(read, SourceBytes):
            return read
        raw = read
    except PermissionError:
        raise ProfviewError(name, "permission denied") from None
    except OSError as exc:
        raise ProfviewError(name, f"cannot read ({exc.strerror or exc})") from None
    if not raw:
        raise ProfviewError(name, "the file is empty")
    if raw[:2] != GZIP_MAGIC:
        check_memory(name, int(len(raw) * memory_factor()) + BASE_MEMORY)
        return SourceBytes(name, raw, compressed=False)
    # The trailer (decompressed size modulo 4 GiB) may be forged or, in a cut file, anything:
    # the check here assumes a typical 4x, and the real size is checked as it decompresses.
    check_memory(name, _needed(len(raw) * 4, raw))
    try:
        data = _gunzip_fast(raw, name)
        warnings: list[str] = []
    except ProfviewError:
        raise
    except Exception:
        data, problem = _gunzip_partial(raw, name)
        if not data:
            raise ProfviewError(name, problem or "not a readable gzip file") from None
        warnings = [f"{problem or UNREADABLE_END}; read {len(data):,} decompressed bytes"]
    check_memory(name, _needed(len(data), b""))
    return SourceBytes(name, data, compressed=True, warnings=warnings)
